// File: controllers/cluster/cluster_plan.cc
//
// PlanCluster: the planner itself (the normal and the delete path); the
// views, desired objects and failure reports it shares with the reconciler
// are in cluster_plan_support.cc.

#include "controllers/cluster/cluster_plan.h"

#include <algorithm>
#include <set>

#include "api/codec.h"
#include "controllers/capi.h"
#include "harvester/cloud_provider.h"
#include "harvester/identity_expiry.h"
#include "harvester/ipam.h"

namespace caphv::controllers {

namespace {

using kube::Object;
using std::chrono::seconds;

class Planner : PlannerBase<ClusterObservation, ClusterPlan> {
 public:
  Planner(const ClusterObservation& obs, ClusterPlan& plan)
      : PlannerBase(obs, plan, Conditions(obs.hc.status.conditions, obs.hc.metadata.generation)),
        ns_(obs.hc.spec.target_namespace),
        identity_(ClusterIdentityOf(obs)) {}

  void Run() {
    plan_.status = obs_.hc.status;
    SyncPaused(conditions_, obs_.paused);
    if (obs_.paused) {
      plan_.wait = Wait::ForEvent("paused");
    } else if (obs_.deleting) {
      Delete();
    } else {
      Normal();
    }
    if (!obs_.paused) Summarize(conditions_);
    if (!plan_.action && !obs_.paused && !obs_.deleting) {
      if (auto d = UntilIdentityStateChanges();
          d && (plan_.wait.kind == Wait::Kind::kEvent || *d < plan_.wait.after)) {
        plan_.wait = Wait::After(*d, "the identity's credentials change state");
      }
    }
    plan_.status.conditions = conditions_.current();
    plan_.events = conditions_.warnings();
    plan_.events.insert(plan_.events.end(), notes_.begin(), notes_.end());
  }

 private:
  // --- outcomes ----------------------------------------------------------------
  void Act(ClusterActionKind kind, std::string name = {}, Object body = {},
           std::optional<EventNote> event = std::nullopt,
           CloudProviderObject object = CloudProviderObject::kServiceAccount) {
    plan_.action = ClusterAction{kind, std::move(name), std::move(body), object, std::move(event)};
  }
  void Summarize(Conditions& c) const {
    SummarizeReady(c, plan_.status.ready.value_or(false), obs_.deleting, kClusterReadyOrder);
  }

  // --- normal ------------------------------------------------------------------
  void Normal() {
    if (obs_.cluster_name.empty()) {
      return WaitForEvent("waiting for Cluster API to set the owner Cluster");
    }
    if (!obs_.has_finalizer || !obs_.identity_recorded) {
      // The identity is recorded before anything is made on Harvester: the
      // cluster's objects there stay its own wherever the object moves.
      Object patch = Object::object();
      if (!obs_.identity_recorded) {
        patch["metadata"]["annotations"][std::string(harvester::kAnnotationManagementClusterId)] =
            obs_.management_cluster_id;
      }
      return Act(ClusterActionKind::kAddFinalizer, {}, std::move(patch));
    }
    if (!Connected()) return;
    FailureDomains();
    if (!obs_.namespace_ready) return Act(ClusterActionKind::kEnsureNamespace, ns_);
    Mark(kTargetNamespaceReady, true, "TargetNamespaceReady", "");
    if (!obs_.ever_connected) {
      // Before the first object is made on Harvester, the status says it was
      // reached: a deletion with a broken identity then keeps the finalizer.
      Conditions reported = conditions_;
      Summarize(reported);
      api::HarvesterClusterStatus status = plan_.status;
      status.conditions = reported.current();
      return Act(ClusterActionKind::kRecordConnection, {}, api::Encode(status));
    }
    if (!Pools()) return;
    harvester::Endpoint endpoint;
    if (!LoadBalancer(endpoint)) return;
    // The endpoint is real: the infrastructure is provisioned.
    if (!obs_.hc.status.ready.value_or(false)) {
      notes_.push_back(
          {false, "InfrastructureReady",
           "control plane endpoint " + endpoint.host + ":" + std::to_string(endpoint.port)});
    }
    plan_.status.ready = true;
    plan_.status.initialization = api::Initialization{true};
    Mark(kInfrastructureReady, true, "InfrastructureReady", "");
    CloudProvider();
  }

  // Published from the hosts once they are known; kept as reported while
  // they are not (a restart, an identity that may not list Nodes).
  void FailureDomains() {
    if (!obs_.publish_failure_domains) {
      plan_.status.failure_domains.clear();
    } else if (obs_.hosts) {
      plan_.status.failure_domains = harvester::FailureDomainsOfHosts(*obs_.hosts);
    }
  }

  bool Connected() {
    const ConnectionView& c = obs_.harvester;
    if (c.ready) {
      Mark(kHarvesterConnectionReady, true, "Connected", "connected to Harvester at " + c.server);
      IdentityExpiry();
      return true;
    }
    WaitFor(c, "Harvester connection");
    // A connection being built (after a restart, or a new identity) does not
    // undo what was reported.
    if (!c.failed() && conditions_.Find(kHarvesterConnectionReady) != nullptr) {
      return false;
    }
    Mark(kHarvesterConnectionReady, false, c.reason, c.message, c.failed());
    plan_.status.ready = false;
    return false;
  }

  // The identity's credentials: expired, expiring within
  // harvester::kIdentityExpiryWarning, or valid; no condition when they have
  // no known expiry. Never blocks the rest of the plan.
  void IdentityExpiry() {
    const auto& expiry = obs_.harvester.identity_expiry;
    if (!expiry) {
      conditions_.Remove(kIdentityTokenValid);
      return;
    }
    const std::string secret =
        obs_.hc.spec.identity_secret.namespace_ + "/" + obs_.hc.spec.identity_secret.name;
    const std::string what = harvester::DescribeExpiry(*expiry, obs_.now, /*relative=*/false);
    switch (harvester::StateOf(*expiry, obs_.now)) {
      case harvester::ExpiryState::kExpired:
        Mark(kIdentityTokenValid, false, "IdentityTokenExpired",
             what + ": put a renewed kubeconfig into the identity Secret " + secret, true);
        break;
      case harvester::ExpiryState::kExpiringSoon:
        Mark(kIdentityTokenValid, false, "IdentityTokenExpiringSoon",
             what + ": put a renewed kubeconfig into the identity Secret " + secret +
                 " before then, or CAPHV loses access to Harvester",
             true);
        break;
      case harvester::ExpiryState::kValid:
        Mark(kIdentityTokenValid, true, "IdentityTokenValid", what);
        break;
    }
  }

  // The next moment the identity's state changes by time alone, if any.
  std::optional<kube::Clock::Duration> UntilIdentityStateChanges() const {
    const auto& expiry = obs_.harvester.identity_expiry;
    if (!expiry || !obs_.harvester.ready) return std::nullopt;
    const auto warn_at = expiry->expires_at - harvester::kIdentityExpiryWarning;
    const auto next = obs_.now < warn_at ? warn_at : expiry->expires_at;
    if (next <= obs_.now) return std::nullopt;
    // One second past the boundary, so the next look is on the other side;
    // at least twice a day, so a changed wall clock is noticed.
    const auto d = std::chrono::duration_cast<kube::Clock::Duration>(next - obs_.now) +
                   std::chrono::seconds(1);
    return std::min<kube::Clock::Duration>(d, std::chrono::hours(12));
  }

  bool Pools() {
    bool vm_conflict = false;
    for (const InlinePool& p : InlinePools(obs_.hc)) {
      const std::string_view type = p.load_balancer ? kLoadBalancerReady : kVmIpPoolReady;
      auto it = obs_.pools.find(p.name);
      if (it != obs_.pools.end() && !it->second.ours && !it->second.unlabelled) {
        Mark(type, false, p.load_balancer ? "IPPoolNameConflict" : "VMIPPoolNameConflict",
             "IPPool " + p.name + " exists on Harvester but belongs to another cluster", true);
        if (p.load_balancer) {
          WaitForEvent("IPPool name conflict");
          return false;
        }
        vm_conflict = true;
        continue;
      }
      auto pool = DesiredPool(p, obs_);
      if (!pool.ok()) {
        Mark(type, false, p.load_balancer ? "IPPoolCreationFailed" : "VMIPPoolCreationFailed",
             pool.status().message(), !p.load_balancer);
        WaitForEvent("a valid IPPool spec");
        return false;
      }
      if (it == obs_.pools.end() || !it->second.up_to_date) {
        std::optional<EventNote> adopted;
        if (it != obs_.pools.end() && it->second.unlabelled) {
          // Named after this HarvesterCluster but made without a cluster id:
          // the Go provider's pool for it. Applying labels it as ours.
          adopted = EventNote{false, "IPPoolAdopted",
                              "adopted IPPool " + p.name + " (" + p.what +
                                  "), made for this HarvesterCluster without a cluster id"};
        }
        Act(p.load_balancer ? ClusterActionKind::kApplyLoadBalancerPool
                            : ClusterActionKind::kApplyPool,
            p.name, std::move(pool).value(), std::move(adopted));
        return false;
      }
    }
    if (!obs_.hc.spec.vm_network_config || vm_conflict) return true;
    std::string missing;
    for (const auto& ref : harvester::VmPoolRefs(obs_.hc)) {
      if (!obs_.pools.contains(ref)) missing += (missing.empty() ? "" : ", ") + ref;
    }
    if (!missing.empty()) {
      Mark(kVmIpPoolReady, false, "VMIPPoolNotFound",
           "IPPool(s) " + missing + " do not exist on Harvester", true);
    } else {
      Mark(kVmIpPoolReady, true, "VMIPPoolReady", "");
    }
    return true;
  }

  bool LoadBalancer(harvester::Endpoint& endpoint) {
    const auto& user = obs_.hc.spec.control_plane_endpoint;
    const bool endpoint_set = api::ControlPlaneEndpointSet(obs_.hc.spec);
    const std::string name =
        harvester::LoadBalancerName(obs_.hc.metadata.namespace_, obs_.hc.metadata.name);
    const std::string where = ns_ + "/" + name;
    if (endpoint_set && !obs_.lb) {
      // An endpoint the user (or another tool) provides: no load balancer.
      endpoint = {user->host, user->port};
      Mark(kLoadBalancerReady, true, "ExternallyProvided",
           "spec.controlPlaneEndpoint was set by the user; no load balancer is created");
      return true;
    }
    auto desired = DesiredLoadBalancer(obs_);
    if (!desired.ok()) {
      Mark(kLoadBalancerReady, false, "InvalidLoadBalancerConfig", desired.status().message(),
           true);
      WaitForEvent("a valid loadBalancerConfig");
      return false;
    }
    if (obs_.lb && !obs_.lb->ours && !obs_.lb->unlabelled) {
      Mark(kLoadBalancerReady, false, "LoadBalancerNameConflict",
           "LoadBalancer " + where + " exists on Harvester but belongs to another cluster", true);
      WaitForEvent("LoadBalancer name conflict");
      return false;
    }
    if (!obs_.lb || !obs_.lb->up_to_date) {
      std::optional<EventNote> created;
      if (!obs_.lb) {
        created = EventNote{false, "LoadBalancerCreated", "created LoadBalancer " + where};
      } else if (obs_.lb->unlabelled) {
        // Named after this HarvesterCluster but made without a cluster id:
        // the Go provider's load balancer for it.
        created = EventNote{false, "LoadBalancerAdopted",
                            "adopted LoadBalancer " + where +
                                ", made for this HarvesterCluster without a cluster id"};
      }
      Act(ClusterActionKind::kApplyLoadBalancer, name, std::move(desired).value(), created);
      return false;
    }
    if (!obs_.lb->endpoint) {
      Mark(kLoadBalancerReady, false, "WaitingForLoadBalancerAddress",
           "waiting for Harvester to give LoadBalancer " + where + " an address");
      plan_.status.ready = plan_.status.ready.value_or(false) && endpoint_set;
      WaitForEvent("the LoadBalancer's address");  // its status update is an event
      return false;
    }
    const harvester::Endpoint& got = *obs_.lb->endpoint;
    if (!endpoint_set && obs_.cluster_endpoint == got) {
      // The placeholder is back after the address was written, and the
      // Cluster holds the address already: the placeholder belongs to a
      // ClusterClass template (the Go provider's has 0.0.0.0:6443), whose
      // topology controller puts it back after every write. Writing again
      // would only flap the spec between the two for as long as the cluster
      // lives; the Cluster never takes another endpoint.
      endpoint = got;
      Mark(kLoadBalancerReady, true, "LoadBalancerReady",
           "LoadBalancer " + where + " has address " + got.host +
               ", the Cluster's endpoint (spec.controlPlaneEndpoint keeps the placeholder of "
               "its template)");
      return true;
    }
    if (!endpoint_set) {
      // Set once; from then on spec.controlPlaneEndpoint is never changed.
      Object patch = {
          {"spec", {{"controlPlaneEndpoint", {{"host", got.host}, {"port", got.port}}}}}};
      Act(ClusterActionKind::kSetControlPlaneEndpoint, obs_.hc.metadata.name, std::move(patch),
          EventNote{false, "ControlPlaneEndpointSet",
                    "control plane endpoint " + got.host + ":" + std::to_string(got.port) +
                        " from LoadBalancer " + where});
      return false;
    }
    endpoint = {user->host, user->port};
    Mark(kLoadBalancerReady, true, "LoadBalancerReady",
         "LoadBalancer " + where + " has address " + got.host);
    return true;
  }

  void CloudProvider() {
    const auto& requested = obs_.hc.spec.update_cloud_provider_config;
    if (!requested) {
      Mark(kCloudProviderConfigReady, true, "NotRequested",
           "spec.updateCloudProviderConfig is not set");
      return WaitForEvent("nothing: the cluster infrastructure is ready");
    }
    const api::UpdateCloudProviderConfig& ucp = *requested;
    const CloudProviderView& cp = obs_.cloud_provider;
    const auto names = harvester::CloudProviderNamesFor(identity_, ns_);
    if (!cp.token_secret) {
      // The token Secret is made last: while it is missing, so may the others
      // be (none of them is cached). The ServiceAccount comes first: the
      // token Secret names its uid.
      harvester::CloudProviderInputs in;
      in.cluster = identity_;
      in.target_namespace = ns_;
      in.service_account_uid = cp.service_account_uid;
      for (auto& o : harvester::BuildCloudProviderObjects(in)) {
        const CloudProviderObject which = CloudProviderObjectOfKind(o.value("kind", ""));
        if (cp.applied.contains(which)) continue;
        return Act(ClusterActionKind::kApplyCloudProviderObject,
                   CloudProviderObjectName(which, names),
                   WithOwnerAnnotation(std::move(o), obs_.key), std::nullopt, which);
      }
    }
    if (!cp.token_secret || cp.token_secret->pending) {
      Mark(kCloudProviderConfigReady, false, "WaitingForToken",
           "waiting for Harvester to issue the token of ServiceAccount " + ns_ + "/" +
               names.service_account);
      return WaitForEvent("the token");  // the token controller's write is an event
    }
    if (!cp.token_secret->error.empty()) {
      Mark(kCloudProviderConfigReady, false, "CloudProviderConfigFailed", cp.token_secret->error,
           true);
      plan_.wait = Wait::After(seconds(30), "a usable token Secret");
      return;
    }
    const std::string cm = ucp.manifests_config_map_namespace + "/" + ucp.manifests_config_map_name;
    if (!cp.manifests) {
      return Act(ClusterActionKind::kReadManifestsConfigMap, ucp.manifests_config_map_name);
    }
    if (!cp.manifests->error.empty()) {
      Mark(kCloudProviderConfigReady, false, "ManifestsConfigMapUnavailable",
           "cannot read ConfigMap " + cm + ": " + cp.manifests->error, true);
      // A ConfigMap created later is not watched: look again in a while.
      plan_.wait = Wait::After(seconds(30), "the manifests ConfigMap");
      return;
    }
    const Object& object = cp.manifests->object;
    const std::string current = Str(object, {"data", ucp.manifests_config_map_key});
    auto updated = harvester::InjectCloudConfig(current, ucp.cloud_config_credentials_secret_name,
                                                ucp.cloud_config_credentials_secret_key,
                                                cp.token_secret->cloud_config);
    if (!updated.ok()) {
      Mark(kCloudProviderConfigReady, false, "CloudProviderConfigFailed",
           updated.status().message(), true);
      plan_.wait = Wait::After(seconds(30), "valid manifests");
      return;
    }
    if (*updated != current) {
      Object next = object;
      next["data"][ucp.manifests_config_map_key] = *updated;
      return Act(
          ClusterActionKind::kUpdateManifestsConfigMap, ucp.manifests_config_map_name,
          std::move(next),
          EventNote{false, "CloudProviderConfigured", "cloud-config written into ConfigMap " + cm});
    }
    Mark(kCloudProviderConfigReady, true, "CloudProviderConfigReady", "");
    WaitForEvent("nothing: the cluster infrastructure is ready");
  }

  // --- delete ------------------------------------------------------------------
  void Delete() {
    if (!obs_.has_finalizer) return WaitForEvent("nothing: no finalizer");
    // Without an owner Cluster nothing of the cluster can be found.
    if (obs_.cluster_name.empty()) return Act(ClusterActionKind::kRemoveFinalizer);
    // Machines first: they need this cluster's connection to delete their VMs.
    if (obs_.machines > 0) {
      Mark(kInfrastructureReady, false, "WaitingForMachines",
           std::to_string(obs_.machines) + " HarvesterMachine(s) of the cluster still exist");
      return WaitForEvent("the machines' deletion");
    }
    const ConnectionView& c = obs_.harvester;
    if (!c.ready) {
      if (!obs_.ever_connected) {
        // The identity never worked, so nothing was made on Harvester: do not
        // hold the deletion hostage to credentials that never existed.
        return Act(ClusterActionKind::kRemoveFinalizer, {}, {},
                   EventNote{true, "DeletedWithoutHarvester",
                             "Harvester was never reached (" + c.message +
                                 "); nothing to clean up there"});
      }
      Mark(kHarvesterConnectionReady, false, c.reason,
           "cannot delete the cluster's objects on Harvester: " + c.message +
               " (restore the identity Secret, or remove the finalizer to abandon them)",
           c.failed());
      return WaitFor(c, "Harvester connection");
    }
    // 1. The LoadBalancer, then wait for it to go.
    const std::string lb =
        harvester::LoadBalancerName(obs_.hc.metadata.namespace_, obs_.hc.metadata.name);
    if (obs_.lb && (obs_.lb->ours || obs_.lb->unlabelled)) {
      if (!obs_.lb->deleting) {
        return Act(
            ClusterActionKind::kDeleteLoadBalancer, lb, {},
            EventNote{false, "LoadBalancerDeleted", "deleted LoadBalancer " + ns_ + "/" + lb});
      }
      Mark(kLoadBalancerReady, false, "Deleting",
           "waiting for LoadBalancer " + lb + " to be deleted");
      return WaitForEvent("the LoadBalancer's deletion");
    }
    // The cache may lag behind a LoadBalancer created an instant before.
    if (!obs_.lb && !obs_.lb_absence_confirmed) {
      return Act(ClusterActionKind::kConfirmLoadBalancerGone, lb);
    }
    // 2. The IPPools CAPHV created for this cluster, and those the Go
    // provider created from the same inline specs (named alike, no cluster id).
    std::set<std::string> inline_names;
    for (const InlinePool& p : InlinePools(obs_.hc)) inline_names.insert(p.name);
    for (const auto& [name, pool] : obs_.pools) {
      const bool legacy = pool.unlabelled && inline_names.contains(name);
      if ((pool.ours || legacy) && !pool.deleting) return Act(ClusterActionKind::kDeletePool, name);
    }
    // 3. The cloud-provider objects.
    const auto names = harvester::CloudProviderNamesFor(identity_, ns_);
    for (CloudProviderObject which :
         {CloudProviderObject::kClusterRoleBinding, CloudProviderObject::kRoleBinding,
          CloudProviderObject::kTokenSecret, CloudProviderObject::kServiceAccount}) {
      if (obs_.cloud_provider.deleted.contains(which)) continue;
      return Act(ClusterActionKind::kDeleteCloudProviderObject,
                 CloudProviderObjectName(which, names), {}, std::nullopt, which);
    }
    // 4. What the Go provider v0.2.x made besides (its placeholder Service;
    // its cloud-provider ServiceAccount and ClusterRoleBinding, which it
    // never deleted itself): read live, deleted only on proof.
    if (!obs_.legacy) return Act(ClusterActionKind::kReadLegacyObjects, lb);
    const LegacyView& legacy = *obs_.legacy;
    auto remove = [&](std::string_view kind, const std::string& name) {
      Act(ClusterActionKind::kDeleteLegacyObject, name, Object{{"kind", kind}},
          EventNote{false, "LegacyObjectDeleted",
                    "deleted " + std::string(kind) + " " + name +
                        ", left on Harvester for this cluster by the Go provider"});
    };
    if (legacy.placeholder_service) return remove("Service", lb);
    // The ServiceAccount before the binding that proves it is the cluster's.
    if (legacy.service_account) return remove("ServiceAccount", obs_.cluster_name);
    if (legacy.cluster_role_binding) return remove("ClusterRoleBinding", obs_.cluster_name);
    // 5. Done.
    Act(ClusterActionKind::kRemoveFinalizer);
  }

  const std::string ns_;
  const harvester::ClusterIdentity identity_;
  std::vector<EventNote> notes_;  // Normal events of the final plan
};

}  // namespace

ClusterPlan PlanCluster(const ClusterObservation& obs) {
  ClusterPlan plan;
  Planner(obs, plan).Run();
  return plan;
}

}  // namespace caphv::controllers
