// File: controllers/cluster/cluster_plan_support.cc
//
// What the HarvesterCluster planner shares with the reconciler: action
// names, views of cached Harvester objects, the objects CAPHV applies, and
// the report of a failed action.

#include <algorithm>

#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/cluster/cluster_plan.h"
#include "harvester/cloud_provider.h"
#include "harvester/ipam.h"
#include "harvester/resources.h"

namespace caphv::controllers {

namespace {

using kube::Object;

}  // namespace

Object WithOwnerAnnotation(Object o, const std::string& owner_key) {
  o["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = owner_key;
  return o;
}

std::vector<InlinePool> InlinePools(const api::HarvesterCluster& hc) {
  std::vector<InlinePool> out;
  const auto& lbc = hc.spec.load_balancer_config;
  if (lbc.ipam_type == api::kIpamPool && lbc.ip_pool) {
    out.push_back({LbInlinePoolName(hc), *lbc.ip_pool, "load balancer addresses", true});
  }
  if (hc.spec.vm_network_config && hc.spec.vm_network_config->ip_pool) {
    out.push_back({harvester::VmPoolName(hc.metadata.namespace_, hc.metadata.name),
                   *hc.spec.vm_network_config->ip_pool, "VM addresses", false});
  }
  return out;
}

std::string LbInlinePoolName(const api::HarvesterCluster& hc) {
  const std::string legacy = harvester::LegacyLbPoolName(hc.metadata.namespace_, hc.metadata.name);
  if (hc.spec.load_balancer_config.ip_pool_ref == legacy) return legacy;
  return harvester::LbPoolName(hc.metadata.namespace_, hc.metadata.name);
}

kube::StatusOr<Object> DesiredPool(const InlinePool& p, const ClusterObservation& obs) {
  auto pool =
      harvester::BuildIpPool(p.name, p.spec, harvester::ClusterLabels(ClusterIdentityOf(obs)),
                             p.what + " of cluster " + obs.key + " (CAPHV)");
  if (!pool.ok()) return pool.status();
  return WithOwnerAnnotation(std::move(pool).value(), obs.key);
}

kube::StatusOr<Object> DesiredLoadBalancer(const ClusterObservation& obs) {
  const api::HarvesterCluster& hc = obs.hc;
  harvester::LoadBalancerInputs in;
  in.cluster = ClusterIdentityOf(obs);
  in.harvester_cluster_namespace = hc.metadata.namespace_;
  in.harvester_cluster_name = hc.metadata.name;
  in.target_namespace = hc.spec.target_namespace;
  in.config = hc.spec.load_balancer_config;
  in.ip_pool = hc.spec.load_balancer_config.ip_pool ? LbInlinePoolName(hc)
                                                    : hc.spec.load_balancer_config.ip_pool_ref;
  auto lb = harvester::BuildLoadBalancer(in);
  if (!lb.ok()) return lb.status();
  return WithOwnerAnnotation(std::move(lb).value(), obs.key);
}

CloudProviderObject CloudProviderObjectOfKind(std::string_view kind) {
  if (kind == "ServiceAccount") return CloudProviderObject::kServiceAccount;
  if (kind == "RoleBinding") return CloudProviderObject::kRoleBinding;
  if (kind == "ClusterRoleBinding") return CloudProviderObject::kClusterRoleBinding;
  return CloudProviderObject::kTokenSecret;
}

std::string CloudProviderObjectName(CloudProviderObject o, const harvester::CloudProviderNames& n) {
  switch (o) {
    case CloudProviderObject::kServiceAccount:
      return n.service_account;
    case CloudProviderObject::kRoleBinding:
      return n.role_binding;
    case CloudProviderObject::kClusterRoleBinding:
      return n.cluster_role_binding;
    case CloudProviderObject::kTokenSecret:
      return n.token_secret;
  }
  return {};
}

// Management-cluster writes and deletions report no condition: they are only
// retried.
ActionRow RowOf(ClusterActionKind kind) {
  switch (kind) {
    case ClusterActionKind::kAddFinalizer:
      return {"AddFinalizer", "", ""};
    case ClusterActionKind::kEnsureNamespace:
      return {"EnsureNamespace", kTargetNamespaceReady, "TargetNamespaceNotReady", true,
              "create the Harvester namespace"};
    case ClusterActionKind::kRecordConnection:
      return {"RecordConnection", "", ""};
    case ClusterActionKind::kApplyPool:
      return {"ApplyPool", kVmIpPoolReady, "VMIPPoolCreationFailed"};
    case ClusterActionKind::kApplyLoadBalancerPool:
      // The load balancer's inline pool reports on LoadBalancerReady, without
      // a Warning Event.
      return {"ApplyLoadBalancerPool", kLoadBalancerReady, "IPPoolCreationFailed", false};
    case ClusterActionKind::kApplyLoadBalancer:
      return {"ApplyLoadBalancer", kLoadBalancerReady, "LoadBalancerCreationFailed"};
    case ClusterActionKind::kSetControlPlaneEndpoint:
      return {"SetControlPlaneEndpoint", "", ""};
    case ClusterActionKind::kApplyCloudProviderObject:
      return {"ApplyCloudProviderObject", kCloudProviderConfigReady,
              "CloudProviderCredentialsFailed"};
    case ClusterActionKind::kReadManifestsConfigMap:
      return {"ReadManifestsConfigMap", "", ""};
    case ClusterActionKind::kUpdateManifestsConfigMap:
      return {"UpdateManifestsConfigMap", kCloudProviderConfigReady, "CloudProviderConfigFailed"};
    case ClusterActionKind::kDeleteLoadBalancer:
      return {"DeleteLoadBalancer", "", ""};
    case ClusterActionKind::kConfirmLoadBalancerGone:
      return {"ConfirmLoadBalancerGone", "", ""};
    case ClusterActionKind::kDeletePool:
      return {"DeletePool", "", ""};
    case ClusterActionKind::kDeleteCloudProviderObject:
      return {"DeleteCloudProviderObject", "", ""};
    case ClusterActionKind::kReadLegacyObjects:
      return {"ReadLegacyObjects", "", ""};
    case ClusterActionKind::kDeleteLegacyObject:
      return {"DeleteLegacyObject", "", ""};
    case ClusterActionKind::kRemoveFinalizer:
      return {"RemoveFinalizer", "", ""};
  }
  return {"Unknown", "", ""};
}

harvester::ClusterIdentity ClusterIdentityOf(const ClusterObservation& obs) {
  return {obs.management_cluster_id, obs.hc.metadata.namespace_, obs.cluster_name};
}

bool EverConnected(const api::HarvesterCluster& hc) {
  const auto& conditions = hc.status.conditions;
  // TargetNamespaceReady is set only once Harvester was reached, and never
  // removed.
  return api::IsConditionTrue(conditions, kHarvesterConnectionReady) ||
         api::FindCondition(conditions, kTargetNamespaceReady) != nullptr ||
         hc.status.ready.value_or(false) || api::ControlPlaneEndpointSet(hc.spec);
}

std::vector<std::string> SpecPoolNames(const api::HarvesterCluster& hc) {
  std::vector<std::string> names;
  for (const auto& p : InlinePools(hc)) names.push_back(p.name);
  for (auto& r : harvester::VmPoolRefs(hc)) {
    if (std::find(names.begin(), names.end(), r) == names.end()) names.push_back(std::move(r));
  }
  return names;
}

PoolView ViewOfPool(const Object& pool, const ClusterObservation& obs) {
  PoolView v;
  v.ours = harvester::OwnedBy(LabelsOf(pool), ClusterIdentityOf(obs));
  v.unlabelled = !LabelsOf(pool).contains(std::string(harvester::kLabelClusterId));
  v.deleting = IsDeleting(pool);
  v.up_to_date = v.ours;
  const std::string name = kube::NameOf(pool);
  for (const auto& p : InlinePools(obs.hc)) {
    if (p.name != name) continue;
    auto desired = DesiredPool(p, obs);
    v.up_to_date = v.up_to_date && desired.ok() &&
                   pool.value("spec", Object::object()).value("ranges", Object()) ==
                       (*desired)["spec"]["ranges"];
  }
  return v;
}

namespace {

// Whether `have` holds everything `want` sets: objects key by key (keys
// another writer added are not ours to judge: a server-side apply never
// removes them), everything else equal.
bool Covers(const Object& have, const Object& want) {
  if (!want.is_object()) return have == want;
  if (!have.is_object()) return false;
  for (const auto& [k, v] : want.items()) {
    if (!have.contains(k) || !Covers(have[k], v)) return false;
  }
  return true;
}

}  // namespace

LoadBalancerView ViewOfLoadBalancer(const Object& lb, const ClusterObservation& obs) {
  LoadBalancerView v;
  v.ours = harvester::OwnedBy(LabelsOf(lb), ClusterIdentityOf(obs));
  v.unlabelled = !LabelsOf(lb).contains(std::string(harvester::kLabelClusterId));
  v.deleting = IsDeleting(lb);
  v.endpoint = harvester::EndpointFromLoadBalancer(lb);
  auto desired = DesiredLoadBalancer(obs);
  v.up_to_date = v.ours && desired.ok();
  if (desired.ok()) {
    const Object have = lb.value("spec", Object::object());
    for (const auto& [k, want] : (*desired)["spec"].items()) {
      if (k == "description" || k == "healthCheck") continue;  // Harvester may rewrite them
      if (!have.contains(k) || !Covers(have[k], want)) v.up_to_date = false;
    }
  }
  return v;
}

TokenSecretView ViewOfTokenSecret(const Object& secret, const ClusterObservation& obs) {
  TokenSecretView v;
  auto config = harvester::CloudConfigFromTokenSecret(secret, obs.harvester.server,
                                                      obs.hc.spec.target_namespace);
  if (config.ok()) {
    v.cloud_config = std::move(config).value();
  } else if (config.status().code() == kube::StatusCode::kUnavailable) {
    v.pending = true;
  } else {
    v.error = config.status().message();
  }
  return v;
}

void MarkActionFailed(const ClusterObservation& obs, const ClusterAction& action,
                      const kube::Status& error, ClusterPlan& plan) {
  const ActionRow row = RowOf(action.kind);
  if (row.failure_condition.empty() || error.IsConflict()) return;
  std::string message = error.message();
  if (!row.failure_what.empty()) {
    message = "cannot " + std::string(row.failure_what) + " " + action.name + ": " + message;
  }
  Conditions c(obs.hc.status.conditions, obs.hc.metadata.generation);
  c.mutable_current() = plan.status.conditions;
  c.Mark(row.failure_condition, false, row.failure_reason, std::move(message), row.failure_warns);
  if (!obs.paused) {
    SummarizeReady(c, plan.status.ready.value_or(false), obs.deleting, kClusterReadyOrder);
  }
  plan.status.conditions = c.current();
  plan.events.insert(plan.events.end(), c.warnings().begin(), c.warnings().end());
}

}  // namespace caphv::controllers
