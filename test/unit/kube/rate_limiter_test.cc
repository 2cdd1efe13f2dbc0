// File: test/unit/kube/rate_limiter_test.cc
//
// Rate limiters and Backoff on a virtual clock.

#include "kube/rate_limiter.h"

#include <gtest/gtest.h>

#include <string>

#include "kube/clock.h"

namespace caphv::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ItemExponentialRateLimiterTest, DoublesFromBaseUpToCap) {
  ItemExponentialRateLimiter l(milliseconds(5), seconds(1000));
  EXPECT_EQ(l.When("a"), milliseconds(5));
  EXPECT_EQ(l.When("a"), milliseconds(10));
  EXPECT_EQ(l.When("a"), milliseconds(20));
  EXPECT_EQ(l.When("a"), milliseconds(40));
  EXPECT_EQ(l.When("b"), milliseconds(5)) << "keys back off independently";
  EXPECT_EQ(l.NumRequeues("a"), 4);
  // 5 ms * 2^17 = 655.36 s, 2^18 would be 1310.72 s: capped.
  for (int i = 4; i < 17; ++i) l.When("a");
  EXPECT_EQ(l.When("a"), milliseconds(655360));
  EXPECT_EQ(l.When("a"), seconds(1000));
  // Far beyond any integer range: still the cap, no overflow.
  for (int i = 0; i < 5000; ++i) l.When("a");
  EXPECT_EQ(l.When("a"), seconds(1000));
}

TEST(ItemExponentialRateLimiterTest, ForgetResets) {
  ItemExponentialRateLimiter l(milliseconds(5), seconds(1000));
  l.When("a");
  l.When("a");
  l.When("a");
  l.Forget("a");
  EXPECT_EQ(l.NumRequeues("a"), 0);
  EXPECT_EQ(l.When("a"), milliseconds(5));
}

TEST(ItemExponentialRateLimiterTest, PeekCountsNothing) {
  ItemExponentialRateLimiter l(milliseconds(5), seconds(1));
  EXPECT_EQ(l.Peek("a"), milliseconds(5));
  EXPECT_EQ(l.Peek("a"), milliseconds(5));
  EXPECT_EQ(l.NumRequeues("a"), 0);
  l.When("a");
  EXPECT_EQ(l.Peek("a"), milliseconds(10));
  EXPECT_EQ(l.When("a"), milliseconds(10));
  for (int i = 0; i < 20; ++i) l.When("a");
  EXPECT_EQ(l.Peek("a"), seconds(1));
}

TEST(TokenBucketRateLimiterTest, PeekTakesNoToken) {
  FakeClock clock;
  TokenBucketRateLimiter l(10, 2, clock);
  EXPECT_EQ(l.Peek("a"), milliseconds(0));
  EXPECT_EQ(l.When("a"), milliseconds(0));
  EXPECT_EQ(l.Peek("a"), milliseconds(0));
  EXPECT_EQ(l.When("a"), milliseconds(0));
  // Empty: the next reservation would wait for a token.
  EXPECT_EQ(l.Peek("a"), milliseconds(100));
  EXPECT_EQ(l.Peek("a"), milliseconds(100));
  clock.Step(milliseconds(50));
  EXPECT_EQ(l.Peek("a"), milliseconds(50));
  EXPECT_EQ(l.When("a"), milliseconds(50));
  EXPECT_EQ(l.Peek("a"), milliseconds(150));
}

TEST(TokenBucketRateLimiterTest, BurstThenQps) {
  FakeClock clock;
  TokenBucketRateLimiter l(10, 100, clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(l.When(std::to_string(i)), milliseconds(0)) << i;
  }
  EXPECT_EQ(l.When("x"), milliseconds(100));
  EXPECT_EQ(l.When("y"), milliseconds(200));
  clock.Step(seconds(1));  // +10 tokens: balance back to +8
  for (int i = 0; i < 8; ++i) ASSERT_EQ(l.When("z"), milliseconds(0));
  EXPECT_EQ(l.When("z"), milliseconds(100));
}

TEST(DefaultControllerRateLimiterTest, MaxOfPerItemAndBucket) {
  FakeClock clock;
  auto l = DefaultControllerRateLimiter(clock);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(l->When(std::to_string(i)), milliseconds(5)) << i;
  }
  // The bucket is empty: a fresh key now waits for a token, not 5 ms.
  EXPECT_EQ(l->When("fresh"), milliseconds(100));
  EXPECT_EQ(l->When("fresh2"), milliseconds(200));
  EXPECT_EQ(l->NumRequeues("fresh"), 1);
  // The longer of the key's next 10 ms and the bucket's next 300 ms.
  EXPECT_EQ(l->Peek("fresh"), milliseconds(300));
  l->Forget("fresh");
  EXPECT_EQ(l->NumRequeues("fresh"), 0);
}

TEST(BackoffTest, DoublesWithJitterUpToMaxAndResetsWhenHealthy) {
  FakeClock clock;
  Backoff b(Backoff::Options(), clock, 7);
  Clock::Duration base = milliseconds(800);
  for (int i = 0; i < 10; ++i) {
    const Clock::Duration d = b.Next();
    EXPECT_GE(d, base) << i;
    EXPECT_LE(d, 2 * base) << i;
    base = std::min<Clock::Duration>(base * 2, seconds(30));
    clock.Step(seconds(1));
  }
  EXPECT_EQ(base, seconds(30));
  clock.Step(std::chrono::minutes(3));
  const Clock::Duration d = b.Next();
  EXPECT_GE(d, milliseconds(800));
  EXPECT_LE(d, milliseconds(1600));
}

TEST(BackoffTest, WithoutJitterIsExact) {
  FakeClock clock;
  Backoff::Options o;
  o.jitter = 0;
  Backoff b(o, clock);
  EXPECT_EQ(b.Next(), milliseconds(800));
  EXPECT_EQ(b.Next(), milliseconds(1600));
  EXPECT_EQ(b.Next(), milliseconds(3200));
  b.Reset();
  EXPECT_EQ(b.Next(), milliseconds(800));
}

}  // namespace
}  // namespace caphv::kube
