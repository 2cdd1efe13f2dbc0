// File: controllers/cluster_reconciler.h
//
// HarvesterClusterReconciler: the Cluster API InfraCluster side of CAPHV.
//
// Normal path, each step a short function that returns early while it waits
// for an event:
//   owner Cluster -> pause -> finalizer -> Harvester connection (identity
//   Secret) -> target namespace -> IP pools CAPHV creates from inline specs
//   -> control-plane LoadBalancer -> spec.controlPlaneEndpoint from its
//   address (once; a user-set endpoint is respected and no load balancer is
//   made) -> cloud-provider credentials (ServiceAccount, bindings, token
//   Secret, cloud-config injected into the bootstrap manifests ConfigMap)
//   -> status.ready / initialization.provisioned.
// Delete path: wait until no HarvesterMachine of the cluster is left, then
// delete the LoadBalancer (and wait until it is gone), the IPPools CAPHV
// created, the cloud-provider objects, and only then the finalizer.
//
// Every condition carries a PascalCase reason; transitions emit Events; the
// status is written by server-side apply at the end of each reconcile.
//
// Thread safety: Reconcile() may run concurrently for different keys.

#pragma once

#include <map>
#include <mutex>
#include <string>

#include "controllers/context.h"
#include "kube/controller.h"

namespace caphv::controllers {

class HarvesterClusterReconciler {
 public:
  explicit HarvesterClusterReconciler(Context& ctx) : ctx_(ctx) {}
  kube::Result Reconcile(const kube::Request& req);

 private:
  struct Scope;
  kube::Result ReconcileNormal(Scope& s);
  kube::Result ReconcileDelete(Scope& s);
  kube::Result ReconcileLoadBalancer(Scope& s);
  kube::Result ReconcileCloudProvider(Scope& s);
  kube::Status ReconcilePools(Scope& s);
  void Emit(Scope& s, bool warning, std::string_view reason, const std::string& message);

  Context& ctx_;
  std::mutex mu_;
  std::map<std::string, std::string> cluster_label_of_;  // HarvesterCluster key -> metrics label
};

}  // namespace caphv::controllers
