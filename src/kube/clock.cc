// File: kube/clock.cc
//
// Real and virtual clocks. See clock.h for the contract.

#include "kube/clock.h"

#include <algorithm>

namespace caphv::kube {

bool Clock::SleepFor(Duration d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable cv;
  std::stop_callback wake(stop, [&] {
    std::lock_guard<std::mutex> g(mu);
    cv.notify_all();
  });
  const TimePoint deadline = Now() + d;
  std::unique_lock<std::mutex> lock(mu);
  while (!stop.stop_requested()) {
    if (Now() >= deadline) return true;
    WaitUntil(cv, lock, deadline);
  }
  return false;
}

Clock& Clock::Real() {
  static RealClock* clock = new RealClock();  // never destroyed: used by detached threads
  return *clock;
}

void RealClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                          TimePoint deadline) {
  if (deadline == TimePoint::max()) {
    cv.wait(lock);
  } else {
    cv.wait_until(lock, deadline);
  }
}

FakeClock::FakeClock() : now_(TimePoint() + std::chrono::hours(1000)) {}

Clock::TimePoint FakeClock::Now() const {
  std::lock_guard<std::mutex> g(mu_);
  return now_;
}

void FakeClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                          TimePoint deadline) {
  uint64_t id;
  {
    // Checking the time and registering happen in one critical section, so a
    // concurrent Step() either is seen here or will notify us (it locks the
    // caller's mutex, which we hold until cv.wait releases it).
    std::lock_guard<std::mutex> g(mu_);
    if (deadline != TimePoint::max() && now_ >= deadline) return;
    id = next_id_++;
    waiters_.push_back({id, &cv, lock.mutex()});
    waiters_changed_.notify_all();
  }
  cv.wait(lock);
  // Unregister, then wait for in-flight Step() notifications that may still
  // hold pointers to our cv and mutex; drop the caller's lock meanwhile so a
  // Step() blocked on it can finish.
  lock.unlock();
  {
    std::unique_lock<std::mutex> g(mu_);
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [id](const Waiter& w) { return w.id == id; }),
                   waiters_.end());
    waiters_changed_.wait(g, [this] { return notifying_ == 0; });
  }
  lock.lock();
}

void FakeClock::Step(Duration d) {
  {
    std::lock_guard<std::mutex> g(mu_);
    now_ += d;
  }
  WakeAll();
}

void FakeClock::SetTime(TimePoint t) {
  {
    std::lock_guard<std::mutex> g(mu_);
    now_ = t;
  }
  WakeAll();
}

void FakeClock::WakeAll() {
  std::vector<Waiter> copy;
  {
    std::lock_guard<std::mutex> g(mu_);
    copy = waiters_;
    ++notifying_;
  }
  for (const Waiter& w : copy) {
    std::lock_guard<std::mutex> g(*w.mu);
    w.cv->notify_all();
  }
  std::lock_guard<std::mutex> g(mu_);
  --notifying_;
  waiters_changed_.notify_all();
}

int FakeClock::Waiters() const {
  std::lock_guard<std::mutex> g(mu_);
  return static_cast<int>(waiters_.size());
}

bool FakeClock::BlockUntilWaiters(int n, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> g(mu_);
  return waiters_changed_.wait_for(g, timeout,
                                   [&] { return static_cast<int>(waiters_.size()) >= n; });
}

}  // namespace caphv::kube
