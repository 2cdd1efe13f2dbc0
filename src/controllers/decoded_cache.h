// File: controllers/decoded_cache.h
//
// DecodedCache<T>: the typed form of objects read from an informer that
// keeps them whole (not packed), decoded once per version of the object.
//
// An unpacked store hands out the same ObjectPtr until the object changes,
// so the pointer names the version: a read of the same pointer returns the
// value decoded before, a new pointer is decoded again. Each entry holds
// the object weakly, so a stale entry can never match a new object that
// happens to be allocated at the address of a freed one. Every machine of a
// cluster reads its HarvesterCluster at every reconcile: at 200 machines
// its decode was 3.5 % of the manager's CPU (bench/README.md).
//
// At most `capacity` entries, the oldest replaced first: a cluster that is
// gone costs one entry until it is replaced, and more clusters than entries
// only decode more often.
//
// Thread safety: Get may be called from any thread; decoding happens outside
// the lock, and two readers that miss on the same version at once keep the
// first one's entry.

#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "api/codec.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::controllers {

template <typename T>
class DecodedCache {
 public:
  explicit DecodedCache(size_t capacity = 16) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The decoded `object` (api::Decode<T>), shared with earlier reads of the
  // same pointer; the decode error otherwise (not remembered).
  kube::StatusOr<std::shared_ptr<const T>> Get(const kube::ObjectPtr& object) {
    {
      std::lock_guard lock(mu_);
      if (auto found = FindLocked(object)) return found;
    }
    auto decoded = api::Decode<T>(*object);
    if (!decoded.ok()) return decoded.status();
    auto value = std::make_shared<const T>(std::move(decoded).value());
    std::lock_guard lock(mu_);
    // Another reader may have decoded the same version meanwhile: keep its
    // entry, so the version takes one slot.
    if (auto found = FindLocked(object)) return found;
    if (entries_.size() < capacity_) {
      entries_.push_back({object, value});
    } else {
      entries_[next_] = {object, value};
      next_ = (next_ + 1) % capacity_;
    }
    return value;
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::weak_ptr<const kube::Object> source;
    std::shared_ptr<const T> value;
  };

  std::shared_ptr<const T> FindLocked(const kube::ObjectPtr& object) const {
    for (const Entry& e : entries_) {
      if (!e.source.owner_before(object) && !object.owner_before(e.source) && !e.source.expired()) {
        return e.value;
      }
    }
    return nullptr;
  }
  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;
  size_t next_ = 0;  // the entry replaced next once full
};

}  // namespace caphv::controllers
