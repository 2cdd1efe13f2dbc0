// File: test/unit/kube/workqueue_test.cc
//
// WorkQueue semantics on a virtual clock: de-duplication, the
// processing/dirty hand-off, delayed adds, rate limiting and shutdown.

#include "kube/workqueue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "kube/clock.h"

namespace caphv::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

WorkQueue::Options FakeOptions(FakeClock& clock) {
  WorkQueue::Options o;
  o.name = "test";
  o.clock = &clock;
  o.rate_limiter = DefaultControllerRateLimiter(clock);
  return o;
}

TEST(WorkQueueTest, AddDeduplicatesWaitingKeys) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.Get(), "b");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingComesBackOnlyAfterDone) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  q.Add("a");
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u) << "a key being processed must not be handed out again";
  q.Done("a");
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueueTest, ConcurrentWorkersNeverShareAKey) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  constexpr int kKeys = 16;
  constexpr int kAdds = 20000;
  std::vector<std::atomic<int>> in_flight(kKeys);
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        const int k = std::stoi(*key);
        if (in_flight[k].fetch_add(1) != 0) overlaps++;
        std::this_thread::yield();
        in_flight[k].fetch_sub(1);
        processed++;
        q.Done(*key);
      }
    });
  }
  std::mt19937 rng(42);
  for (int i = 0; i < kAdds; ++i) q.Add(std::to_string(rng() % kKeys));
  q.ShutDownWithDrain();
  for (auto& t : workers) t.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(processed.load(), 0);
  EXPECT_LE(processed.load(), kAdds);
}

TEST(WorkQueueTest, AddAfterOrdersByReadyTime) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddAfter("late", seconds(3));
  q.AddAfter("early", seconds(1));
  q.AddAfter("middle", seconds(2));
  q.AddAfter("now", milliseconds(0));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.WaitingLen(), 3u);
  clock.Step(milliseconds(999));
  EXPECT_EQ(q.Len(), 1u);
  clock.Step(seconds(5));
  EXPECT_EQ(q.Len(), 4u);
  EXPECT_EQ(q.Get(), "now");
  EXPECT_EQ(q.Get(), "early");
  EXPECT_EQ(q.Get(), "middle");
  EXPECT_EQ(q.Get(), "late");
}

TEST(WorkQueueTest, AddAfterEarlierTimeWins) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddAfter("a", seconds(10));
  q.AddAfter("a", seconds(1));  // earlier: replaces
  q.AddAfter("a", seconds(5));  // later: ignored
  EXPECT_EQ(q.WaitingLen(), 1u);
  clock.Step(seconds(1));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  clock.Step(seconds(20));
  EXPECT_EQ(q.Len(), 0u) << "the superseded ready times must not add the key again";
}

TEST(WorkQueueTest, HandingOutAKeyDropsItsParkedTime) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddAfter("a", seconds(10));  // a requeue_after
  q.Add("a");                    // an event before it is due
  EXPECT_EQ(q.Get(), "a");
  EXPECT_EQ(q.WaitingLen(), 0u);
  q.Done("a");
  clock.Step(seconds(20));
  EXPECT_EQ(q.Len(), 0u) << "the work handed out superseded the parked time";
}

TEST(WorkQueueTest, ATimeParkedWhileProcessingIsKept) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddAfter("a", seconds(10));
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  q.AddAfter("a", seconds(5));  // the worker's own outcome
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
  clock.Step(seconds(5));
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(q.Get(), "a");
  q.Done("a");
  clock.Step(seconds(10));
  EXPECT_EQ(q.Len(), 0u) << "the first parked time was superseded";
}

TEST(WorkQueueTest, BlockedGetWakesWhenDelayedKeyBecomesReady) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddAfter("a", seconds(30));
  std::optional<std::string> got;
  std::thread t([&] { got = q.Get(); });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Step(seconds(30));
  t.join();
  EXPECT_EQ(got, "a");
}

// Steps the clock to 1 ms short of `delay`, then to it: success when the
// queue gained one key at the last step and none before.
::testing::AssertionResult ReadyExactlyAfter(WorkQueue& q, FakeClock& clock, milliseconds delay) {
  const size_t before = q.Len();
  clock.Step(delay - milliseconds(1));
  if (q.Len() != before) {
    return ::testing::AssertionFailure() << "a key was ready before " << delay.count() << " ms";
  }
  clock.Step(milliseconds(1));
  if (q.Len() != before + 1) {
    return ::testing::AssertionFailure() << "no key was ready at " << delay.count() << " ms";
  }
  return ::testing::AssertionSuccess();
}

TEST(WorkQueueTest, AddRateLimitedUsesPerKeyBackoff) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.AddRateLimited("a");
  EXPECT_EQ(q.NumRequeues("a"), 1);
  EXPECT_TRUE(ReadyExactlyAfter(q, clock, milliseconds(5)));
  ASSERT_EQ(q.Get(), "a");
  q.Done("a");
  q.AddRateLimited("a");
  EXPECT_TRUE(ReadyExactlyAfter(q, clock, milliseconds(10)));
  q.Forget("a");
  EXPECT_EQ(q.NumRequeues("a"), 0);
}

TEST(WorkQueueTest, AddRateLimitedAtMostCapsTheDelayAndStopsCountingThere) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  for (int i = 0; i < 19; ++i) {
    q.AddRateLimited("a", seconds(1));
    clock.Step(seconds(1));
    ASSERT_EQ(q.Get(), "a");
    q.Done("a");
  }
  q.AddRateLimited("a", seconds(1));  // 5 ms x 2^19 uncapped
  // Counted while the delay was below the cap: 5 ms x 2^7 = 640 ms was the last.
  EXPECT_EQ(q.NumRequeues("a"), 8);
  EXPECT_TRUE(ReadyExactlyAfter(q, clock, milliseconds(1000)));
  ASSERT_EQ(q.Get(), "a");
  q.Done("a");
  // An uncapped failure then waits 5 ms x 2^8, not 5 ms x 2^20.
  q.AddRateLimited("a");
  EXPECT_TRUE(ReadyExactlyAfter(q, clock, milliseconds(1280)));
  ASSERT_EQ(q.Get(), "a");
  q.Done("a");
  // Below the cap, the per-key delay is the limiter's own.
  q.AddRateLimited("b", seconds(1));
  EXPECT_TRUE(ReadyExactlyAfter(q, clock, milliseconds(5)));
}

TEST(WorkQueueTest, ShutDownWakesBlockedGet) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  std::vector<std::optional<std::string>> got(3, std::string("unset"));
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) threads.emplace_back([&, i] { got[i] = q.Get(); });
  ASSERT_TRUE(clock.BlockUntilWaiters(3));
  q.ShutDown();
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, std::nullopt);
  EXPECT_TRUE(q.ShuttingDown());
}

TEST(WorkQueueTest, ShutDownDrainsQueuedKeysAndIgnoresNewOnes) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.Add("a");
  q.AddAfter("later", seconds(1));
  q.ShutDown();
  q.Add("b");
  EXPECT_EQ(q.Get(), "a");
  clock.Step(seconds(2));
  EXPECT_EQ(q.Get(), std::nullopt);
}

TEST(WorkQueueTest, ShutDownWithDrainWaitsForDone) {
  FakeClock clock;
  WorkQueue q(FakeOptions(clock));
  q.Add("a");
  ASSERT_EQ(q.Get(), "a");
  std::atomic<bool> drained{false};
  std::thread t([&] {
    q.ShutDownWithDrain();
    drained = true;
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  EXPECT_FALSE(drained.load());
  q.Done("a");
  t.join();
  EXPECT_TRUE(drained.load());
}

TEST(WorkQueueTest, MetricsHooksSeeAddsDepthAndRetries) {
  FakeClock clock;
  WorkQueue::Options o = FakeOptions(clock);
  int adds = 0, retries = 0;
  int64_t depth = -1;
  o.metrics.inc_adds = [&] { ++adds; };
  o.metrics.inc_retries = [&] { ++retries; };
  o.metrics.set_depth = [&](int64_t d) { depth = d; };
  WorkQueue q(std::move(o));
  q.Add("a");
  q.Add("a");
  q.Add("b");
  EXPECT_EQ(adds, 2);
  EXPECT_EQ(depth, 2);
  ASSERT_EQ(q.Get(), "a");
  EXPECT_EQ(depth, 1);
  q.AddRateLimited("a");
  EXPECT_EQ(retries, 1);
}

}  // namespace
}  // namespace caphv::kube
