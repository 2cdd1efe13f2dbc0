// File: test/unit/controllers/cluster_plan_identity_test.cc
//
// The HarvesterCluster planner and the identity's credential expiry: the
// IdentityTokenValid condition, its Warning Events (once per transition)
// and the requeue that makes the planner look again when time alone changes
// the answer.

#include <gtest/gtest.h>

#include "api/conditions.h"
#include "cluster_plan_fixtures.h"
#include "controllers/cluster/cluster_plan.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::system_clock;
using std::chrono::hours;

Clock::time_point At(const std::string& text) { return *api::ParseTime(text); }

// A ready cluster whose identity token expires on 2026-12-15.
ClusterObservation ReadyWithExpiry(const std::string& now) {
  auto o = Base();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  o.lb = ReadyLb();
  o.harvester.identity_expiry = kube::CredentialExpiry{At("2026-12-15T00:00:00Z"), "token"};
  o.now = At(now);
  return o;
}

const api::Condition* Find(const ClusterPlan& p) {
  return api::FindCondition(p.status.conditions, kIdentityTokenValid);
}

TEST(ClusterPlanIdentityTest, AFarExpiryIsTrueAndLooksAgainWhenTheWarningIsDue) {
  auto o = ReadyWithExpiry("2026-11-01T00:00:00Z");
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  const api::Condition* c = Find(p);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "True");
  EXPECT_EQ(c->reason, "IdentityTokenValid");
  EXPECT_EQ(c->message, "the token of the identity kubeconfig expires at 2026-12-15T00:00:00Z");
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
  EXPECT_TRUE(p.events.size() == 1 && HasEvent(p, "InfrastructureReady", false));
  // Nothing else would bring the cluster back: at most 12 h later.
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(p.wait.after, hours(12));

  // The day before the warning: the requeue lands just past it.
  o = ReadyWithExpiry("2026-11-30T18:00:00Z");
  p = PlanCluster(o);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(p.wait.after, hours(6) + std::chrono::seconds(1));
}

TEST(ClusterPlanIdentityTest, WithinFourteenDaysItWarnsOnceAndStaysReady) {
  auto o = ReadyWithExpiry("2026-12-12T00:00:00Z");
  auto p = PlanCluster(o);
  const api::Condition* c = Find(p);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "IdentityTokenExpiringSoon");
  EXPECT_NE(c->message.find("expires at 2026-12-15T00:00:00Z"), std::string::npos) << c->message;
  EXPECT_NE(c->message.find("identity Secret team/id"), std::string::npos) << c->message;
  EXPECT_TRUE(HasEvent(p, "IdentityTokenExpiringSoon", true));
  // The cluster works: Ready is not affected.
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
  // Looks again just past the expiry.
  EXPECT_EQ(p.wait.after, hours(12));
  o.now = At("2026-12-14T20:00:00Z");
  EXPECT_EQ(PlanCluster(o).wait.after, hours(4) + std::chrono::seconds(1));

  // Reported: no second Event.
  o.hc.status = p.status;
  o.now = At("2026-12-13T00:00:00Z");
  p = PlanCluster(o);
  EXPECT_FALSE(HasEvent(p, "IdentityTokenExpiringSoon", true));
  EXPECT_EQ(p.status, o.hc.status) << "the status changed only because time passed";
}

TEST(ClusterPlanIdentityTest, AnExpiredTokenIsAnotherWarningAndNeedsNoRequeue) {
  auto o = ReadyWithExpiry("2026-12-12T00:00:00Z");
  o.hc.status = PlanCluster(o).status;
  o.now = At("2026-12-15T00:00:01Z");
  auto p = PlanCluster(o);
  EXPECT_EQ(Reason(p, kIdentityTokenValid), "IdentityTokenExpired");
  EXPECT_TRUE(HasEvent(p, "IdentityTokenExpired", true));
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(ClusterPlanIdentityTest, ARenewedKubeconfigWithoutExpiryDropsTheCondition) {
  auto o = ReadyWithExpiry("2026-12-12T00:00:00Z");
  o.hc.status = PlanCluster(o).status;
  ASSERT_NE(api::FindCondition(o.hc.status.conditions, kIdentityTokenValid), nullptr);
  o.harvester.identity_expiry.reset();
  auto p = PlanCluster(o);
  EXPECT_EQ(Find(p), nullptr);
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(ClusterPlanIdentityTest, NoConnectionNoConditionChange) {
  auto o = ReadyWithExpiry("2026-12-12T00:00:00Z");
  o.hc.status = PlanCluster(o).status;
  o.harvester = Broken();
  auto p = PlanCluster(o);
  EXPECT_EQ(Reason(p, kIdentityTokenValid), "IdentityTokenExpiringSoon");
  EXPECT_EQ(p.wait.after, std::chrono::seconds(20));
}

}  // namespace
}  // namespace caphv::controllers
