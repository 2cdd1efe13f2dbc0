// File: kube/secret_pool.h
//
// SecretPool<T>: a ConnectionPool<T> whose entries are each built from one
// Secret of the management cluster: an entry's version is that Secret's
// resourceVersion in a metadata-only Secret informer ("" when the informer
// does not hold it), and a change or deletion of the Secret of an entry in
// the pool starts its new build at once, without waiting for a caller. The
// remote connections are its two users, side by side: the Harvester
// connections (controllers/harvester_connections.h: one per identity
// Secret) and the workload clusters (workload/workload_cluster.h: one per
// Cluster, from `<cluster>-kubeconfig`).
//
// The user gives:
//   key_of(secret)   the pool key a Secret builds ("" for a Secret that
//                    builds nothing), so that its events reach that entry;
//   on_secret(key, deleted)  optional, called for every Secret with a key
//                    before the entry is refreshed (e.g. to wake callers that
//                    wait for the Secret to appear).
// Get(key, secret_ns, secret_name, waiter) answers at once with a
// PoolAnswer: the value when ready, else the reason, the message and how
// long until the next attempt (0 while one runs: the waiter is woken when
// it ends).
//
// Thread safety: as ConnectionPool; on_secret runs on the informer's thread.

#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "kube/connection_pool.h"
#include "kube/field_mask.h"
#include "kube/informer.h"
#include "kube/object.h"

namespace caphv::kube {

// What a pool lookup answers a caller.
template <typename T>
struct PoolAnswer {
  std::shared_ptr<T> value;  // non-null iff ready
  std::string reason;        // when null: why (PascalCase)
  std::string message;
  std::chrono::milliseconds retry_after{0};  // failed: until the next attempt; 0 while building
};

// The mask of the Secret informer a SecretPool reads: a Secret's key and
// resourceVersion are all the pool and its users read of it. Its data,
// labels, annotations and owner references are never built in memory.
inline const FieldMask& PoolSecretFields() {
  static const FieldMask mask({{"metadata", "name"},
                               {"metadata", "namespace"},
                               {"metadata", "uid"},
                               {"metadata", "resourceVersion"}});
  return mask;
}

template <typename T>
class SecretPool {
 public:
  using Builder = typename ConnectionPool<T>::Builder;
  using KeyOf = std::function<std::string(const Object& secret)>;
  using OnSecret = std::function<void(const std::string& key, bool deleted)>;

  SecretPool(std::shared_ptr<Informer> secrets, KeyOf key_of, Builder builder, PoolOptions options,
             OnSecret on_secret = {})
      : secrets_(std::move(secrets)), pool_(std::move(builder), std::move(options)) {
    auto changed = [this, key_of = std::move(key_of), on_secret = std::move(on_secret)](
                       const Object& secret, bool deleted) {
      const std::string key = key_of(secret);
      if (key.empty()) return;
      if (on_secret) on_secret(key, deleted);
      if (pool_.Contains(key)) pool_.Get(key, deleted ? std::string() : ResourceVersionOf(secret));
    };
    EventHandler h;
    h.on_add = [changed](const ObjectPtr& o, bool) { changed(*o, false); };
    h.on_update = [changed](const ObjectPtr&, const ObjectPtr& o) { changed(*o, false); };
    h.on_delete = [changed](const DeletedObject& d) {
      if (d.object) changed(*d.object, true);
    };
    handler_ = secrets_->AddEventHandler(std::move(h));
  }
  ~SecretPool() { Stop(); }
  SecretPool(const SecretPool&) = delete;
  SecretPool& operator=(const SecretPool&) = delete;

  PoolAnswer<T> Get(const std::string& key, const std::string& secret_ns,
                    const std::string& secret_name, const PoolWaiter& waiter) {
    auto meta = secrets_->store().Get(secret_ns, secret_name);
    PoolLookup<T> l = pool_.Get(key, meta ? ResourceVersionOf(*meta) : std::string(), waiter);
    PoolAnswer<T> out;
    out.value = std::move(l.value);
    if (out.value) return out;
    out.reason = std::move(l.reason);
    out.message = std::move(l.message);
    out.retry_after = std::chrono::ceil<std::chrono::milliseconds>(l.retry_after);
    return out;
  }
  // Whether the Secret is in the informer's cache.
  bool SecretKnown(const std::string& ns, const std::string& name) const {
    return secrets_->store().Get(ns, name) != nullptr;
  }
  bool Contains(const std::string& key) const { return pool_.Contains(key); }
  void Sweep(const std::function<bool(const std::string& key)>& in_use) { pool_.Sweep(in_use); }
  // Stops reacting to Secrets and closes every entry. Idempotent.
  void Stop() {
    if (const auto id = handler_.exchange(0); id != 0) secrets_->RemoveEventHandler(id);
    pool_.Stop();
  }

 private:
  std::shared_ptr<Informer> secrets_;
  ConnectionPool<T> pool_;
  std::atomic<Informer::HandlerId> handler_{0};
};

}  // namespace caphv::kube
