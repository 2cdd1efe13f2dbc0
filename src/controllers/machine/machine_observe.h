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
// it is being deleted, and, when `for_deletion` (the machine is being
// deleted), the patch that marks its PVCs for removal and whether the VM is
// marked already. Only a deletion reads those: the patch parses the VM's
// volumeClaimTemplates annotation, JSON in a string.
VmView ViewOfVm(const kube::Object& vm, const harvester::ClusterIdentity& identity,
                bool for_deletion);

// A VirtualMachineInstance: phase and addresses (status.interfaces[].ip and
// ipAddresses, in order, without duplicates).
VmiView ViewOfVmi(const kube::Object& vmi);

// A cloud-init Secret: whether it is `identity`'s, and its content hash.
SecretView ViewOfSecret(const kube::Object& secret, const harvester::ClusterIdentity& identity);

}  // namespace caphv::controllers
