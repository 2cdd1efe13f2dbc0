// File: kube/connection_pool.cc

#include "kube/connection_pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <system_error>

namespace caphv::kube::pool_internal {

// One key. Every field is guarded by Core::mu_.
struct Core::Entry {
  std::string key;
  std::string wanted;  // the version the last Get asked for

  std::shared_ptr<void> value;  // served while non-null
  std::string value_version;

  bool failed = false;  // the last build failed (and the value was dropped)
  std::string failed_version;
  std::string reason;
  std::string message;
  Clock::TimePoint retry_at{};
  int failures = 0;  // consecutive, for the backoff

  bool building = false;  // the build thread runs BuildLoop
  bool pending = false;   // a Get asked for a build while one ran
  std::string build_version;
  std::string progress;

  bool closed = false;  // swept or stopped: the build's result is discarded
  std::map<std::string, std::function<void()>> waiters;
  std::jthread thread;
};

// Joins a retired entry's build thread and releases its value, off the
// caller's thread.
struct Core::Closer {
  std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
  std::jthread thread;
};

Core::Core(Builder builder, PoolOptions options)
    : builder_(std::move(builder)),
      options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : Clock::Real()) {}

Core::~Core() { Stop(); }

Clock::Duration Core::BackoffFor(int failures) const {
  const double scale = std::pow(options_.backoff_factor, std::max(0, failures - 1));
  const double d = static_cast<double>(options_.initial_backoff.count()) * scale;
  if (d >= static_cast<double>(options_.max_backoff.count())) return options_.max_backoff;
  return Clock::Duration(static_cast<Clock::Duration::rep>(d));
}

PoolLookup<void> Core::Get(const std::string& key, const std::string& version,
                           const PoolWaiter& waiter) {
  std::jthread finished;  // a build thread that has ended; joined after the lock is released
  std::lock_guard lock(mu_);
  PoolLookup<void> out;
  if (stopped_) {
    out.state = PoolState::kStopped;
    out.reason = std::string(kPoolReasonStopped);
    out.message = "the " + options_.name + " is stopped";
    return out;
  }
  auto& slot = entries_[key];
  if (!slot) {
    slot = std::make_shared<Entry>();
    slot->key = key;
  }
  const std::shared_ptr<Entry> e = slot;
  e->wanted = version;
  if (e->value && e->value_version == version) {
    out.state = PoolState::kReady;
    out.value = e->value;
    return out;
  }
  const auto now = clock_.Now();
  const bool failed_here = e->failed && e->failed_version == version;
  const bool in_backoff = failed_here && now < e->retry_at;
  if (!in_backoff) {
    if (e->building) {
      e->pending = true;
    } else {
      StartBuildLocked(e, &finished);
    }
  }
  if (waiter.notify) e->waiters[waiter.id] = waiter.notify;
  if (e->value) {
    out.state = PoolState::kReady;
    out.value = e->value;
    out.rebuilding = true;
    return out;
  }
  if (in_backoff) {
    out.state = PoolState::kFailed;
    out.reason = e->reason;
    out.message = e->message;
    out.retry_after = e->retry_at - now;
    return out;
  }
  out.state = PoolState::kConnecting;
  if (failed_here) {
    out.reason = e->reason;
    out.message = e->message;
  } else {
    out.reason = std::string(kPoolReasonConnecting);
    if (!e->progress.empty()) {
      out.message = e->progress;
    } else if (options_.connecting_message) {
      out.message = options_.connecting_message(key);
    } else {
      out.message = "connecting (" + key + ")";
    }
  }
  return out;
}

void Core::StartBuildLocked(const std::shared_ptr<Entry>& e, std::jthread* finished) {
  *finished = std::move(e->thread);
  e->building = true;
  e->pending = false;
  e->build_version = e->wanted;
  e->progress.clear();
  try {
    e->thread = std::jthread([this, e](const std::stop_token& stop) { BuildLoop(e, stop); });
  } catch (const std::system_error& err) {
    e->building = false;
    e->failed = true;
    e->failed_version = e->wanted;
    e->reason = "InternalError";
    e->message = std::string("cannot start a build thread: ") + err.what();
    e->failures++;
    e->retry_at = clock_.Now() + BackoffFor(e->failures);
  }
}

void Core::BuildLoop(const std::shared_ptr<Entry>& e, const std::stop_token& stop) {
  while (true) {
    std::string version;
    std::shared_ptr<void> previous;
    {
      std::lock_guard lock(mu_);
      version = e->build_version;
      previous = e->value;
    }
    auto progress = [this, e, version](std::string message) {
      std::lock_guard lock(mu_);
      if (e->building && e->build_version == version) e->progress = std::move(message);
    };
    Result r;
    try {
      r = builder_(e->key, version, previous, stop, progress);
    } catch (const std::exception& ex) {
      r = Result{nullptr, false, "InternalError", std::string("build failed: ") + ex.what()};
    } catch (...) {
      r = Result{nullptr, false, "InternalError", "build failed with an unknown exception"};
    }
    std::shared_ptr<void> drop;  // released outside the lock
    std::map<std::string, std::function<void()>> waiters;
    bool closed = false;
    {
      std::lock_guard lock(mu_);
      if (e->closed || stop.stop_requested()) {
        closed = true;
        drop = std::move(r.value);
      } else if (r.keep_previous && previous && e->value == previous) {
        e->value_version = version;
        e->failed = false;
        e->failures = 0;
      } else if (r.value && !r.keep_previous) {
        drop = std::move(e->value);
        e->value = std::move(r.value);
        e->value_version = version;
        e->failed = false;
        e->failures = 0;
      } else {
        drop = std::move(e->value);
        e->value_version.clear();
        e->failed = true;
        e->failed_version = version;
        if (r.keep_previous) {
          e->reason = "InternalError";
          e->message = "the builder kept a previous value that is no longer there";
        } else {
          e->reason = r.reason.empty() ? "BuildFailed" : std::move(r.reason);
          e->message = std::move(r.message);
        }
        e->failures++;
        e->retry_at = clock_.Now() + BackoffFor(e->failures);
      }
      if (!closed) waiters.swap(e->waiters);
    }
    previous.reset();
    drop.reset();
    r.value.reset();
    for (auto& [id, notify] : waiters) {
      try {
        notify();
      } catch (...) {
        // A waiter's failure is its own; the others are still told.
      }
    }
    waiters.clear();

    std::lock_guard lock(mu_);
    bool again = false;
    if (!closed && !e->closed && !stop.stop_requested()) {
      const bool ready_for_wanted = e->value && e->value_version == e->wanted;
      const bool backing_off =
          e->failed && e->failed_version == e->wanted && clock_.Now() < e->retry_at;
      again = !ready_for_wanted && !backing_off && (e->pending || e->wanted != version);
    }
    e->pending = false;
    if (!again) {
      e->building = false;
      return;
    }
    e->build_version = e->wanted;
    e->progress.clear();
  }
}

bool Core::Contains(const std::string& key) const {
  std::lock_guard lock(mu_);
  return entries_.contains(key);
}

std::vector<std::string> Core::Keys() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& [key, e] : entries_) out.push_back(key);
  return out;
}

void Core::RetireLocked(const std::shared_ptr<Entry>& e, std::vector<std::function<void()>>* wake) {
  e->closed = true;
  e->thread.request_stop();
  if (wake != nullptr) {
    for (auto& [id, notify] : e->waiters) wake->push_back(std::move(notify));
  }
  e->waiters.clear();
  std::jthread build = std::move(e->thread);
  std::shared_ptr<void> value = std::move(e->value);
  if (!build.joinable() && !value) return;
  auto closer = std::make_unique<Closer>();
  closer->thread = std::jthread(
      [build = std::move(build), value = std::move(value), done = closer->done]() mutable {
        if (build.joinable()) build.join();
        value.reset();
        done->store(true);
      });
  closers_.push_back(std::move(closer));
}

void Core::Sweep(const std::function<bool(const std::string& key)>& in_use) {
  std::vector<std::string> keys = Keys();
  std::vector<std::string> unused;
  for (const auto& k : keys) {
    if (!in_use(k)) unused.push_back(k);
  }
  std::vector<std::function<void()>> wake;
  std::vector<std::unique_ptr<Closer>> reaped;  // joined after the lock is released
  {
    std::lock_guard lock(mu_);
    if (stopped_) return;
    for (auto it = closers_.begin(); it != closers_.end();) {
      if ((*it)->done->load()) {
        reaped.push_back(std::move(*it));
        it = closers_.erase(it);
      } else {
        ++it;
      }
    }
    for (const auto& k : unused) {
      auto it = entries_.find(k);
      if (it == entries_.end()) continue;
      RetireLocked(it->second, &wake);
      entries_.erase(it);
    }
  }
  reaped.clear();
  for (auto& notify : wake) {
    try {
      notify();
    } catch (...) {
    }
  }
}

void Core::Stop() {
  std::vector<std::jthread> builds;
  std::vector<std::shared_ptr<void>> values;
  std::vector<std::unique_ptr<Closer>> closers;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    for (auto& [key, e] : entries_) {
      e->closed = true;
      e->thread.request_stop();
      e->waiters.clear();
      if (e->thread.joinable()) builds.push_back(std::move(e->thread));
      if (e->value) values.push_back(std::move(e->value));
    }
    entries_.clear();
    closers.swap(closers_);
  }
  builds.clear();  // joins
  // Closing a value may wait (a connection's watches take about a second to
  // notice a stop): close them all at once.
  std::vector<std::jthread> dropping;
  for (auto& v : values) dropping.emplace_back([v = std::move(v)]() mutable { v.reset(); });
  dropping.clear();  // joins
  closers.clear();   // joins
}

}  // namespace caphv::kube::pool_internal
