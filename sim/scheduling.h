// File: sim/scheduling.h
//
// Where a VM's virt-launcher pod would land among the Harvester hosts, as the
// kube-scheduler decides it for the predicates a provider's VM meets: the
// template's nodeSelector and its required node affinity (the
// NodeUnschedulable and NodeAffinity filter plugins; scoring is replaced by a
// stable choice among the hosts that fit, keyed by the VM's uid, so a VM
// keeps its host across restarts of the simulator). A VM no host fits stays
// unschedulable with the scheduler's own message, which KubeVirt copies to
// the VMI and the VM (kubevirt@v1.6.0 pkg/virt-controller/watch/vmi/
// lifecycle.go:325-331 PodScheduled=False; pkg/virt-controller/watch/vm/
// vm.go:2671-2676 printableStatus ErrorUnschedulable, vm.go:2776-2790 the
// VMI's conditions copied to the VM).
//
// Thread safety: pure functions over values.

#pragma once

#include <map>
#include <string>
#include <vector>

#include "kube/client.h"

namespace caphv::sim {

// One Harvester host (a Node of the Harvester cluster).
struct Host {
  std::string name;
  std::map<std::string, std::string> labels;
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  bool operator==(const Host&) const = default;
};

Host HostOfNode(const kube::Object& node);

// Whether `host` satisfies one NodeSelectorTerm (matchExpressions and
// matchFields ANDed; an empty term matches nothing, as in Kubernetes).
bool TermMatches(const kube::Object& term, const Host& host);

// Whether `host` satisfies the pod-spec-like `spec` (a VMI spec or a VM's
// spec.template.spec): nodeSelector and
// affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.
bool FitsNodeAffinity(const kube::Object& spec, const Host& host);

// The host of an environment that names none (sim/env.h).
inline constexpr char kDefaultHostName[] = "harvester-sim-node-1";

struct Placement {
  std::string node = kDefaultHostName;  // "" when no host fits
  std::string zone, region;             // the host's topology labels, if any
  std::string unschedulable;            // the scheduler's message when none fits
};

// Where the VM `vm` runs among `hosts`. With `bound`, its pod is already
// on the one host given: scheduling predicates no longer apply (required
// affinity is IgnoredDuringExecution).
Placement PlaceVm(const kube::Object& vm, const std::vector<Host>& hosts, bool bound = false);

}  // namespace caphv::sim
