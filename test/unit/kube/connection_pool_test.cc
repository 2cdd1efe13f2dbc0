// File: test/unit/kube/connection_pool_test.cc
//
// ConnectionPool: states, backoff on the virtual clock, version changes,
// waiters, independence of keys, Sweep and Stop. Builds run on the pool's
// threads; the tests wait for them through condition variables (bounded in
// real time), never by sleeping.

#include "kube/connection_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace caphv::kube {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

constexpr auto kBound = seconds(10);  // real-time bound of every wait

struct Thing {
  explicit Thing(std::string n) : name(std::move(n)) {}
  std::string name;
};

// What the builder does for a key, set by the test.
struct Plan {
  bool fail = false;
  bool keep_previous = false;
  bool gate = false;  // block until Open() (or stop)
  std::string progress;
};

class Harness {
 public:
  explicit Harness(FakeClock* clock) : clock_(clock) {}

  ConnectionPool<Thing>::Builder Builder() {
    return [this](const BuildContext<Thing>& ctx) -> BuildResult<Thing> {
      Plan plan;
      {
        std::unique_lock lock(mu_);
        plan = plans_[ctx.key];
        builds_[ctx.key]++;
        versions_seen_[ctx.key].insert(ctx.version);
      }
      if (!plan.progress.empty()) ctx.SetProgress(plan.progress);
      if (plan.gate) {
        std::unique_lock lock(mu_);
        waiting_.insert(ctx.key);
        cv_.notify_all();
        cv_.wait(lock, ctx.stop, [&] { return open_.contains(ctx.key); });
        waiting_.erase(ctx.key);
        open_.erase(ctx.key);
        if (ctx.stop.stop_requested()) {
          stopped_builds_++;
          cv_.notify_all();
          return BuildResult<Thing>::Failed("Stopped", "stopped");
        }
      }
      if (plan.keep_previous && ctx.previous) return BuildResult<Thing>::KeepPrevious();
      if (plan.fail) return BuildResult<Thing>::Failed("Unreachable", ctx.key + " is unreachable");
      return BuildResult<Thing>::Ready(std::make_shared<Thing>(ctx.key + "@" + ctx.version));
    };
  }

  void SetPlan(const std::string& key, Plan p) {
    std::lock_guard lock(mu_);
    plans_[key] = std::move(p);
  }
  void Open(const std::string& key) {
    std::lock_guard lock(mu_);
    open_.insert(key);
    cv_.notify_all();
  }
  bool WaitUntilGated(const std::string& key) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return waiting_.contains(key); });
  }
  bool WaitForStoppedBuilds(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return stopped_builds_ >= n; });
  }
  int Builds(const std::string& key) {
    std::lock_guard lock(mu_);
    return builds_[key];
  }

  // A waiter that counts its notifications.
  PoolWaiter Waiter(const std::string& id) {
    return {id, [this, id] {
              std::lock_guard lock(mu_);
              notified_[id]++;
              cv_.notify_all();
            }};
  }
  int Notified(const std::string& id) {
    std::lock_guard lock(mu_);
    return notified_[id];
  }
  bool WaitNotified(const std::string& id, int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, kBound, [&] { return notified_[id] >= n; });
  }

  FakeClock* clock() { return clock_; }

 private:
  FakeClock* clock_;
  std::mutex mu_;
  std::condition_variable_any cv_;
  std::map<std::string, Plan> plans_;
  std::map<std::string, int> builds_;
  std::map<std::string, std::set<std::string>> versions_seen_;
  std::set<std::string> waiting_, open_;
  std::map<std::string, int> notified_;
  int stopped_builds_ = 0;
};

class ConnectionPoolTest : public ::testing::Test {
 protected:
  ConnectionPoolTest() : harness_(&clock_), pool_(harness_.Builder(), Options()) {}

  PoolOptions Options() {
    PoolOptions o;
    o.name = "test pool";
    o.clock = &clock_;
    return o;
  }

  // Get (which must start a build), then wait until `waiter` heard the end
  // of that build; returns what Get answers then.
  PoolLookup<Thing> GetAndWait(const std::string& key, const std::string& version,
                               const std::string& waiter) {
    const int before = harness_.Notified(waiter);
    pool_.Get(key, version, harness_.Waiter(waiter));
    EXPECT_TRUE(harness_.WaitNotified(waiter, before + 1));
    return pool_.Get(key, version);
  }

  FakeClock clock_;
  Harness harness_;
  ConnectionPool<Thing> pool_;
};

TEST_F(ConnectionPoolTest, FirstGetConnectsInTheBackgroundThenServesTheValue) {
  auto first = pool_.Get("a", "1", harness_.Waiter("w"));
  EXPECT_EQ(first.state, PoolState::kConnecting);
  EXPECT_EQ(first.value, nullptr);
  EXPECT_EQ(first.reason, "Connecting");
  EXPECT_EQ(first.retry_after, Clock::Duration::zero());
  ASSERT_TRUE(harness_.WaitNotified("w", 1));

  auto ready = pool_.Get("a", "1", harness_.Waiter("w"));
  ASSERT_EQ(ready.state, PoolState::kReady);
  ASSERT_NE(ready.value, nullptr);
  EXPECT_EQ(ready.value->name, "a@1");
  EXPECT_FALSE(ready.rebuilding);
  EXPECT_EQ(pool_.Get("a", "1").value, ready.value);  // the same shared value
  EXPECT_EQ(harness_.Builds("a"), 1);
  EXPECT_TRUE(pool_.Contains("a"));
  EXPECT_FALSE(pool_.Contains("b"));
}

TEST_F(ConnectionPoolTest, ProgressMessageIsShownWhileConnecting) {
  harness_.SetPlan("a", {.gate = true, .progress = "connecting to https://127.0.0.1:1"});
  pool_.Get("a", "1");
  ASSERT_TRUE(harness_.WaitUntilGated("a"));
  auto l = pool_.Get("a", "1");
  EXPECT_EQ(l.state, PoolState::kConnecting);
  EXPECT_EQ(l.reason, "Connecting");
  EXPECT_EQ(l.message, "connecting to https://127.0.0.1:1");
  harness_.Open("a");
}

TEST(ConnectionPoolOptionsTest, ConnectingMessageBeforeAnyProgress) {
  FakeClock clock;
  Harness harness(&clock);
  harness.SetPlan("a", {.gate = true});
  PoolOptions o;
  o.clock = &clock;
  o.connecting_message = [](const std::string& key) { return "dialling " + key; };
  ConnectionPool<Thing> pool(harness.Builder(), o);
  auto l = pool.Get("a", "1");
  EXPECT_EQ(l.reason, "Connecting");
  EXPECT_EQ(l.message, "dialling a");
  ASSERT_TRUE(harness.WaitUntilGated("a"));
  harness.Open("a");
}

TEST_F(ConnectionPoolTest, FailuresBackOffExponentiallyUpToTheCapAndSuccessResets) {
  harness_.SetPlan("a", {.fail = true});
  auto failed = GetAndWait("a", "1", "w");
  ASSERT_EQ(failed.state, PoolState::kFailed);
  EXPECT_EQ(failed.value, nullptr);
  EXPECT_EQ(failed.reason, "Unreachable");
  EXPECT_EQ(failed.message, "a is unreachable");
  EXPECT_EQ(failed.retry_after, seconds(2));

  // Before the deadline nothing is retried.
  clock_.Step(seconds(1));
  auto still = pool_.Get("a", "1", harness_.Waiter("w"));
  EXPECT_EQ(still.state, PoolState::kFailed);
  EXPECT_EQ(still.retry_after, seconds(1));
  EXPECT_EQ(harness_.Builds("a"), 1);

  // At the deadline the next Get retries; while it runs the last failure is
  // what the caller sees, with no retry delay (the waiter will be told).
  Clock::Duration expected = seconds(2);
  for (int attempt = 2; attempt <= 9; ++attempt) {
    clock_.Step(expected - (attempt == 2 ? seconds(1) : Clock::Duration::zero()));
    const int before = harness_.Notified("w");
    auto retrying = pool_.Get("a", "1", harness_.Waiter("w"));
    if (retrying.state == PoolState::kConnecting) {
      EXPECT_EQ(retrying.reason, "Unreachable");
      EXPECT_EQ(retrying.retry_after, Clock::Duration::zero());
    }
    ASSERT_TRUE(harness_.WaitNotified("w", before + 1));
    EXPECT_EQ(harness_.Builds("a"), attempt);
    expected = std::min<Clock::Duration>(expected * 2, minutes(2));
    auto again = pool_.Get("a", "1");
    ASSERT_EQ(again.state, PoolState::kFailed);
    EXPECT_EQ(again.retry_after, expected) << "attempt " << attempt;
  }
  EXPECT_EQ(expected, minutes(2));

  // Success resets the backoff: the next failure waits 2 s again.
  harness_.SetPlan("a", {});
  clock_.Step(expected);
  auto ready = GetAndWait("a", "1", "w");
  ASSERT_EQ(ready.state, PoolState::kReady);
  harness_.SetPlan("a", {.fail = true});
  auto failed_again = GetAndWait("a", "2", "w");
  ASSERT_EQ(failed_again.state, PoolState::kFailed);
  EXPECT_EQ(failed_again.retry_after, seconds(2));
}

TEST_F(ConnectionPoolTest, NewVersionIsBuiltWhileTheOldValueIsServed) {
  auto v1 = GetAndWait("a", "1", "w");
  ASSERT_EQ(v1.state, PoolState::kReady);
  std::weak_ptr<Thing> old = v1.value;

  harness_.SetPlan("a", {.gate = true});
  auto during = pool_.Get("a", "2", harness_.Waiter("w"));
  ASSERT_EQ(during.state, PoolState::kReady);
  EXPECT_TRUE(during.rebuilding);
  EXPECT_EQ(during.value, v1.value);
  ASSERT_TRUE(harness_.WaitUntilGated("a"));
  EXPECT_EQ(pool_.Get("a", "2").value->name, "a@1");

  harness_.Open("a");
  ASSERT_TRUE(harness_.WaitNotified("w", 2));
  auto v2 = pool_.Get("a", "2");
  ASSERT_EQ(v2.state, PoolState::kReady);
  EXPECT_FALSE(v2.rebuilding);
  EXPECT_EQ(v2.value->name, "a@2");
  v1 = {};
  during = {};
  EXPECT_TRUE(old.expired()) << "the pool must release the replaced value";
}

TEST_F(ConnectionPoolTest, SameContentKeepsThePreviousValueForTheNewVersion) {
  auto v1 = GetAndWait("a", "1", "w");
  ASSERT_EQ(v1.state, PoolState::kReady);
  harness_.SetPlan("a", {.keep_previous = true});
  pool_.Get("a", "2", harness_.Waiter("w"));
  ASSERT_TRUE(harness_.WaitNotified("w", 2));
  auto v2 = pool_.Get("a", "2");
  ASSERT_EQ(v2.state, PoolState::kReady);
  EXPECT_EQ(v2.value, v1.value);
  EXPECT_FALSE(v2.rebuilding);
  EXPECT_EQ(harness_.Builds("a"), 2);
  EXPECT_EQ(pool_.Get("a", "2").value, v1.value);
  EXPECT_EQ(harness_.Builds("a"), 2);
}

TEST_F(ConnectionPoolTest, FailedRebuildDropsTheOldValue) {
  auto v1 = GetAndWait("a", "1", "w");
  ASSERT_EQ(v1.state, PoolState::kReady);
  std::weak_ptr<Thing> old = v1.value;
  v1 = {};
  harness_.SetPlan("a", {.fail = true});
  pool_.Get("a", "2", harness_.Waiter("w"));
  ASSERT_TRUE(harness_.WaitNotified("w", 2));
  auto v2 = pool_.Get("a", "2");
  EXPECT_EQ(v2.state, PoolState::kFailed);
  EXPECT_EQ(v2.value, nullptr);
  EXPECT_EQ(v2.reason, "Unreachable");
  EXPECT_TRUE(old.expired());
}

TEST_F(ConnectionPoolTest, ChangedVersionIsRetriedAtOnceDespiteTheBackoff) {
  harness_.SetPlan("a", {.fail = true});
  ASSERT_EQ(GetAndWait("a", "1", "w").state, PoolState::kFailed);
  harness_.SetPlan("a", {});
  auto l = GetAndWait("a", "2", "w");  // the user fixed the Secret
  EXPECT_EQ(l.state, PoolState::kReady);
  EXPECT_EQ(l.value->name, "a@2");
  EXPECT_EQ(harness_.Builds("a"), 2);
}

TEST_F(ConnectionPoolTest, WaitersAreToldOncePerIdOnReadyAndOnFailure) {
  harness_.SetPlan("a", {.gate = true});
  for (int i = 0; i < 3; ++i) pool_.Get("a", "1", harness_.Waiter("machine-1"));
  pool_.Get("a", "1", harness_.Waiter("cluster-1"));
  ASSERT_TRUE(harness_.WaitUntilGated("a"));
  harness_.Open("a");
  ASSERT_TRUE(harness_.WaitNotified("machine-1", 1));
  ASSERT_TRUE(harness_.WaitNotified("cluster-1", 1));
  EXPECT_EQ(pool_.Get("a", "1").state, PoolState::kReady);
  EXPECT_EQ(harness_.Notified("machine-1"), 1);

  // A ready answer registers nothing.
  pool_.Get("a", "1", harness_.Waiter("late"));
  harness_.SetPlan("a", {.fail = true});
  pool_.Get("a", "2", harness_.Waiter("machine-1"));
  ASSERT_TRUE(harness_.WaitNotified("machine-1", 2));
  EXPECT_EQ(harness_.Notified("cluster-1"), 1);
  EXPECT_EQ(harness_.Notified("late"), 0);
}

TEST_F(ConnectionPoolTest, SlowBuildOfOneKeyNeverDelaysAnother) {
  harness_.SetPlan("slow", {.gate = true});
  pool_.Get("slow", "1");
  ASSERT_TRUE(harness_.WaitUntilGated("slow"));

  const auto start = std::chrono::steady_clock::now();
  auto b = GetAndWait("fast", "1", "w");
  EXPECT_EQ(b.state, PoolState::kReady);
  EXPECT_EQ(pool_.Get("slow", "1").state, PoolState::kConnecting);
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5));

  pool_.Stop();  // the slow build is asked to stop and joined
  EXPECT_TRUE(harness_.WaitForStoppedBuilds(1));
}

TEST_F(ConnectionPoolTest, StopEndsBuildsAndAnswersStopped) {
  harness_.SetPlan("a", {.gate = true});
  harness_.SetPlan("b", {});
  GetAndWait("b", "1", "w");
  pool_.Get("a", "1");
  ASSERT_TRUE(harness_.WaitUntilGated("a"));
  pool_.Stop();
  EXPECT_TRUE(harness_.WaitForStoppedBuilds(1));
  auto l = pool_.Get("b", "1");
  EXPECT_EQ(l.state, PoolState::kStopped);
  EXPECT_EQ(l.reason, "Stopped");
  EXPECT_EQ(l.value, nullptr);
  EXPECT_FALSE(pool_.Contains("b"));
  pool_.Stop();  // idempotent
}

TEST_F(ConnectionPoolTest, SweepClosesUnusedEntriesAndWakesTheirWaiters) {
  auto a = GetAndWait("a", "1", "wa");
  auto b = GetAndWait("b", "1", "wb");
  ASSERT_EQ(a.state, PoolState::kReady);
  ASSERT_EQ(b.state, PoolState::kReady);
  std::weak_ptr<Thing> b_value = b.value;
  b = {};
  harness_.SetPlan("c", {.gate = true});
  pool_.Get("c", "1", harness_.Waiter("wc"));
  ASSERT_TRUE(harness_.WaitUntilGated("c"));

  pool_.Sweep([](const std::string& key) { return key == "a"; });
  EXPECT_TRUE(pool_.Contains("a"));
  EXPECT_FALSE(pool_.Contains("b"));
  EXPECT_FALSE(pool_.Contains("c"));
  EXPECT_EQ(pool_.Keys(), std::vector<std::string>{"a"});
  // The build of c was asked to stop; its waiter was told (its next Get
  // starts afresh).
  EXPECT_TRUE(harness_.WaitForStoppedBuilds(1));
  EXPECT_EQ(harness_.Notified("wc"), 1);
  // b's value is released by a closer thread; the next Sweep reaps it.
  pool_.Stop();
  EXPECT_TRUE(b_value.expired());
  EXPECT_EQ(a.value->name, "a@1");  // callers keep what they hold
}

TEST_F(ConnectionPoolTest, SweptKeyStartsAfreshOnTheNextGet) {
  harness_.SetPlan("a", {.fail = true});
  ASSERT_EQ(GetAndWait("a", "1", "w").state, PoolState::kFailed);
  pool_.Sweep([](const std::string&) { return false; });
  EXPECT_FALSE(pool_.Contains("a"));
  harness_.SetPlan("a", {});
  EXPECT_EQ(GetAndWait("a", "1", "w").state, PoolState::kReady);
}

TEST(ConnectionPoolBuilderTest, ExceptionInTheBuilderIsAFailure) {
  FakeClock clock;
  PoolOptions o;
  o.clock = &clock;
  ConnectionPool<Thing> pool(
      [](const BuildContext<Thing>&) -> BuildResult<Thing> { throw std::runtime_error("boom"); },
      o);
  std::mutex mu;
  std::condition_variable cv;
  bool told = false;
  pool.Get("a", "1", {"w", [&] {
                        std::lock_guard lock(mu);
                        told = true;
                        cv.notify_all();
                      }});
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, kBound, [&] { return told; }));
  }
  auto l = pool.Get("a", "1");
  EXPECT_EQ(l.state, PoolState::kFailed);
  EXPECT_EQ(l.reason, "InternalError");
  EXPECT_NE(l.message.find("boom"), std::string::npos);
}

TEST(ConnectionPoolBuilderTest, WaiterMayCallGetFromItsNotification) {
  FakeClock clock;
  PoolOptions o;
  o.clock = &clock;
  ConnectionPool<Thing> pool(
      [](const BuildContext<Thing>& ctx) {
        return BuildResult<Thing>::Ready(std::make_shared<Thing>(ctx.key));
      },
      o);
  std::mutex mu;
  std::condition_variable cv;
  PoolState seen = PoolState::kConnecting;
  bool told = false;
  pool.Get("a", "1", {"w", [&] {
                        auto l = pool.Get("a", "1");
                        std::lock_guard lock(mu);
                        seen = l.state;
                        told = true;
                        cv.notify_all();
                      }});
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, kBound, [&] { return told; }));
  EXPECT_EQ(seen, PoolState::kReady);
}

}  // namespace
}  // namespace caphv::kube
