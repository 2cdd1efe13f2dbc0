// File: controllers/cluster/cluster_observe.cc
//
// HarvesterClusterReconciler::Observe: everything the planner needs, from
// caches only (the management cluster's informers and the Harvester
// connection's stores). Live reads are actions the planner asks for.

#include <set>

#include "controllers/capi.h"
#include "controllers/cluster/cluster_reconciler.h"
#include "controllers/harvester_connections.h"
#include "harvester/cloud_provider.h"
#include "harvester/load_balancer.h"
#include "harvester/naming.h"

namespace caphv::controllers {

ClusterObservation HarvesterClusterReconciler::Observe(ClusterScope& r, api::HarvesterCluster hc) {
  ClusterObservation o;
  const kube::Object& object = *r.object;
  o.hc = std::move(hc);
  o.status_foreign = ToOurConditions(o.hc.status.conditions, kClusterConditionTypes);
  o.key = r.req.Key();
  o.deleting = IsDeleting(object);
  o.has_finalizer =
      HasFinalizer(object, kClusterFinalizer) || HasFinalizer(object, kLegacyClusterFinalizer);
  o.management_cluster_id =
      harvester::ManagementClusterIdOf(o.hc.metadata.annotations, ctx_.management_cluster_id);
  o.identity_recorded =
      o.hc.metadata.annotations.contains(std::string(harvester::kAnnotationManagementClusterId));
  o.ever_connected = EverConnected(o.hc);

  o.cluster_name = CapiOwnerName(object, "Cluster");
  if (o.cluster_name.empty()) {
    if (auto it = o.hc.metadata.labels.find(std::string(kClusterNameLabel));
        it != o.hc.metadata.labels.end()) {
      o.cluster_name = it->second;
    }
  }
  kube::ObjectPtr cluster;
  if (!o.cluster_name.empty()) cluster = ctx_.clusters->store().Get(r.req.ns, o.cluster_name);
  o.paused = IsPaused(cluster.get(), object);
  if (cluster) {
    if (const auto ep = api::RealControlPlaneEndpoint(*cluster)) {
      o.cluster_endpoint = harvester::Endpoint{ep->host, ep->port};
    }
  }
  if (o.paused || o.cluster_name.empty()) return o;
  if (o.deleting) {
    if (!o.has_finalizer) return o;
    o.machines = static_cast<int>(
        ctx_.harvester_machines->store()
            .KeysByLabels(r.req.ns, {{std::string(kClusterNameLabel), o.cluster_name}})
            .size());
    if (o.machines > 0) return o;  // the planner waits for them first
  }
  // Looked up even before the finalizer exists: the loop adds the finalizer
  // and plans again on this observation.
  ObserveHarvester(r, o);
  return o;
}

void HarvesterClusterReconciler::ObserveHarvester(ClusterScope& r, ClusterObservation& o) {
  const api::HarvesterCluster& hc = o.hc;
  ConnectionLookup lookup =
      ctx_.connections->Get(hc.spec.identity_secret.namespace_, hc.spec.identity_secret.name,
                            Waiter{Waiter::Kind::kCluster, r.req});
  o.harvester = ViewOfConnection(lookup);
  o.now = std::chrono::system_clock::now();
  if (!lookup.value) return;
  r.conn = lookup.value;
  const Connection& conn = *r.conn;
  const std::string& ns = hc.spec.target_namespace;
  const harvester::ClusterIdentity identity = ClusterIdentityOf(o);
  o.publish_failure_domains = ctx_.publish_failure_domains;
  if (o.publish_failure_domains && !o.deleting) {
    r.conn->WatchHosts(r.req);
    o.hosts = r.conn->hosts();
  } else {
    r.conn->UnwatchHosts(r.req);  // a cluster that goes is not woken again
  }

  // The pools the spec names, and every pool carrying this cluster's id
  // (what a deletion removes).
  const std::vector<std::string> named = SpecPoolNames(hc);
  const std::set<std::string> wanted(named.begin(), named.end());
  for (const auto& pool : conn.pools().List()) {
    const std::string name = kube::NameOf(*pool);
    if (wanted.contains(name) || harvester::OwnedBy(LabelsOf(*pool), identity)) {
      o.pools[name] = ViewOfPool(*pool, o);
    }
  }
  const std::string lb_name = harvester::LoadBalancerName(hc.metadata.namespace_, hc.metadata.name);
  if (auto lb = conn.load_balancers().Get(ns, lb_name)) o.lb = ViewOfLoadBalancer(*lb, o);
  const auto names = harvester::CloudProviderNamesFor(identity, ns);
  if (auto token = conn.secrets().Get(ns, names.token_secret)) {
    o.cloud_provider.token_secret = ViewOfTokenSecret(*token, o);
  }
}

}  // namespace caphv::controllers
