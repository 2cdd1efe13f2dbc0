// File: test/unit/controllers/cluster_plan_lifecycle_test.cc
//
// The HarvesterCluster planner over a whole lifecycle, in a small model of
// Harvester and the management cluster in which every write that changes
// the world is followed by a "crash": the next plan starts from a fresh
// observation, and the status is reported only when a reconcile ends (or
// when the planner records the connection). So the lifecycle is replayed as
// if the manager died between any two steps.

#include <gtest/gtest.h>

#include <set>

#include "api/codec.h"
#include "cluster_plan_fixtures.h"
#include "harvester/ipam.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using kube::Object;
using std::chrono::seconds;
using K = ClusterActionKind;
using CPO = CloudProviderObject;

// Harvester and the management cluster as the planner would observe them.
struct World {
  bool finalizer = false;
  std::string recorded_id;  // the management-cluster-id annotation
  bool deleting = false;
  bool connection_works = true;
  std::optional<api::APIEndpoint> endpoint;
  api::HarvesterClusterStatus status;  // as reported
  bool namespace_exists = false;
  std::map<std::string, Object> pools;
  std::optional<Object> lb;
  std::map<CPO, Object> cloud_provider;
  Object config_map = ConfigMap("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n");
  int machines = 0;
  int lb_creates = 0;
  // The Go provider v0.2.x's: its spec rewrites (ipPoolRefs), and the kinds
  // of what it leaves besides (Service, ServiceAccount, ClusterRoleBinding).
  bool go_spec = false;
  std::set<std::string> legacy;
  std::vector<ClusterActionKind> writes;
};

ClusterObservation Observe(const World& w) {
  auto o = WithPools();
  o.hc.spec.update_cloud_provider_config =
      api::UpdateCloudProviderConfig{"team", "cpi", "manifests", "cloud-config", "cloud-config"};
  o.hc.spec.control_plane_endpoint = w.endpoint;
  if (w.go_spec) {
    o.hc.spec.load_balancer_config.ip_pool_ref = "team-c1-ippool";
    o.hc.spec.vm_network_config->ip_pool_ref = kVmPool;
  }
  o.hc.status = w.status;
  o.has_finalizer = w.finalizer;
  o.identity_recorded = !w.recorded_id.empty();
  if (o.identity_recorded) o.management_cluster_id = w.recorded_id;
  o.deleting = w.deleting;
  o.machines = w.machines;
  o.ever_connected = EverConnected(o.hc);
  o.namespace_ready = false;
  if (!w.connection_works) o.harvester = Broken();
  for (const auto& [name, pool] : w.pools) o.pools[name] = ViewOfPool(pool, o);
  if (w.lb) o.lb = ViewOfLoadBalancer(*w.lb, o);
  if (auto it = w.cloud_provider.find(CPO::kTokenSecret); it != w.cloud_provider.end()) {
    o.cloud_provider.token_secret = ViewOfTokenSecret(it->second, o);
  }
  return o;
}

// Runs plans until one waits (then reports its status) or `max_writes`
// writes were made (the manager dies: nothing reported). Reads, and writes
// that change nothing, fold into the current observation; after any other
// write the next plan starts from a fresh observation.
ClusterPlan Drive(World& w, int max_writes = 100) {
  ClusterObservation o = Observe(w);
  for (int step = 0; step < 100; ++step) {
    ClusterPlan p = PlanCluster(o);
    for (const auto& c : p.status.conditions) {
      EXPECT_FALSE(c.reason.empty()) << c.type << " has no reason (the CRD refuses it)";
    }
    if (!p.action) {
      w.status = p.status;
      return p;
    }
    if (static_cast<int>(w.writes.size()) >= max_writes) return p;
    const ClusterAction& a = *p.action;
    switch (a.kind) {
      case K::kReadManifestsConfigMap:
        o.cloud_provider.manifests = {"", w.config_map};
        continue;
      case K::kConfirmLoadBalancerGone:
        o.lb_absence_confirmed = !w.lb;
        if (w.lb) o.lb = ViewOfLoadBalancer(*w.lb, o);
        continue;
      case K::kEnsureNamespace:
        if (w.namespace_exists) {
          o.namespace_ready = true;
          continue;
        }
        w.namespace_exists = true;
        break;
      case K::kAddFinalizer:
        w.finalizer = true;
        if (a.body.contains("metadata")) {
          w.recorded_id = a.body["metadata"]["annotations"]
                                [std::string(harvester::kAnnotationManagementClusterId)];
        }
        break;
      case K::kRemoveFinalizer:
        w.finalizer = false;
        break;
      case K::kRecordConnection: {
        auto hc = api::Decode<api::HarvesterCluster>(
            Object{{"spec", api::Encode(o.hc.spec)}, {"status", a.body}});
        EXPECT_TRUE(hc.ok());
        w.status = hc->status;
        break;
      }
      case K::kApplyPool:
      case K::kApplyLoadBalancerPool:
        w.pools[a.name] = a.body;
        break;
      case K::kApplyLoadBalancer: {
        Object lb = a.body;
        if (w.lb && w.lb->contains("status")) lb["status"] = (*w.lb)["status"];
        if (!w.lb) ++w.lb_creates;
        w.lb = lb;
        break;
      }
      case K::kSetControlPlaneEndpoint:
        EXPECT_FALSE(w.endpoint) << "the endpoint was set twice";
        w.endpoint = api::APIEndpoint{a.body["spec"]["controlPlaneEndpoint"]["host"],
                                      a.body["spec"]["controlPlaneEndpoint"]["port"]};
        break;
      case K::kApplyCloudProviderObject: {
        Object body = a.body;
        if (a.object == CPO::kServiceAccount) body["metadata"]["uid"] = "sa-uid";
        if (auto it = w.cloud_provider.find(a.object);
            it != w.cloud_provider.end() && it->second == body) {
          o.cloud_provider.applied.insert(a.object);  // changed nothing: no crash
          if (a.object == CPO::kServiceAccount) o.cloud_provider.service_account_uid = "sa-uid";
          continue;
        }
        w.cloud_provider[a.object] = body;
        break;
      }
      case K::kUpdateManifestsConfigMap:
        EXPECT_EQ(a.body["metadata"]["resourceVersion"],
                  w.config_map["metadata"]["resourceVersion"]);
        w.config_map = a.body;
        w.config_map["metadata"]["resourceVersion"] = "2";
        break;
      case K::kDeleteLoadBalancer:
        (*w.lb)["metadata"]["deletionTimestamp"] = "now";
        break;
      case K::kDeletePool:
        w.pools.erase(a.name);
        break;
      case K::kReadLegacyObjects:
        o.legacy = LegacyView{
            w.legacy.contains("Service"),
            w.legacy.contains("ServiceAccount") && w.legacy.contains("ClusterRoleBinding"),
            w.legacy.contains("ClusterRoleBinding")};
        continue;
      case K::kDeleteLegacyObject:
        EXPECT_EQ(w.legacy.erase(a.body["kind"].get<std::string>()), 1u);
        break;
      case K::kDeleteCloudProviderObject:
        if (w.cloud_provider.erase(a.object) == 0) {
          o.cloud_provider.deleted.insert(a.object);  // NotFound: no crash
          continue;
        }
        break;
    }
    w.writes.push_back(a.kind);
    o = Observe(w);  // the crash
  }
  ADD_FAILURE() << "no wait after 100 steps";
  return {};
}

TEST(ClusterPlanTest, LifecycleSurvivesACrashAfterEveryWriteWithOneLoadBalancerAndOneEndpoint) {
  World w;
  ClusterPlan p = Drive(w);
  EXPECT_EQ(w.writes,
            (std::vector<K>{K::kAddFinalizer, K::kEnsureNamespace, K::kRecordConnection,
                            K::kApplyLoadBalancerPool, K::kApplyPool, K::kApplyLoadBalancer}));
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "WaitingForLoadBalancerAddress");

  w.writes.clear();
  Drive(w);
  EXPECT_TRUE(w.writes.empty());

  // Harvester gives the load balancer an address.
  (*w.lb)["status"] = {{"address", "10.8.0.5"}};
  p = Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kSetControlPlaneEndpoint, K::kApplyCloudProviderObject,
                                      K::kApplyCloudProviderObject, K::kApplyCloudProviderObject,
                                      K::kApplyCloudProviderObject}));
  EXPECT_TRUE(w.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "WaitingForToken");
  EXPECT_EQ(w.cloud_provider[CPO::kTokenSecret]["metadata"]["ownerReferences"][0]["uid"], "sa-uid");

  // The token controller fills the Secret.
  w.cloud_provider[CPO::kTokenSecret] = Filled(w.cloud_provider[CPO::kTokenSecret]);
  w.writes.clear();
  p = Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kUpdateManifestsConfigMap}));
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "CloudProviderConfigReady");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");

  w.writes.clear();
  Drive(w);
  EXPECT_TRUE(w.writes.empty());

  // Deletion: machines first, then the load balancer, waited for.
  w.deleting = true;
  w.machines = 1;
  Drive(w);
  EXPECT_TRUE(w.writes.empty());
  w.machines = 0;
  Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kDeleteLoadBalancer}));
  w.lb.reset();
  w.writes.clear();
  Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kDeletePool, K::kDeletePool, K::kDeleteCloudProviderObject,
                                      K::kDeleteCloudProviderObject, K::kDeleteCloudProviderObject,
                                      K::kDeleteCloudProviderObject, K::kRemoveFinalizer}));
  EXPECT_FALSE(w.finalizer);
  EXPECT_TRUE(w.pools.empty());
  EXPECT_TRUE(w.cloud_provider.empty());
  EXPECT_EQ(w.lb_creates, 1);
  EXPECT_EQ(w.endpoint->host, "10.8.0.5");
}

TEST(ClusterPlanTest, ACrashBeforeTheFirstReportStillKeepsTheFinalizerWhenTheIdentityBreaks) {
  World w;
  Drive(w, /*max_writes=*/4);  // died right after creating the first IPPool
  ASSERT_EQ(w.writes.back(), K::kApplyLoadBalancerPool);
  ASSERT_TRUE(w.status.conditions.size() > 0);  // recorded before the first object
  w.connection_works = false;
  w.deleting = true;
  w.writes.clear();
  ClusterPlan p = Drive(w);
  EXPECT_TRUE(w.writes.empty());
  EXPECT_TRUE(w.finalizer);
  EXPECT_EQ(Reason(p, kHarvesterConnectionReady), "IdentitySecretUnavailable");

  // The identity comes back: everything is cleaned up.
  w.connection_works = true;
  Drive(w);
  w.lb.reset();
  Drive(w);
  EXPECT_FALSE(w.finalizer);
  EXPECT_TRUE(w.pools.empty());
}

TEST(ClusterPlanTest, ACrashBeforeAnythingWasMadeLetsABrokenIdentityGo) {
  World w;
  Drive(w, /*max_writes=*/2);  // finalizer and namespace only
  w.connection_works = false;
  w.deleting = true;
  w.writes.clear();
  Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kRemoveFinalizer}));
}

// A cluster the Go provider v0.2.x made: pools and load balancer without a
// cluster id (the load-balancer pool under its own name, both written into
// the spec as ipPoolRef), the endpoint in the spec, a reasonless status, and
// a placeholder Service and cloud-provider objects it would never delete.
World GoProviderWorld() {
  World w;
  w.go_spec = true;
  w.finalizer = true;  // its finalizer name counts as ours
  auto pool = [](const std::string& name, const std::string& subnet) {
    auto built = harvester::BuildIpPool(name, PoolSpec(subnet), {}, "made by the Go provider");
    EXPECT_TRUE(built.ok());
    return *built;
  };
  w.pools["team-c1-ippool"] = pool("team-c1-ippool", "10.8.0.0/24");
  w.pools[kVmPool] = pool(kVmPool, "10.9.0.0/24");
  w.lb = Object{{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
                {"kind", "LoadBalancer"},
                {"metadata", {{"name", kLb}, {"namespace", "guests"}}},
                {"spec", {{"ipam", "pool"}, {"ipPool", "team-c1-ippool"}}},
                {"status", {{"address", "10.8.0.5"}}}};
  w.endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  w.status.ready = true;
  w.status.conditions = {Cond("Ready", "True", "NoReason"),
                         Cond(std::string(kHarvesterConnectionReady), "True", "NoReason")};
  w.legacy = {"Service", "ServiceAccount", "ClusterRoleBinding"};
  return w;
}

TEST(ClusterPlanTest, AGoProviderClusterIsTakenOverWithoutASecondPoolOrLoadBalancer) {
  World w = GoProviderWorld();
  // What the first plans say: the identity first, then adoption events.
  ClusterObservation o = Observe(w);
  ClusterPlan first = PlanCluster(o);
  ASSERT_TRUE(first.action);
  EXPECT_EQ(first.action->kind, K::kAddFinalizer);
  o.has_finalizer = o.identity_recorded = o.namespace_ready = true;
  first = PlanCluster(o);
  ASSERT_TRUE(first.action);
  EXPECT_EQ(first.action->kind, K::kApplyLoadBalancerPool);
  EXPECT_EQ(first.action->name, "team-c1-ippool");
  EXPECT_EQ(ActionEvent(first), "IPPoolAdopted");

  Drive(w);
  EXPECT_EQ(w.writes,
            (std::vector<K>{K::kAddFinalizer, K::kEnsureNamespace, K::kApplyLoadBalancerPool,
                            K::kApplyPool, K::kApplyLoadBalancer, K::kApplyCloudProviderObject,
                            K::kApplyCloudProviderObject, K::kApplyCloudProviderObject,
                            K::kApplyCloudProviderObject}));
  EXPECT_EQ(w.lb_creates, 0);
  EXPECT_EQ(w.pools.size(), 2u);
  for (const auto& [name, p] : w.pools) {
    EXPECT_TRUE(p["metadata"]["labels"].contains(std::string(harvester::kLabelClusterId))) << name;
  }
  EXPECT_TRUE((*w.lb)["metadata"]["labels"].contains(std::string(harvester::kLabelClusterId)));
  EXPECT_EQ(w.endpoint->host, "10.8.0.5");
  EXPECT_TRUE(w.status.ready.value_or(false));

  // Deleted: everything, including what the Go provider would have left.
  w.cloud_provider[CPO::kTokenSecret] = Filled(w.cloud_provider[CPO::kTokenSecret]);
  w.deleting = true;
  w.writes.clear();
  Drive(w);
  EXPECT_EQ(w.writes, (std::vector<K>{K::kDeleteLoadBalancer}));
  w.lb.reset();
  w.writes.clear();
  Drive(w);
  EXPECT_EQ(w.writes,
            (std::vector<K>{K::kDeletePool, K::kDeletePool, K::kDeleteCloudProviderObject,
                            K::kDeleteCloudProviderObject, K::kDeleteCloudProviderObject,
                            K::kDeleteCloudProviderObject, K::kDeleteLegacyObject,
                            K::kDeleteLegacyObject, K::kDeleteLegacyObject, K::kRemoveFinalizer}));
  EXPECT_TRUE(w.pools.empty());
  EXPECT_TRUE(w.legacy.empty());
  EXPECT_FALSE(w.finalizer);
}

TEST(ClusterPlanTest, PoolsAndLoadBalancersOfAnotherClusterIdAreNeverAdopted) {
  auto o = WithPools();
  auto other = harvester::BuildIpPool(kLbPool, PoolSpec("10.8.0.0/24"),
                                      harvester::ClusterLabels({"other-mgmt", "team", "c1"}), "");
  ASSERT_TRUE(other.ok());
  o.pools[kLbPool] = ViewOfPool(*other, o);
  EXPECT_FALSE(o.pools[kLbPool].unlabelled);
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "IPPoolNameConflict");

  auto base = Base();
  Object lb = {
      {"metadata",
       {{"name", kLb}, {"labels", harvester::ClusterLabels({"other-mgmt", "team", "c1"})}}}};
  base.lb = ViewOfLoadBalancer(lb, base);
  p = PlanCluster(base);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerNameConflict");
  // Nor deleted with this cluster.
  base.deleting = true;
  base.lb_absence_confirmed = true;
  p = PlanCluster(base);
  ASSERT_TRUE(p.action);
  EXPECT_NE(p.action->kind, K::kDeleteLoadBalancer);
}

}  // namespace
}  // namespace caphv::controllers
