// File: controllers/cluster_reconciler.cc

#include "controllers/cluster_reconciler.h"

#include <chrono>

#include "api/codec.h"
#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"
#include "harvester/cloud_provider.h"
#include "harvester/ipam.h"
#include "harvester/load_balancer.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "kube/log.h"

namespace caphv::controllers {

namespace {

using kube::Object;
using kube::Result;
using kube::Status;

constexpr std::string_view kConnectionReady = "HarvesterConnectionReady";
constexpr std::string_view kTargetNamespaceReady = "TargetNamespaceReady";
constexpr std::string_view kLoadBalancerReady = "LoadBalancerReady";
constexpr std::string_view kCloudProviderConfigReady = "CloudProviderConfigReady";
constexpr std::string_view kVmIpPoolReady = "VMIPPoolReady";
constexpr std::string_view kInfrastructureReady = "InfrastructureReady";

const kube::GroupVersionResource& HcGvr() {
  static const auto gvr = api::ResourceOf(api::Kind::kHarvesterCluster);
  return gvr;
}

const kube::GroupVersionResource& GvrOfKind(const std::string& kind) {
  if (kind == "ServiceAccount") return kube::resources::kServiceAccounts;
  if (kind == "RoleBinding") return kube::resources::kRoleBindings;
  if (kind == "ClusterRoleBinding") return kube::resources::kClusterRoleBindings;
  return kube::resources::kSecrets;
}

void Annotate(Object& o, const std::string& owner_key) {
  o["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = owner_key;
}

}  // namespace

struct HarvesterClusterReconciler::Scope {
  kube::Request req;
  kube::ObjectPtr object;
  api::HarvesterCluster hc;
  api::HarvesterClusterStatus original;
  kube::ObjectPtr cluster;  // may be null while deleting
  harvester::ClusterIdentity identity;
  std::shared_ptr<Connection> conn;
  std::optional<harvester::Endpoint> endpoint;
  kube::log::Logger log;
  std::string metrics_label;  // "<ns>/<Cluster name>", as caphv_machine_status's cluster

  bool Mark(std::string_view type, bool status, std::string_view reason, std::string message) {
    return MarkCondition(hc.status.conditions, type, status, reason, std::move(message),
                         hc.metadata.generation);
  }
};

void HarvesterClusterReconciler::Emit(Scope& s, bool warning, std::string_view reason,
                                      const std::string& message) {
  if (!ctx_.recorder) return;
  ctx_.recorder->Event(*s.object, warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                       reason, message);
}

Result HarvesterClusterReconciler::Reconcile(const kube::Request& req) {
  const std::string key = req.Key();
  auto object = ctx_.harvester_clusters->store().Get(req.ns, req.name);
  if (!object) {
    std::lock_guard lock(mu_);
    if (auto it = cluster_label_of_.find(key); it != cluster_label_of_.end()) {
      metrics::DeleteClusterReady(it->second);
      cluster_label_of_.erase(it);
    }
    return Result::Done();
  }
  auto decoded = api::Decode<api::HarvesterCluster>(*object);
  if (!decoded.ok()) {
    return Result::Terminal(
        Status(kube::StatusCode::kInvalidArgument,
               "cannot read HarvesterCluster " + key + ": " + decoded.status().message()));
  }
  Scope s;
  s.req = req;
  s.object = object;
  s.hc = std::move(decoded).value();
  s.original = s.hc.status;
  s.log = kube::log::Root().WithName("harvestercluster").WithValues({{"HarvesterCluster", key}});

  std::string cluster_name = CapiOwnerName(*object, "Cluster");
  if (cluster_name.empty()) {
    auto it = s.hc.metadata.labels.find(std::string(kClusterNameLabel));
    if (it != s.hc.metadata.labels.end()) cluster_name = it->second;
  }
  const bool deleting = IsDeleting(*object);
  if (cluster_name.empty()) {
    if (deleting) {
      if (auto p = RemoveFinalizerPatch(*object, kClusterFinalizer, kLegacyClusterFinalizer)) {
        if (Status st = MergePatch(*ctx_.mgmt, HcGvr(), *object, *p);
            !st.ok() && !st.IsNotFound()) {
          return Result::Error(st);
        }
      }
      return Result::Done();
    }
    s.log.V(1).Info("Waiting for Cluster API to set the owner Cluster");
    return Result::Done();
  }
  s.cluster = ctx_.clusters->store().Get(req.ns, cluster_name);
  s.identity = {ctx_.management_cluster_id, req.ns, cluster_name};
  s.metrics_label = req.ns + "/" + cluster_name;
  {
    std::lock_guard lock(mu_);
    cluster_label_of_[key] = s.metrics_label;
  }
  s.log = s.log.WithValues({{"Cluster", cluster_name}});

  const auto start = std::chrono::steady_clock::now();
  Result result;
  if (SyncPausedCondition(s.hc.status.conditions, !deleting && IsPaused(s.cluster.get(), *object),
                          s.hc.metadata.generation)) {
    result = Result::Done();
  } else {
    result = deleting ? ReconcileDelete(s) : ReconcileNormal(s);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics::ObserveClusterReconcile(
      deleting ? metrics::Operation::kDelete : metrics::Operation::kNormal, seconds);

  if (!s.hc.status.conditions.empty()) {
    // Ready summarises the other conditions.
    const api::Condition* lb = api::FindCondition(s.hc.status.conditions, kLoadBalancerReady);
    const api::Condition* conn = api::FindCondition(s.hc.status.conditions, kConnectionReady);
    if (deleting) {
      s.Mark(api::kReadyCondition, false, "Deleting",
             "the cluster infrastructure is being deleted");
    } else if (s.hc.status.ready.value_or(false)) {
      s.Mark(api::kReadyCondition, true, "Ready", "");
    } else if (conn != nullptr && conn->status != api::kConditionTrue) {
      s.Mark(api::kReadyCondition, false, conn->reason, conn->message);
    } else if (lb != nullptr && lb->status != api::kConditionTrue) {
      s.Mark(api::kReadyCondition, false, lb->reason, lb->message);
    }
  }
  if (s.hc.status != s.original) {
    Status st = ApplyStatus(*ctx_.mgmt, HcGvr(), *object, api::Encode(s.hc.status));
    if (!st.ok() && !st.IsNotFound() && result.error.ok()) return Result::Error(st);
  }
  return result;
}

Result HarvesterClusterReconciler::ReconcileNormal(Scope& s) {
  if (auto p = AddFinalizerPatch(*s.object, kClusterFinalizer, kLegacyClusterFinalizer)) {
    if (Status st = MergePatch(*ctx_.mgmt, HcGvr(), *s.object, *p); !st.ok()) {
      return Result::Error(st);
    }
  }

  ConnectionError err;
  s.conn = ctx_.connections->Get(s.hc.spec.identity_secret.namespace_,
                                 s.hc.spec.identity_secret.name, &err);
  if (!s.conn) {
    if (s.Mark(kConnectionReady, false, err.reason, err.status.message())) {
      Emit(s, true, err.reason, err.status.message());
    }
    s.hc.status.ready = false;
    metrics::SetClusterReady(s.metrics_label, false);
    // A Secret change comes as an event; an unreachable Harvester does not.
    if (err.reason == "IdentitySecretUnavailable" || err.reason == "MalformedIdentitySecret") {
      return Result::Done();
    }
    return Result::RequeueAfter(std::chrono::seconds(30));
  }
  s.Mark(kConnectionReady, true, "Connected", "connected to Harvester at " + s.conn->server());

  if (Status st = s.conn->EnsureNamespace(s.hc.spec.target_namespace); !st.ok()) {
    if (s.Mark(kTargetNamespaceReady, false, "TargetNamespaceNotReady",
               "cannot create the Harvester namespace " + s.hc.spec.target_namespace + ": " +
                   st.message())) {
      Emit(s, true, "TargetNamespaceNotReady", st.message());
    }
    return Result::Error(st);
  }
  s.Mark(kTargetNamespaceReady, true, "TargetNamespaceReady", "");

  if (Status st = ReconcilePools(s); !st.ok()) return Result::Error(st);

  Result lb = ReconcileLoadBalancer(s);
  if (!s.endpoint) return lb;

  Result cp = ReconcileCloudProvider(s);

  // The endpoint is real: the infrastructure is provisioned.
  if (!s.hc.status.ready.value_or(false)) {
    Emit(s, false, "InfrastructureReady",
         "control plane endpoint " + s.endpoint->host + ":" + std::to_string(s.endpoint->port));
  }
  s.hc.status.ready = true;
  s.hc.status.initialization = api::Initialization{true};
  s.Mark(kInfrastructureReady, true, "InfrastructureReady", "");
  metrics::SetClusterReady(s.metrics_label, true);
  return cp;
}

Status HarvesterClusterReconciler::ReconcilePools(Scope& s) {
  const std::string owner = s.req.Key();
  auto apply_pool = [&](const std::string& name, const api::IPPoolSpec& spec,
                        const std::string& what) -> Status {
    auto pool = harvester::BuildIpPool(name, spec, harvester::ClusterLabels(s.identity),
                                       what + " of cluster " + owner + " (CAPHV)");
    if (!pool.ok()) return pool.status();
    Annotate(*pool, owner);
    auto cached = s.conn->pools().Get("", name);
    if (cached && cached->contains("spec") &&
        (*cached)["spec"]["ranges"] == (*pool)["spec"]["ranges"]) {
      return Status::Ok();
    }
    auto applied = s.conn->client().Apply(harvester::kIPPools, "", *pool);
    return applied.ok() ? Status::Ok() : applied.status();
  };
  if (s.hc.spec.load_balancer_config.ipam_type == api::kIpamPool &&
      s.hc.spec.load_balancer_config.ip_pool) {
    if (Status st = apply_pool(LbPoolName(s.hc.metadata.namespace_, s.hc.metadata.name),
                               *s.hc.spec.load_balancer_config.ip_pool, "load balancer addresses");
        !st.ok()) {
      s.Mark(kLoadBalancerReady, false, "IPPoolCreationFailed", st.message());
      return st;
    }
  }
  if (!s.hc.spec.vm_network_config) return Status::Ok();
  const api::VMNetworkConfig& vnc = *s.hc.spec.vm_network_config;
  std::vector<std::string> refs = harvester::OrderedPoolRefs(vnc);
  if (vnc.ip_pool) {
    if (Status st = apply_pool(VmPoolName(s.hc.metadata.namespace_, s.hc.metadata.name),
                               *vnc.ip_pool, "VM addresses");
        !st.ok()) {
      if (s.Mark(kVmIpPoolReady, false, "VMIPPoolCreationFailed", st.message())) {
        Emit(s, true, "VMIPPoolCreationFailed", st.message());
      }
      return st;
    }
    if (refs.empty()) refs.push_back(VmPoolName(s.hc.metadata.namespace_, s.hc.metadata.name));
  }
  std::string missing;
  for (const auto& r : refs) {
    if (!s.conn->pools().Get("", r)) missing += (missing.empty() ? "" : ", ") + r;
  }
  if (!missing.empty()) {
    if (s.Mark(kVmIpPoolReady, false, "VMIPPoolNotFound",
               "IPPool(s) " + missing + " do not exist on Harvester")) {
      Emit(s, true, "VMIPPoolNotFound", "IPPool(s) " + missing + " do not exist on Harvester");
    }
  } else {
    s.Mark(kVmIpPoolReady, true, "VMIPPoolReady", "");
  }
  return Status::Ok();
}

Result HarvesterClusterReconciler::ReconcileLoadBalancer(Scope& s) {
  const std::string lb_name =
      harvester::LoadBalancerName(s.hc.metadata.namespace_, s.hc.metadata.name);
  const std::string& ns = s.hc.spec.target_namespace;
  auto cached = s.conn->load_balancers().Get(ns, lb_name);
  const auto& user_endpoint = s.hc.spec.control_plane_endpoint;
  const bool endpoint_set = user_endpoint && !user_endpoint->host.empty();
  if (endpoint_set && !cached) {
    // An endpoint the user (or another tool) provides: no load balancer.
    s.endpoint = harvester::Endpoint{user_endpoint->host, user_endpoint->port};
    s.Mark(kLoadBalancerReady, true, "ExternallyProvided",
           "spec.controlPlaneEndpoint was set by the user; no load balancer is created");
    return Result::Done();
  }
  harvester::LoadBalancerInputs in;
  in.cluster = s.identity;
  in.harvester_cluster_namespace = s.hc.metadata.namespace_;
  in.harvester_cluster_name = s.hc.metadata.name;
  in.target_namespace = ns;
  in.config = s.hc.spec.load_balancer_config;
  in.ip_pool = s.hc.spec.load_balancer_config.ip_pool
                   ? LbPoolName(s.hc.metadata.namespace_, s.hc.metadata.name)
                   : s.hc.spec.load_balancer_config.ip_pool_ref;
  auto desired = harvester::BuildLoadBalancer(in);
  if (!desired.ok()) {
    if (s.Mark(kLoadBalancerReady, false, "InvalidLoadBalancerConfig",
               desired.status().message())) {
      Emit(s, true, "InvalidLoadBalancerConfig", desired.status().message());
    }
    return Result::Terminal(desired.status());
  }
  Annotate(*desired, s.req.Key());
  if (cached && !harvester::OwnedBy(cached->value("metadata", Object::object())
                                        .value("labels", std::map<std::string, std::string>{}),
                                    s.identity)) {
    const std::string msg = "LoadBalancer " + ns + "/" + lb_name +
                            " exists on Harvester but belongs to another cluster";
    if (s.Mark(kLoadBalancerReady, false, "LoadBalancerNameConflict", msg)) {
      Emit(s, true, "LoadBalancerNameConflict", msg);
    }
    return Result::Done();
  }
  bool up_to_date = cached != nullptr;
  if (cached) {
    const Object& have = (*cached)["spec"];
    for (const auto& [k, v] : (*desired)["spec"].items()) {
      if (k == "description" || k == "healthCheck") continue;
      if (!have.contains(k) || have[k] != v) up_to_date = false;
    }
  }
  if (!up_to_date) {
    auto applied = s.conn->client().Apply(harvester::kLoadBalancers, ns, *desired);
    if (!applied.ok()) {
      if (applied.status().IsNotFound()) s.conn->ForgetNamespace(ns);
      if (s.Mark(kLoadBalancerReady, false, "LoadBalancerCreationFailed",
                 applied.status().message())) {
        Emit(s, true, "LoadBalancerCreationFailed", applied.status().message());
      }
      return Result::Error(applied.status());
    }
    if (!cached)
      Emit(s, false, "LoadBalancerCreated", "created LoadBalancer " + ns + "/" + lb_name);
    cached = std::make_shared<const Object>(std::move(applied).value());
  }
  auto endpoint = harvester::EndpointFromLoadBalancer(*cached);
  if (!endpoint) {
    s.Mark(kLoadBalancerReady, false, "WaitingForLoadBalancerAddress",
           "waiting for Harvester to give LoadBalancer " + ns + "/" + lb_name + " an address");
    s.hc.status.ready = s.hc.status.ready.value_or(false) && endpoint_set;
    return Result::Done();  // the LoadBalancer's status update is an event
  }
  if (!endpoint_set) {
    Object patch = {
        {"spec", {{"controlPlaneEndpoint", {{"host", endpoint->host}, {"port", endpoint->port}}}}}};
    if (Status st = MergePatch(*ctx_.mgmt, HcGvr(), *s.object, patch); !st.ok()) {
      return Result::Error(st);
    }
    Emit(s, false, "ControlPlaneEndpointSet",
         "control plane endpoint " + endpoint->host + ":" + std::to_string(endpoint->port) +
             " from LoadBalancer " + ns + "/" + lb_name);
    s.endpoint = endpoint;
  } else {
    s.endpoint = harvester::Endpoint{user_endpoint->host, user_endpoint->port};
    if (!(*s.endpoint == *endpoint)) {
      s.log.Info(
          "The LoadBalancer address differs from spec.controlPlaneEndpoint; the endpoint is "
          "kept",
          {{"endpoint", s.endpoint->host}, {"loadBalancer", endpoint->host}});
    }
  }
  s.Mark(kLoadBalancerReady, true, "LoadBalancerReady",
         "LoadBalancer " + ns + "/" + lb_name + " has address " + endpoint->host);
  return Result::Done();
}

Result HarvesterClusterReconciler::ReconcileCloudProvider(Scope& s) {
  if (!s.hc.spec.update_cloud_provider_config) {
    s.Mark(kCloudProviderConfigReady, true, "NotRequested",
           "spec.updateCloudProviderConfig is not set");
    return Result::Done();
  }
  const api::UpdateCloudProviderConfig& ucp = *s.hc.spec.update_cloud_provider_config;
  const std::string& ns = s.hc.spec.target_namespace;
  auto fail = [&](std::string_view reason, const Status& st) {
    if (s.Mark(kCloudProviderConfigReady, false, reason, st.message())) {
      Emit(s, true, reason, st.message());
    }
    return Result::Error(st);
  };
  harvester::CloudProviderInputs in;
  in.cluster = s.identity;
  in.target_namespace = ns;
  const auto names = harvester::CloudProviderNamesFor(s.identity, ns);
  for (int pass = 0; pass < 2; ++pass) {
    // Pass 0 creates the ServiceAccount to learn its uid; pass 1 the rest.
    auto objects = harvester::BuildCloudProviderObjects(in);
    for (auto& o : objects) {
      const std::string kind = o.value("kind", "");
      if ((pass == 0) != (kind == "ServiceAccount")) continue;
      Annotate(o, s.req.Key());
      if (kind == "Secret" && s.conn->token_secrets().Get(ns, names.token_secret)) continue;
      auto applied = s.conn->client().Apply(GvrOfKind(kind), kube::NamespaceOf(o), o);
      if (!applied.ok()) return fail("CloudProviderCredentialsFailed", applied.status());
      if (kind == "ServiceAccount") in.service_account_uid = kube::UidOf(*applied);
    }
  }
  auto token = s.conn->token_secrets().Get(ns, names.token_secret);
  if (!token) {
    s.Mark(kCloudProviderConfigReady, false, "WaitingForToken",
           "waiting for Harvester to issue the token of ServiceAccount " + ns + "/" +
               names.service_account);
    return Result::Done();
  }
  auto cloud_config = harvester::CloudConfigFromTokenSecret(*token, s.conn->server(), ns);
  if (!cloud_config.ok()) {
    if (cloud_config.status().code() == kube::StatusCode::kUnavailable) {
      s.Mark(kCloudProviderConfigReady, false, "WaitingForToken", cloud_config.status().message());
      return Result::Done();  // the token controller's write is an event
    }
    return fail("CloudProviderConfigFailed", cloud_config.status());
  }
  auto cm = ctx_.mgmt->Get(kube::resources::kConfigMaps, ucp.manifests_config_map_namespace,
                           ucp.manifests_config_map_name);
  if (!cm.ok()) {
    const std::string msg = "cannot read ConfigMap " + ucp.manifests_config_map_namespace + "/" +
                            ucp.manifests_config_map_name + ": " + cm.status().message();
    if (s.Mark(kCloudProviderConfigReady, false, "ManifestsConfigMapUnavailable", msg)) {
      Emit(s, true, "ManifestsConfigMapUnavailable", msg);
    }
    // A ConfigMap created later is not watched: look again in a while.
    return Result::RequeueAfter(std::chrono::seconds(30));
  }
  const std::string current = Str(*cm, {"data", ucp.manifests_config_map_key});
  auto updated =
      harvester::InjectCloudConfig(current, ucp.cloud_config_credentials_secret_name,
                                   ucp.cloud_config_credentials_secret_key, *cloud_config);
  if (!updated.ok()) return fail("CloudProviderConfigFailed", updated.status());
  if (*updated != current) {
    Object next = *cm;
    next["data"][ucp.manifests_config_map_key] = *updated;
    auto written =
        ctx_.mgmt->Update(kube::resources::kConfigMaps, ucp.manifests_config_map_namespace, next);
    if (!written.ok()) return fail("CloudProviderConfigFailed", written.status());
    Emit(s, false, "CloudProviderConfigured",
         "cloud-config written into ConfigMap " + ucp.manifests_config_map_namespace + "/" +
             ucp.manifests_config_map_name);
  }
  s.Mark(kCloudProviderConfigReady, true, "CloudProviderConfigReady", "");
  return Result::Done();
}

Result HarvesterClusterReconciler::ReconcileDelete(Scope& s) {
  if (!HasFinalizer(*s.object, kClusterFinalizer) &&
      !HasFinalizer(*s.object, kLegacyClusterFinalizer)) {
    return Result::Done();
  }
  // Machines first: they need this cluster's connection to delete their VMs.
  const auto machines = ctx_.harvester_machines->store().ListByLabels(
      s.req.ns, {{std::string(kClusterNameLabel), s.identity.name}});
  if (!machines.empty()) {
    s.Mark(kInfrastructureReady, false, "WaitingForMachines",
           std::to_string(machines.size()) + " HarvesterMachine(s) of the cluster still exist");
    return Result::Done();  // their deletion is an event
  }
  ConnectionError err;
  s.conn = ctx_.connections->Get(s.hc.spec.identity_secret.namespace_,
                                 s.hc.spec.identity_secret.name, &err);
  const api::Condition* connected = api::FindCondition(s.original.conditions, kConnectionReady);
  const bool ever_connected =
      (connected != nullptr && connected->status == api::kConditionTrue) ||
      s.original.ready.value_or(false) ||
      (s.hc.spec.control_plane_endpoint && !s.hc.spec.control_plane_endpoint->host.empty());
  if (!s.conn && !ever_connected) {
    // The identity never worked, so nothing was made on Harvester: do not
    // hold the deletion hostage to credentials that never existed.
    Emit(s, true, "DeletedWithoutHarvester",
         "Harvester was never reached (" + err.status.message() + "); nothing to clean up there");
    if (auto p = RemoveFinalizerPatch(*s.object, kClusterFinalizer, kLegacyClusterFinalizer)) {
      if (Status st = MergePatch(*ctx_.mgmt, HcGvr(), *s.object, *p);
          !st.ok() && !st.IsNotFound()) {
        return Result::Error(st);
      }
    }
    metrics::DeleteClusterReady(s.metrics_label);
    return Result::Done();
  }
  if (!s.conn) {
    const std::string msg =
        "cannot delete the cluster's objects on Harvester: " + err.status.message() +
        " (restore the identity Secret, or remove the finalizer to abandon "
        "them)";
    if (s.Mark(kConnectionReady, false, err.reason, msg)) Emit(s, true, err.reason, msg);
    return Result::RequeueAfter(std::chrono::seconds(30));
  }
  const std::string& ns = s.hc.spec.target_namespace;
  const std::string lb_name =
      harvester::LoadBalancerName(s.hc.metadata.namespace_, s.hc.metadata.name);
  if (auto lb = s.conn->load_balancers().Get(ns, lb_name)) {
    auto labels = (*lb)["metadata"].value("labels", std::map<std::string, std::string>{});
    if (harvester::OwnedBy(labels, s.identity)) {
      if (!IsDeleting(*lb)) {
        if (Status st = DeleteIfExists(s.conn->client(), harvester::kLoadBalancers, ns, lb_name);
            !st.ok()) {
          return Result::Error(st);
        }
        Emit(s, false, "LoadBalancerDeleted", "deleted LoadBalancer " + ns + "/" + lb_name);
      }
      s.Mark(kLoadBalancerReady, false, "Deleting",
             "waiting for LoadBalancer " + lb_name + " to be deleted");
      return Result::Done();  // its deletion is an event
    }
  }
  for (const auto& pool : s.conn->pools().List()) {
    auto labels = (*pool)["metadata"].value("labels", std::map<std::string, std::string>{});
    if (!harvester::OwnedBy(labels, s.identity)) continue;
    if (Status st = DeleteIfExists(s.conn->client(), harvester::kIPPools, "", kube::NameOf(*pool));
        !st.ok()) {
      return Result::Error(st);
    }
  }
  const auto names = harvester::CloudProviderNamesFor(s.identity, ns);
  for (const auto& [gvr, rns, name] :
       std::vector<std::tuple<kube::GroupVersionResource, std::string, std::string>>{
           {kube::resources::kClusterRoleBindings, "", names.cluster_role_binding},
           {kube::resources::kRoleBindings, ns, names.role_binding},
           {kube::resources::kSecrets, ns, names.token_secret},
           {kube::resources::kServiceAccounts, ns, names.service_account}}) {
    if (Status st = DeleteIfExists(s.conn->client(), gvr, rns, name); !st.ok()) {
      return Result::Error(st);
    }
  }
  if (auto p = RemoveFinalizerPatch(*s.object, kClusterFinalizer, kLegacyClusterFinalizer)) {
    if (Status st = MergePatch(*ctx_.mgmt, HcGvr(), *s.object, *p); !st.ok() && !st.IsNotFound()) {
      return Result::Error(st);
    }
  }
  metrics::DeleteClusterReady(s.metrics_label);
  s.log.Info("Deleted the cluster's infrastructure on Harvester");
  return Result::Done();
}

}  // namespace caphv::controllers
