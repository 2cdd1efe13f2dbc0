// File: controllers/machine/machine_plan_support.cc
//
// The small functions of machine_plan.h beside the planner itself: the action
// table (names, what a failure reports), failure marking and the machine's
// identities.

#include "api/conditions.h"
#include "controllers/machine/machine_plan.h"

namespace caphv::controllers {

ActionRow RowOf(ActionKind kind) {
  switch (kind) {
    case ActionKind::kAddFinalizer:
      return {"AddFinalizer", "", ""};
    case ActionKind::kReadCreationInputs:
      return {"ReadCreationInputs", kVmProvisioningReady, "HarvesterReadFailed"};
    case ActionKind::kReserveAddress:
      return {"ReserveAddress", kVmIpAllocated, "VMIPAllocationFailed"};
    case ActionKind::kApplyCloudInitSecret:
      return {"ApplyCloudInitSecret", kVmProvisioningReady, "CloudInitSecretFailed"};
    case ActionKind::kCreateVm:
      return {"CreateVM", kVmProvisioningReady, "VMProvisioningFailed"};
    case ActionKind::kAdoptCloudInitSecret:
      return {"AdoptCloudInitSecret", kVmProvisioningReady, "VMAdoptionFailed"};
    case ActionKind::kAdoptVm:
      return {"AdoptVM", kVmProvisioningReady, "VMAdoptionFailed"};
    case ActionKind::kAdoptVmi:
      return {"AdoptVMI", kVmProvisioningReady, "VMAdoptionFailed"};
    case ActionKind::kSetProviderID:
      return {"SetProviderID", "", ""};
    case ActionKind::kMarkPvcsForRemoval:
      return {"MarkPVCsForRemoval", kVmProvisioningReady, "VMDeletionFailed"};
    case ActionKind::kDeleteVm:
      return {"DeleteVM", kVmProvisioningReady, "VMDeletionFailed"};
    case ActionKind::kDeletePvc:
      return {"DeletePVC", kVmProvisioningReady, "VMDeletionFailed"};
    case ActionKind::kDeleteCloudInitSecret:
      return {"DeleteCloudInitSecret", kVmProvisioningReady, "VMDeletionFailed"};
    case ActionKind::kConfirmVmGone:
      return {"ConfirmVMGone", kVmProvisioningReady, "VMDeletionFailed"};
    case ActionKind::kReleaseAddress:
      return {"ReleaseAddress", kVmIpAllocated, "VMIPReleaseFailed"};
    case ActionKind::kRemoveFinalizer:
      return {"RemoveFinalizer", "", ""};
    case ActionKind::kInitializeNode:
      return {"InitializeNode", kNodeInitialized, "NodeInitializationFailed"};
    case ActionKind::kGuardEtcdNode:
      return {"GuardEtcdNode", "", ""};
    case ActionKind::kRequestEtcdRemoval:
      return {"RequestEtcdMemberRemoval", kEtcdMemberRemoved, "EtcdMemberRemovalFailed"};
    case ActionKind::kReleaseEtcdNode:
      return {"ReleaseEtcdNode", "", ""};
  }
  return {"Unknown", "", ""};
}

void MarkActionFailed(const MachineObservation& obs, const MachineAction& action,
                      const kube::Status& error, MachinePlan& plan) {
  const ActionRow row = RowOf(action.kind);
  if (row.failure_condition.empty() || error.IsConflict()) return;
  Conditions c(obs.hm.status.conditions, obs.hm.metadata.generation);
  c.mutable_current() = plan.status.conditions;
  c.Mark(row.failure_condition, false, row.failure_reason,
         std::string(row.name) + " " + action.name + ": " + error.message(), row.failure_warns);
  SummarizeReady(c, plan.status.ready.value_or(false), obs.deleting, kMachineReadyOrder);
  plan.status.conditions = c.current();
  plan.events = c.warnings();
}

std::string MachineOwnerId(const MachineObservation& obs) {
  return harvester::IpOwnerId(obs.management_cluster_id, obs.hm.metadata.namespace_,
                              obs.hm.metadata.name);
}

harvester::ClusterIdentity MachineIdentity(const MachineObservation& obs) {
  return {obs.management_cluster_id, obs.hm.metadata.namespace_, obs.cluster_name};
}

bool StatusChangeIsUrgent(const api::HarvesterMachineStatus& reported, const MachinePlan& plan,
                          bool deleting) {
  const api::HarvesterMachineStatus& planned = plan.status;
  if (!plan.events.empty() || planned.failure_reason != reported.failure_reason ||
      planned.failure_message != reported.failure_message) {
    return true;
  }
  if (deleting) return false;  // the object goes: its progress is the Ready reason only
  // The last step: the Node registered and initialised. Cluster API looks at
  // the Machine again when this object changes, which the first
  // control-plane machine needs before its Machine has a nodeRef.
  auto finished = [](const api::HarvesterMachineStatus& s) {
    return s.ready.value_or(false) && api::IsConditionTrue(s.conditions, kNodeRegistered) &&
           api::IsConditionTrue(s.conditions, kNodeInitialized);
  };
  if (finished(planned) && !finished(reported)) return true;
  const api::Condition* paused_before =
      api::FindCondition(reported.conditions, api::kPausedCondition);
  const api::Condition* paused_now = api::FindCondition(planned.conditions, api::kPausedCondition);
  const bool paused_changed =
      (paused_before == nullptr) != (paused_now == nullptr) ||
      (paused_now != nullptr && paused_before->status != paused_now->status);
  return planned.ready.value_or(false) != reported.ready.value_or(false) ||
         (planned.initialization ? planned.initialization->provisioned.value_or(false) : false) !=
             (reported.initialization ? reported.initialization->provisioned.value_or(false)
                                      : false) ||
         planned.addresses != reported.addresses ||
         planned.allocated_ip_address != reported.allocated_ip_address ||
         planned.allocated_pool_ref != reported.allocated_pool_ref || paused_changed;
}

}  // namespace caphv::controllers
