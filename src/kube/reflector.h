// File: kube/reflector.h
//
// Reflector: keeps a sink in step with one collection of the apiserver by
// LIST then WATCH (client-go tools/cache/reflector.go).
//
//   - The first LIST is a consistent read (resourceVersion "") in pages of
//     `page_size`, so that no response body holds a whole large collection
//     (resourceVersion "0", client-go's first LIST, is served from the watch
//     cache in one response whatever the limit); the sink receives the full
//     content (Replace). Reflectors sharing a ListGate list one at a time,
//     since each response body is held while it is decoded (see ListGate).
//   - WATCH from the list's resourceVersion with bookmarks and a server
//     timeout drawn from [5 min, 10 min]. Each event goes to the sink (Apply);
//     BOOKMARK events only move the resume point.
//   - Clean end of stream (server timeout, apiserver shutting down): watch
//     again at once from the last resourceVersion seen.
//   - Dropped connection / apiserver unreachable: back off, then watch again
//     from the last resourceVersion (no relist, so no event is lost).
//   - 410 Gone, as the HTTP status of the watch request or as an ERROR event
//     with code 410: relist with resourceVersion "" (a consistent read).
//   - Any other failure (list error, non-410 ERROR event, very short empty
//     watch): back off, relist from the last resourceVersion.
//   - Backoff between failed attempts: 800 ms, x2, jitter 1.0, capped at
//     30 s, reset after 2 min without failures.
//
// Thread safety: Run() executes on the caller's thread (one per watch stream)
// and calls the sink from that thread only. counters() may be read from any
// thread.

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/log.h"
#include "kube/rate_limiter.h"

namespace caphv::kube {

// Turns to LIST, one at a time, for the reflectors that share the gate. A
// response's body is held whole while it is decoded, and the apiserver
// serves a LIST at a resourceVersion (a relist after a failed watch) from its
// watch cache in one response whatever the limit (measured on
// kube-apiserver v1.33 at resourceVersion "0": limit=5 over 31 objects, 31
// items and no continue token), so informers relisting at once would hold
// every collection's body together. A turn kept
// longer than `max_wait` (a slow or unreachable apiserver) holds no other
// back for more than that: the waiter lists without a turn.
//
// Thread safety: Take() may be called from any thread; a Turn is released
// by the thread that holds it.
class ListGate {
 public:
  class Turn {
   public:
    Turn() = default;
    Turn(Turn&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Turn& operator=(Turn&&) = delete;
    Turn(const Turn&) = delete;
    Turn& operator=(const Turn&) = delete;
    ~Turn();
    // False when the wait ended (max_wait, stop) without the turn.
    bool held() const { return gate_ != nullptr; }

   private:
    friend class ListGate;
    explicit Turn(ListGate* gate) : gate_(gate) {}
    ListGate* gate_ = nullptr;
  };

  explicit ListGate(std::chrono::milliseconds max_wait = std::chrono::seconds(5))
      : max_wait_(max_wait) {}
  ListGate(const ListGate&) = delete;
  ListGate& operator=(const ListGate&) = delete;

  // Waits for the turn, at most max_wait and not past a stop request.
  Turn Take(const std::stop_token& stop);

  // The gate of reflectors given none: one per process.
  static ListGate& Process();

 private:
  // A flag under a mutex rather than a timed mutex: ThreadSanitizer does
  // not see std::timed_mutex::try_lock_for take the lock
  // (pthread_mutex_clocklock) and reports its unlock.
  void Release();

  const std::chrono::milliseconds max_wait_;
  std::mutex mu_;
  std::condition_variable released_;
  bool taken_ = false;
};

// Receives what the reflector learns. Called from the reflector's thread.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // Prepares one listed item as its page is decoded (the informer's
  // compaction), so a LIST never holds the whole collection unprepared.
  virtual void PrepareListed(Object& item) = 0;
  // The complete content of the collection at `resource_version`, every item
  // already passed through PrepareListed.
  virtual void Replace(std::vector<Object> items, const std::string& resource_version) = 0;
  // One ADDED, MODIFIED or DELETED event.
  virtual void Apply(WatchEvent event) = 0;
};

struct ReflectorOptions {
  GroupVersionResource gvr;
  std::string ns;  // "" = all namespaces (or a cluster-scoped resource)
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  Backoff::Options backoff;
  Clock* clock = nullptr;  // default: Clock::Real()
  // Whose turn it is to LIST; default: ListGate::Process().
  ListGate* list_gate = nullptr;
  // What is built of each object listed or watched; default: everything
  // but metadata.managedFields. Must outlive the reflector.
  const FieldMask* keep = nullptr;
};

class Reflector {
 public:
  struct Counters {
    int64_t lists = 0;      // successful LISTs
    int64_t watches = 0;    // WATCH requests started
    int64_t gone = 0;       // 410 responses (connect or ERROR event)
    int64_t failures = 0;   // attempts followed by a backoff
    int64_t events = 0;     // ADDED/MODIFIED/DELETED delivered
    int64_t bookmarks = 0;  // BOOKMARK events
  };

  Reflector(std::shared_ptr<Client> client, ReflectorOptions options, ReflectorSink& sink);

  // Lists and watches until `stop` is requested. Returns Cancelled then.
  Status Run(const std::stop_token& stop);

  // The resourceVersion the next watch resumes from.
  std::string LastResourceVersion() const;
  Counters counters() const;

 private:
  enum class WatchOutcome { kRewatch, kRelistConsistent, kRelist, kBackoffRewatch, kStopped };
  // One LIST (with the fallbacks above) into the sink, in the gate's turn.
  Status ListOnce(std::string& relist_rv, const std::stop_token& stop);
  WatchOutcome WatchOnce(const std::stop_token& stop);
  void SetLastResourceVersion(std::string rv);
  const FieldMask* Keep() const {
    return options_.keep != nullptr ? options_.keep : &FieldMask::WithoutManagedFields();
  }

  std::shared_ptr<Client> client_;
  const ReflectorOptions options_;
  ReflectorSink& sink_;
  Clock& clock_;
  ListGate& list_gate_;
  Backoff backoff_;
  const log::Logger logger_;

  mutable std::mutex mu_;
  std::string last_rv_;
  Counters counters_;
};

}  // namespace caphv::kube
