// File: kube/events.cc
//
// Asynchronous, aggregating Event recorder; see events.h.

#include "kube/events.h"

#include <prometheus/counter.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <exception>

#include "kube/log.h"
#include "kube/metrics.h"

namespace caphv::kube {
namespace {

prometheus::Counter& DroppedCounter() {
  static prometheus::Counter& counter =
      prometheus::BuildCounter()
          .Name("events_dropped_total")
          .Help("Events dropped because the recorder's queue was full.")
          .Register(metrics::Registry())
          .Add({});
  return counter;
}

std::string Field(const Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// metav1.Time: RFC 3339, whole seconds, UTC.
std::string TimeNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string UniqueEventName(const std::string& object_name) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  char hex[32];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(ns));
  return object_name + "." + hex;
}

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) return "unknown";
  return host;
}

}  // namespace

std::string_view EventTypeName(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

Object ObjectReferenceOf(const Object& object) {
  Object ref = Object::object();
  std::string api_version = Field(object, "apiVersion");
  std::string kind = Field(object, "kind");
  if (!api_version.empty()) ref["apiVersion"] = api_version;
  if (!kind.empty()) ref["kind"] = kind;
  auto md = object.find("metadata");
  if (md != object.end() && md->is_object()) {
    for (const char* key : {"namespace", "name", "uid", "resourceVersion"}) {
      std::string v = Field(*md, key);
      if (!v.empty()) ref[key] = v;
    }
  }
  return ref;
}

std::string EventAggregationKey(const Object& involved, std::string_view type,
                                std::string_view reason, std::string_view message,
                                std::string_view component, std::string_view host) {
  // client-go joins these with ""; a unit separator keeps the key unambiguous.
  constexpr char kSep = '\x1f';
  const std::string fields[] = {Field(involved, "kind"), Field(involved, "namespace"),
                                Field(involved, "name"), Field(involved, "fieldPath"),
                                Field(involved, "uid"),  Field(involved, "apiVersion")};
  std::string key;
  key.append(component).append(1, kSep).append(host).append(1, kSep);
  for (const auto& f : fields) key.append(f).append(1, kSep);
  key.append(type).append(1, kSep).append(reason).append(1, kSep).append(message);
  return key;
}

std::string EventObjectKey(std::string_view kind, std::string_view ns, std::string_view name) {
  std::string key;
  key.append(kind).append(1, '\x1f').append(ns).append(1, '\x1f').append(name);
  return key;
}

EventCorrelator::Entry EventCorrelator::Observe(const std::string& key, const std::string& new_name,
                                                const std::string& ns, const std::string& timestamp,
                                                const std::string& object) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    Entry& e = it->second->entry;
    ++e.count;
    return e;
  }
  lru_.push_front(Item{key, object, Entry{new_name, ns, 1, timestamp}});
  index_[key] = lru_.begin();
  while (index_.size() > capacity_) {
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return lru_.front().entry;
}

size_t EventCorrelator::EraseObject(const std::string& object) {
  size_t erased = 0;
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->object == object) {
      index_.erase(it->key);
      it = lru_.erase(it);
      ++erased;
    } else {
      ++it;
    }
  }
  return erased;
}

void EventCorrelator::Erase(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  lru_.erase(it->second);
  index_.erase(it);
}

// --- EventRecorder ------------------------------------------------------------

EventRecorder::EventRecorder(std::shared_ptr<Client> client, EventRecorderOptions options)
    : client_(std::move(client)), options_(std::move(options)), correlator_(options_.cache_size) {
  if (options_.host.empty()) options_.host = HostName();
  DroppedCounter();  // register the family up front so it is always exposed
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
}

EventRecorder::~EventRecorder() { Shutdown(std::chrono::seconds(2)); }

void EventRecorder::ForgetObject(std::string_view kind, std::string_view ns,
                                 std::string_view name) {
  Pending p;
  p.forget = EventObjectKey(kind, ns, name);
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return;
    queue_.push_back(std::move(p));
  }
  cv_.notify_all();
}

void EventRecorder::Event(const Object& object, EventType type, std::string_view reason,
                          std::string_view message) {
  Pending p{ObjectReferenceOf(object), std::string(EventTypeName(type)), std::string(reason),
            std::string(message), TimeNow()};
  {
    std::lock_guard lock(mu_);
    if (shut_down_ || queue_.size() >= options_.queue_capacity) {
      dropped_.fetch_add(1);
      DroppedCounter().Increment();
      return;
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_all();
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [this] { return queue_.empty() && !busy_; });
}

void EventRecorder::Shutdown(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mu_);
    if (shut_down_) return;
    shut_down_ = true;  // no new events from now on
  }
  Flush(timeout);
  thread_.request_stop();
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EventRecorder::Loop(const std::stop_token& stop) {
  for (;;) {
    Pending p;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop.stop_requested() || !queue_.empty(); });
      if (stop.stop_requested()) {
        dropped_.fetch_add(static_cast<uint64_t>(std::count_if(
            queue_.begin(), queue_.end(), [](const Pending& q) { return q.forget.empty(); })));
        queue_.clear();
        busy_ = false;
        cv_.notify_all();
        return;
      }
      p = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    if (!p.forget.empty()) {
      correlator_.EraseObject(p.forget);
    } else {
      // The recorder's thread top: one event that throws must not end it.
      try {
        Send(p, stop);
      } catch (const std::exception& e) {
        log::Root().WithName("events").Error(e.what(), "Dropped an event after an exception",
                                             {{"reason", p.reason}});
      }
    }
    {
      std::lock_guard lock(mu_);
      busy_ = false;
    }
    cv_.notify_all();
  }
}

void EventRecorder::Send(const Pending& p, const std::stop_token& stop) {
  auto logger = log::Root().WithName("events");
  std::string object_ns = Field(p.involved, "namespace");
  std::string ns = object_ns.empty() ? "default" : object_ns;
  std::string key = EventAggregationKey(p.involved, p.type, p.reason, p.message, options_.component,
                                        options_.host);
  EventCorrelator::Entry entry = correlator_.Observe(
      key, UniqueEventName(Field(p.involved, "name")), ns, p.timestamp,
      EventObjectKey(Field(p.involved, "kind"), object_ns, Field(p.involved, "name")));

  Object event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", entry.name}, {"namespace", entry.ns}}},
      {"involvedObject", p.involved},
      {"reason", p.reason},
      {"message", p.message},
      {"type", p.type},
      {"source", {{"component", options_.component}, {"host", options_.host}}},
      {"reportingComponent", options_.component},
      {"reportingInstance", options_.host},
      {"firstTimestamp", entry.first_timestamp},
      {"lastTimestamp", p.timestamp},
      {"count", entry.count},
  };

  bool patch = entry.count > 1;
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    Status status;
    if (patch) {
      Object body = {
          {"count", entry.count}, {"lastTimestamp", p.timestamp}, {"message", p.message}};
      auto r = client_->Patch(resources::kEvents, entry.ns, entry.name, PatchType::kMerge, body);
      status = r.status();
      if (status.IsNotFound()) {
        patch = false;  // deleted or expired meanwhile: create it again
        --attempt;
        continue;
      }
    } else {
      auto r = client_->Create(resources::kEvents, entry.ns, event);
      status = r.status();
      if (status.IsAlreadyExists()) status = Status::Ok();
    }
    if (status.ok()) {
      written_.fetch_add(1);
      return;
    }
    const bool retriable =
        status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kTimeout ||
        status.code() == StatusCode::kTooManyRequests || status.code() == StatusCode::kInternal;
    if (!retriable || attempt == options_.max_attempts || stop.stop_requested()) {
      logger.Error(
          status, "Unable to write event",
          {{"reason", p.reason}, {"object", log::KRef(object_ns, Field(p.involved, "name"))}});
      break;
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.retry_interval, [&] { return stop.stop_requested(); });
  }
  failed_.fetch_add(1);
  correlator_.Erase(key);
}

}  // namespace caphv::kube
