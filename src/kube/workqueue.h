// File: kube/workqueue.h
//
// WorkQueue: client-go's rate-limited, delaying, de-duplicating work queue of
// string keys (util/workqueue/{queue,delaying_queue,rate_limiting_queue}.go).
//
//   - A key is at most once in the queue ("dirty"); adding it again while it
//     waits is a no-op, so bursts of events coalesce into one unit of work.
//   - Get() hands a key to one worker and marks it "processing". A key added
//     while processing is held back and queued again by Done(), so a key is
//     never handed to two workers at once.
//   - AddAfter(key, d) parks the key in a min-heap until ready; re-adding a
//     parked key keeps the earlier ready time. Ready keys are moved into the
//     queue by the threads calling Get()/Done()/Len() (no timer thread).
//   - Unlike client-go, Get() also drops the key's parked time: the work
//     handed out supersedes it, and the worker adds the key again (after a
//     delay, or rate-limited) if it still needs to. A reconcile woken by an
//     event before its requeue time is thus not followed by a stale one.
//   - AddRateLimited(key) = AddAfter(key, limiter.When(key)); Forget(key)
//     resets the limiter's memory of the key. AddRateLimited(key, at_most)
//     waits no longer than `at_most`, and counts the failure only while the
//     key's delay (limiter.Peek) is still below it: failures retried at the
//     cap leave the key's backoff there, not far beyond it.
//   - ShutDown() ignores later adds and drops parked (AddAfter) keys; Get()
//     keeps handing out keys already queued and returns nullopt once the
//     queue is empty, waking every blocked caller. ShutDownWithDrain()
//     additionally waits until every key handed out has been Done().
//
// All timing goes through the injected Clock (FakeClock in unit tests).
//
// Thread safety: every method is safe for concurrent use. Get() blocks.

#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/clock.h"
#include "kube/rate_limiter.h"

namespace caphv::kube {

// Optional instrumentation (workqueue_depth / _adds_total / _retries_total).
// Called with the queue's mutex held: implementations must be quick and must
// not call back into the queue.
struct WorkQueueMetrics {
  std::function<void(int64_t depth)> set_depth;
  std::function<void()> inc_adds;
  std::function<void()> inc_retries;
};

class WorkQueue {
 public:
  struct Options {
    std::string name;
    Clock* clock = nullptr;                     // default: Clock::Real()
    std::unique_ptr<RateLimiter> rate_limiter;  // default: DefaultControllerRateLimiter
    WorkQueueMetrics metrics;
  };

  WorkQueue();
  explicit WorkQueue(Options options);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  const std::string& name() const { return name_; }

  void Add(const std::string& key);
  // Adds `key` once `delay` has passed; a non-positive delay adds now.
  void AddAfter(const std::string& key, Clock::Duration delay);
  void AddRateLimited(const std::string& key);
  // As AddRateLimited(key), the delay capped at `at_most`; a failure whose
  // delay is already at the cap is not counted.
  void AddRateLimited(const std::string& key, Clock::Duration at_most);
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is available or the queue shuts down (nullopt). The
  // caller must call Done(key) when finished with it.
  std::optional<std::string> Get();
  void Done(const std::string& key);

  // Keys ready to be handed out (not those waiting in AddAfter).
  size_t Len();
  // Keys waiting for their AddAfter time.
  size_t WaitingLen();

  void ShutDown();
  void ShutDownWithDrain();
  bool ShuttingDown();

 private:
  struct Delayed {
    Clock::TimePoint ready;
    std::string key;
    uint64_t seq;  // FIFO among equal times
  };
  struct Later {
    bool operator()(const Delayed& a, const Delayed& b) const {
      return a.ready != b.ready ? a.ready > b.ready : a.seq > b.seq;
    }
  };

  void AddLocked(const std::string& key);
  void AddAfterLocked(const std::string& key, Clock::Duration delay);
  // Moves delayed keys whose time has come into the queue; returns the
  // earliest remaining ready time (max() when none).
  Clock::TimePoint PromoteReadyLocked();
  void PublishDepthLocked();

  const std::string name_;
  Clock& clock_;
  std::unique_ptr<RateLimiter> limiter_;
  WorkQueueMetrics metrics_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  std::unordered_set<std::string> dirty_;
  std::unordered_set<std::string> processing_;
  // Min-heap by ready time, plus the current ready time of each parked key;
  // heap entries whose time no longer matches `waiting_` are stale.
  std::vector<Delayed> heap_;
  std::unordered_map<std::string, Clock::TimePoint> waiting_;
  uint64_t seq_ = 0;
  bool shutting_down_ = false;
  bool drain_ = false;
};

}  // namespace caphv::kube
