// File: test/unit/controllers/reconcile_test.cc
//
// The pieces every reconciler shares: conditions with transition-based
// warnings, the one Ready rule, the Paused condition, the status hold.

#include "controllers/reconcile.h"

#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <set>

#include "api/conditions.h"
#include "controllers/cluster/cluster_plan.h"
#include "controllers/machine/machine_plan.h"

namespace caphv::controllers {
namespace {

TEST(ReconcileTest, MarkWarnsOnlyOnTransitionsAndKeepsTheTransitionTime) {
  Conditions first({}, 1);
  first.Mark("VMIPAllocated", false, "VMIPPoolExhausted", "full", /*warn=*/true);
  ASSERT_EQ(first.warnings().size(), 1u);
  EXPECT_EQ(first.warnings()[0].reason, "VMIPPoolExhausted");
  const std::string first_time = first.Find("VMIPAllocated")->last_transition_time;

  // The same failure reported again: no new event, same transition time.
  Conditions again(first.current(), 2);
  again.Mark("VMIPAllocated", false, "VMIPPoolExhausted", "still full", true);
  EXPECT_TRUE(again.warnings().empty());
  EXPECT_EQ(again.Find("VMIPAllocated")->message, "still full");
  EXPECT_EQ(again.Find("VMIPAllocated")->observed_generation, 2);
  EXPECT_EQ(again.Find("VMIPAllocated")->last_transition_time, first_time);

  // Another reason is a transition; True warns only when flagged (a caveat).
  again.Mark("VMIPAllocated", false, "VMIPAllocationFailed", "409", true);
  EXPECT_EQ(again.warnings().size(), 1u);
  again.Mark("VMIPAllocated", true, "VMIPAllocated", "10.0.0.5");
  EXPECT_EQ(again.warnings().size(), 1u);
  EXPECT_TRUE(again.IsTrue("VMIPAllocated"));
  ASSERT_EQ(again.current().size(), 1u);

  Conditions caveat({}, 1);
  caveat.Mark("BootstrapDataReady", true, "BootstrapDataNotMerged", "a shell script", true);
  ASSERT_EQ(caveat.warnings().size(), 1u);
  Conditions caveat_again(caveat.current(), 1);
  caveat_again.Mark("BootstrapDataReady", true, "BootstrapDataNotMerged", "a shell script", true);
  EXPECT_TRUE(caveat_again.warnings().empty());
}

TEST(ReconcileTest, ReadyIsTheFirstConditionNotTrueInOrder) {
  constexpr std::array<std::string_view, 3> kOrder = {"A", "B", "C"};
  Conditions c({}, 1);
  SummarizeReady(c, false, false, kOrder);
  EXPECT_EQ(c.Find(api::kReadyCondition), nullptr);  // nothing known yet
  c.Mark("A", true, "AReady", "");
  c.Mark("C", false, "CWaits", "waiting for C");
  c.Mark("B", false, "BFailed", "B broke");
  SummarizeReady(c, false, false, kOrder);
  EXPECT_EQ(c.Find(api::kReadyCondition)->reason, "BFailed");
  EXPECT_EQ(c.Find(api::kReadyCondition)->message, "B broke");
  SummarizeReady(c, true, false, kOrder);
  EXPECT_EQ(c.Find(api::kReadyCondition)->reason, "Ready");
  SummarizeReady(c, true, true, kOrder);
  EXPECT_EQ(c.Find(api::kReadyCondition)->reason, "Deleting");
  EXPECT_FALSE(c.IsTrue(api::kReadyCondition));
}

TEST(ReconcileTest, PausedAppearsWhenPausedAndTurnsFalseAfter) {
  Conditions c({}, 1);
  SyncPaused(c, false);
  EXPECT_TRUE(c.current().empty());  // never paused: no condition at all
  SyncPaused(c, true);
  EXPECT_TRUE(c.IsTrue(api::kPausedCondition));
  SyncPaused(c, false);
  EXPECT_EQ(c.Find(api::kPausedCondition)->reason, "NotPaused");
}

TEST(ReconcileTest, AWaitBecomesTheControllerResult) {
  EXPECT_EQ(ResultOf(Wait::ForEvent("x")).requeue_after, kube::Clock::Duration::zero());
  EXPECT_EQ(ResultOf(Wait::After(std::chrono::seconds(7), "x")).requeue_after,
            std::chrono::seconds(7));
}

TEST(ReconcileTest, AHeldStatusComesBackNoLaterThanItsHoldEnds) {
  using std::chrono::seconds;
  EXPECT_EQ(NoLaterThan(kube::Result::Done(), seconds(3)).requeue_after, seconds(3));
  EXPECT_EQ(NoLaterThan(kube::Result::RequeueAfter(seconds(1)), seconds(3)).requeue_after,
            seconds(1));
  EXPECT_EQ(NoLaterThan(kube::Result::RequeueAfter(seconds(60)), seconds(3)).requeue_after,
            seconds(3));
  // An error is retried with backoff anyway.
  const kube::Result error =
      NoLaterThan(kube::Result::Error(kube::Status(kube::StatusCode::kInternal, "x")), seconds(3));
  EXPECT_FALSE(error.error.ok());
  EXPECT_EQ(error.requeue_after, kube::Clock::Duration::zero());
}

TEST(StatusHoldTest, ProgressWaitsForTheHoldThenIsWritten) {
  using std::chrono::seconds;
  kube::FakeClock clock;
  StatusHold hold(clock, seconds(5));
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(5));
  clock.Step(seconds(2));
  // A later state replaces the held one; the hold runs from the first.
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(3));
  EXPECT_EQ(hold.Pending("ns/b", false), seconds(5));  // per key
  clock.Step(seconds(3));
  EXPECT_EQ(hold.Pending("ns/a", false), kube::Clock::Duration::zero());
  // Written: the next progress starts a new hold.
  hold.Settled("ns/a");
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(5));
}

TEST(StatusHoldTest, UrgentIsWrittenAtOnceAndSettledForgets) {
  using std::chrono::seconds;
  kube::FakeClock clock;
  StatusHold hold(clock, seconds(5));
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(5));
  EXPECT_EQ(hold.Pending("ns/a", true), kube::Clock::Duration::zero());
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(5));
  clock.Step(seconds(4));
  hold.Settled("ns/a");  // the status became as planned without a write
  EXPECT_EQ(hold.Pending("ns/a", false), seconds(5));
}

TEST(ToOurConditionsTest, TheGoProvidersConditionsAreTurnedIntoOurShape) {
  // As the Go provider v0.2.x leaves a HarvesterCluster: reasonless
  // conditions.MarkTrue results, and a type CAPHV does not have.
  std::vector<api::Condition> conditions = {
      {"Ready", "True", 0, "2026-01-01T00:00:00Z", "", ""},
      {"InitMachineCreated", "True", 0, "2026-01-01T00:00:00Z", "", ""},
      {"LoadBalancerReady", "True", 0, "2026-01-01T00:00:00Z", "", ""},
      {"Paused", "False", 0, "2026-01-01T00:00:00Z", "NotPaused", ""},
  };
  const std::array<std::string_view, 1> known = {"LoadBalancerReady"};
  EXPECT_TRUE(ToOurConditions(conditions, known));
  ASSERT_EQ(conditions.size(), 3u);
  EXPECT_EQ(conditions[0].type, "Ready");
  EXPECT_EQ(conditions[0].reason, "NoReason");
  EXPECT_EQ(conditions[1].type, "LoadBalancerReady");
  EXPECT_EQ(conditions[2].reason, "NotPaused");
  // Ours already: nothing to replace.
  EXPECT_FALSE(ToOurConditions(conditions, known));
}

// The names of a reconciler's action rows, checked on the way: every kind
// (0 up to the first "Unknown") has a distinct PascalCase name, and a failure
// reason exactly when its failure reports a condition. That a kind has a row
// at all is the compiler's check (RowOf's switch has no default).
template <typename Kind>
std::set<std::string_view> CheckedRowNames() {
  std::set<std::string_view> names;
  for (int i = 0;; ++i) {
    const ActionRow row = RowOf(static_cast<Kind>(i));
    if (row.name == "Unknown") break;
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_TRUE(std::isupper(static_cast<unsigned char>(row.name.front()))) << row.name;
    EXPECT_EQ(row.failure_condition.empty(), row.failure_reason.empty()) << row.name;
  }
  return names;
}

TEST(ActionRowTest, EveryActionOfBothReconcilersHasOneRowOfItsOwn) {
  EXPECT_TRUE(CheckedRowNames<ActionKind>().contains("ReleaseEtcdNode"));  // the last kind
  EXPECT_TRUE(CheckedRowNames<ClusterActionKind>().contains("RemoveFinalizer"));
}

}  // namespace
}  // namespace caphv::controllers
