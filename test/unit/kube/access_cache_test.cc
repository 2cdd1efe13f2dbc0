// Unit tests of AccessDecisionCache: what is cached for how long, keyed by
// the token's hash and the request, and how it stays bounded.

#include "kube/access_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace caphv::kube {
namespace {

using std::chrono::seconds;
using Verdict = AccessDecision::Verdict;

const AccessRequest kMetrics{"/metrics", "get"};

AccessDecision Allowed(std::string user = "system:serviceaccount:monitoring:prometheus") {
  return {Verdict::kAllowed, std::move(user), ""};
}
AccessDecision Forbidden() { return {Verdict::kForbidden, "someone", "no RBAC rule"}; }

TEST(AccessDecisionCacheTest, AllowedIsKeptForTheAllowedTtl) {
  FakeClock clock;
  AccessDecisionCache cache({.allowed_ttl = seconds(120), .denied_ttl = seconds(30)}, clock);
  EXPECT_FALSE(cache.Get("token-a", kMetrics).has_value());
  cache.Put("token-a", kMetrics, Allowed());
  // A scraper every 15 s hits the cache until the two minutes are over.
  for (int i = 0; i < 7; ++i) {
    clock.Step(seconds(15));
    auto d = cache.Get("token-a", kMetrics);
    ASSERT_TRUE(d.has_value()) << "after " << (i + 1) * 15 << " s";
    EXPECT_EQ(d->verdict, Verdict::kAllowed);
    EXPECT_EQ(d->user, "system:serviceaccount:monitoring:prometheus");
  }
  clock.Step(seconds(15));  // 120 s
  EXPECT_FALSE(cache.Get("token-a", kMetrics).has_value());
  EXPECT_EQ(cache.size(), 0u) << "an expired entry found by Get is dropped";
}

TEST(AccessDecisionCacheTest, RefusalsAreKeptForTheDeniedTtl) {
  FakeClock clock;
  AccessDecisionCache cache({.allowed_ttl = seconds(120), .denied_ttl = seconds(30)}, clock);
  cache.Put("forbidden", kMetrics, Forbidden());
  cache.Put("invalid", kMetrics, {Verdict::kUnauthenticated, "", "token expired"});
  clock.Step(seconds(29));
  EXPECT_EQ(cache.Get("forbidden", kMetrics)->verdict, Verdict::kForbidden);
  EXPECT_EQ(cache.Get("invalid", kMetrics)->verdict, Verdict::kUnauthenticated);
  clock.Step(seconds(1));
  EXPECT_FALSE(cache.Get("forbidden", kMetrics).has_value());
  EXPECT_FALSE(cache.Get("invalid", kMetrics).has_value());
}

TEST(AccessDecisionCacheTest, KeyIsTheTokenHashWithPathAndVerb) {
  FakeClock clock;
  AccessDecisionCache cache({}, clock);
  cache.Put("token-a", kMetrics, Allowed());
  EXPECT_FALSE(cache.Get("token-b", kMetrics).has_value());
  EXPECT_FALSE(cache.Get("token-a", {"/metrics", "post"}).has_value());
  EXPECT_FALSE(cache.Get("token-a", {"/healthz", "get"}).has_value());
  EXPECT_TRUE(cache.Get("token-a", kMetrics).has_value());

  const std::string key = AccessDecisionCache::KeyOf("secret-token-value", kMetrics);
  EXPECT_EQ(key.find("secret-token-value"), std::string::npos) << key;
  // SHA-256 of "secret-token-value", then the verb and path.
  EXPECT_EQ(key.size(), 64u + std::string(" get /metrics").size()) << key;
  EXPECT_EQ(key.substr(64), " get /metrics");
  EXPECT_NE(key.substr(0, 64),
            AccessDecisionCache::KeyOf("secret-token-valuE", kMetrics).substr(0, 64));
}

TEST(AccessDecisionCacheTest, PutReplacesAnOlderDecision) {
  FakeClock clock;
  AccessDecisionCache cache({.allowed_ttl = seconds(120), .denied_ttl = seconds(30)}, clock);
  cache.Put("token-a", kMetrics, Forbidden());
  clock.Step(seconds(20));
  cache.Put("token-a", kMetrics, Allowed());
  clock.Step(seconds(100));
  auto d = cache.Get("token-a", kMetrics);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->verdict, Verdict::kAllowed);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(AccessDecisionCacheTest, BoundedSizeDropsExpiredThenLeastRecentlyUsed) {
  FakeClock clock;
  AccessDecisionCache cache(
      {.allowed_ttl = seconds(120), .denied_ttl = seconds(30), .max_entries = 3}, clock);
  cache.Put("scraper", kMetrics, Allowed());
  cache.Put("random-1", kMetrics, {Verdict::kUnauthenticated, "", ""});
  cache.Put("random-2", kMetrics, {Verdict::kUnauthenticated, "", ""});
  EXPECT_EQ(cache.size(), 3u);
  // The scraper's entry is used; a flood of new tokens pushes out the others.
  ASSERT_TRUE(cache.Get("scraper", kMetrics).has_value());
  cache.Put("random-3", kMetrics, {Verdict::kUnauthenticated, "", ""});
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cache.Get("random-1", kMetrics).has_value()) << "least recently used goes first";
  EXPECT_TRUE(cache.Get("scraper", kMetrics).has_value());
  cache.Put("random-4", kMetrics, {Verdict::kUnauthenticated, "", ""});
  EXPECT_FALSE(cache.Get("random-2", kMetrics).has_value());
  EXPECT_TRUE(cache.Get("scraper", kMetrics).has_value());
  EXPECT_TRUE(cache.Get("random-3", kMetrics).has_value());
  EXPECT_TRUE(cache.Get("random-4", kMetrics).has_value());

  // Expired entries go before any live one, however recently used.
  clock.Step(seconds(31));  // the refusals expired, the scraper's entry not
  cache.Put("random-5", kMetrics, {Verdict::kUnauthenticated, "", ""});
  cache.Put("random-6", kMetrics, {Verdict::kUnauthenticated, "", ""});
  EXPECT_TRUE(cache.Get("scraper", kMetrics).has_value());
  EXPECT_EQ(cache.size(), 3u);
}

TEST(AccessDecisionCacheTest, ZeroTtlOrSizeCachesNothing) {
  FakeClock clock;
  AccessDecisionCache no_denied({.allowed_ttl = seconds(120), .denied_ttl = seconds(0)}, clock);
  no_denied.Put("t", kMetrics, Forbidden());
  EXPECT_FALSE(no_denied.Get("t", kMetrics).has_value());
  AccessDecisionCache empty({.max_entries = 0}, clock);
  empty.Put("t", kMetrics, Allowed());
  EXPECT_EQ(empty.size(), 0u);
}

}  // namespace
}  // namespace caphv::kube
