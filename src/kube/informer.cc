// File: kube/informer.cc
//
// Store + handlers fed by a reflector. See informer.h.

#include "kube/informer.h"

#include <charconv>
#include <exception>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "kube/msgpack.h"

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
  // A page's body is held whole while it is decoded: smaller pages for the
  // large collections a packed cache holds keep a start-up's peak low.
  r.page_size = o.packed && o.page_size > kPackedPageSize ? kPackedPageSize : o.page_size;
  r.backoff = o.backoff;
  r.clock = o.clock;
  r.list_gate = o.list_gate;
  r.keep = o.keep;
  return r;
}

// A resourceVersion as a number, when it is one (etcd revisions are).
std::optional<uint64_t> ParseResourceVersion(std::string_view rv) {
  uint64_t n = 0;
  if (rv.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), n);
  if (ec != std::errc() || end != rv.data() + rv.size()) return std::nullopt;
  return n;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// Evaluates an equality-based label selector ("a=b,c==d,e!=f,g,!h") against
// the labels of `o`. nullopt when the selector uses set-based terms (in,
// notin) or is malformed: the caller cannot decide.
std::optional<bool> MatchesLabelSelector(const Object& o, std::string_view selector) {
  const Object* labels = nullptr;
  if (auto md = o.find("metadata"); md != o.end() && md->is_object()) {
    if (auto l = md->find("labels"); l != md->end() && l->is_object()) labels = &*l;
  }
  auto value_of = [labels](std::string_view key) -> std::optional<std::string> {
    if (labels == nullptr) return std::nullopt;
    auto v = labels->find(std::string(key));
    if (v == labels->end() || !v->is_string()) return std::nullopt;
    return v->get<std::string>();
  };
  bool match = true;
  while (!selector.empty()) {
    const size_t comma = selector.find(',');
    std::string_view term = Trim(selector.substr(0, comma));
    selector = comma == std::string_view::npos ? std::string_view() : selector.substr(comma + 1);
    if (term.empty() || term.find_first_of("() ") != std::string_view::npos) return std::nullopt;
    if (size_t at = term.find("!="); at != std::string_view::npos) {
      match = match && value_of(term.substr(0, at)) != std::string(term.substr(at + 2));
    } else if (size_t eq = term.find('='); eq != std::string_view::npos) {
      std::string_view value = term.substr(eq + 1);
      if (!value.empty() && value.front() == '=') value.remove_prefix(1);
      match = match && value_of(term.substr(0, eq)) == std::string(value);
    } else if (term.front() == '!') {
      match = match && !value_of(term.substr(1)).has_value();
    } else {
      match = match && value_of(term).has_value();
    }
  }
  return match;
}

}  // namespace

Informer::Informer(std::shared_ptr<Client> client, InformerOptions options)
    : options_(std::move(options)),
      clock_(options_.clock ? *options_.clock : Clock::Real()),
      log_(log::Root()
               .WithName("informer")
               .WithValues({{"resource", options_.gvr.resource}, {"namespace", options_.ns}})),
      store_(WithNamespaceIndex(options_.indexers), options_.packed),
      reflector_(std::move(client), ToReflectorOptions(options_), *this) {}

Informer::~Informer() { Stop(); }

// Handlers run on the watch thread: an exception must not end the watch.
template <typename F>
void Informer::CallGuarded(const char* event, const Object& obj, const F& f) const {
  try {
    f();
  } catch (const std::exception& e) {
    log_.Error(e.what(), "Event handler failed", {{"event", event}, {"object", KeyOf(obj)}});
  } catch (...) {
    log_.Error("unknown exception", "Event handler failed",
               {{"event", event}, {"object", KeyOf(obj)}});
  }
}

Informer::HandlerId Informer::AddEventHandler(EventHandler handler) {
  std::lock_guard<std::mutex> g(dispatch_mu_);
  const HandlerId id = next_handler_id_++;
  if (handler.on_add) {
    for (const ObjectPtr& obj : store_.List()) {
      CallGuarded("add", *obj, [&] { handler.on_add(obj, true); });
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
  reflector_thread_ = std::jthread([this](const std::stop_token& stop) { RunReflector(stop); });
  if (options_.resync_period > Clock::Duration::zero()) {
    resync_thread_ = std::jthread([this](const std::stop_token& stop) { RunResync(stop); });
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

void Informer::RequestStop() {
  std::lock_guard<std::mutex> g(threads_mu_);
  if (reflector_thread_.joinable()) reflector_thread_.request_stop();
  if (resync_thread_.joinable()) resync_thread_.request_stop();
}

void StopInformers(const std::vector<Informer*>& informers) {
  for (Informer* i : informers) i->RequestStop();
  for (Informer* i : informers) i->Stop();
}

void Informer::RunReflector(const std::stop_token& stop) {
  // A thread top: nothing may escape. The informer stays unsynced/stale.
  try {
    reflector_.Run(stop).IgnoreError();  // Cancelled on stop
  } catch (const std::exception& e) {
    log_.Error(e.what(), "Watch stopped by an exception; the cache is no longer updated");
  } catch (...) {
    log_.Error("unknown exception",
               "Watch stopped by an exception; the cache is no longer updated");
  }
}

void Informer::RunResync(const std::stop_token& stop) {
  try {
    while (clock_.SleepFor(options_.resync_period, stop)) {
      if (HasSynced()) Resync();
    }
  } catch (const std::exception& e) {
    log_.Error(e.what(), "Resync stopped by an exception");
  } catch (...) {
    log_.Error("unknown exception", "Resync stopped by an exception");
  }
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> g(sync_mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout, std::stop_token stop) {
  std::unique_lock<std::mutex> lock(sync_mu_);
  return sync_cv_.wait_for(lock, std::move(stop), timeout, [this] { return synced_; });
}

void Informer::Compact(Object& o) const {
  // A packed store keeps the encoding; the tree lives only while handlers
  // look at it, so trimming its arrays would be work for nothing.
  if (store_.packed()) {
    DropManagedFields(o);
  } else {
    CompactObject(o);
  }
}

void Informer::PrepareListed(Object& item) {
  Compact(item);
  if (options_.transform) options_.transform(item);
  // Packed now unless its kind is still to come (a resource without a known
  // kind: the client adds it after the page, and the store packs it then).
  if (store_.packed() && item.contains("kind")) item = Object::binary(EncodeMsgpack(item));
}

ObjectPtr Informer::Prepare(Object&& o, bool written) {
  Compact(o);
  if (written && options_.keep != nullptr) options_.keep->Apply(o);
  if (options_.transform) options_.transform(o);
  return std::make_shared<const Object>(std::move(o));
}

void Informer::DispatchAdd(const ObjectPtr& obj, bool initial) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_add) CallGuarded("add", *obj, [&] { h.on_add(obj, initial); });
  }
}

void Informer::DispatchUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
  if (options_.drop_unchanged_updates && !ChangedBeyondResourceVersion(*old_obj, *new_obj)) return;
  for (const auto& [id, h] : handlers_) {
    if (h.on_update) CallGuarded("update", *new_obj, [&] { h.on_update(old_obj, new_obj); });
  }
}

void Informer::DispatchDelete(const DeletedObject& d) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_delete) CallGuarded("delete", *d.object, [&] { h.on_delete(d); });
  }
}

void Informer::Replace(std::vector<Object> items, const std::string& resource_version) {
  std::vector<ObjectPtr> objects;
  objects.reserve(items.size());
  for (Object& o : items) objects.push_back(std::make_shared<const Object>(std::move(o)));
  items.clear();
  items.shrink_to_fit();

  std::lock_guard<std::mutex> g(dispatch_mu_);
  const bool initial = !HasSynced();
  std::unordered_map<std::string, ObjectPtr> previous = store_.Replace(objects);
  // Objects cached by RecordWrite: compare with what handlers last heard of.
  for (auto& [key, announced] : unannounced_) {
    if (announced) {
      previous[key] = announced;
    } else {
      previous.erase(key);
    }
  }
  unannounced_.clear();
  applied_rv_ = resource_version;
  // A packed store's objects are decoded one at a time, for their handlers.
  for (ObjectPtr& listed : objects) {
    const ObjectPtr obj = Unpack(std::move(listed));
    auto it = previous.find(KeyOf(*obj));
    if (it == previous.end()) {
      DispatchAdd(obj, initial);
      continue;
    }
    // Same resourceVersion: nothing happened to it while we were away.
    const ObjectPtr before = Unpack(std::move(it->second));
    previous.erase(it);
    if (ResourceVersionOf(*before) != ResourceVersionOf(*obj)) DispatchUpdate(before, obj);
  }
  // Cached but no longer listed: deleted while we were not watching.
  for (auto& [key, obj] : previous) DispatchDelete({key, Unpack(std::move(obj)), true});
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
  if (type != WatchEvent::Type::kBookmark && type != WatchEvent::Type::kError) {
    applied_rv_ = ResourceVersionOf(*obj);
  }
  switch (type) {
    case WatchEvent::Type::kAdded:
    case WatchEvent::Type::kModified: {
      ObjectPtr old;
      auto pending = unannounced_.find(KeyOf(*obj));
      if (pending == unannounced_.end()) {
        old = store_.Upsert(obj);
      } else {
        // RecordWrite cached a version handlers never heard of. Keep the
        // newest in the store; tell handlers the change from what they knew.
        old = pending->second;
        ObjectPtr cached = store_.Get(pending->first);
        auto event_rv = ParseResourceVersion(ResourceVersionOf(*obj));
        auto cached_rv = cached ? ParseResourceVersion(ResourceVersionOf(*cached)) : std::nullopt;
        if (event_rv && cached_rv && *event_rv < *cached_rv) {
          pending->second = obj;  // an older event: the recorded write is still ahead
        } else {
          store_.Upsert(obj);
          unannounced_.erase(pending);
        }
      }
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
      unannounced_.erase(key);
      DispatchDelete({std::move(key), obj, false});
      break;
    }
    default:
      break;
  }
}

bool Informer::InScope(const Object& o) const {
  if (!options_.field_selector.empty()) return false;
  if (!options_.ns.empty() && NamespaceOf(o) != options_.ns) return false;
  if (NameOf(o).empty()) return false;
  if (options_.label_selector.empty()) return true;
  return MatchesLabelSelector(o, options_.label_selector).value_or(false);
}

bool Informer::RecordWrite(const Object& written) {
  if (!InScope(written)) return false;
  const auto written_rv = ParseResourceVersion(ResourceVersionOf(written));
  std::lock_guard<std::mutex> g(dispatch_mu_);
  const std::string key = KeyOf(written);
  ObjectPtr cached = store_.Get(key);
  if (cached) {
    const auto cached_rv = ParseResourceVersion(ResourceVersionOf(*cached));
    if (!written_rv || !cached_rv || *written_rv <= *cached_rv) return false;
  } else if (written_rv) {
    // Absent: the watch may have delivered this write and a deletion since.
    const auto applied = ParseResourceVersion(applied_rv_);
    if (applied && *written_rv <= *applied) return false;
  }
  ObjectPtr obj = Prepare(Object(written), /*written=*/true);
  // The first unconfirmed write of a key remembers what handlers knew.
  unannounced_.try_emplace(key, cached);
  store_.Upsert(std::move(obj));
  return true;
}

void Informer::Resync() {
  std::lock_guard<std::mutex> g(dispatch_mu_);
  // Key by key: a packed store's objects are decoded one at a time.
  for (const std::string& key : store_.ListKeys()) {
    if (ObjectPtr obj = store_.Get(key)) DispatchUpdate(obj, obj);
  }
}

}  // namespace caphv::kube
