// File: kube/reflector.cc
//
// LIST+WATCH loop with resume, relist on 410 and backoff. See reflector.h.

#include "kube/reflector.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>

#include "kube/log.h"

namespace caphv::kube {

namespace {

constexpr int kMinWatchTimeoutSeconds = 300;  // client-go defaultMinWatchTimeout
constexpr auto kShortWatch = std::chrono::seconds(1);

int RandomWatchTimeout() {
  thread_local std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> dist(kMinWatchTimeoutSeconds, 2 * kMinWatchTimeoutSeconds);
  return dist(rng);
}

// The process's turn to LIST: one at a time. A response's body is held whole
// while it is decoded, and the apiserver serves a LIST at resourceVersion "0"
// from its watch cache in one response whatever the limit, so a start-up's
// informers listing at once would hold every collection's body together. A
// LIST that keeps the turn longer than kListTurnWait (a slow or unreachable
// apiserver) holds no other back for more than that: they list without it.
constexpr auto kListTurnWait = std::chrono::seconds(5);

class ListTurn {
 public:
  explicit ListTurn(const std::stop_token& stop) {
    Shared& turn = TheTurn();
    std::unique_lock lock(turn.mu);
    const auto deadline = std::chrono::steady_clock::now() + kListTurnWait;
    while (turn.taken && !stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
      turn.released.wait_for(lock, std::chrono::milliseconds(100));
    }
    if (!turn.taken) turn.taken = held_ = true;
  }
  ~ListTurn() {
    if (!held_) return;
    Shared& turn = TheTurn();
    {
      std::lock_guard lock(turn.mu);
      turn.taken = false;
    }
    turn.released.notify_one();
  }
  ListTurn(const ListTurn&) = delete;
  ListTurn& operator=(const ListTurn&) = delete;

 private:
  // A flag under a mutex rather than a timed mutex: ThreadSanitizer does
  // not see std::timed_mutex::try_lock_for take the lock
  // (pthread_mutex_clocklock) and reports its unlock.
  struct Shared {
    std::mutex mu;
    std::condition_variable released;
    bool taken = false;
  };
  static Shared& TheTurn() {
    static Shared turn;
    return turn;
  }
  bool held_ = false;
};

int ErrorEventCode(const Object& status) {
  auto it = status.find("code");
  if (it != status.end() && it->is_number_integer()) return it->get<int>();
  return 0;
}

}  // namespace

Reflector::Reflector(std::shared_ptr<Client> client, ReflectorOptions options, ReflectorSink& sink)
    : client_(std::move(client)),
      options_(std::move(options)),
      sink_(sink),
      clock_(options_.clock ? *options_.clock : Clock::Real()),
      backoff_(options_.backoff, clock_),
      logger_(log::Root()
                  .WithName("reflector")
                  .WithValues({{"resource", options_.gvr.String()}, {"namespace", options_.ns}})) {}

std::string Reflector::LastResourceVersion() const {
  std::lock_guard<std::mutex> g(mu_);
  return last_rv_;
}

Reflector::Counters Reflector::counters() const {
  std::lock_guard<std::mutex> g(mu_);
  return counters_;
}

void Reflector::SetLastResourceVersion(std::string rv) {
  std::lock_guard<std::mutex> g(mu_);
  last_rv_ = std::move(rv);
}

Status Reflector::ListOnce(std::string& relist_rv, const std::stop_token& stop) {
  const ListTurn turn(stop);
  if (stop.stop_requested()) return Status(StatusCode::kCancelled, "stopped before listing");
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.resource_version = relist_rv;
  lo.without_managed_fields = true;
  auto prepare = [this](Object& item) { sink_.PrepareListed(item); };
  StatusOr<ObjectList> list =
      client_->ListAll(options_.gvr, options_.ns, lo, options_.page_size, prepare);
  if (!list.ok() && list.status().IsGone() && !relist_rv.empty()) {
    // The resourceVersion we asked for is compacted away: read the latest.
    {
      std::lock_guard<std::mutex> g(mu_);
      ++counters_.gone;
    }
    relist_rv.clear();
    lo.resource_version.clear();
    list = client_->ListAll(options_.gvr, options_.ns, lo, options_.page_size, prepare);
  }
  if (!list.ok()) return list.status();
  std::string rv = list->resource_version;
  sink_.Replace(std::move(list->items), rv);
  SetLastResourceVersion(rv);
  relist_rv = rv;
  std::lock_guard<std::mutex> g(mu_);
  ++counters_.lists;
  return Status::Ok();
}

Reflector::WatchOutcome Reflector::WatchOnce(std::stop_token stop) {
  WatchOptions wo;
  wo.resource_version = LastResourceVersion();
  wo.label_selector = options_.label_selector;
  wo.field_selector = options_.field_selector;
  wo.allow_bookmarks = true;
  wo.timeout_seconds = RandomWatchTimeout();
  wo.without_managed_fields = true;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++counters_.watches;
  }

  bool gone = false;
  bool error_event = false;
  Status error_status;
  int64_t received = 0;
  const Clock::TimePoint started = clock_.Now();
  Status s = client_->Watch(
      options_.gvr, options_.ns, wo,
      [&](WatchEvent&& ev) {
        switch (ev.type) {
          case WatchEvent::Type::kError:
            if (ErrorEventCode(ev.object) == 410) {
              gone = true;
            } else {
              error_event = true;
              error_status = Status::FromHttp(ErrorEventCode(ev.object), ev.object.dump());
            }
            return false;
          case WatchEvent::Type::kBookmark: {
            ++received;
            SetLastResourceVersion(ResourceVersionOf(ev.object));
            std::lock_guard<std::mutex> g(mu_);
            ++counters_.bookmarks;
            return true;
          }
          default: {
            ++received;
            std::string rv = ResourceVersionOf(ev.object);
            sink_.Apply(std::move(ev));
            SetLastResourceVersion(std::move(rv));
            std::lock_guard<std::mutex> g(mu_);
            ++counters_.events;
            return true;
          }
        }
      },
      stop);

  if (stop.stop_requested()) return WatchOutcome::kStopped;
  if (gone || s.IsGone()) {
    logger_.V(1).Info("Watch expired (410), relisting", {{"resourceVersion", wo.resource_version}});
    std::lock_guard<std::mutex> g(mu_);
    ++counters_.gone;
    return WatchOutcome::kRelistConsistent;
  }
  if (error_event) {
    logger_.Error(error_status.ToString(), "Watch ended with an error event, relisting");
    return WatchOutcome::kRelist;
  }
  if (!s.ok()) {  // dropped or refused
    logger_.Error(s, "Watch failed, retrying from the last resourceVersion",
                  {{"resourceVersion", LastResourceVersion()}});
    return WatchOutcome::kBackoffRewatch;
  }
  if (received == 0 && clock_.Now() - started < kShortWatch) {
    return WatchOutcome::kBackoffRewatch;  // a suspiciously short, empty watch
  }
  logger_.V(4).Info("Watch closed, resuming", {{"resourceVersion", LastResourceVersion()}});
  return WatchOutcome::kRewatch;
}

Status Reflector::Run(std::stop_token stop) {
  std::string relist_rv = "0";
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      if (Status ls = ListOnce(relist_rv, stop); !ls.ok()) {
        if (stop.stop_requested()) break;
        logger_.Error(ls, "Failed to list, backing off");
        {
          std::lock_guard<std::mutex> g(mu_);
          ++counters_.failures;
        }
        clock_.SleepFor(backoff_.Next(), stop);
        continue;
      }
      need_list = false;
    }
    switch (WatchOnce(stop)) {
      case WatchOutcome::kStopped:
        break;
      case WatchOutcome::kRewatch:
        break;
      case WatchOutcome::kRelistConsistent:
        relist_rv.clear();
        need_list = true;
        break;
      case WatchOutcome::kRelist:
        relist_rv = LastResourceVersion();
        need_list = true;
        {
          std::lock_guard<std::mutex> g(mu_);
          ++counters_.failures;
        }
        clock_.SleepFor(backoff_.Next(), stop);
        break;
      case WatchOutcome::kBackoffRewatch: {
        std::lock_guard<std::mutex> g(mu_);
        ++counters_.failures;
      }
        clock_.SleepFor(backoff_.Next(), stop);
        break;
    }
  }
  return Status(StatusCode::kCancelled, "reflector for " + options_.gvr.String() + " stopped");
}

}  // namespace caphv::kube
