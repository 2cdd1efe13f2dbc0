// File: kube/informer.h
//
// Informer: a Reflector feeding an indexed Store and a set of event handlers
// (client-go tools/cache/shared_informer.go, without the DeltaFIFO hop: the
// watch thread updates the store, then calls the handlers).
//
//   - The store is updated before any handler hears of a change.
//   - Handlers: on_add(obj, in_initial_list), on_update(old, new),
//     on_delete(DeletedObject). A relist that no longer contains a cached
//     object reports it with final_state_unknown = true and the last cached
//     state (client-go's DeletedFinalStateUnknown). A relist that finds an
//     object at the same resourceVersion reports nothing.
//   - A handler added after objects were cached first receives on_add for
//     each of them (in_initial_list = true).
//   - Periodic resync (resync_period > 0) re-delivers every cached object as
//     on_update(obj, obj).
//   - Every cached object loses its managedFields (CompactObject, or only
//     DropManagedFields for a packed store), keeps only what the optional
//     `keep` mask keeps (built so by the parser; applied to a written object
//     given to Written), and then passes the optional `transform`.
//   - HasSynced() turns true once the first LIST reached the store and its
//     handlers.
//
// Thread model: one thread runs the reflector (list + watch stream); one more
// runs the resync timer when resync_period > 0. Handlers are called with the
// informer's dispatch lock held, one call at a time, from those threads: they
// must be quick and never block (a controller's handler only enqueues keys).
//
// Thread safety: all public methods are safe for concurrent use. Objects
// returned by the store are shared and immutable.

#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/log.h"
#include "kube/reflector.h"
#include "kube/store.h"

namespace caphv::kube {

struct DeletedObject {
  std::string key;
  ObjectPtr object;  // final state, or last cached state when unknown
  bool final_state_unknown = false;
};

struct EventHandler {
  std::function<void(const ObjectPtr& obj, bool in_initial_list)> on_add;
  std::function<void(const ObjectPtr& old_obj, const ObjectPtr& new_obj)> on_update;
  std::function<void(const DeletedObject& deleted)> on_delete;
};

// The page size of a packed informer's LIST: the client holds a page's
// whole body while it decodes it (a few MiB for 500 large objects). The
// first LIST, at resourceVersion "0", comes from the apiserver's watch cache
// in one response whatever the limit (kube-apiserver 1.33); the limit pages
// the relists.
inline constexpr int64_t kPackedPageSize = 250;

struct InformerOptions {
  GroupVersionResource gvr;
  std::string ns;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  Clock::Duration resync_period = Clock::Duration::zero();  // zero = never
  // What the cache keeps of each object (the parser builds nothing else);
  // default: everything but managedFields. Must outlive the informer.
  const FieldMask* keep = nullptr;
  // Applied to each object after CompactObject and `keep`, before it is
  // cached.
  std::function<void(Object&)> transform;
  // Cache objects packed (see Store): for large collections read a few
  // objects at a time. A packed informer lists in pages of at most
  // kPackedPageSize objects.
  bool packed = false;
  Indexers indexers;  // in addition to the namespace index
  int64_t page_size = 500;
  Backoff::Options backoff;
  Clock* clock = nullptr;  // default: Clock::Real()
  // Stores but does not announce an update that leaves the cached object
  // the same but for its resourceVersion (ChangedBeyondResourceVersion): with
  // a transform, a change to a field left out. Not for caches whose readers
  // take the resourceVersion for the content's (a Secret's keys).
  bool drop_unchanged_updates = false;
  // Whose turn it is to LIST (see ListGate); default: the process's.
  ListGate* list_gate = nullptr;
};

class Informer final : private ReflectorSink {
 public:
  using HandlerId = int64_t;

  Informer(std::shared_ptr<Client> client, InformerOptions options);
  ~Informer() override;  // stops and joins
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  const InformerOptions& options() const { return options_; }

  // Before Start() only (see Store::AddIndexers).
  Status AddIndexers(const Indexers& indexers) { return store_.AddIndexers(indexers); }

  HandlerId AddEventHandler(EventHandler handler);
  void RemoveEventHandler(HandlerId id);

  // Starts the watch thread (and the resync thread); idempotent.
  void Start();
  // Stops and joins the threads; idempotent. A LIST in flight completes first.
  void Stop();
  // Asks the threads to stop without waiting for them (Stop() joins). A watch
  // notices within about a second, so an owner of several informers asks
  // them all first (StopInformers).
  void RequestStop();

  bool HasSynced() const;
  // Waits (real time) until synced, `timeout` passes or `stop` is requested.
  bool WaitForSync(std::chrono::milliseconds timeout, std::stop_token stop = {});

  const Store& store() const { return store_; }
  std::string LastResourceVersion() const { return reflector_.LastResourceVersion(); }

  // Read-your-writes: caches `written`, the object an apply, patch, create or
  // update of this collection just returned, so that a reconcile reading the
  // cache right after sees its own write before the watch event arrives.
  //   - When the written and the cached resourceVersions both parse as
  //     unsigned integers, the written object replaces the cached one only if
  //     it is newer, and is added (no cached copy) only if the watch has not
  //     already gone past it (a later deletion must not be undone).
  //   - Otherwise it is cached only when no copy is cached.
  //   - Ignored when it lies outside the informer's namespace or label
  //     selector, and always when the informer has a field selector or a
  //     label selector other than equality/existence terms.
  // Handlers are not called (see above). Returns true when cached.
  bool RecordWrite(const Object& written);
  Reflector::Counters counters() const { return reflector_.counters(); }

  // The reflector's entry points, public so that unit tests can drive the
  // cache and handler semantics without an apiserver. Not for other callers.
  // PrepareListed compacts and transforms one listed item (and packs it for
  // a packed store); Replace takes the items as PrepareListed left them.
  void PrepareListed(Object& item) override;
  void Replace(std::vector<Object> items, const std::string& resource_version) override;
  void Apply(WatchEvent event) override;
  // Re-delivers the cache to the handlers as updates.
  void Resync();

 private:
  // `written`: an object the parser did not build (Written's), which the
  // `keep` mask is applied to.
  ObjectPtr Prepare(Object&& o, bool written = false);
  void Compact(Object& o) const;
  void DispatchAdd(const ObjectPtr& obj, bool initial);
  void DispatchUpdate(const ObjectPtr& old_obj, const ObjectPtr& new_obj);
  void DispatchDelete(const DeletedObject& d);
  void RunReflector(const std::stop_token& stop);
  void RunResync(const std::stop_token& stop);
  // Calls one handler; an exception is logged, never propagated.
  template <typename F>
  void CallGuarded(const char* event, const Object& obj, const F& f) const;
  // Whether `o` belongs to this informer's collection (namespace, label
  // selector); false when that cannot be decided here.
  bool InScope(const Object& o) const;

  const InformerOptions options_;
  Clock& clock_;
  const log::Logger log_;
  Store store_;
  Reflector reflector_;

  // Serialises store updates with handler calls and handler registration
  // (so handlers must not add or remove handlers).
  std::mutex dispatch_mu_;
  std::vector<std::pair<HandlerId, EventHandler>> handlers_;
  HandlerId next_handler_id_ = 1;
  // Guarded by dispatch_mu_: the resourceVersion of the last list or event
  // the reflector delivered, and, per key cached by RecordWrite and not yet
  // confirmed by its watch event, the object handlers last heard of
  // (nullptr: none).
  std::string applied_rv_;
  std::unordered_map<std::string, ObjectPtr> unannounced_;

  mutable std::mutex sync_mu_;
  std::condition_variable_any sync_cv_;
  bool synced_ = false;

  std::mutex threads_mu_;
  bool started_ = false;
  std::jthread reflector_thread_;
  std::jthread resync_thread_;
};

// Stops several informers at once: asks each to stop, then joins each, so
// the wait is that of the slowest rather than the sum.
void StopInformers(const std::vector<Informer*>& informers);

}  // namespace caphv::kube
