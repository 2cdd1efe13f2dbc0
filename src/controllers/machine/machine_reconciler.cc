// File: controllers/machine/machine_reconciler.cc
//
// The HarvesterMachine reconcile loop and its report; observe and execute
// live in machine_observe.cc and machine_execute.cc.

#include "controllers/machine/machine_reconciler.h"

#include <chrono>

#include "api/codec.h"
#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"

namespace caphv::controllers {

kube::Result HarvesterMachineReconciler::Reconcile(const kube::Request& req) {
  const std::string key = req.Key();
  auto head = ReconcileHead<api::HarvesterMachine>(
      ctx_, *ctx_.harvester_machines, api::Kind::kHarvesterMachine, req, [&] {
        status_hold_.Settled(key);
        std::lock_guard lock(mu_);
        std::erase_if(deletions_, [&](const auto& d) { return d.first.starts_with(key + "/"); });
        std::erase_if(nodes_initialized_,
                      [&](const std::string& k) { return k.starts_with(key + "/"); });
        if (auto it = cluster_of_.find(key); it != cluster_of_.end()) {
          metrics::DeleteMachineStatus(it->second, key);
          cluster_of_.erase(it);
        }
      });
  if (head.end) return *std::move(head.end);
  const auto start = std::chrono::steady_clock::now();
  MachineScope r;
  r.req = req;
  r.object = std::move(head.object);
  r.hm = std::move(head.value);
  r.log = kube::log::Root().WithName("harvestermachine").WithValues({{"HarvesterMachine", key}});
  MachineObservation o = Observe(r);
  if (!o.cluster_name.empty()) {
    std::lock_guard lock(mu_);
    cluster_of_[key] = req.ns + "/" + o.cluster_name;
  }

  kube::Result result = RunPlan(
      r.log, [&] { return PlanMachine(o); },
      [&](const MachineAction& action, const MachinePlan&) { return Execute(r, action, o); },
      [&](MachinePlan plan, const MachineAction* failed, const kube::Status& st) {
        return Report(r, o, std::move(plan), failed, st);
      });
  metrics::ObserveMachineReconcile(
      o.deleting ? metrics::Operation::kDelete : metrics::Operation::kNormal, SecondsSince(start));
  return result;
}

kube::Result HarvesterMachineReconciler::Report(MachineScope& r, const MachineObservation& o,
                                                MachinePlan plan, const MachineAction* failed,
                                                const kube::Status& error) {
  if (failed != nullptr) MarkActionFailed(o, *failed, error, plan);
  for (const auto& e : plan.events) Emit(r, e);
  // A member left behind when the VM goes anyway (a failed removal request
  // is counted by the executor).
  if (plan.etcd_member_left) metrics::EtcdMemberRemoveErrorsTotal().Increment();
  if (plan.vm_lost) metrics::MachineVmLostTotal().Increment();
  if (r.conn) {
    if (plan.wait_for_pool) {
      // Every pool exhausted: a failed allocation attempt, as the Go provider counts it.
      metrics::IPPoolAllocationsTotal().Increment();
      metrics::IPPoolAllocationErrorsTotal().Increment();
      r.conn->WaitForPool(r.req);
    }
    for (const auto& pvc : plan.wait_for_pvcs) {
      r.conn->WaitForDeletion(o.hc->spec.target_namespace + "/" + pvc, r.req);
    }
  }
  if (!o.cluster_name.empty() && !o.deleting) {
    metrics::SetMachineStatus(r.req.ns + "/" + o.cluster_name, r.req.Key(),
                              plan.status.ready.value_or(false));
  }
  const bool became_ready =
      plan.status.ready.value_or(false) && !o.hm.status.ready.value_or(false) && !o.deleting;
  kube::Clock::Duration held = kube::Clock::Duration::zero();
  if ((plan.status != o.hm.status || o.status_foreign) && !r.finalizer_removed) {
    held =
        status_hold_.Pending(r.req.Key(), o.status_foreign || failed != nullptr ||
                                              StatusChangeIsUrgent(o.hm.status, plan, o.deleting));
  }
  if (held == kube::Clock::Duration::zero() && (plan.status != o.hm.status || o.status_foreign) &&
      !r.finalizer_removed) {
    auto written = (o.status_foreign ? ReplaceStatus : ApplyStatus)(
        *ctx_.mgmt, api::ResourceOf(api::Kind::kHarvesterMachine), *r.object,
        api::Encode(plan.status));
    if (written.ok()) {
      ctx_.harvester_machines->RecordWrite(*written);  // read-your-writes
      if (const api::Condition* ready =
              api::FindCondition(plan.status.conditions, api::kReadyCondition)) {
        r.log.V(1).Info("Wrote the status", {{"ready", ready->status}, {"reason", ready->reason}});
      }
      if (became_ready) {
        metrics::MachineCreationDuration().Observe(
            std::chrono::duration<double>(
                std::chrono::system_clock::now() -
                api::ParseTime(o.vm ? o.vm->created : o.hm.metadata.creation_timestamp)
                    .value_or(std::chrono::system_clock::now()))
                .count());
        r.log.Info("The machine is ready", {{"address", plan.status.addresses.front().address}});
      }
    } else if (!written.status().IsNotFound() && error.ok()) {
      return kube::Result::Error(written.status());
    }
  }
  if (held == kube::Clock::Duration::zero()) status_hold_.Settled(r.req.Key());
  if (!error.ok()) {
    r.log.V(1).Info("Action failed", {{"action", std::string(ActionName(failed->kind))},
                                      {"error", error.message()}});
    return kube::Result::Error(error);
  }
  r.log.V(1).Info("Waiting", {{"for", plan.wait.why}});
  // A held status comes back to be written when its hold ends.
  return held == kube::Clock::Duration::zero() ? ResultOf(plan.wait)
                                               : NoLaterThan(ResultOf(plan.wait), held);
}

}  // namespace caphv::controllers
