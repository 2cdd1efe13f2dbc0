// File: kube/reflector.h
//
// Reflector: keeps a sink in step with one collection of the apiserver by
// LIST then WATCH (client-go tools/cache/reflector.go).
//
//   - The first LIST uses resourceVersion "0" (served from the watch cache,
//     which ignores the limit then: one response), a relist pages by
//     `page_size`; the sink receives the full content (Replace). The
//     reflectors of a process list one at a time, since each response body
//     is held while it is decoded (one waits at most 5 s for its turn).
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
#include <cstdint>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/log.h"
#include "kube/rate_limiter.h"

namespace caphv::kube {

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
  Status Run(std::stop_token stop);

  // The resourceVersion the next watch resumes from.
  std::string LastResourceVersion() const;
  Counters counters() const;

 private:
  enum class WatchOutcome { kRewatch, kRelistConsistent, kRelist, kBackoffRewatch, kStopped };
  // One LIST (with the fallbacks above) into the sink, in the process's
  // turn (one LIST at a time, see above).
  Status ListOnce(std::string& relist_rv, const std::stop_token& stop);
  WatchOutcome WatchOnce(std::stop_token stop);
  void SetLastResourceVersion(std::string rv);

  std::shared_ptr<Client> client_;
  const ReflectorOptions options_;
  ReflectorSink& sink_;
  Clock& clock_;
  Backoff backoff_;
  const log::Logger logger_;

  mutable std::mutex mu_;
  std::string last_rv_;
  Counters counters_;
};

}  // namespace caphv::kube
