// File: kube/rate_limiter.cc
//
// Work-queue rate limiters and list/watch backoff. See rate_limiter.h.

#include "kube/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace caphv::kube {

using std::chrono::duration_cast;
using std::chrono::nanoseconds;

RateLimiter::Duration ItemExponentialRateLimiter::When(const std::string& key) {
  int exp;
  {
    std::lock_guard<std::mutex> g(mu_);
    exp = failures_[key]++;
  }
  return Delay(exp);
}

RateLimiter::Duration ItemExponentialRateLimiter::Peek(const std::string& key) {
  return Delay(NumRequeues(key));
}

RateLimiter::Duration ItemExponentialRateLimiter::Delay(int failures) const {
  // Computed in floating point so large exponents saturate instead of
  // overflowing, as client-go does.
  const double base_ns = static_cast<double>(duration_cast<nanoseconds>(base_).count());
  const double backoff = base_ns * std::pow(2.0, failures);
  const double max_ns = static_cast<double>(duration_cast<nanoseconds>(max_).count());
  if (!(backoff < max_ns)) return max_;
  return duration_cast<Duration>(nanoseconds(static_cast<int64_t>(backoff)));
}

void ItemExponentialRateLimiter::Forget(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  failures_.erase(key);
}

int ItemExponentialRateLimiter::NumRequeues(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

TokenBucketRateLimiter::TokenBucketRateLimiter(double qps, int burst, Clock& clock)
    : qps_(qps), burst_(burst), clock_(clock), tokens_(burst), last_(clock.Now()) {}

double TokenBucketRateLimiter::TokensNowLocked(Clock::TimePoint now) const {
  if (now <= last_) return tokens_;
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  return std::min(burst_, tokens_ + elapsed * qps_);
}

RateLimiter::Duration TokenBucketRateLimiter::WaitFor(double tokens) const {
  if (tokens >= 0) return Duration::zero();
  return duration_cast<Duration>(std::chrono::duration<double>(-tokens / qps_));
}

RateLimiter::Duration TokenBucketRateLimiter::When(const std::string&) {
  std::lock_guard<std::mutex> g(mu_);
  const Clock::TimePoint now = clock_.Now();
  tokens_ = TokensNowLocked(now) - 1.0;
  last_ = std::max(last_, now);
  return WaitFor(tokens_);
}

RateLimiter::Duration TokenBucketRateLimiter::Peek(const std::string&) {
  std::lock_guard<std::mutex> g(mu_);
  return WaitFor(TokensNowLocked(clock_.Now()) - 1.0);
}

RateLimiter::Duration MaxOfRateLimiter::When(const std::string& key) {
  Duration longest = Duration::zero();
  for (auto& l : limiters_) longest = std::max(longest, l->When(key));
  return longest;
}

RateLimiter::Duration MaxOfRateLimiter::Peek(const std::string& key) {
  Duration longest = Duration::zero();
  for (auto& l : limiters_) longest = std::max(longest, l->Peek(key));
  return longest;
}

void MaxOfRateLimiter::Forget(const std::string& key) {
  for (auto& l : limiters_) l->Forget(key);
}

int MaxOfRateLimiter::NumRequeues(const std::string& key) {
  int most = 0;
  for (auto& l : limiters_) most = std::max(most, l->NumRequeues(key));
  return most;
}

std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock& clock) {
  std::vector<std::unique_ptr<RateLimiter>> v;
  v.push_back(std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                           std::chrono::seconds(1000)));
  v.push_back(std::make_unique<TokenBucketRateLimiter>(10.0, 100, clock));
  return std::make_unique<MaxOfRateLimiter>(std::move(v));
}

std::unique_ptr<RateLimiter> DefaultItemRateLimiter() {
  return std::make_unique<ItemExponentialRateLimiter>(std::chrono::milliseconds(5),
                                                      std::chrono::seconds(1000));
}

Backoff::Backoff(Options options, Clock& clock, uint64_t seed)
    : options_(options), clock_(clock), rng_(seed), current_(options.initial) {}

Clock::Duration Backoff::Next() {
  std::lock_guard<std::mutex> g(mu_);
  const Clock::TimePoint now = clock_.Now();
  if (has_last_ && now - last_ > options_.reset_after) current_ = options_.initial;
  has_last_ = true;
  last_ = now;
  Clock::Duration d = current_;
  if (options_.jitter > 0) {
    std::uniform_real_distribution<double> dist(0.0, options_.jitter);
    d += duration_cast<Clock::Duration>(std::chrono::duration<double>(
        std::chrono::duration<double>(current_).count() * dist(rng_)));
  }
  const auto next = duration_cast<Clock::Duration>(std::chrono::duration<double>(
      std::chrono::duration<double>(current_).count() * options_.factor));
  current_ = std::min(next, options_.max);
  return d;
}

void Backoff::Reset() {
  std::lock_guard<std::mutex> g(mu_);
  current_ = options_.initial;
  has_last_ = false;
}

}  // namespace caphv::kube
