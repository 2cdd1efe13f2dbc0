// File: sim/vm_mutator.h
//
// Harvester's mutating webhook for VirtualMachines on CREATE
// (harvester@v1.7.3 pkg/webhook/resources/virtualmachine/mutator.go), as a
// pure function returning the JSON patch (RFC 6902) Harvester would answer,
// so that the stored VM looks as Harvester stores it:
//   - resources.requests from the limits and the overcommit setting's
//     defaults (cpu 1600 %, memory 150 %): requests.cpu = limit / 16,
//     requests.memory = limit / 1.5, cut to whole MiB;
//   - memory.guest = limits.memory (the setting
//     additional-guest-memory-overhead-ratio defaults to "1.5": no reserve);
//   - cpu.maxSockets = 1 when unset;
//   - terminationGracePeriodSeconds = 120 when unset;
//   - a required node affinity `network.harvesterhci.io/<cluster network>:
//     "true"` for the cluster network of each Multus network's NAD;
//   - a generated MAC address on every interface that has none.
//
// Thread safety: pure functions.

#pragma once

#include <functional>
#include <string>

#include "kube/object.h"

namespace caphv::sim {

// The cluster network ("mgmt", ...) of the NAD `ns/name`, "" when unknown.
using ClusterNetworkOf = std::function<std::string(const std::string& ns, const std::string& name)>;

// The JSON patch operations (an array; empty when nothing changes).
kube::Object MutateVmPatch(const kube::Object& vm, const ClusterNetworkOf& cluster_network_of);

}  // namespace caphv::sim
