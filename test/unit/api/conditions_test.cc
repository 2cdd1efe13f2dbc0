// Unit tests of the condition helpers.

#include "api/conditions.h"

#include <gtest/gtest.h>

namespace caphv::api {
namespace {

Condition Make(std::string type, std::string status, std::string reason) {
  Condition c;
  c.type = std::move(type);
  c.status = std::move(status);
  c.reason = std::move(reason);
  return c;
}

TEST(ConditionsTest, SetKeepsTransitionTimeWhenStatusUnchanged) {
  std::vector<Condition> conds;
  EXPECT_TRUE(SetCondition(conds, Make("Ready", "False", "Waiting"), "2026-01-01T00:00:00Z"));
  ASSERT_EQ(conds.size(), 1u);
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:00:00Z");

  // Same status, new reason: updated, time kept.
  EXPECT_TRUE(SetCondition(conds, Make("Ready", "False", "StillWaiting"), "2026-01-01T00:05:00Z"));
  EXPECT_EQ(conds[0].reason, "StillWaiting");
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:00:00Z");

  // Identical: no change.
  EXPECT_FALSE(SetCondition(conds, Make("Ready", "False", "StillWaiting"), "2026-01-01T00:06:00Z"));

  // Status flips: new time.
  EXPECT_TRUE(SetCondition(conds, Make("Ready", "True", "Ready"), "2026-01-01T00:10:00Z"));
  EXPECT_EQ(conds[0].last_transition_time, "2026-01-01T00:10:00Z");
  EXPECT_TRUE(IsConditionTrue(conds, "Ready"));
  EXPECT_EQ(conds.size(), 1u);
}

TEST(ConditionsTest, FindAndRemove) {
  std::vector<Condition> conds;
  (void)SetCondition(conds, Make("Ready", "True", "Ready"), "t");
  (void)SetCondition(conds, Make("Paused", "False", "NotPaused"), "t");
  EXPECT_NE(FindCondition(conds, "Paused"), nullptr);
  EXPECT_FALSE(IsConditionTrue(conds, "Paused"));
  EXPECT_FALSE(IsConditionTrue(conds, "Missing"));
  EXPECT_TRUE(RemoveCondition(conds, "Paused"));
  EXPECT_FALSE(RemoveCondition(conds, "Paused"));
  EXPECT_EQ(FindCondition(conds, "Paused"), nullptr);
}

TEST(ConditionsTest, ReasonValidation) {
  EXPECT_TRUE(IsValidConditionReason("VMProvisioningReady"));
  EXPECT_TRUE(IsValidConditionReason("A"));
  EXPECT_TRUE(IsValidConditionReason("Foo_Bar,Baz:Qux"));
  EXPECT_FALSE(IsValidConditionReason(""));
  EXPECT_FALSE(IsValidConditionReason("1Reason"));
  EXPECT_FALSE(IsValidConditionReason("IP pool exhausted"));
  EXPECT_FALSE(IsValidConditionReason("Trailing:"));
}

TEST(ConditionsTest, FormatTime) {
  EXPECT_EQ(FormatTime(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(NowRfc3339().size(), 20u);
}

}  // namespace
}  // namespace caphv::api
