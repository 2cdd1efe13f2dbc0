// File: kube/connection_pool.h
//
// ConnectionPool<T>: a keyed pool of resources built in the background
// (clients of other apiservers with their informers, typically), so that a
// caller such as a reconcile never waits on the network to obtain one.
//
// Each key has its own entry and state:
//
//   Connecting  a build runs on the entry's own std::jthread
//   Ready       a value is served
//   Failed      the last build failed; no new attempt before a backoff
//               deadline (initial_backoff, x backoff_factor per consecutive
//               failure, capped at max_backoff; reset by a success)
//
// Get(key, version, waiter) answers at once, never blocking on a build:
//   - the ready value when it was built for `version`;
//   - otherwise it starts a build unless one runs or the entry failed for
//     this version and its deadline has not passed, and answers with
//       * the value built for an older version, if any, while the new one
//         is built (`rebuilding` = true): it is served until the new value
//         is ready (then replaced) or the build fails (then dropped);
//       * kConnecting: reason "Connecting" with the builder's progress
//         message, or, when the last attempt for this version failed and a
//         new one runs, that failure's reason and message; retry_after 0;
//       * kFailed: the failure's reason and message and the time left until
//         the next attempt may start (retry_after > 0). The pool retries
//         only when asked: the caller comes back after retry_after.
//   `version` is opaque (e.g. the resourceVersion of the Secret the value is
//   built from); a changed version starts a build at once, whatever the
//   backoff. A builder may answer KeepPrevious ("same content"): the value
//   already served is kept and now counts as built for the new version.
//   `waiter` (when it has a notify function) is remembered, once per id,
//   unless the answer is the value of this version; every waiter of the
//   entry is notified when a build ends (ready or failed) and when the entry
//   is swept.
//
// Sweep(in_use) closes the entries whose key in_use() rejects: their build
// is asked to stop, their waiters are notified, and the build thread is
// joined and the value released on a short-lived closer thread, so Sweep
// itself never waits on I/O. Stop() stops every build, joins the threads and
// releases every value; Get() then answers kStopped. The destructor stops.
//
// Builders run on build threads, several at once for different keys; they
// must be thread-safe and should return soon after their stop token is
// requested. Values are shared: a caller holding one keeps it alive after
// the pool dropped it. All timing goes through the Clock of PoolOptions.
//
// Thread safety: all methods are safe for concurrent use. Waiter
// notifications run on build threads (or the caller of Sweep) without the
// pool's lock held; they must be quick, may call Get(), and must not call
// Sweep() or Stop(). Sweep's predicate runs without the lock too.

#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kube/clock.h"

namespace caphv::kube {

enum class PoolState { kConnecting, kReady, kFailed, kStopped };

inline constexpr std::string_view kPoolReasonConnecting = "Connecting";
inline constexpr std::string_view kPoolReasonStopped = "Stopped";

struct PoolWaiter {
  std::string id;                // one registration per id and entry
  std::function<void()> notify;  // empty: no waiter
};

struct PoolOptions {
  std::string name = "connection pool";  // for messages
  Clock::Duration initial_backoff = std::chrono::seconds(2);
  Clock::Duration max_backoff = std::chrono::minutes(2);
  double backoff_factor = 2.0;
  Clock* clock = nullptr;  // default: Clock::Real()
  // The Connecting message until the builder reports progress; default
  // "connecting (<key>)".
  std::function<std::string(const std::string& key)> connecting_message;
};

template <typename T>
struct BuildContext {
  std::string key;
  std::string version;
  std::shared_ptr<T> previous;  // the value served now (any version), or null
  std::stop_token stop;
  // Publishes a progress message ("connecting to ...") shown while the build runs.
  std::function<void(std::string)> progress;

  void SetProgress(std::string message) const {
    if (progress) progress(std::move(message));
  }
};

template <typename T>
struct BuildResult {
  std::shared_ptr<T> value;    // ready
  bool keep_previous = false;  // same content: keep serving `previous`
  std::string reason;          // failure (neither of the above): PascalCase
  std::string message;

  static BuildResult Ready(std::shared_ptr<T> v) { return {std::move(v), false, {}, {}}; }
  static BuildResult KeepPrevious() { return {nullptr, true, {}, {}}; }
  static BuildResult Failed(std::string reason, std::string message) {
    return {nullptr, false, std::move(reason), std::move(message)};
  }
};

template <typename T>
struct PoolLookup {
  PoolState state = PoolState::kConnecting;
  std::shared_ptr<T> value;  // non-null iff state == kReady
  bool rebuilding = false;   // kReady: a newer version is being built
  std::string reason;        // not ready: see the banner
  std::string message;
  Clock::Duration retry_after = Clock::Duration::zero();  // kFailed only
};

namespace pool_internal {

struct Result {
  std::shared_ptr<void> value;
  bool keep_previous = false;
  std::string reason;
  std::string message;
};

using Builder = std::function<Result(const std::string& key, const std::string& version,
                                     const std::shared_ptr<void>& previous, std::stop_token stop,
                                     std::function<void(std::string)> progress)>;

// The type-erased pool behind ConnectionPool<T>.
class Core {
 public:
  Core(Builder builder, PoolOptions options);
  ~Core();
  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  PoolLookup<void> Get(const std::string& key, const std::string& version,
                       const PoolWaiter& waiter);
  bool Contains(const std::string& key) const;
  std::vector<std::string> Keys() const;
  void Sweep(const std::function<bool(const std::string& key)>& in_use);
  void Stop();

 private:
  struct Entry;
  struct Closer;

  void StartBuildLocked(const std::shared_ptr<Entry>& e, std::jthread* finished);
  void BuildLoop(const std::shared_ptr<Entry>& e, const std::stop_token& stop);
  Clock::Duration BackoffFor(int failures) const;
  void RetireLocked(const std::shared_ptr<Entry>& e, std::vector<std::function<void()>>* wake);

  const Builder builder_;
  const PoolOptions options_;
  Clock& clock_;

  mutable std::mutex mu_;
  bool stopped_ = false;                                   // guarded by mu_
  std::map<std::string, std::shared_ptr<Entry>> entries_;  // guarded by mu_
  std::vector<std::unique_ptr<Closer>> closers_;           // guarded by mu_
};

}  // namespace pool_internal

template <typename T>
class ConnectionPool {
 public:
  using Builder = std::function<BuildResult<T>(const BuildContext<T>&)>;

  explicit ConnectionPool(Builder builder, PoolOptions options = {})
      : core_(Erase(std::move(builder)), std::move(options)) {}

  PoolLookup<T> Get(const std::string& key, const std::string& version,
                    const PoolWaiter& waiter = {}) {
    PoolLookup<void> l = core_.Get(key, version, waiter);
    return {l.state,
            std::static_pointer_cast<T>(l.value),
            l.rebuilding,
            std::move(l.reason),
            std::move(l.message),
            l.retry_after};
  }
  // True when the pool has an entry for `key` (in any state).
  bool Contains(const std::string& key) const { return core_.Contains(key); }
  std::vector<std::string> Keys() const { return core_.Keys(); }
  void Sweep(const std::function<bool(const std::string& key)>& in_use) { core_.Sweep(in_use); }
  void Stop() { core_.Stop(); }

 private:
  static pool_internal::Builder Erase(Builder builder) {
    return [b = std::move(builder)](const std::string& key, const std::string& version,
                                    const std::shared_ptr<void>& previous, std::stop_token stop,
                                    std::function<void(std::string)> progress) {
      BuildContext<T> ctx{key, version, std::static_pointer_cast<T>(previous), std::move(stop),
                          std::move(progress)};
      BuildResult<T> r = b(ctx);
      return pool_internal::Result{std::move(r.value), r.keep_previous, std::move(r.reason),
                                   std::move(r.message)};
    };
  }

  pool_internal::Core core_;
};

}  // namespace caphv::kube
