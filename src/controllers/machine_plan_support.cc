// File: controllers/machine_plan_support.cc
//
// The small functions of machine_plan.h beside the planner itself: action
// names (logs, condition messages) and the machine's identities.

#include "api/conditions.h"
#include "controllers/machine_plan.h"

namespace caphv::controllers {

std::string_view ActionName(ActionKind kind) {
  switch (kind) {
    case ActionKind::kAddFinalizer:
      return "AddFinalizer";
    case ActionKind::kReadCreationInputs:
      return "ReadCreationInputs";
    case ActionKind::kReserveAddress:
      return "ReserveAddress";
    case ActionKind::kApplyCloudInitSecret:
      return "ApplyCloudInitSecret";
    case ActionKind::kCreateVm:
      return "CreateVM";
    case ActionKind::kAdoptCloudInitSecret:
      return "AdoptCloudInitSecret";
    case ActionKind::kAdoptVm:
      return "AdoptVM";
    case ActionKind::kAdoptVmi:
      return "AdoptVMI";
    case ActionKind::kSetProviderID:
      return "SetProviderID";
    case ActionKind::kMarkPvcsForRemoval:
      return "MarkPVCsForRemoval";
    case ActionKind::kDeleteVm:
      return "DeleteVM";
    case ActionKind::kDeletePvc:
      return "DeletePVC";
    case ActionKind::kDeleteCloudInitSecret:
      return "DeleteCloudInitSecret";
    case ActionKind::kConfirmVmGone:
      return "ConfirmVMGone";
    case ActionKind::kReleaseAddress:
      return "ReleaseAddress";
    case ActionKind::kRemoveFinalizer:
      return "RemoveFinalizer";
    case ActionKind::kInitializeNode:
      return "InitializeNode";
    case ActionKind::kGuardEtcdNode:
      return "GuardEtcdNode";
    case ActionKind::kRequestEtcdRemoval:
      return "RequestEtcdMemberRemoval";
    case ActionKind::kReleaseEtcdNode:
      return "ReleaseEtcdNode";
  }
  return "Unknown";
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
