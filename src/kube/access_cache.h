// File: kube/access_cache.h
//
// AccessDecisionCache: the recent answers of the apiserver about bearer
// tokens (TokenReview, then SubjectAccessReview), so that a client calling
// every few seconds with the same token costs no apiserver round trip, as
// kube-rbac-proxy and controller-runtime's secure metrics filter cache them.
//
//   AccessDecisionCache cache({.allowed_ttl = 2min, .denied_ttl = 30s}, clock);
//   if (auto d = cache.Get(token, {"/metrics", "get"})) { ...cached... }
//   else { AccessDecision d = <ask the apiserver>; cache.Put(token, req, d); }
//
// Entries are keyed by the SHA-256 of the token with the path and verb: a
// token itself is never stored. An allowed decision is kept for
// `allowed_ttl`, a refusal (token not authenticated, or not authorised) for
// `denied_ttl`, so that a newly granted role takes effect sooner than a
// revoked one stops. At most `max_entries` are kept: a Put into a full cache
// first drops the expired entries, then the least recently used one, so a
// stream of random tokens cannot grow memory nor push out a regular
// scraper's entry for long. Errors of the apiserver are never cached (the
// caller does not Put them).
//
// Thread safety: every method may be called from any thread.

#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "kube/clock.h"

namespace caphv::kube {

// What a request asks for: a non-resource URL and a verb, as a
// SubjectAccessReview's nonResourceAttributes.
struct AccessRequest {
  std::string path;  // "/metrics"
  std::string verb;  // "get"
};

struct AccessDecision {
  enum class Verdict {
    kAllowed,
    kUnauthenticated,  // the token is not valid: 401
    kForbidden,        // valid, but the user may not: 403
  };
  Verdict verdict = Verdict::kUnauthenticated;
  std::string user;    // the authenticated user name ("" when unauthenticated)
  std::string reason;  // the apiserver's reason, for logs
};

struct AccessCacheOptions {
  std::chrono::milliseconds allowed_ttl{std::chrono::minutes(2)};
  std::chrono::milliseconds denied_ttl{std::chrono::seconds(30)};
  size_t max_entries = 1024;
};

class AccessDecisionCache {
 public:
  explicit AccessDecisionCache(AccessCacheOptions options = {}, const Clock& clock = Clock::Real());

  // The decision cached for this token and request, if not expired.
  std::optional<AccessDecision> Get(std::string_view token, const AccessRequest& request);
  // Caches a decision (replacing an older one).
  void Put(std::string_view token, const AccessRequest& request, AccessDecision decision);

  size_t size() const;
  const AccessCacheOptions& options() const { return options_; }

  // The key of a token and request: hex SHA-256 of the token, verb, path.
  static std::string KeyOf(std::string_view token, const AccessRequest& request);

 private:
  struct Entry {
    AccessDecision decision;
    Clock::TimePoint expires;
    std::list<std::string>::iterator lru;  // position in lru_
  };
  void EvictForInsert();  // mu_ held

  const AccessCacheOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> lru_;  // most recently used first
};

}  // namespace caphv::kube
