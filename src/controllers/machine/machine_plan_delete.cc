// File: controllers/machine/machine_plan_delete.cc
//
// The planner's delete path (machine_planner.h): the etcd member first (a
// control-plane machine), then the VM, its PVCs, the cloud-init Secret, the
// address, the etcd Node's finalizer and the machine's finalizer.

#include <regex>
#include <set>

#include "api/conditions.h"
#include "controllers/machine/machine_planner.h"

namespace caphv::controllers {

using std::chrono::minutes;
using std::chrono::seconds;

void MachinePlanner::Delete() {
  plan_.status.ready = false;
  if (!obs_.has_finalizer) return WaitForEvent("nothing: no finalizer");
  if (!obs_.hc) {
    // Without its HarvesterCluster nothing can have been created (the VM
    // waits for the cluster's infrastructure) unless the cluster went first.
    if (NothingCreated()) return Act(ActionKind::kRemoveFinalizer);
    Mark(kVmProvisioningReady, false, "HarvesterClusterNotFound",
         "the HarvesterCluster of Cluster " + obs_.cluster_name +
             " is gone: cannot delete the VM on Harvester (remove the finalizer to abandon it)",
         true);
    plan_.wait = Wait::After(minutes(1), "the HarvesterCluster");
    return;
  }
  if (!obs_.harvester.ready) {
    if (NothingCreated()) return Act(ActionKind::kRemoveFinalizer);
    Mark(kVmProvisioningReady, false, obs_.harvester.reason,
         "cannot delete the VM on Harvester: " + obs_.harvester.message +
             " (restore the identity, or remove the finalizer to abandon the VM)",
         obs_.harvester.failed());
    return WaitFor(obs_.harvester, "Harvester connection");
  }
  // 1. The VM (adopted first when spec.providerID names it), then wait for
  // it to go.
  if (obs_.vm && !obs_.vm->ours && Recorded(*obs_.vm)) return Adopt(*obs_.vm);
  if (obs_.vm && obs_.vm->ours) {
    if (!obs_.vm->deleting) {
      if (RemoveEtcdMember()) return;
      if (!obs_.vm->pvcs_marked_for_removal && obs_.vm->remove_pvcs_patch) {
        return Act(ActionKind::kMarkPvcsForRemoval, name_, {}, *obs_.vm->remove_pvcs_patch);
      }
      return Act(ActionKind::kDeleteVm, name_);
    }
    Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM to be deleted");
    return WaitForEvent("the VM's deletion");
  }
  const bool foreign_vm = obs_.vm.has_value();
  // The cache may lag behind a VM created an instant before: make sure.
  if (!obs_.vm && !obs_.vm_absence_confirmed) return Act(ActionKind::kConfirmVmGone, name_);
  // 2. Its PVCs: the names CAPHV gave them, and any "<name>-disk-<i>-<hash>"
  // (beside a VM of another cluster, only the names of this machine's uid).
  std::set<std::string> wanted;
  for (size_t i = 0; i < obs_.hm.spec.volumes.size(); ++i) {
    wanted.insert(harvester::PvcName(name_, obs_.hm.metadata.uid, i));
  }
  static const std::regex kDiskSuffix(R"(^-disk-[0-9]+-[a-z0-9]+$)");
  std::vector<std::string> pending;
  for (const auto& pvc : obs_.pvcs) {
    const bool legacy = !foreign_vm && pvc.name.starts_with(name_) &&
                        std::regex_match(pvc.name.substr(name_.size()), kDiskSuffix);
    if (!wanted.contains(pvc.name) && !legacy) continue;
    if (!pvc.deleting) return Act(ActionKind::kDeletePvc, pvc.name);
    pending.push_back(pvc.name);
  }
  if (!pending.empty()) {
    Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM's volumes to be deleted");
    plan_.wait_for_pvcs = pending;
    return WaitForEvent("the PVCs' deletion");
  }
  // 3. The cloud-init Secret, if it is this cluster's.
  if (obs_.cloud_init_secret && obs_.cloud_init_secret->ours) {
    return Act(ActionKind::kDeleteCloudInitSecret, harvester::CloudInitSecretName(name_));
  }
  // 4. The address, now that nothing uses it.
  const std::string owner = MachineOwnerId(obs_);
  for (const auto& c : obs_.pools) {
    if (!c.pool) continue;
    if (auto patch = harvester::ReleasePatch(*c.pool, owner)) {
      return Act(ActionKind::kReleaseAddress, c.pool->name, {}, std::move(*patch));
    }
  }
  plan_.status.allocated_ip_address.clear();
  plan_.status.allocated_pool_ref.clear();
  // 5. The etcd Node may go now (its member was removed, or kept as the last).
  if (obs_.workload.ready) {
    if (obs_.etcd_node) {
      if (auto patch = workload::RemoveEtcdNodeFinalizer(*obs_.etcd_node)) {
        return Act(ActionKind::kReleaseEtcdNode, obs_.etcd_node->name, {}, std::move(*patch));
      }
    }
  } else if (obs_.control_plane && !obs_.cluster_deleting && conditions_.IsTrue(kNodeInitialized)) {
    // Its Node may hold the finalizer, which nobody else lifts: wait for
    // the workload cluster (not when the Cluster goes, and its Nodes with
    // it), then finish anyway, saying how to lift it by hand.
    const std::string why = "cannot reach the workload cluster to lift finalizer " +
                            std::string(workload::kEtcdNodeFinalizer) + " from Node " + name_ +
                            ": " + obs_.workload.message;
    if (!EtcdStepsOverdue()) {
      Mark(kVmProvisioningReady, false, "WaitingForWorkloadCluster", why);
      plan_.wait = Wait::After(seconds(10), "the workload cluster");
      return;
    }
    Mark(kVmProvisioningReady, false, "EtcdNodeFinalizerLeft",
         why + "; finishing the deletion anyway after " +
             std::to_string(kEtcdRemovalTimeout.count()) +
             " minutes (if the Node is still there: kubectl patch node " + name_ +
             " --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]')",
         true);
  }
  // 6. Done.
  Act(ActionKind::kRemoveFinalizer);
}

// kEtcdRemovalTimeout has passed since the deletion began: the etcd steps
// wait no longer.
bool MachinePlanner::EtcdStepsOverdue() const {
  const auto since = api::ParseTime(obs_.hm.metadata.deletion_timestamp);
  return since && obs_.now - *since >= kEtcdRemovalTimeout;
}

// Deleting a control-plane machine: its etcd member goes before its VM.
// Returns true while that holds the deletion (an action or a wait is set).
bool MachinePlanner::RemoveEtcdMember() {
  if (!obs_.control_plane || obs_.cluster_deleting) return false;
  if (conditions_.IsTrue(kEtcdMemberRemoved)) return false;
  const bool overdue = EtcdStepsOverdue();
  auto give_up = [&](std::string_view reason, const std::string& message) {
    const api::Condition* before =
        api::FindCondition(obs_.hm.status.conditions, kEtcdMemberRemoved);
    plan_.etcd_member_left =
        before == nullptr || before->status != "False" || before->reason != reason;
    Mark(kEtcdMemberRemoved, false, reason,
         message + "; deleting the VM anyway after " + std::to_string(kEtcdRemovalTimeout.count()) +
             " minutes (remove the member by hand: etcdctl member remove)",
         true);
    return false;
  };
  if (!obs_.workload.ready) {
    const std::string why =
        "cannot reach the workload cluster to remove this machine's etcd "
        "member: " +
        obs_.workload.message;
    if (overdue) return give_up("EtcdMemberRemovalFailed", why);
    Mark(kEtcdMemberRemoved, false, "WaitingForWorkloadCluster", why);
    plan_.wait = Wait::After(seconds(10), "the workload cluster");
    return true;
  }
  if (!obs_.etcd_node) return false;  // no Node: no member RKE2 could name
  const workload::EtcdRemovalDecision d =
      workload::DecideEtcdRemoval(*obs_.etcd_node, obs_.other_etcd_members);
  using Outcome = workload::EtcdRemovalDecision::Outcome;
  switch (d.outcome) {
    case Outcome::kNothing:
      return false;
    case Outcome::kRemoved:
      Mark(kEtcdMemberRemoved, true, "EtcdMemberRemoved", d.message);
      return false;
    case Outcome::kLastVoter:
      Mark(kEtcdMemberRemoved, true, "EtcdMemberKept", d.message);
      return false;
    case Outcome::kRequest:
      Mark(kEtcdMemberRemoved, false, "RemovingEtcdMember", d.message);
      Act(ActionKind::kRequestEtcdRemoval, obs_.etcd_node->name, {}, d.patch);
      return true;
    case Outcome::kWaiting:
      if (overdue) return give_up("EtcdMemberRemovalTimedOut", d.message);
      Mark(kEtcdMemberRemoved, false, "RemovingEtcdMember", d.message);
      plan_.wait = Wait::After(seconds(2), "RKE2 to remove the etcd member");
      return true;
  }
  return false;
}

}  // namespace caphv::controllers
