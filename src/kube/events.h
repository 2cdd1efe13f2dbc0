// File: kube/events.h
//
// EventRecorder: core/v1 Events about objects, sent asynchronously.
//
//   EventRecorder recorder(client, {.component = "caphv-controller-manager"});
//   recorder.Event(machine, EventType::kNormal, "VMCreated", "Created VM ns/vm-1");
//
// Event() copies what it needs into a bounded queue and returns at once (a
// full queue drops the event and counts it in events_dropped_total); one
// background thread writes to the API. Repeats are aggregated like
// client-go's event correlator: the same involved object + type + reason +
// message (+ source) within the LRU's memory PATCHes the existing Event's
// `count` and `lastTimestamp` instead of creating a new Event. The Event's
// `source.component` and `reportingComponent` are the component name,
// `source.host`/`reportingInstance` the host name.
//
// ForgetObject(kind, namespace, name) drops the aggregation memory of every
// event about that object (any uid) once it has been deleted: its Events can
// never aggregate again, and without it the LRU would keep up to
// `cache_size` entries (~700 bytes each) of objects long gone. It is queued
// behind the events already recorded, so their aggregation still happens.
//
// Thread safety: Event(), Flush() and counters may be called from any thread
// concurrently. EventCorrelator is single-threaded (used by the sender).

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "kube/client.h"

namespace caphv::kube {

enum class EventType { kNormal, kWarning };
std::string_view EventTypeName(EventType type);

// The core/v1 ObjectReference of an object (apiVersion, kind, namespace,
// name, uid, resourceVersion).
Object ObjectReferenceOf(const Object& object);

// client-go's getEventKey: the identity of "the same event again".
std::string EventAggregationKey(const Object& involved_object, std::string_view type,
                                std::string_view reason, std::string_view message,
                                std::string_view component, std::string_view host);

// The object an event is about, without its uid: kind, namespace and name.
std::string EventObjectKey(std::string_view kind, std::string_view ns, std::string_view name);

// A bounded LRU from aggregation key to the Event already written for it.
class EventCorrelator {
 public:
  struct Entry {
    std::string name;  // metadata.name of the Event
    std::string ns;    // its namespace
    int count = 0;     // occurrences so far, this one included
    std::string first_timestamp;
  };

  explicit EventCorrelator(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // Counts one occurrence of `key`. A key not in the cache starts a new entry
  // named `new_name` (count 1) about `object` (an EventObjectKey); a cached
  // key keeps its name and first timestamp and increments the count. The
  // entry becomes most recent.
  Entry Observe(const std::string& key, const std::string& new_name, const std::string& ns,
                const std::string& timestamp, const std::string& object = {});
  // Forgets a key (e.g. when writing its Event failed for good).
  void Erase(const std::string& key);
  // Forgets every key about `object` (an EventObjectKey); returns how many.
  size_t EraseObject(const std::string& object);
  size_t size() const { return index_.size(); }

 private:
  struct Item {
    std::string key;
    std::string object;
    Entry entry;
  };
  size_t capacity_;
  std::list<Item> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Item>::iterator> index_;
};

struct EventRecorderOptions {
  std::string component;         // e.g. "caphv-controller-manager"
  std::string host;              // default: the host name
  size_t queue_capacity = 1000;  // pending events before dropping
  size_t cache_size = 4096;      // correlator LRU entries
  int max_attempts = 3;          // per event write
  std::chrono::milliseconds retry_interval{500};
};

class EventRecorder {
 public:
  EventRecorder(std::shared_ptr<Client> client, EventRecorderOptions options);
  ~EventRecorder();  // Shutdown(2 s)
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // `object` is the involved object (needs kind, apiVersion, metadata.name;
  // namespace and uid when it has them). `reason` is PascalCase.
  void Event(const Object& object, EventType type, std::string_view reason,
             std::string_view message);
  // The object `kind` `ns`/`name` was deleted: forget its events (see the
  // banner). Never dropped for a full queue.
  void ForgetObject(std::string_view kind, std::string_view ns, std::string_view name);

  // Waits until everything queued so far was sent (or failed), up to `timeout`.
  bool Flush(std::chrono::milliseconds timeout);
  // Sends what is queued for at most `timeout`, then stops the sender.
  void Shutdown(std::chrono::milliseconds timeout);

  uint64_t dropped() const { return dropped_.load(); }
  uint64_t written() const { return written_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  struct Pending {
    Object involved;  // ObjectReference
    std::string type, reason, message, timestamp;
    std::string forget;  // non-empty: forget this EventObjectKey instead of sending
  };

  void Loop(const std::stop_token& stop);
  void Send(const Pending& p, const std::stop_token& stop);

  std::shared_ptr<Client> client_;
  EventRecorderOptions options_;
  EventCorrelator correlator_;  // sender thread only

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool busy_ = false;  // the sender holds an item
  bool shut_down_ = false;
  std::atomic<uint64_t> dropped_{0}, written_{0}, failed_{0};
  std::jthread thread_;  // last: started after everything above
};

}  // namespace caphv::kube
