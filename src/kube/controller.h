// File: kube/controller.h
//
// Controller: informers -> event handlers mapping objects to reconcile keys
// -> a rate-limited WorkQueue -> N workers calling Reconcile(Request)
// (controller-runtime pkg/internal/controller/controller.go).
//
// Outcome of a reconcile -> queue action (as reconcileHandler does):
//   Result::Terminal(err)      Forget; not requeued; terminal-error counter
//   Result::Error(err)         AddRateLimited (per-key backoff 5 ms -> 1000 s
//                              and the 10 qps / burst 100 bucket); any
//                              requeue_after is ignored
//   Result::Error(409)         the same, the delay capped at kConflictRetryMax,
//                              and not counted once the key's backoff is there
//   requeue_after > 0          Forget, then AddAfter(requeue_after)
//   requeue = true             AddRateLimited
//   success                    Forget (resets the key's backoff)
// A reconcile that throws counts as Error.
//
// A reconcile never blocks waiting for the world to change: it returns, and a
// watch event (or requeue_after) brings the key back. A reconcile started by
// an event cancels the key's pending requeue_after or retry (WorkQueue::Get):
// its own outcome sets the next one.
//
// Thread model
// ------------
//   * One thread per watch stream: each Informer runs its Reflector (LIST,
//     then a long-lived WATCH) on its own std::jthread, plus one resync timer
//     thread when it has a resync period. That thread updates the informer's
//     Store and then calls the event handlers synchronously; the handlers a
//     Controller installs only map the object to keys and WorkQueue::Add
//     them, which never blocks on a reconcile.
//   * N worker threads per controller (Options::max_concurrent_reconciles,
//     default 1), started only after every watched informer HasSynced()
//     (bounded by cache_sync_timeout, 2 min). Workers block in
//     WorkQueue::Get(); the queue's dirty/processing sets guarantee a key is
//     never reconciled by two workers at once, and events arriving during a
//     reconcile coalesce into one more reconcile after it.
//   * Delayed keys (AddAfter / rate-limited retries) need no timer thread:
//     idle workers wait for the earliest ready time on the queue's clock.
//   * No thread per object, ever. Informers may be shared by controllers.
//   * Stop: Run(stop_token) returns after the stop is requested: the queue
//     shuts down, each worker finishes the reconcile it is running (keys
//     already queued are still handed out), and workers are joined.
//   * Exceptions never cross a thread top: reconcile exceptions become
//     errors; handler exceptions are swallowed by the informer.
//
// Metrics (prometheus registry of kube/metrics.h):
//   controller_runtime_reconcile_total{controller,result}
//   controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_terminal_reconcile_errors_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}
//   controller_runtime_max_concurrent_reconciles{controller}
//   controller_runtime_active_workers{controller}
//   workqueue_depth{name,controller}, workqueue_adds_total{name,controller},
//   workqueue_retries_total{name,controller}
//
// Thread safety: Watch*/For/Owns before Run(); Run() once; Enqueue(),
// name(), queue() from any thread.

#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/clock.h"
#include "kube/informer.h"
#include "kube/rate_limiter.h"
#include "kube/status.h"
#include "kube/workqueue.h"

namespace caphv::kube {

// What to reconcile: one object's namespace and name.
struct Request {
  std::string ns;  // empty for cluster-scoped objects
  std::string name;

  // "ns/name" or "name": the work-queue key.
  std::string Key() const;
  static Request FromKey(std::string_view key);
  bool operator==(const Request&) const = default;
};

struct [[nodiscard]] Result {
  Clock::Duration requeue_after = Clock::Duration::zero();
  bool requeue = false;  // retry with rate limiting (without an error)
  Status error;          // non-OK: requeue with backoff unless terminal
  bool terminal = false;

  static Result Done() { return {}; }
  static Result RequeueAfter(Clock::Duration d) {
    Result r;
    r.requeue_after = d;
    return r;
  }
  static Result Error(Status s) {
    Result r;
    r.error = std::move(s);
    return r;
  }
  // Not retried: waiting for a change of the object (a watch event).
  static Result Terminal(Status s) {
    Result r;
    r.error = std::move(s);
    r.terminal = true;
    return r;
  }
};

using ReconcileFunc = std::function<Result(const Request&)>;

// Maps an object (the new state, or the final state of a deleted one) to the
// requests it should trigger.
using MapFunc = std::function<std::vector<Request>(const Object&)>;

// The object's own key.
MapFunc MapToSelf();
// The owner with `group`/`kind` among the ownerReferences (only the
// controller owner when `controller_only`), in the object's namespace.
// `group` is the API group ("" for core), matched against apiVersion.
MapFunc MapToOwner(std::string group, std::string kind, bool controller_only = true);

// Filters events before mapping; an unset member lets the event through.
struct Predicates {
  std::function<bool(const Object&)> create;
  std::function<bool(const Object& old_obj, const Object& new_obj)> update;
  std::function<bool(const Object&)> del;
};
// Passes updates only when metadata.generation changed (resyncs dropped).
Predicates GenerationChanged();
// Drops resync re-deliveries (same resourceVersion).
Predicates ResourceVersionChanged();
// Drops updates that change nothing but the status (and the
// resourceVersion): for a reconciler that is the only writer of its
// object's status and folds each status write into its own observation, so
// that the watch event of its own write brings no reconcile that would plan
// nothing. Resync re-deliveries (same resourceVersion) pass.
Predicates IgnoreStatusOnlyChanges();

// The longest a key waits after a reconcile that failed with 409 Conflict.
// Conflicts raise the key's backoff up to it and no further
// (WorkQueue::AddRateLimited(key, at_most)), so a later error of another
// kind backs off from about a second, not from where the conflicts left it.
inline constexpr std::chrono::seconds kConflictRetryMax{1};

class Controller {
 public:
  struct Options {
    std::string name;  // metric label and log name; required
    int max_concurrent_reconciles = 1;
    std::unique_ptr<RateLimiter> rate_limiter;  // default: DefaultControllerRateLimiter
    Clock* clock = nullptr;                     // default: Clock::Real()
    std::chrono::milliseconds cache_sync_timeout = std::chrono::minutes(2);
    bool register_metrics = true;
  };

  Controller(Options options, ReconcileFunc reconcile);
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Watches `informer`; each event's object is mapped to requests.
  void Watch(std::shared_ptr<Informer> informer, MapFunc map, Predicates predicates = {});
  // Shorthands: the reconciled kind itself, and kinds it owns.
  void For(std::shared_ptr<Informer> informer, Predicates predicates = {});
  void Owns(std::shared_ptr<Informer> informer, std::string owner_group, std::string owner_kind,
            Predicates predicates = {});

  // Starts the informers (if not yet), waits for them to sync, runs the
  // workers until `stop`, then stops cleanly. Returns an error if the caches
  // did not sync in time (or stop came first: Cancelled).
  Status Run(const std::stop_token& stop);

  // Adds a request from outside (e.g. another source of events).
  void Enqueue(const Request& request) { queue_->Add(request.Key()); }

  const std::string& name() const { return name_; }
  WorkQueue& queue() { return *queue_; }

 private:
  struct Metrics;
  struct Watched {
    std::shared_ptr<Informer> informer;
    Informer::HandlerId handler = 0;
  };

  void Worker();
  void ProcessOne(const std::string& key);
  void EnqueueAll(const std::vector<Request>& requests);

  const std::string name_;
  const int workers_;
  Clock& clock_;
  const std::chrono::milliseconds cache_sync_timeout_;
  ReconcileFunc reconcile_;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<WorkQueue> queue_;
  std::vector<Watched> watched_;
  std::atomic<bool> started_{false};
};

}  // namespace caphv::kube
