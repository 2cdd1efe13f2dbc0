// File: kube/workqueue.cc
//
// De-duplicating, delaying, rate-limited work queue. See workqueue.h.

#include "kube/workqueue.h"

#include <algorithm>

namespace caphv::kube {

WorkQueue::WorkQueue() : WorkQueue(Options()) {}

WorkQueue::WorkQueue(Options options)
    : name_(std::move(options.name)),
      clock_(options.clock ? *options.clock : Clock::Real()),
      limiter_(options.rate_limiter ? std::move(options.rate_limiter)
                                    : DefaultControllerRateLimiter(clock_)),
      metrics_(std::move(options.metrics)) {}

WorkQueue::~WorkQueue() { ShutDown(); }

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key)) return;
  if (metrics_.inc_adds) metrics_.inc_adds();
  dirty_.insert(key);
  if (processing_.count(key)) return;  // Done() queues it again
  queue_.push_back(key);
  PublishDepthLocked();
  cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, Clock::Duration delay) {
  std::lock_guard<std::mutex> g(mu_);
  AddAfterLocked(key, delay);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  AddRateLimited(key, Clock::Duration::max());
}

void WorkQueue::AddRateLimited(const std::string& key, Clock::Duration at_most) {
  // Once the key's backoff has reached at_most a failure is no longer
  // counted: a later AddRateLimited(key) starts from about at_most.
  const Clock::Duration delay =
      limiter_->Peek(key) >= at_most ? at_most : std::min(limiter_->When(key), at_most);
  std::lock_guard<std::mutex> g(mu_);
  if (shutting_down_) return;
  if (metrics_.inc_retries) metrics_.inc_retries();
  AddAfterLocked(key, delay);
}

void WorkQueue::AddAfterLocked(const std::string& key, Clock::Duration delay) {
  if (shutting_down_) return;
  if (delay <= Clock::Duration::zero()) {
    AddLocked(key);
    return;
  }
  const Clock::TimePoint ready = clock_.Now() + delay;
  auto [it, inserted] = waiting_.try_emplace(key, ready);
  if (!inserted) {
    if (it->second <= ready) return;  // the earlier time wins
    it->second = ready;               // the old heap entry becomes stale
  }
  heap_.push_back({ready, key, seq_++});
  std::push_heap(heap_.begin(), heap_.end(), Later());
  // Every waiting Get() recomputes its deadline.
  cv_.notify_all();
}

void WorkQueue::Forget(const std::string& key) { limiter_->Forget(key); }

int WorkQueue::NumRequeues(const std::string& key) { return limiter_->NumRequeues(key); }

Clock::TimePoint WorkQueue::PromoteReadyLocked() {
  if (heap_.empty()) return Clock::TimePoint::max();
  const Clock::TimePoint now = clock_.Now();
  while (!heap_.empty() && heap_.front().ready <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), Later());
    Delayed d = std::move(heap_.back());
    heap_.pop_back();
    auto it = waiting_.find(d.key);
    if (it == waiting_.end() || it->second != d.ready) continue;  // stale entry
    waiting_.erase(it);
    AddLocked(d.key);
  }
  return heap_.empty() ? Clock::TimePoint::max() : heap_.front().ready;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    const Clock::TimePoint next = shutting_down_ ? Clock::TimePoint::max() : PromoteReadyLocked();
    if (!queue_.empty()) break;
    if (shutting_down_) return std::nullopt;
    clock_.WaitUntil(cv_, lock, next);
  }
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  processing_.insert(key);
  dirty_.erase(key);
  // The work about to start supersedes the key's parked time: the worker's
  // outcome decides whether and when it comes back (its heap entry is stale).
  waiting_.erase(key);
  PublishDepthLocked();
  return key;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> g(mu_);
  processing_.erase(key);
  if (dirty_.count(key)) {
    queue_.push_back(key);
    PublishDepthLocked();
  }
  // A drain waiter shares cv_ with Get(): wake everyone then.
  if (drain_) {
    cv_.notify_all();
  } else if (dirty_.count(key)) {
    cv_.notify_one();
  }
  if (!shutting_down_) PromoteReadyLocked();
}

size_t WorkQueue::Len() {
  std::lock_guard<std::mutex> g(mu_);
  if (!shutting_down_) PromoteReadyLocked();
  return queue_.size();
}

size_t WorkQueue::WaitingLen() {
  std::lock_guard<std::mutex> g(mu_);
  if (!shutting_down_) PromoteReadyLocked();
  return waiting_.size();
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> g(mu_);
  shutting_down_ = true;
  heap_.clear();
  waiting_.clear();
  cv_.notify_all();
}

void WorkQueue::ShutDownWithDrain() {
  std::unique_lock<std::mutex> lock(mu_);
  shutting_down_ = true;
  drain_ = true;
  heap_.clear();
  waiting_.clear();
  cv_.notify_all();
  while (!processing_.empty()) clock_.WaitUntil(cv_, lock, Clock::TimePoint::max());
}

bool WorkQueue::ShuttingDown() {
  std::lock_guard<std::mutex> g(mu_);
  return shutting_down_;
}

void WorkQueue::PublishDepthLocked() {
  if (metrics_.set_depth) metrics_.set_depth(static_cast<int64_t>(queue_.size()));
}

}  // namespace caphv::kube
