// File: kube/clock.h
//
// Clock: the single source of time for the work queue, rate limiters, backoff
// and resync timers, so that their timing can be driven by a virtual clock in
// unit tests. RealClock reads std::chrono::steady_clock; FakeClock only moves
// when a test calls Step()/SetTime().
//
// Waiting: components never sleep directly; they wait on their own
// condition variable through Clock::WaitUntil, which returns when the deadline
// (on this clock) has passed or the condition variable was notified. For the
// fake clock, Step() wakes every waiter so it can re-check the time.
//
// Thread safety: all methods of both clocks may be called concurrently.

#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stop_token>
#include <vector>

namespace caphv::kube {

class Clock {
 public:
  using Duration = std::chrono::steady_clock::duration;
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~Clock() = default;

  virtual TimePoint Now() const = 0;

  // Blocks on `cv` (with `lock` held on entry and exit) until notified or
  // `deadline` passes on this clock. Spurious returns are allowed: callers
  // re-check their condition and the time. TimePoint::max() waits for a
  // notification only.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         TimePoint deadline) = 0;

  // Sleeps for `d` on this clock or until `stop` is requested. Returns false
  // when stopped early.
  bool SleepFor(Duration d, std::stop_token stop);

  // The process-wide real clock.
  static Clock& Real();
};

class RealClock final : public Clock {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 TimePoint deadline) override;
};

// A virtual clock for tests. Starts at an arbitrary fixed point.
class FakeClock final : public Clock {
 public:
  FakeClock();

  TimePoint Now() const override;
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 TimePoint deadline) override;

  // Advances the time and wakes all waiters.
  void Step(Duration d);
  void SetTime(TimePoint t);

  // Number of threads currently blocked in WaitUntil with a finite deadline
  // or none (tests use it to know a background thread is parked).
  int Waiters() const;
  // Blocks (on the real clock, bounded by `timeout`) until at least `n`
  // threads wait on this clock. Returns false on timeout.
  bool BlockUntilWaiters(int n, std::chrono::milliseconds timeout = std::chrono::seconds(10)) const;

 private:
  struct Waiter {
    uint64_t id;
    std::condition_variable* cv;
    std::mutex* mu;
  };
  void WakeAll();

  mutable std::mutex mu_;
  mutable std::condition_variable waiters_changed_;
  TimePoint now_;
  std::vector<Waiter> waiters_;
  uint64_t next_id_ = 0;
  int notifying_ = 0;  // WakeAll() calls in flight
};

}  // namespace caphv::kube
