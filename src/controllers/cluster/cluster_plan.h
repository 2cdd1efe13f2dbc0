// File: controllers/cluster/cluster_plan.h
//
// The HarvesterCluster planner: a pure function from what the reconciler
// observed (ClusterObservation, plain values built from caches and the few
// live reads the planner asked for) to the next write and the status to
// report (ClusterPlan). The reconciler executes the plan's action (one API
// call), folds the result into the observation and plans again, until a plan
// has no action; then it reports status once and returns the plan's Wait.
//
// Normal path (each step returns while it waits):
//   owner Cluster -> finalizer and the recorded management cluster id (one
//   patch; see harvester::kAnnotationManagementClusterId) -> Harvester connection -> target
//   namespace
//   -> status.failureDomains from the Harvester hosts (when Cluster API
//   reads the v1beta2 contract) -> [the first time: the connection is recorded in status before
//   anything is made on Harvester, so a deletion can tell "never connected" apart] -> IPPools CAPHV
//   creates from inline specs (never one of another cluster)
//   -> control-plane LoadBalancer (never one of another cluster) ->
//   spec.controlPlaneEndpoint from its address, set once and never changed
//   (a user-set endpoint is respected and no load balancer is made; a
//   placeholder a ClusterClass template keeps putting back is left alone
//   once the Cluster holds the address) ->
//   status.ready / initialization.provisioned -> cloud-provider credentials
//   (while the token Secret is missing: ServiceAccount, whose uid the token
//   Secret needs, RoleBinding, ClusterRoleBinding, token Secret) -> the
//   cloud-config injected into the bootstrap manifests ConfigMap (a live
//   read the planner asks for, then an update when it differs).
// Delete path, strictly in this order: wait until no HarvesterMachine of the
// cluster is left -> the LoadBalancer (deleted, then waited for) -> the
// IPPools carrying this cluster's id -> the cloud-provider objects (each
// deleted once per reconcile) -> finalizer. A connection that never worked
// lets the finalizer go (Event DeletedWithoutHarvester); one that worked and
// broke keeps it, with a condition and a warning, until it works again.
// Paused (Cluster.spec.paused or the paused annotation): no action at all,
// deletion included.
//
// Every step is a case of PlanCluster (cluster_plan.cc), unit-tested in
// test/unit/controllers/cluster_plan_test.cc and, crashing after every
// write, cluster_plan_lifecycle_test.cc; the views and desired objects the
// reconciler shares are in cluster_plan_support.cc.
//
// Thread safety: pure functions over values.

#pragma once

#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/harvester_cluster.h"
#include "controllers/reconcile.h"
#include "harvester/cloud_provider.h"
#include "harvester/failure_domains.h"
#include "harvester/load_balancer.h"
#include "harvester/naming.h"
#include "kube/object.h"

namespace caphv::controllers {

// Condition types of a HarvesterCluster (and kInfrastructureReady).
inline constexpr std::string_view kHarvesterConnectionReady = "HarvesterConnectionReady";
inline constexpr std::string_view kTargetNamespaceReady = "TargetNamespaceReady";
inline constexpr std::string_view kVmIpPoolReady = "VMIPPoolReady";
inline constexpr std::string_view kLoadBalancerReady = "LoadBalancerReady";
inline constexpr std::string_view kCloudProviderConfigReady = "CloudProviderConfigReady";
// Set while the identity's credentials have a known expiry: True until
// harvester::kIdentityExpiryWarning before it, then False (Warning Event)
// IdentityTokenExpiringSoon, then IdentityTokenExpired. Not part of Ready.
inline constexpr std::string_view kIdentityTokenValid = "IdentityTokenValid";

// The conditions the Ready summary looks at, in order.
inline constexpr std::array<std::string_view, 4> kClusterReadyOrder = {
    kHarvesterConnectionReady, kTargetNamespaceReady, kVmIpPoolReady, kLoadBalancerReady};
// Every condition type a HarvesterCluster reports (with Ready and Paused).
inline constexpr std::array<std::string_view, 7> kClusterConditionTypes = {
    kHarvesterConnectionReady, kTargetNamespaceReady,     kVmIpPoolReady,     kLoadBalancerReady,
    kInfrastructureReady,      kCloudProviderConfigReady, kIdentityTokenValid};

// A cached IPPool.
struct PoolView {
  bool ours = false;        // carries this cluster's id label
  bool unlabelled = false;  // carries no cluster id at all (the Go provider's)
  bool deleting = false;
  bool up_to_date = false;  // for an inline pool: its ranges are those of the spec
  bool operator==(const PoolView&) const = default;
};

// The cached control-plane LoadBalancer.
struct LoadBalancerView {
  bool ours = false;
  bool unlabelled = false;  // carries no cluster id at all (the Go provider's)
  bool deleting = false;
  bool up_to_date = false;                      // its spec is the one the planner would apply
  std::optional<harvester::Endpoint> endpoint;  // once Harvester gave it an address
  bool operator==(const LoadBalancerView&) const = default;
};

// The cached service-account token Secret, as the cloud-config it yields.
struct TokenSecretView {
  std::string cloud_config;  // the kubeconfig, once the token controller filled the Secret
  bool pending = false;      // not filled yet
  std::string error;         // any other reason no cloud-config can be built
  bool operator==(const TokenSecretView&) const = default;
};

// The manifests ConfigMap (spec.updateCloudProviderConfig), read live.
struct ManifestsRead {
  std::string error;    // the read failed: why
  kube::Object object;  // the ConfigMap (its resourceVersion guards the update)
};

enum class CloudProviderObject { kServiceAccount, kRoleBinding, kClusterRoleBinding, kTokenSecret };

struct CloudProviderView {
  std::string service_account_uid;              // the ServiceAccount applied in this reconcile
  std::set<CloudProviderObject> applied;        // in this reconcile
  std::optional<TokenSecretView> token_secret;  // nullopt: not cached
  std::optional<ManifestsRead> manifests;       // nullopt: not read yet
  std::set<CloudProviderObject> deleted;        // deletion: known gone (deleted in this reconcile)
};

// Deletion: what the Go provider v0.2.x left on Harvester that CAPHV's own
// names do not cover, read live (none of it is cached).
struct LegacyView {
  bool placeholder_service = false;   // Service <lb name> (servicelb label), LB gone
  bool service_account = false;       // ServiceAccount <Cluster name> in the target namespace
  bool cluster_role_binding = false;  // ClusterRoleBinding <Cluster name> binding only it to
                                      // the cloud-provider role
  bool operator==(const LegacyView&) const = default;
};

struct ClusterObservation {
  api::HarvesterCluster hc;  // hc.status is the status last reported
  // The reported status had conditions in another shape (ToOurConditions;
  // hc.status has them in ours): the status is replaced, not applied.
  bool status_foreign = false;
  std::string key;  // "<namespace>/<name>"
  bool deleting = false;
  bool has_finalizer = false;  // ours or the Go provider's name
  bool paused = false;
  std::string cluster_name;  // the owner Cluster ("" until Cluster API sets it)
  // The owner Cluster's spec.controlPlaneEndpoint, when Cluster API copied a
  // real one (not empty, 0.0.0.0 or ::); it never changes it again.
  std::optional<harvester::Endpoint> cluster_endpoint;
  // The id recorded on the HarvesterCluster (kAnnotationManagementClusterId),
  // else the current management cluster's.
  std::string management_cluster_id;
  bool identity_recorded = false;  // the annotation is there
  // Harvester was reached once (EverConnected() of the reported status and
  // spec): what a deletion with a broken identity may not ignore.
  bool ever_connected = false;
  int machines = 0;  // HarvesterMachines of the cluster still present

  ConnectionView harvester;
  // The wall-clock time of the observation (identity expiry).
  std::chrono::system_clock::time_point now{};
  // Meaningful only when `harvester.ready`:
  bool namespace_ready = false;  // EnsureNamespace succeeded in this reconcile
  // The pools named by the spec (inline and referenced) and those carrying
  // this cluster's id, by name; absent: not found.
  std::map<std::string, PoolView> pools;
  std::optional<LoadBalancerView> lb;
  // The Harvester hosts (nullopt: not known yet, or not readable), and
  // whether failure domains are published at all (Context).
  std::optional<std::vector<harvester::Host>> hosts;
  bool publish_failure_domains = false;
  bool lb_absence_confirmed = false;  // deletion: a live read found no LoadBalancer
  std::optional<LegacyView> legacy;   // deletion: read once the LoadBalancer is gone
  CloudProviderView cloud_provider;
};

enum class ClusterActionKind {
  kAddFinalizer,  // body: more of the patch (the identity annotation), may be empty
  kEnsureNamespace,
  kRecordConnection,          // body: the status to apply (HarvesterConnectionReady True)
  kApplyPool,                 // name; body: a VM IPPool
  kApplyLoadBalancerPool,     // name; body: the load balancer's inline IPPool
  kApplyLoadBalancer,         // name; body: the LoadBalancer
  kSetControlPlaneEndpoint,   // body: the HarvesterCluster merge patch
  kApplyCloudProviderObject,  // object, name; body: the object
  kReadManifestsConfigMap,
  kUpdateManifestsConfigMap,   // body: the ConfigMap (with its resourceVersion)
  kDeleteLoadBalancer,         // name
  kConfirmLoadBalancerGone,    // name: live GET
  kDeletePool,                 // name
  kDeleteCloudProviderObject,  // object, name
  kReadLegacyObjects,          // live GETs filling ClusterObservation::legacy
  kDeleteLegacyObject,         // name; body: {"kind": Service|ServiceAccount|ClusterRoleBinding}
  kRemoveFinalizer,
};

ActionRow RowOf(ClusterActionKind kind);
inline std::string_view ActionName(ClusterActionKind kind) { return RowOf(kind).name; }

struct ClusterAction {
  ClusterActionKind kind;
  std::string name;  // Harvester object name
  kube::Object body;
  CloudProviderObject object = CloudProviderObject::kServiceAccount;
  std::optional<EventNote> event;  // emitted once the action succeeded
  bool operator==(const ClusterAction&) const = default;
};

struct ClusterPlan {
  std::optional<ClusterAction> action;  // the next write (or live read)
  Wait wait;                            // when there is no action
  api::HarvesterClusterStatus status;   // to report
  // Warning Events of condition transitions, and InfrastructureReady.
  std::vector<EventNote> events;
};

// The cluster identity (labels, names) of the observed cluster.
harvester::ClusterIdentity ClusterIdentityOf(const ClusterObservation& obs);
// Whether a reported status and spec show Harvester was reached once.
bool EverConnected(const api::HarvesterCluster& hc);
// The pool names the spec names (inline pools, then ipPoolRefs / ipPoolRef).
std::vector<std::string> SpecPoolNames(const api::HarvesterCluster& hc);
// The VM pools machines allocate from (ipPoolRefs, else ipPoolRef, else the
// inline pool).

// A pool CAPHV creates from an inline spec (load balancer first, then VMs).
struct InlinePool {
  std::string name;
  api::IPPoolSpec spec;
  std::string what;    // its description
  bool load_balancer;  // its failures are the LoadBalancer's
};
std::vector<InlinePool> InlinePools(const api::HarvesterCluster& hc);
// The name of the inline load-balancer pool: the Go provider's when the spec
// already references it (it wrote loadBalancerConfig.ipPoolRef), else CAPHV's.
std::string LbInlinePoolName(const api::HarvesterCluster& hc);

// The objects CAPHV applies on Harvester: labelled with the cluster and
// annotated with the owner key (so watch events map back).
kube::Object WithOwnerAnnotation(kube::Object o, const std::string& owner_key);
kube::StatusOr<kube::Object> DesiredPool(const InlinePool& p, const ClusterObservation& obs);
kube::StatusOr<kube::Object> DesiredLoadBalancer(const ClusterObservation& obs);
CloudProviderObject CloudProviderObjectOfKind(std::string_view kind);
std::string CloudProviderObjectName(CloudProviderObject o, const harvester::CloudProviderNames& n);

// Views of cached Harvester objects; `obs` needs hc, cluster_name,
// management_cluster_id (and harvester.server for the token).
PoolView ViewOfPool(const kube::Object& pool, const ClusterObservation& obs);
LoadBalancerView ViewOfLoadBalancer(const kube::Object& lb, const ClusterObservation& obs);
TokenSecretView ViewOfTokenSecret(const kube::Object& secret, const ClusterObservation& obs);

ClusterPlan PlanCluster(const ClusterObservation& obs);

// `action` of `plan` failed with `error`: the condition and Warning Event
// that report it (its RowOf; none for a 409 Conflict, which is only retried,
// nor for writes to the management cluster and deletions).
void MarkActionFailed(const ClusterObservation& obs, const ClusterAction& action,
                      const kube::Status& error, ClusterPlan& plan);

}  // namespace caphv::controllers
