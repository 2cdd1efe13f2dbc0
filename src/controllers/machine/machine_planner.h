// File: controllers/machine/machine_planner.h
//
// The planner behind PlanMachine (machine_plan.h), one class over the files
// of its phases:
//   machine_plan.cc            the entry (Run: paused, normal or delete, then
//                              Ready) and what the phases share (adoption)
//   machine_plan_provision.cc  the normal path up to a VM: owner, finalizer,
//                              cluster infrastructure, bootstrap data, the
//                              Harvester connection, an address, the creation
//                              inputs, the cloud-init Secret, the VM
//   machine_plan_running.cc    the normal path once the VM exists: its state
//                              reported, its Node registered and initialised,
//                              the etcd Node guarded
//   machine_plan_delete.cc     the delete path, the etcd member first
// Internal to those files: the reconciler calls PlanMachine.
//
// Thread safety: one planner per PlanMachine call, over values.

#pragma once

#include <map>
#include <string>
#include <string_view>

#include "controllers/machine/machine_plan.h"
#include "controllers/reconcile.h"

namespace caphv::controllers {

class MachinePlanner : PlannerBase<MachineObservation, MachinePlan> {
 public:
  MachinePlanner(const MachineObservation& obs, MachinePlan& plan)
      : PlannerBase(obs, plan, Conditions(obs.hm.status.conditions, obs.hm.metadata.generation)),
        ns_(obs.hc ? obs.hc->spec.target_namespace : std::string()),
        name_(obs.hm.metadata.name),
        failure_domain_(harvester::EffectiveFailureDomain(obs.machine_failure_domain,
                                                          obs.hm.spec.failure_domain)) {}

  void Run();

 private:
  // --- outcomes ----------------------------------------------------------------
  void Act(ActionKind kind, std::string name = {}, std::string value = {}, kube::Object body = {},
           bool create = false) {
    plan_.action = MachineAction{kind, std::move(name), std::move(value), std::move(body), create};
  }

  bool PoolMode() const {
    return obs_.hc && harvester::MachineVmNetwork(obs_.hm, *obs_.hc) &&
           !obs_.hm.spec.network_config;
  }
  // Nothing can exist on Harvester for a machine that never got a VM
  // (providerID) nor an address.
  bool NothingCreated() const {
    return obs_.hm.spec.provider_id.empty() && obs_.hm.status.allocated_ip_address.empty();
  }

  // --- shared: adoption (machine_plan.cc) --------------------------------------
  bool Recorded(const VmView& vm) const;
  std::map<std::string, std::string> OwnVmLabels() const;
  void Adopt(const VmView& vm);

  // --- normal, up to a VM (machine_plan_provision.cc) --------------------------
  void Normal();
  void ReportVmLost();
  void MarkBootstrapData(const std::string& not_merged_because);
  bool DeriveAddress();
  void Allocate();
  void Create();

  // --- normal, once the VM exists (machine_plan_running.cc) --------------------
  void ReportVm(const VmView& vm);
  void GuardEtcdNode();
  void InitNode(const std::string& provider_id);
  void CheckNode(const std::string& provider_id);

  // --- delete (machine_plan_delete.cc) -----------------------------------------
  void Delete();
  bool EtcdStepsOverdue() const;
  bool RemoveEtcdMember();

  const std::string ns_;
  const std::string name_;
  // Where the machine is placed: Machine.spec.failureDomain, else its own.
  const std::string failure_domain_;
};

}  // namespace caphv::controllers
