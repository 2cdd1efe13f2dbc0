// File: test/unit/controllers/cluster_plan_test.cc
//
// The HarvesterCluster planner, case by case: every branch of the normal
// path a user can hit. The cloud provider's objects are in
// cluster_plan_cloud_provider_test.cc, pause and deletion in
// cluster_plan_delete_test.cc, the whole lifecycle, crashing after every
// write, in cluster_plan_lifecycle_test.cc.

#include "controllers/cluster/cluster_plan.h"

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/conditions.h"
#include "cluster_plan_fixtures.h"
#include "harvester/cloud_provider.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using kube::Object;
using std::chrono::seconds;
using K = ClusterActionKind;
using CPO = CloudProviderObject;

// --- normal path -------------------------------------------------------------------------

TEST(ClusterPlanTest, WaitsForClusterApiToSetTheOwnerCluster) {
  auto o = Base();
  o.cluster_name.clear();
  o.has_finalizer = false;
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(ClusterPlanTest, AddsTheFinalizerBeforeAnythingElse) {
  auto o = Base();
  o.has_finalizer = false;
  o.harvester = Broken();
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kAddFinalizer);
}

TEST(ClusterPlanTest, TheFinalizerPatchRecordsTheManagementClusterIdOnce) {
  auto o = Base();
  o.has_finalizer = false;
  o.identity_recorded = false;
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kAddFinalizer);
  EXPECT_EQ(p.action->body["metadata"]["annotations"]
                          [std::string(harvester::kAnnotationManagementClusterId)],
            kMgmtId);

  // A cluster from before the annotation existed (or the Go provider's):
  // recorded on first touch, before anything else.
  o.has_finalizer = true;
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kAddFinalizer);
  EXPECT_EQ(p.action->body["metadata"]["annotations"]
                          [std::string(harvester::kAnnotationManagementClusterId)],
            kMgmtId);

  // Recorded: the finalizer step asks for nothing more.
  o.identity_recorded = true;
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_NE(p.action->kind, K::kAddFinalizer);
}

TEST(ClusterPlanTest, AFailedConnectionWarnsOnceAndRetriesAtItsBackoff) {
  auto o = Base();
  o.hc.status.ready = true;
  o.harvester = {false, "HarvesterConnectionFailed", "cannot reach https://10.1.1.1:6443",
                 seconds(8), ""};
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kHarvesterConnectionReady), "HarvesterConnectionFailed");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "HarvesterConnectionFailed");
  EXPECT_FALSE(p.status.ready.value_or(true));
  EXPECT_EQ(p.wait, Wait::After(seconds(8), p.wait.why));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_NE(p.events[0].message.find("10.1.1.1"), std::string::npos);
  o.hc.status = p.status;
  EXPECT_TRUE(PlanCluster(o).events.empty());
}

TEST(ClusterPlanTest, ConnectingReportsOnlyWhatWasNeverReportedAndWaitsForTheConnection) {
  auto o = Base();
  o.harvester = {false, "Connecting", "connecting to Harvester (identity team/id)", {}, ""};
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kHarvesterConnectionReady), "Connecting");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  EXPECT_TRUE(p.events.empty());

  // After a restart a ready cluster's connection is rebuilt: nothing flaps.
  o.hc.status.ready = true;
  o.hc.status.conditions = {Cond("HarvesterConnectionReady", "True", "Connected"),
                            Cond("Ready", "True", "Ready")};
  p = PlanCluster(o);
  EXPECT_EQ(p.status, o.hc.status);
}

TEST(ClusterPlanTest, FirstCreateEnsuresTheNamespaceRecordsTheConnectionThenMakesTheLoadBalancer) {
  auto o = Base();
  o.ever_connected = false;
  o.namespace_ready = false;
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kEnsureNamespace);
  EXPECT_EQ(p.action->name, "guests");
  EXPECT_EQ(Reason(p, kHarvesterConnectionReady), "Connected");

  o.namespace_ready = true;
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kRecordConnection);
  auto recorded = api::Decode<api::HarvesterCluster>(
      Object{{"spec", api::Encode(o.hc.spec)}, {"status", p.action->body}});
  ASSERT_TRUE(recorded.ok()) << recorded.status().ToString();
  EXPECT_TRUE(api::IsConditionTrue(recorded->status.conditions, kHarvesterConnectionReady));
  EXPECT_TRUE(EverConnected(*recorded));

  o.ever_connected = true;
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_EQ(p.action->name, kLb);
  EXPECT_EQ(kube::NamespaceOf(p.action->body), "guests");
  EXPECT_EQ(
      p.action->body["metadata"]["annotations"]["harvester.infrastructure.cluster.x-k8s.io/owner"],
      "team/c1");
  ASSERT_TRUE(p.action->event);
  EXPECT_EQ(ActionEvent(p), "LoadBalancerCreated");
  EXPECT_FALSE(api::FindCondition(p.status.conditions, kVmIpPoolReady));  // DHCP
}

TEST(ClusterPlanTest, TheLoadBalancerAddressBecomesTheEndpointOnceThenTheClusterIsReady) {
  auto o = Base();
  o.lb = ReadyLb();
  o.lb->endpoint.reset();
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "WaitingForLoadBalancerAddress");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "WaitingForLoadBalancerAddress");
  EXPECT_FALSE(p.status.ready.value_or(false));

  o.lb = ReadyLb();
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kSetControlPlaneEndpoint);
  EXPECT_EQ(p.action->body["spec"]["controlPlaneEndpoint"]["host"], "10.8.0.5");
  EXPECT_EQ(p.action->body["spec"]["controlPlaneEndpoint"]["port"], 6443);
  EXPECT_EQ(ActionEvent(p), "ControlPlaneEndpointSet");
  EXPECT_FALSE(p.status.ready.value_or(false));

  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));
  ASSERT_TRUE(p.status.initialization);
  EXPECT_TRUE(p.status.initialization->provisioned.value_or(false));
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerReady");
  EXPECT_EQ(Reason(p, kInfrastructureReady), "InfrastructureReady");
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "NotRequested");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
  EXPECT_TRUE(HasEvent(p, "InfrastructureReady", false));

  o.hc.status = p.status;
  EXPECT_TRUE(PlanCluster(o).events.empty());
}

// Under the v1beta2 contract the cluster publishes the failure domains of
// its Harvester hosts, and keeps what it reported while they are unknown.
TEST(ClusterPlanTest, FailureDomainsComeFromTheHarvesterHosts) {
  auto o = Base();
  o.lb = ReadyLb();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  o.publish_failure_domains = true;
  o.hosts = std::vector<harvester::Host>{{"h1", "zone-a"}, {"h2", "zone-b"}, {"h3", "zone-c"}};
  auto p = PlanCluster(o);
  ASSERT_EQ(p.status.failure_domains.size(), 3u);
  EXPECT_EQ(p.status.failure_domains[1].name, "zone-b");
  EXPECT_EQ(p.status.failure_domains[1].control_plane, true);
  EXPECT_EQ(p.status.failure_domains[1].attributes.at("topologyKey"),
            "topology.kubernetes.io/zone");

  // Hosts not known (a restart, an identity that may not list Nodes): kept.
  o.hc.status = p.status;
  o.hosts.reset();
  EXPECT_EQ(PlanCluster(o).status.failure_domains, o.hc.status.failure_domains);

  // A host joins without a zone: one domain per host.
  o.hosts = std::vector<harvester::Host>{{"h1", "zone-a"}, {"h4", ""}};
  p = PlanCluster(o);
  ASSERT_EQ(p.status.failure_domains.size(), 2u);
  EXPECT_EQ(p.status.failure_domains[1].name, "h4");

  // Cluster API v1.10 (v1beta1 contract) would read the list as its map and
  // fail: nothing is published, and what was is taken back.
  o.hc.status = p.status;
  o.publish_failure_domains = false;
  EXPECT_TRUE(PlanCluster(o).status.failure_domains.empty());
}

TEST(ClusterPlanTest, TheEndpointIsNeverChangedOnceSet) {
  auto o = Base();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  o.hc.status.ready = true;
  o.lb = ReadyLb("10.8.0.99");
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));

  // The load balancer loses its address: the endpoint stands, ready stays.
  o.lb->endpoint.reset();
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "WaitingForLoadBalancerAddress");
  EXPECT_TRUE(p.status.ready.value_or(false));
}

// The Go provider's ClusterClass template sets the placeholder 0.0.0.0:6443,
// and Cluster API's topology controller puts it back after every write of the
// address. Once the Cluster holds the address, the placeholder is left alone.
TEST(ClusterPlanTest, APlaceholderPutBackIsLeftAloneOnceTheClusterHoldsTheAddress) {
  auto o = Base();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"0.0.0.0", 6443};
  o.hc.status.ready = true;
  o.lb = ReadyLb("10.8.0.5");
  // The Cluster has not taken an endpoint yet: the address is written.
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kSetControlPlaneEndpoint);
  // Another endpoint on the Cluster (the user's): the address is written too.
  o.cluster_endpoint = harvester::Endpoint{"10.8.0.99", 6443};
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kSetControlPlaneEndpoint);
  // The Cluster holds the load balancer's address: nothing is written, ready.
  o.cluster_endpoint = harvester::Endpoint{"10.8.0.5", 6443};
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerReady");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
}

TEST(ClusterPlanTest, AUserSetEndpointIsRespectedAndNoLoadBalancerIsMade) {
  auto o = Base();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"api.example.com", 443};
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "ExternallyProvided");
  EXPECT_TRUE(p.status.ready.value_or(false));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].message, "control plane endpoint api.example.com:443");
}

TEST(ClusterPlanTest, ALoadBalancerOfAnotherClusterIsRefused) {
  auto o = Base();
  o.lb = ReadyLb();
  o.lb->ours = false;
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerNameConflict");
  EXPECT_TRUE(HasEvent(p, "LoadBalancerNameConflict", true));
  EXPECT_FALSE(p.status.ready.value_or(false));
}

TEST(ClusterPlanTest, AnOutdatedLoadBalancerIsAppliedAgainWithoutACreatedEvent) {
  auto o = Base();
  o.lb = ReadyLb();
  o.lb->up_to_date = false;
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_FALSE(p.action->event);
}

TEST(ClusterPlanTest, AnInvalidLoadBalancerConfigIsReportedAndWaitsForASpecChange) {
  auto o = Base();
  o.hc.spec.load_balancer_config.ipam_type = "static";
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "InvalidLoadBalancerConfig");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

// --- pools -------------------------------------------------------------------------------

TEST(ClusterPlanTest, InlinePoolsAreAppliedLoadBalancerPoolFirst) {
  auto o = WithPools();
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kApplyLoadBalancerPool);
  EXPECT_EQ(p.action->name, kLbPool);
  EXPECT_EQ(p.action->body["metadata"]["labels"][std::string(harvester::kLabelClusterId)],
            harvester::ClusterId(ClusterIdentityOf(o)));

  o.pools[kLbPool] = ViewOfPool(p.action->body, o);
  EXPECT_TRUE(o.pools[kLbPool].ours);
  EXPECT_TRUE(o.pools[kLbPool].up_to_date);
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyPool);
  EXPECT_EQ(p.action->name, kVmPool);

  const Object vm_pool = p.action->body;
  o.pools[kVmPool] = ViewOfPool(vm_pool, o);
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_EQ(p.action->body["spec"]["ipPool"], kLbPool);
  EXPECT_EQ(Reason(p, kVmIpPoolReady), "VMIPPoolReady");

  // A changed range is applied again.
  o.hc.spec.vm_network_config->ip_pool->range_start = "10.9.0.50";
  o.pools[kVmPool] = ViewOfPool(vm_pool, o);
  EXPECT_FALSE(o.pools[kVmPool].up_to_date);
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, kVmPool);
  EXPECT_FALSE(ViewOfPool(Object{{"metadata", {{"name", kVmPool}}}}, o).up_to_date);
}

TEST(ClusterPlanTest, MissingPoolRefsWarnButDoNotHoldTheLoadBalancer) {
  auto o = Base();
  api::VMNetworkConfig vnc;
  vnc.ip_pool_refs = {"pool-a", "default/pool-b"};
  o.hc.spec.vm_network_config = vnc;
  o.pools["pool-a"] = PoolView{false, false, false, true};
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_EQ(Reason(p, kVmIpPoolReady), "VMIPPoolNotFound");
  EXPECT_NE(api::FindCondition(p.status.conditions, kVmIpPoolReady)->message.find("pool-b"),
            std::string::npos);
  EXPECT_TRUE(HasEvent(p, "VMIPPoolNotFound", true));

  o.lb = ReadyLb();
  o.lb->endpoint.reset();
  EXPECT_EQ(Reason(PlanCluster(o), api::kReadyCondition), "VMIPPoolNotFound");

  o.pools["pool-b"] = PoolView{false, false, false, true};
  EXPECT_EQ(Reason(PlanCluster(o), kVmIpPoolReady), "VMIPPoolReady");
}

TEST(ClusterPlanTest, APoolOfAnotherClusterIsNeverOverwritten) {
  auto o = WithPools();
  o.pools[kLbPool] = PoolView{false, false, false, false};
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "IPPoolNameConflict");

  o.pools[kLbPool] = PoolView{true, false, false, true};
  o.pools[kVmPool] = PoolView{false, false, false, false};
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_EQ(Reason(p, kVmIpPoolReady), "VMIPPoolNameConflict");
}

TEST(ClusterPlanTest, AnInvalidInlinePoolIsReported) {
  auto o = WithPools();
  o.hc.spec.load_balancer_config.ipam_type = "dhcp";
  o.hc.spec.vm_network_config->ip_pool->subnet = "not-a-cidr";
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmIpPoolReady), "VMIPPoolCreationFailed");
  EXPECT_TRUE(HasEvent(p, "VMIPPoolCreationFailed", true));
}

// --- load balancer views -----------------------------------------------------------------

TEST(ClusterPlanTest, LoadBalancerViewsIgnoreWhatHarvesterRewrites) {
  auto o = Base();
  Object lb = PlanCluster(o).action->body;
  auto v = ViewOfLoadBalancer(lb, o);
  EXPECT_TRUE(v.ours);
  EXPECT_TRUE(v.up_to_date);
  EXPECT_FALSE(v.endpoint);
  lb["spec"]["description"] = "edited";
  lb["spec"].erase("healthCheck");
  lb["status"] = {{"address", "10.8.0.5"}};
  v = ViewOfLoadBalancer(lb, o);
  EXPECT_TRUE(v.up_to_date);
  EXPECT_EQ(v.endpoint, (harvester::Endpoint{"10.8.0.5", 6443}));
  // A selector key the Go provider left on a load balancer CAPHV adopted
  // stays (an apply never removes it): up to date, or every reconcile would
  // apply again.
  lb["spec"]["backendServerSelector"]["harvestercluster/machinetype"] =
      Object::array({"controlplane-c1"});
  EXPECT_TRUE(ViewOfLoadBalancer(lb, o).up_to_date);
  lb["spec"]["ipam"] = "pool";
  EXPECT_FALSE(ViewOfLoadBalancer(lb, o).up_to_date);
  lb["metadata"]["labels"][std::string(harvester::kLabelClusterId)] = "someone-else";
  EXPECT_FALSE(ViewOfLoadBalancer(lb, o).ours);
}

// --- failed actions ----------------------------------------------------------------------

TEST(ClusterPlanTest, FailedWritesToHarvesterAreReportedConflictsOnlyRetried) {
  auto o = Base();
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  const ClusterAction a = *p.action;
  MarkActionFailed(o, a, kube::Status(kube::StatusCode::kConflict, "changed"), p);
  EXPECT_TRUE(p.events.empty());
  MarkActionFailed(o, a, kube::Status(kube::StatusCode::kForbidden, "denied"), p);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerCreationFailed");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "LoadBalancerCreationFailed");
  EXPECT_TRUE(HasEvent(p, "LoadBalancerCreationFailed", true));

  o.namespace_ready = false;
  p = PlanCluster(o);
  MarkActionFailed(o, *p.action, kube::Status(kube::StatusCode::kForbidden, "denied"), p);
  EXPECT_EQ(api::FindCondition(p.status.conditions, kTargetNamespaceReady)->message,
            "cannot create the Harvester namespace guests: denied");

  // The load balancer's inline pool reports on LoadBalancerReady, quietly.
  auto pools = WithPools();
  p = PlanCluster(pools);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kApplyLoadBalancerPool);
  MarkActionFailed(pools, *p.action, kube::Status(kube::StatusCode::kForbidden, "denied"), p);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "IPPoolCreationFailed");
  EXPECT_EQ(api::FindCondition(p.status.conditions, kVmIpPoolReady), nullptr);
  EXPECT_FALSE(HasEvent(p, "IPPoolCreationFailed", true));
}

}  // namespace
}  // namespace caphv::controllers
