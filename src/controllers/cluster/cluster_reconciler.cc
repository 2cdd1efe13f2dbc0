// File: controllers/cluster/cluster_reconciler.cc
//
// The HarvesterCluster reconcile loop and its report; observe and execute
// live in cluster_observe.cc and cluster_execute.cc.

#include "controllers/cluster/cluster_reconciler.h"

#include <chrono>

#include "api/codec.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"

namespace caphv::controllers {

kube::Result HarvesterClusterReconciler::Reconcile(const kube::Request& req) {
  const std::string key = req.Key();
  auto head = ReconcileHead<api::HarvesterCluster>(
      ctx_, *ctx_.harvester_clusters, api::Kind::kHarvesterCluster, req, [&] {
        std::lock_guard lock(mu_);
        if (auto it = label_of_.find(key); it != label_of_.end()) {
          metrics::DeleteClusterReady(it->second);
          metrics::SetIdentityTokenExpiry(it->second, std::nullopt);
          label_of_.erase(it);
        }
      });
  if (head.end) return *std::move(head.end);
  const auto start = std::chrono::steady_clock::now();
  ClusterScope r;
  r.req = req;
  r.object = std::move(head.object);
  r.log = kube::log::Root().WithName("harvestercluster").WithValues({{"HarvesterCluster", key}});
  ClusterObservation o = Observe(r, std::move(head.value));
  if (!o.cluster_name.empty()) {
    r.metrics_label = key;  // caphv_cluster_ready{cluster}: the HarvesterCluster, as in Go
    r.log = r.log.WithValues({{"Cluster", o.cluster_name}});
    std::lock_guard lock(mu_);
    label_of_[key] = r.metrics_label;
  }

  kube::Result result = RunPlan(
      r.log, [&] { return PlanCluster(o); },
      [&](const ClusterAction& action, const ClusterPlan& plan) {
        kube::Status st = Execute(r, action, o);
        // That action wrote this plan's conditions: the next plan sees no
        // transition in them, so their warnings are recorded now.
        if (st.ok() && action.kind == ClusterActionKind::kRecordConnection) {
          for (const auto& e : plan.events) {
            if (e.warning) Emit(r, e);
          }
        }
        return st;
      },
      [&](ClusterPlan plan, const ClusterAction* failed, const kube::Status& st) {
        return Report(r, o, std::move(plan), failed, st);
      });
  metrics::ObserveClusterReconcile(
      o.deleting ? metrics::Operation::kDelete : metrics::Operation::kNormal, SecondsSince(start));
  return result;
}

kube::Result HarvesterClusterReconciler::Report(ClusterScope& r, const ClusterObservation& o,
                                                ClusterPlan plan, const ClusterAction* failed,
                                                const kube::Status& error) {
  if (failed != nullptr) MarkActionFailed(o, *failed, error, plan);
  for (const auto& e : plan.events) Emit(r, e);
  if (!r.metrics_label.empty() && !o.deleting && !o.paused) {
    metrics::SetClusterReady(r.metrics_label, plan.status.ready.value_or(false));
    if (o.harvester.ready) {
      metrics::SetIdentityTokenExpiry(r.metrics_label,
                                      o.harvester.identity_expiry
                                          ? std::optional(o.harvester.identity_expiry->expires_at)
                                          : std::nullopt);
    }
  }
  if ((plan.status != o.hc.status || o.status_foreign) && !r.finalizer_removed) {
    auto written = (o.status_foreign ? ReplaceStatus : ApplyStatus)(
        *ctx_.mgmt, api::ResourceOf(api::Kind::kHarvesterCluster), *r.object,
        api::Encode(plan.status));
    if (written.ok()) {
      ctx_.harvester_clusters->RecordWrite(*written);  // read-your-writes
    } else if (!written.status().IsNotFound() && error.ok()) {
      return kube::Result::Error(written.status());
    }
  }
  if (!error.ok()) {
    r.log.V(1).Info("Action failed", {{"action", std::string(ActionName(failed->kind))},
                                      {"name", failed->name},
                                      {"error", error.message()}});
    return kube::Result::Error(error);
  }
  r.log.V(1).Info("Waiting", {{"for", plan.wait.why}});
  return ResultOf(plan.wait);
}

}  // namespace caphv::controllers
