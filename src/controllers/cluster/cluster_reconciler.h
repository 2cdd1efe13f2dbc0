// File: controllers/cluster/cluster_reconciler.h
//
// HarvesterClusterReconciler: the Cluster API InfraCluster side of CAPHV.
// Each reconcile is observe -> plan -> execute -> report:
//   * Observe (cluster_observe.cc) builds a ClusterObservation from caches
//     only: the HarvesterCluster, its owner Cluster (pause), the cluster's
//     HarvesterMachines, and — through a Harvester connection that never
//     blocks (HarvesterConnections::Get answers at once) — the cached IPPools,
//     LoadBalancer and token Secret.
//   * PlanCluster (cluster_plan.h) decides the next action and the status.
//   * Execute (cluster_execute.cc) makes one API call per action and folds
//     its result into the observation; live reads (the manifests ConfigMap,
//     a LoadBalancer the cache does not show during deletion) are actions.
//   * Report (cluster_reconciler.cc) emits the plan's events, writes the
//     status once by server-side apply (recorded in the informer for
//     read-your-writes) and returns the plan's Wait.
// The steps of the normal and the delete path are documented in
// cluster_plan.h.
//
// Thread safety: Reconcile() may run concurrently for different keys; the
// metrics-label map is guarded by mu_.

#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api/harvester_cluster.h"
#include "controllers/cluster/cluster_plan.h"
#include "controllers/context.h"
#include "controllers/scope.h"
#include "kube/controller.h"
#include "kube/log.h"

namespace caphv::controllers {

class HarvesterClusterReconciler {
 public:
  explicit HarvesterClusterReconciler(Context& ctx) : ctx_(ctx) {}
  kube::Result Reconcile(const kube::Request& req);

 private:
  // cluster_observe.cc
  ClusterObservation Observe(ClusterScope& r, api::HarvesterCluster hc);
  void ObserveHarvester(ClusterScope& r, ClusterObservation& o);

  // cluster_execute.cc
  kube::Status Execute(ClusterScope& r, const ClusterAction& a, ClusterObservation& o);
  kube::Status ExecuteManagement(ClusterScope& r, const ClusterAction& a, ClusterObservation& o);
  kube::Status ExecuteHarvester(ClusterScope& r, const ClusterAction& a, ClusterObservation& o);
  // Merge-patches the HarvesterCluster and records the result.
  kube::Status PatchCluster(ClusterScope& r, const kube::Object& patch);

  // cluster_reconciler.cc
  kube::Result Report(ClusterScope& r, const ClusterObservation& o, ClusterPlan plan,
                      const ClusterAction* failed, const kube::Status& error);
  void Emit(ClusterScope& r, const EventNote& e) { EmitEvent(ctx_.recorder.get(), *r.object, e); }

  Context& ctx_;
  std::mutex mu_;
  std::map<std::string, std::string> label_of_;  // HarvesterCluster key -> metrics label
};

}  // namespace caphv::controllers
