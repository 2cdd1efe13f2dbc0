// File: test/unit/controllers/cluster_plan_delete_test.cc
//
// The HarvesterCluster planner, case by case: pause (nothing at all happens,
// deletion included) and every step of the deletion order, with the
// identity broken or never working.

#include <gtest/gtest.h>

#include "cluster_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using std::chrono::seconds;
using K = ClusterActionKind;
using CPO = CloudProviderObject;

// --- paused ------------------------------------------------------------------------------

TEST(ClusterPlanTest, PausedDoesNothingAtAllDeletionIncluded) {
  for (bool deleting : {false, true}) {
    auto o = Base();
    o.has_finalizer = !deleting;
    o.ever_connected = false;
    o.namespace_ready = false;
    o.paused = true;
    o.deleting = deleting;
    o.lb = ReadyLb();
    auto p = PlanCluster(o);
    EXPECT_FALSE(p.action) << "deleting=" << deleting;
    EXPECT_EQ(Reason(p, api::kPausedCondition), "Paused");
    EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  }
  auto o = Base();
  o.hc.status.conditions.push_back(Cond("Paused", "True", "Paused"));
  EXPECT_EQ(Reason(PlanCluster(o), api::kPausedCondition), "NotPaused");
}

// --- deletion ----------------------------------------------------------------------------

ClusterObservation Deleting() {
  auto o = WithPools();
  o.deleting = true;
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  return o;
}

TEST(ClusterPlanTest, DeletionWaitsForTheMachinesFirst) {
  auto o = Deleting();
  o.machines = 2;
  o.harvester = Broken();
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kInfrastructureReady), "WaitingForMachines");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Deleting");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(ClusterPlanTest, DeletionOrderLoadBalancerPoolsCloudProviderObjectsFinalizer) {
  auto o = Deleting();
  o.lb = ReadyLb();
  o.pools = {{kLbPool, {true, false, false, true}},
             {kVmPool, {true, false, false, true}},
             {"shared", {false, true, false, true}}};  // a user's pool, no cluster id
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kDeleteLoadBalancer);
  EXPECT_EQ(p.action->name, kLb);
  EXPECT_EQ(ActionEvent(p), "LoadBalancerDeleted");

  o.lb->deleting = true;
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "Deleting");

  o.lb.reset();
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kConfirmLoadBalancerGone);

  o.lb_absence_confirmed = true;
  std::vector<std::string> pools;
  for (;;) {
    p = PlanCluster(o);
    ASSERT_TRUE(p.action);
    if (p.action->kind != K::kDeletePool) break;
    pools.push_back(p.action->name);
    o.pools[p.action->name].deleting = true;
  }
  EXPECT_EQ(pools, (std::vector<std::string>{kLbPool, kVmPool}));

  std::vector<CPO> objects;
  while (p.action->kind == K::kDeleteCloudProviderObject) {
    objects.push_back(p.action->object);
    o.cloud_provider.deleted.insert(p.action->object);
    p = PlanCluster(o);
    ASSERT_TRUE(p.action);
  }
  EXPECT_EQ(objects, (std::vector<CPO>{CPO::kClusterRoleBinding, CPO::kRoleBinding,
                                       CPO::kTokenSecret, CPO::kServiceAccount}));
  // What the Go provider may have left is looked for; here nothing.
  EXPECT_EQ(p.action->kind, K::kReadLegacyObjects);
  o.legacy = LegacyView{};
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kRemoveFinalizer);
  EXPECT_FALSE(p.action->event);
}

TEST(ClusterPlanTest, ALoadBalancerOfAnotherClusterIsLeftAlone) {
  auto o = Deleting();
  o.lb = ReadyLb();
  o.lb->ours = false;
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kDeleteCloudProviderObject);
}

TEST(ClusterPlanTest, BrokenIdentityDuringDeletionKeepsTheFinalizerAndWarns) {
  auto o = Deleting();
  o.harvester = Broken(seconds(20));
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kHarvesterConnectionReady), "IdentitySecretUnavailable");
  EXPECT_NE(api::FindCondition(p.status.conditions, kHarvesterConnectionReady)
                ->message.find("remove the finalizer"),
            std::string::npos);
  EXPECT_EQ(p.wait, Wait::After(seconds(20), p.wait.why));
  EXPECT_TRUE(HasEvent(p, "IdentitySecretUnavailable", true));
}

TEST(ClusterPlanTest, ANeverConnectedClusterLetsTheFinalizerGo) {
  auto o = Base();
  o.deleting = true;
  o.ever_connected = false;
  o.harvester = Broken();
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kRemoveFinalizer);
  ASSERT_TRUE(p.action->event);
  EXPECT_EQ(ActionEvent(p), "DeletedWithoutHarvester");
  EXPECT_TRUE(p.action->event->warning);
  EXPECT_NE(p.action->event->message.find("team/id"), std::string::npos);
}

TEST(ClusterPlanTest, WithoutAnOwnerOrAFinalizer) {
  auto o = Deleting();
  o.cluster_name.clear();
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kRemoveFinalizer);
  o.has_finalizer = false;
  EXPECT_FALSE(PlanCluster(o).action);
}

TEST(ClusterPlanTest, EverConnected) {
  api::HarvesterCluster hc;
  EXPECT_FALSE(EverConnected(hc));
  hc.status.conditions = {Cond("HarvesterConnectionReady", "False", "IdentitySecretUnavailable")};
  EXPECT_FALSE(EverConnected(hc));
  hc.status.conditions.push_back(Cond("TargetNamespaceReady", "True", "TargetNamespaceReady"));
  EXPECT_TRUE(EverConnected(hc));
  hc.status.conditions.clear();
  hc.spec.control_plane_endpoint = api::APIEndpoint{"10.0.0.1", 6443};
  EXPECT_TRUE(EverConnected(hc));
}

}  // namespace
}  // namespace caphv::controllers
