// Unit tests of the leader-election decision (tryAcquireOrRenew's pure part)
// on a fake clock, and of the Lease record mapping.

#include "kube/leader_election.h"

#include <gtest/gtest.h>

namespace caphv::kube {
namespace {

using Action = LeaseDecider::Action;
using std::chrono::milliseconds;
using std::chrono::seconds;

LeaseRecord Held(std::string holder, std::string renew = "2026-11-22T16:00:00.000000Z",
                 int transitions = 3) {
  return {std::move(holder), 15, "2026-11-22T15:00:00.000000Z", std::move(renew), transitions};
}

TEST(LeaseDeciderTest, NothingObservedMeansAcquireWithZeroTransitions) {
  LeaseDecider d("me");
  EXPECT_FALSE(d.IsLeader());
  EXPECT_EQ(d.Decide(FakeClock().Now()), Action::kAcquire);
  LeaseRecord r = d.Next(Action::kAcquire, 15, "T");
  EXPECT_EQ(r.holder_identity, "me");
  EXPECT_EQ(r.lease_transitions, 0);
  EXPECT_EQ(r.acquire_time, "T");
  EXPECT_EQ(r.renew_time, "T");
}

TEST(LeaseDeciderTest, OtherHolderIsRespectedUntilLeaseDurationPassesLocally) {
  FakeClock clock;
  LeaseDecider d("me");
  d.Observe(Held("other"), clock.Now());
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);
  clock.Step(seconds(14));
  d.Observe(Held("other"), clock.Now());  // unchanged: observation time stays
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);
  clock.Step(seconds(1));
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);  // exactly at expiry: not yet
  clock.Step(milliseconds(1));
  EXPECT_EQ(d.Decide(clock.Now()), Action::kAcquire);
  LeaseRecord r = d.Next(Action::kAcquire, 15, "T");
  EXPECT_EQ(r.lease_transitions, 4);
  EXPECT_EQ(r.acquire_time, "T");
}

TEST(LeaseDeciderTest, AChangedRecordRestartsTheExpiryCountdown) {
  FakeClock clock;
  LeaseDecider d("me");
  d.Observe(Held("other", "R1"), clock.Now());
  clock.Step(seconds(10));
  d.Observe(Held("other", "R2"), clock.Now());  // the holder renewed
  EXPECT_EQ(d.observed_time(), clock.Now());
  clock.Step(seconds(10));  // 20 s after first sight, 10 s after the renewal
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);
  clock.Step(seconds(6));
  EXPECT_EQ(d.Decide(clock.Now()), Action::kAcquire);
}

TEST(LeaseDeciderTest, RenewTimeOnTheWireIsIgnoredSoSkewIsHarmless) {
  FakeClock clock;
  LeaseDecider d("me");
  // A renewTime far in the past (a skewed holder clock) does not make the
  // lease look expired; only the local observation counts.
  d.Observe(Held("other", "1999-01-01T00:00:00.000000Z"), clock.Now());
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);
  clock.Step(seconds(16));
  EXPECT_EQ(d.Decide(clock.Now()), Action::kAcquire);
}

TEST(LeaseDeciderTest, ReleasedLeaseIsTakenAtOnce) {
  FakeClock clock;
  LeaseDecider d("me");
  LeaseRecord released{"", 1, "A", "A", 7};
  d.Observe(released, clock.Now());
  EXPECT_EQ(d.Decide(clock.Now()), Action::kAcquire);
  EXPECT_EQ(d.Next(Action::kAcquire, 15, "T").lease_transitions, 8);
}

TEST(LeaseDeciderTest, LeaderRenewsKeepingAcquireTimeAndTransitions) {
  FakeClock clock;
  LeaseDecider d("me");
  LeaseRecord mine{"me", 15, "ACQ", "R0", 5};
  d.Wrote(mine, clock.Now());
  EXPECT_TRUE(d.IsLeader());
  EXPECT_TRUE(d.LeaseValid(clock.Now()));
  clock.Step(seconds(14));
  EXPECT_TRUE(d.LeaseValid(clock.Now()));
  EXPECT_EQ(d.Decide(clock.Now()), Action::kRenew);
  LeaseRecord next = d.Next(Action::kRenew, 15, "R1");
  EXPECT_EQ(next.acquire_time, "ACQ");
  EXPECT_EQ(next.renew_time, "R1");
  EXPECT_EQ(next.lease_transitions, 5);
  clock.Step(seconds(1));
  EXPECT_FALSE(d.LeaseValid(clock.Now()));  // fast path off: re-read first
  // Even past our own expiry we still renew (not acquire) while we hold it.
  EXPECT_EQ(d.Decide(clock.Now() + seconds(100)), Action::kRenew);
}

TEST(LeaseDeciderTest, SomeoneElseTookOverMeansWeAreNoLongerLeader) {
  FakeClock clock;
  LeaseDecider d("me");
  d.Wrote({"me", 15, "A", "R", 1}, clock.Now());
  clock.Step(seconds(20));
  d.Observe({"other", 15, "B", "S", 2}, clock.Now());
  EXPECT_FALSE(d.IsLeader());
  EXPECT_EQ(d.Decide(clock.Now()), Action::kWait);
}

TEST(LeaseDeciderTest, ReleaseRecord) {
  FakeClock clock;
  LeaseDecider d("me");
  d.Wrote({"me", 15, "A", "R", 9}, clock.Now());
  LeaseRecord r = d.Release("NOW");
  EXPECT_EQ(r.holder_identity, "");
  EXPECT_EQ(r.lease_duration_seconds, 1);
  EXPECT_EQ(r.lease_transitions, 9);
  EXPECT_EQ(r.renew_time, "NOW");
}

TEST(LeaseRecordTest, RoundTripKeepsOtherSpecFields) {
  Object lease = {{"metadata", {{"name", "l"}, {"resourceVersion", "42"}}},
                  {"spec", {{"holderIdentity", "x"}, {"strategy", "OldestEmulationVersion"}}}};
  LeaseRecord r{"me", 15, "2026-11-22T16:04:05.000001Z", "2026-11-22T16:04:06.000002Z", 2};
  r.ToLease(lease);
  EXPECT_EQ(lease["spec"]["strategy"], "OldestEmulationVersion");
  EXPECT_EQ(lease["metadata"]["resourceVersion"], "42");
  EXPECT_EQ(LeaseRecord::FromLease(lease), r);
  EXPECT_EQ(LeaseRecord::FromLease(Object::object()), LeaseRecord{});
}

TEST(LeaderElectorTest, ValidatesDurations) {
  auto make = [](int lease_ms, int renew_ms, int retry_ms) {
    return LeaderElector::New(nullptr, {.lease_namespace = "ns",
                                        .lease_name = "l",
                                        .lease_duration = milliseconds(lease_ms),
                                        .renew_deadline = milliseconds(renew_ms),
                                        .retry_period = milliseconds(retry_ms)})
        .ok();
  };
  EXPECT_TRUE(make(15000, 10000, 2000));
  EXPECT_FALSE(make(10000, 10000, 2000));  // lease must exceed renew deadline
  EXPECT_FALSE(make(15000, 2400, 2000));   // renew deadline must exceed 1.2 * retry
  EXPECT_FALSE(make(15000, 10000, 0));
  EXPECT_FALSE(make(900, 500, 100));  // the Lease carries whole seconds
}

TEST(LeaderElectorTest, DefaultIdentityAndMicroTime) {
  std::string id = DefaultIdentity();
  auto us = id.rfind('_');
  ASSERT_NE(us, std::string::npos);
  EXPECT_EQ(id.size() - us - 1, 36u);  // a UUID
  EXPECT_NE(DefaultIdentity(), id);
  std::string t = MicroTimeNow();
  ASSERT_EQ(t.size(), 27u);  // 2026-11-22T16:04:05.123456Z
  EXPECT_EQ(t[10], 'T');
  EXPECT_EQ(t[19], '.');
  EXPECT_EQ(t.back(), 'Z');
}

}  // namespace
}  // namespace caphv::kube
