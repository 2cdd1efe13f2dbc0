// File: test/unit/kube/clock_test.cc
//
// FakeClock: waiters wake on Step() and on stop requests.

#include "kube/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace caphv::kube {
namespace {

using std::chrono::seconds;

TEST(FakeClockTest, SleepForReturnsOnlyAfterStep) {
  FakeClock clock;
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(clock.SleepFor(seconds(5), {}));
    done = true;
  });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Step(seconds(4));
  EXPECT_FALSE(done.load());
  clock.Step(seconds(1));
  t.join();
  EXPECT_TRUE(done.load());
}

TEST(FakeClockTest, SleepForStopsOnRequest) {
  FakeClock clock;
  std::stop_source stop;
  std::thread t([&] { EXPECT_FALSE(clock.SleepFor(seconds(5), stop.get_token())); });
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  stop.request_stop();
  t.join();
}

TEST(FakeClockTest, WaitUntilPastDeadlineReturnsAtOnce) {
  FakeClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  clock.WaitUntil(cv, lock, clock.Now());
  EXPECT_EQ(clock.Waiters(), 0);
}

}  // namespace
}  // namespace caphv::kube
