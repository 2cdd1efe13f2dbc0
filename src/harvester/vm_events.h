// File: harvester/vm_events.h
//
// Which watch events of a machine's VM and VMI can change what its
// reconcile plans. Deleting a VM takes KubeVirt several writes (the VM's
// deletionTimestamp, the VMI stopped and deleted, the finalizers dropped);
// the machine waits for one thing only, the VM gone, so the writes in
// between would wake it to plan the same wait again.
//
// Thread safety: pure functions.

#pragma once

#include "kube/object.h"

namespace caphv::harvester {

// Whether an update of a VM (`before` -> `now`) matters to its machine: not
// when the VM was already being deleted (the first update that marks it
// deleting matters; its removal is a delete event, which always does).
bool VmUpdateMatters(const kube::Object& before, const kube::Object& now);

// Whether an event of a VMI matters to the machine of `vm`, the VM of the
// same name in the cache (nullptr: none cached, so no machine to wake): not
// while that VM is being deleted.
bool VmiEventMatters(const kube::Object* vm);

}  // namespace caphv::harvester
