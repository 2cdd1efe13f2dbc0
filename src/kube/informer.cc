// File: kube/informer.cc
//
// Store + handlers fed by a reflector. See informer.h.

#include "kube/informer.h"

#include <exception>
#include <unordered_map>

namespace caphv::kube {

namespace {

Indexers WithNamespaceIndex(Indexers indexers) {
  indexers.emplace(std::string(kNamespaceIndex), IndexByNamespace);
  return indexers;
}

ReflectorOptions ToReflectorOptions(const InformerOptions& o) {
  ReflectorOptions r;
  r.gvr = o.gvr;
  r.ns = o.ns;
  r.label_selector = o.label_selector;
  r.field_selector = o.field_selector;
  r.page_size = o.page_size;
  r.backoff = o.backoff;
  r.clock = o.clock;
  return r;
}

// Handlers run on the watch thread: an exception must not end the watch.
template <typename F>
void CallGuarded(const F& f) {
  try {
    f();
  } catch (const std::exception&) {
    // Swallowed on purpose; handlers are expected not to throw.
  }
}

}  // namespace

Informer::Informer(std::shared_ptr<Client> client, InformerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : Clock::Real()),
      store_(WithNamespaceIndex(options_.indexers)),
      reflector_(std::move(client), ToReflectorOptions(options_), *this) {}

Informer::~Informer() { Stop(); }

Informer::HandlerId Informer::AddEventHandler(EventHandler handler) {
  std::lock_guard<std::mutex> g(dispatch_mu_);
  const HandlerId id = next_handler_id_++;
  if (handler.on_add) {
    for (const ObjectPtr& obj : store_.List()) {
      CallGuarded([&] { handler.on_add(obj, true); });
    }
  }
  handlers_.emplace_back(id, std::move(handler));
  return id;
}

void Informer::RemoveEventHandler(HandlerId id) {
  std::lock_guard<std::mutex> g(dispatch_mu_);
  std::erase_if(handlers_, [id](const auto& h) { return h.first == id; });
}

void Informer::Start() {
  std::lock_guard<std::mutex> g(threads_mu_);
  if (started_) return;
  started_ = true;
  reflector_thread_ = std::jthread([this](std::stop_token stop) { RunReflector(stop); });
  if (options_.resync_period > Clock::Duration::zero()) {
    resync_thread_ = std::jthread([this](std::stop_token stop) { RunResync(stop); });
  }
}

void Informer::Stop() {
  std::lock_guard<std::mutex> g(threads_mu_);
  if (reflector_thread_.joinable()) {
    reflector_thread_.request_stop();
    reflector_thread_.join();
  }
  if (resync_thread_.joinable()) {
    resync_thread_.request_stop();
    resync_thread_.join();
  }
}

void Informer::RunReflector(std::stop_token stop) {
  try {
    reflector_.Run(stop).IgnoreError();  // Cancelled on stop
  } catch (const std::exception&) {
    // A thread top: nothing may escape. The informer stays unsynced/stale.
  }
}

void Informer::RunResync(std::stop_token stop) {
  try {
    while (clock_.SleepFor(options_.resync_period, stop)) {
      if (HasSynced()) Resync();
    }
  } catch (const std::exception&) {
  }
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> g(sync_mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout, std::stop_token stop) {
  std::unique_lock<std::mutex> lock(sync_mu_);
  return sync_cv_.wait_for(lock, stop, timeout, [this] { return synced_; });
}

ObjectPtr Informer::Prepare(Object&& o) const {
  CompactObject(o);
  if (options_.transform) options_.transform(o);
  return std::make_shared<const Object>(std::move(o));
}

void Informer::DispatchAdd(const ObjectPtr& obj, bool initial) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_add) CallGuarded([&] { h.on_add(obj, initial); });
  }
}

void Informer::DispatchUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_update) CallGuarded([&] { h.on_update(old_obj, new_obj); });
  }
}

void Informer::DispatchDelete(const DeletedObject& d) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_delete) CallGuarded([&] { h.on_delete(d); });
  }
}

void Informer::Replace(std::vector<Object> items, const std::string& /*resource_version*/) {
  std::vector<ObjectPtr> objects;
  objects.reserve(items.size());
  for (Object& o : items) objects.push_back(Prepare(std::move(o)));
  items.clear();
  items.shrink_to_fit();

  std::lock_guard<std::mutex> g(dispatch_mu_);
  const bool initial = !HasSynced();
  std::unordered_map<std::string, ObjectPtr> previous = store_.Replace(objects);
  for (const ObjectPtr& obj : objects) {
    auto it = previous.find(KeyOf(*obj));
    if (it == previous.end()) {
      DispatchAdd(obj, initial);
      continue;
    }
    // Same resourceVersion: nothing happened to it while we were away.
    if (ResourceVersionOf(*it->second) != ResourceVersionOf(*obj)) {
      DispatchUpdate(it->second, obj);
    }
    previous.erase(it);
  }
  // Cached but no longer listed: deleted while we were not watching.
  for (auto& [key, obj] : previous) DispatchDelete({key, obj, true});
  {
    std::lock_guard<std::mutex> s(sync_mu_);
    synced_ = true;
  }
  sync_cv_.notify_all();
}

void Informer::Apply(WatchEvent event) {
  const WatchEvent::Type type = event.type;
  ObjectPtr obj = Prepare(std::move(event.object));
  std::lock_guard<std::mutex> g(dispatch_mu_);
  switch (type) {
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified: {
      ObjectPtr old = store_.Upsert(obj);
      if (old) {
        DispatchUpdate(old, obj);
      } else {
        DispatchAdd(obj, false);
      }
      break;
    }
    case WatchEvent::Type::kDeleted: {
      std::string key = KeyOf(*obj);
      store_.Delete(key);
      DispatchDelete({std::move(key), obj, false});
      break;
    }
    default:
      break;
  }
}

void Informer::Resync() {
  std::lock_guard<std::mutex> g(dispatch_mu_);
  for (const ObjectPtr& obj : store_.List()) DispatchUpdate(obj, obj);
}

}  // namespace caphv::kube
