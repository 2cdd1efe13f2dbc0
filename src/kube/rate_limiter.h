// File: kube/rate_limiter.h
//
// Rate limiters deciding how long a failed work-queue key waits before it is
// retried (client-go util/workqueue/default_rate_limiters.go), and the
// jittered exponential Backoff used between failed list/watch attempts
// (client-go's reflector backoff manager).
//
//   ItemExponentialRateLimiter  base * 2^failures per key, capped; Forget resets.
//   TokenBucketRateLimiter      overall qps/burst; a reservation past the burst
//                               waits for the bucket to refill.
//   MaxOfRateLimiter            the longest delay of its children.
//   DefaultControllerRateLimiter  max(5 ms -> 1000 s per key, 10 qps burst 100).
//
// Thread safety: every limiter and Backoff is safe for concurrent use.

#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "kube/clock.h"

namespace caphv::kube {

class RateLimiter {
 public:
  using Duration = Clock::Duration;
  virtual ~RateLimiter() = default;
  // How long `key` should wait before its next attempt; counts a failure.
  virtual Duration When(const std::string& key) = 0;
  // What When(key) would return now, counting nothing.
  virtual Duration Peek(const std::string& key) = 0;
  // Stops tracking `key` (its next failure starts from the base delay).
  virtual void Forget(const std::string& key) = 0;
  // Failures counted for `key` since the last Forget.
  virtual int NumRequeues(const std::string& key) = 0;
};

class ItemExponentialRateLimiter final : public RateLimiter {
 public:
  ItemExponentialRateLimiter(Duration base, Duration max) : base_(base), max_(max) {}
  Duration When(const std::string& key) override;
  Duration Peek(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  Duration Delay(int failures) const;

  const Duration base_;
  const Duration max_;
  std::mutex mu_;
  std::unordered_map<std::string, int> failures_;
};

// golang.org/x/time/rate semantics with reservations: tokens may go negative,
// the wait is the time until the balance is back to zero.
class TokenBucketRateLimiter final : public RateLimiter {
 public:
  TokenBucketRateLimiter(double qps, int burst, Clock& clock = Clock::Real());
  Duration When(const std::string& key) override;
  Duration Peek(const std::string& key) override;
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }

 private:
  // The balance at the clock's now (refilled since last_); mu_ held.
  double TokensNowLocked(Clock::TimePoint now) const;
  // The wait a reservation leaving `tokens` in the bucket implies.
  Duration WaitFor(double tokens) const;

  const double qps_;
  const double burst_;
  Clock& clock_;
  std::mutex mu_;
  double tokens_;
  Clock::TimePoint last_;
};

class MaxOfRateLimiter final : public RateLimiter {
 public:
  explicit MaxOfRateLimiter(std::vector<std::unique_ptr<RateLimiter>> limiters)
      : limiters_(std::move(limiters)) {}
  Duration When(const std::string& key) override;
  Duration Peek(const std::string& key) override;
  void Forget(const std::string& key) override;
  int NumRequeues(const std::string& key) override;

 private:
  std::vector<std::unique_ptr<RateLimiter>> limiters_;
};

// client-go's DefaultTypedControllerRateLimiter.
std::unique_ptr<RateLimiter> DefaultControllerRateLimiter(Clock& clock = Clock::Real());
// controller-runtime's priority-queue default: the per-key exponential alone.
std::unique_ptr<RateLimiter> DefaultItemRateLimiter();

// Exponential backoff with jitter for retrying a whole operation (list/watch):
// each Next() returns the current delay plus up to `jitter` x itself, then
// doubles the delay up to `max`. When more than `reset_after` passed since the
// previous Next(), the delay starts again from `initial`.
class Backoff {
 public:
  struct Options {
    Clock::Duration initial = std::chrono::milliseconds(800);
    double factor = 2.0;
    double jitter = 1.0;
    Clock::Duration max = std::chrono::seconds(30);
    Clock::Duration reset_after = std::chrono::minutes(2);
  };
  explicit Backoff(Clock& clock = Clock::Real()) : Backoff(Options(), clock) {}
  explicit Backoff(Options options, Clock& clock = Clock::Real(),
                   uint64_t seed = std::random_device()());

  Clock::Duration Next();
  // Forgets earlier failures.
  void Reset();

 private:
  const Options options_;
  Clock& clock_;
  std::mutex mu_;
  std::mt19937_64 rng_;
  Clock::Duration current_;
  bool has_last_ = false;
  Clock::TimePoint last_;
};

}  // namespace caphv::kube
