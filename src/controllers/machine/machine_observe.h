// File: controllers/machine/machine_observe.h
//
// Views of connections and Harvester objects as the planners see them, built
// by the reconcilers' observe steps from caches and by their execute steps
// from the objects a write returned.
//
// Thread safety: pure functions.

#pragma once

#include "controllers/harvester_connections.h"
#include "controllers/machine/machine_plan.h"
#include "harvester/naming.h"
#include "kube/object.h"

namespace caphv::controllers {

// A VirtualMachine: uid, whether it carries `identity`'s cluster id, whether
// it is being deleted, and whether its PVCs are already marked for removal.
VmView ViewOfVm(const kube::Object& vm, const harvester::ClusterIdentity& identity);

// A VirtualMachineInstance: phase and addresses (status.interfaces[].ip and
// ipAddresses, in order, without duplicates).
VmiView ViewOfVmi(const kube::Object& vmi);

// A cloud-init Secret: whether it is `identity`'s, and its content hash.
SecretView ViewOfSecret(const kube::Object& secret, const harvester::ClusterIdentity& identity);

}  // namespace caphv::controllers
