// File: controllers/machine/machine_plan.cc
//
// PlanMachine and the planner's entry (Run); what its phases share:
// adoption. The phases: machine_plan_provision.cc, machine_plan_running.cc,
// machine_plan_delete.cc (machine_planner.h).

#include "controllers/machine/machine_plan.h"

#include "controllers/machine/machine_planner.h"

namespace caphv::controllers {

void MachinePlanner::Run() {
  plan_.status = obs_.hm.status;
  SyncPaused(conditions_, obs_.paused);
  if (!obs_.paused) {
    // The v1beta2 contract's status.failureDomain: where the machine is.
    plan_.status.failure_domain = failure_domain_;
  }
  if (obs_.paused) {
    plan_.wait = Wait::ForEvent("paused");
  } else if (obs_.deleting) {
    Delete();
  } else {
    Normal();
  }
  if (!obs_.paused) {
    SummarizeReady(conditions_, plan_.status.ready.value_or(false), obs_.deleting,
                   kMachineReadyOrder);
  }
  plan_.status.conditions = conditions_.current();
  plan_.events = conditions_.warnings();
}

// spec.providerID names the VM: made for this machine (by the Go provider,
// or under another management cluster id), whatever its labels say.
bool MachinePlanner::Recorded(const VmView& vm) const {
  return !vm.uid.empty() &&
         obs_.hm.spec.provider_id == std::string(api::kProviderIDPrefix) + vm.uid;
}

std::map<std::string, std::string> MachinePlanner::OwnVmLabels() const {
  harvester::VmInputs vi;
  vi.name = name_;
  vi.cluster = MachineIdentity(obs_);
  vi.control_plane = obs_.control_plane;
  return harvester::VmLabels(vi);
}

// Adoption, cloud-init Secret first: once the VM carries this cluster's
// labels nothing looks for its Secret again (a crash in between repeats
// the Secret's patch, which changes nothing).
void MachinePlanner::Adopt(const VmView& vm) {
  const bool secret_cached_ours = vm.cloud_init_secret == harvester::CloudInitSecretName(name_) &&
                                  obs_.cloud_init_secret && obs_.cloud_init_secret->ours;
  if (!vm.cloud_init_secret.empty() && !secret_cached_ours && !obs_.cloud_init_secret_adopted) {
    return Act(
        ActionKind::kAdoptCloudInitSecret, vm.cloud_init_secret, {},
        harvester::AdoptSecretPatch(harvester::ClusterLabels(MachineIdentity(obs_)), obs_.key));
  }
  Act(ActionKind::kAdoptVm, name_, {}, harvester::AdoptVmPatch(OwnVmLabels(), obs_.key));
}

MachinePlan PlanMachine(const MachineObservation& obs) {
  MachinePlan plan;
  MachinePlanner(obs, plan).Run();
  return plan;
}

}  // namespace caphv::controllers
