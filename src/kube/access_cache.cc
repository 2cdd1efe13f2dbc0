// File: kube/access_cache.cc

#include "kube/access_cache.h"

#include "kube/digest.h"

namespace caphv::kube {

AccessDecisionCache::AccessDecisionCache(AccessCacheOptions options, const Clock& clock)
    : options_(options), clock_(clock) {}

std::string AccessDecisionCache::KeyOf(std::string_view token, const AccessRequest& request) {
  std::string key = Sha256Hex(token);
  key.reserve(key.size() + request.verb.size() + request.path.size() + 2);
  key += ' ';
  key += request.verb;
  key += ' ';
  key += request.path;
  return key;
}

std::optional<AccessDecision> AccessDecisionCache::Get(std::string_view token,
                                                       const AccessRequest& request) {
  const std::string key = KeyOf(token, request);
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (clock_.Now() >= it->second.expires) {
    lru_.erase(it->second.lru);
    entries_.erase(it);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.decision;
}

void AccessDecisionCache::Put(std::string_view token, const AccessRequest& request,
                              AccessDecision decision) {
  if (options_.max_entries == 0) return;
  const auto ttl = decision.verdict == AccessDecision::Verdict::kAllowed ? options_.allowed_ttl
                                                                         : options_.denied_ttl;
  if (ttl.count() <= 0) return;
  std::string key = KeyOf(token, request);
  std::lock_guard lock(mu_);
  const auto expires = clock_.Now() + ttl;
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.decision = std::move(decision);
    it->second.expires = expires;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  if (entries_.size() >= options_.max_entries) EvictForInsert();
  lru_.push_front(key);
  entries_.emplace(std::move(key), Entry{std::move(decision), expires, lru_.begin()});
}

void AccessDecisionCache::EvictForInsert() {
  const auto now = clock_.Now();
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now >= it->second.expires) {
      lru_.erase(it->second.lru);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  while (entries_.size() >= options_.max_entries && !lru_.empty()) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

size_t AccessDecisionCache::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace caphv::kube
