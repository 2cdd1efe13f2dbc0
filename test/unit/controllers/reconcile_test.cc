// File: test/unit/controllers/reconcile_test.cc
//
// The pieces every reconciler shares: conditions with transition-based
// warnings, the one Ready rule, the Paused condition, the status hold.

#include "controllers/reconcile.h"

#include <gtest/gtest.h>

#include <array>
#include <cctype>
#include <set>

#include "api/codec.h"
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

// A HarvesterMachine the CRD schema admits and api::Decode refuses
// (spec.cpu beyond 32 bits), with the conditions given.
kube::Object UndecodableMachine(kube::Object conditions) {
  kube::Object hm = {
      {"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
      {"kind", "HarvesterMachine"},
      {"metadata", {{"name", "cp-0"}, {"namespace", "team"}, {"generation", 3}}},
      {"spec", {{"cpu", 4294967296}}},
  };
  if (!conditions.is_null()) hm["status"] = {{"ready", true}, {"conditions", conditions}};
  return hm;
}

TEST(InvalidSpecTest, TheUserIsToldWhatCannotBeReadAndWhatToDo) {
  const kube::Object hm = UndecodableMachine(kube::Object());
  const std::string error = "spec.cpu: expected an integer in range, got 4294967296";
  ASSERT_FALSE(api::Decode<api::HarvesterMachine>(hm).ok());
  const InvalidSpecReport r =
      ReportInvalidSpec(hm, api::Kind::kHarvesterMachine, error, "2026-01-02T03:04:05Z");
  EXPECT_EQ(r.message,
            "cannot read HarvesterMachine team/cp-0: spec.cpu: expected an integer in range, got "
            "4294967296; fix the field(s) named (kubectl -n team edit harvestermachine cp-0): "
            "until then CAPHV does nothing with this HarvesterMachine");
  EXPECT_TRUE(r.warn);
  ASSERT_TRUE(r.conditions.has_value());
  const kube::Object want = kube::Object::array({{
      {"type", "Ready"},
      {"status", "False"},
      {"reason", "InvalidSpec"},
      {"message", r.message},
      {"observedGeneration", 3},
      {"lastTransitionTime", "2026-01-02T03:04:05Z"},
  }});
  EXPECT_EQ(*r.conditions, want) << r.conditions->dump();
  // A condition the schema admits (reason pattern, lengths).
  api::DecodeContext ctx;
  const auto status = api::FromJson<api::HarvesterMachineStatus>({{"conditions", want}}, ctx);
  ASSERT_TRUE(ctx.errors.empty()) << ctx.errors.front();
  EXPECT_TRUE(api::IsValidConditionReason(status.conditions[0].reason));

  const InvalidSpecReport cluster =
      ReportInvalidSpec({{"kind", "HarvesterCluster"},
                         {"metadata", {{"name", "c"}, {"namespace", "team"}}},
                         {"spec", {{"loadBalancerConfig", "dhcp"}}}},
                        api::Kind::kHarvesterCluster, "spec.loadBalancerConfig: expected an object",
                        "2026-01-02T03:04:05Z");
  EXPECT_EQ(cluster.message,
            "cannot read HarvesterCluster team/c: spec.loadBalancerConfig: expected an object; "
            "fix the field(s) named (kubectl -n team edit harvestercluster c): until then CAPHV "
            "does nothing with this HarvesterCluster");
  EXPECT_EQ((*cluster.conditions)[0].count("observedGeneration"), 0u);  // no generation known
}

TEST(InvalidSpecTest, ReadyIsReplacedInPlaceAndTheOtherConditionsKept) {
  const kube::Object vm = {{"type", "VMProvisioned"},
                           {"status", "True"},
                           {"reason", "VMRunning"},
                           {"message", ""},
                           {"lastTransitionTime", "2025-05-05T00:00:00Z"}};
  const kube::Object ready = {
      {"type", "Ready"}, {"status", "True"},        {"reason", "Ready"},
      {"message", ""},   {"observedGeneration", 2}, {"lastTransitionTime", "2025-05-05T00:00:00Z"}};
  const kube::Object foreign = {{"type", "InitMachineCreated"}, {"status", "True"}};
  const kube::Object hm = UndecodableMachine(kube::Object::array({ready, vm, foreign}));
  const InvalidSpecReport r =
      ReportInvalidSpec(hm, api::Kind::kHarvesterMachine, "spec.cpu: x", "2026-01-02T03:04:05Z");
  EXPECT_TRUE(r.warn);  // True -> False: a transition
  ASSERT_TRUE(r.conditions.has_value());
  ASSERT_EQ(r.conditions->size(), 3u) << r.conditions->dump();
  EXPECT_EQ((*r.conditions)[0]["reason"], "InvalidSpec");
  EXPECT_EQ((*r.conditions)[0]["status"], "False");
  EXPECT_EQ((*r.conditions)[0]["lastTransitionTime"], "2026-01-02T03:04:05Z");
  EXPECT_EQ((*r.conditions)[1], vm);
  EXPECT_EQ((*r.conditions)[2], foreign);
}

TEST(InvalidSpecTest, SaidOnceThenNothingUntilTheProblemChanges) {
  const kube::Object first =
      *ReportInvalidSpec(UndecodableMachine(kube::Object::array()), api::Kind::kHarvesterMachine,
                         "spec.cpu: x", "2026-01-02T03:04:05Z")
           .conditions;
  // Reported already: no Event, no write.
  const InvalidSpecReport again =
      ReportInvalidSpec(UndecodableMachine(first), api::Kind::kHarvesterMachine, "spec.cpu: x",
                        "2026-02-02T00:00:00Z");
  EXPECT_FALSE(again.warn);
  EXPECT_FALSE(again.conditions.has_value());

  // Another problem: the message is rewritten, without an Event (the same
  // reason: no transition) and with the transition time kept.
  const InvalidSpecReport other =
      ReportInvalidSpec(UndecodableMachine(first), api::Kind::kHarvesterMachine, "spec.tpm: y",
                        "2026-02-02T00:00:00Z");
  EXPECT_FALSE(other.warn);
  ASSERT_TRUE(other.conditions.has_value());
  EXPECT_NE((*other.conditions)[0]["message"].get<std::string>().find("spec.tpm: y"),
            std::string::npos);
  EXPECT_EQ((*other.conditions)[0]["lastTransitionTime"], "2026-01-02T03:04:05Z");

  // False for another reason before: a transition (Event), the time kept.
  kube::Object failed = first;
  failed[0]["reason"] = "VMCreateFailed";
  const InvalidSpecReport turned =
      ReportInvalidSpec(UndecodableMachine(failed), api::Kind::kHarvesterMachine, "spec.cpu: x",
                        "2026-02-02T00:00:00Z");
  EXPECT_TRUE(turned.warn);
  ASSERT_TRUE(turned.conditions.has_value());
  EXPECT_EQ((*turned.conditions)[0]["reason"], "InvalidSpec");
  EXPECT_EQ((*turned.conditions)[0]["lastTransitionTime"], "2026-01-02T03:04:05Z");
}

TEST(InvalidSpecTest, ALongErrorIsCutAtACharacterBoundary) {
  // The error quotes the value: 3000 two-byte characters after an odd number
  // of bytes, so that the limit falls inside a character.
  std::string value;
  for (int i = 0; i < 3000; ++i) value += "\xc3\xa9";
  const InvalidSpecReport r = ReportInvalidSpec(
      UndecodableMachine(kube::Object()), api::Kind::kHarvesterMachine,
      "spec.cpu: expected an integer, got \"x" + value + "\"", "2026-01-02T03:04:05Z");
  EXPECT_LT(r.message.size(), 2300u);
  EXPECT_NE(r.message.find("...; fix the field(s) named"), std::string::npos);
  // Valid UTF-8: the JSON of the condition can be written.
  EXPECT_NO_THROW((void)r.conditions->dump());
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
