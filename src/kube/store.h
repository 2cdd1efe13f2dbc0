// File: kube/store.h
//
// Store: the thread-safe, indexed object cache behind an informer (client-go
// tools/cache/{thread_safe_store,index}.go). Objects are keyed
// "namespace/name" (or "name" when cluster-scoped) and held as
// std::shared_ptr<const Object>: readers share them without copying and must
// never modify them.
//
// Indexes: a named IndexFunc maps an object to zero or more index values;
// ByIndex(name, value) returns the objects with that value. Built in:
//   kNamespaceIndex                 metadata.namespace
//   LabelIndexName(k) / IndexByLabel(k)   the value of label k
// Indexers must be added before the first object (AddIndexers fails after).
//
// Memory: CompactObject() drops metadata.managedFields and trims spare
// capacity of arrays; an informer applies it to every object it caches.
// A packed store (Store(indexers, true)) keeps each object as its
// MessagePack encoding (a JSON binary value, Pack()) instead of nlohmann's
// tree of maps and strings, about a fifth of the heap, and decodes it on
// every read (microseconds for a cached object): each read then returns its
// own copy. Replace also takes objects packed already (an informer packs
// each listed item as its page is decoded).
//
// Thread safety: all methods are safe for concurrent use (readers share a
// lock; writers are exclusive).

#pragma once

#include <functional>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kube/object.h"
#include "kube/status.h"

namespace caphv::kube {

// Index values of an object for one index.
using IndexFunc = std::function<std::vector<std::string>(const Object&)>;
using Indexers = std::map<std::string, IndexFunc>;

inline constexpr std::string_view kNamespaceIndex = "namespace";

std::vector<std::string> IndexByNamespace(const Object& o);
std::string LabelIndexName(std::string_view label_key);
IndexFunc IndexByLabel(std::string label_key);

// Drops metadata.managedFields, in place.
void DropManagedFields(Object& o);
// DropManagedFields, and releases spare array capacity: for an object kept
// as it is (a packed store's encoding has no spare capacity to release).
void CompactObject(Object& o);

// The packed form of `o` (a binary value holding its MessagePack encoding).
ObjectPtr Pack(const Object& o);
// `stored` decoded when it is packed; otherwise `stored` itself.
ObjectPtr Unpack(ObjectPtr stored);

// True when every key/value of `selector` is among the object's labels.
bool LabelsMatch(const Object& o, const std::map<std::string, std::string>& selector);

class Store {
 public:
  Store();  // with the namespace index
  explicit Store(Indexers indexers, bool packed = false);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Adds indexes; InvalidArgument once the store holds objects or when a
  // name is taken.
  Status AddIndexers(const Indexers& indexers);

  bool packed() const { return packed_; }

  // Inserts or replaces the object (plain or packed) under its key; returns
  // the previous object (nullptr if none).
  ObjectPtr Upsert(ObjectPtr obj);
  // Removes `key`; returns the removed object (nullptr if none).
  ObjectPtr Delete(const std::string& key);
  // Replaces the whole content with `objects` (plain or packed); returns the
  // previous content by key as stored: packed in a packed store (Unpack
  // decodes one), so a relist never holds the whole collection decoded.
  std::unordered_map<std::string, ObjectPtr> Replace(std::vector<ObjectPtr> objects);

  ObjectPtr Get(const std::string& key) const;
  ObjectPtr Get(std::string_view ns, std::string_view name) const;
  std::vector<ObjectPtr> List() const;
  // Objects of one namespace (uses the namespace index when present).
  std::vector<ObjectPtr> List(std::string_view ns) const;
  // Objects of `ns` ("" = all) whose labels include `selector`. A packed
  // store decodes the candidates one at a time and keeps only the matches.
  std::vector<ObjectPtr> ListByLabels(std::string_view ns,
                                      const std::map<std::string, std::string>& selector) const;
  // The keys of those objects. Decodes nothing when every key of the
  // selector has a label index (an event mapped to the machines of its
  // cluster, a count); otherwise one candidate at a time.
  std::vector<std::string> KeysByLabels(std::string_view ns,
                                        const std::map<std::string, std::string>& selector) const;
  // Calls `visit` with each of those objects, decoded one at a time (a
  // packed collection is never held decoded whole), until it returns false.
  void ForEachByLabels(std::string_view ns, const std::map<std::string, std::string>& selector,
                       const std::function<bool(const Object&)>& visit) const;
  // ForEachByLabels without a selector: every object of `ns` ("" = all).
  void ForEach(std::string_view ns, const std::function<bool(const Object&)>& visit) const {
    ForEachByLabels(ns, {}, visit);
  }
  std::vector<std::string> ListKeys() const;
  size_t Size() const;

  // InvalidArgument for an unknown index.
  StatusOr<std::vector<ObjectPtr>> ByIndex(std::string_view index, std::string_view value) const;
  StatusOr<std::vector<std::string>> IndexKeys(std::string_view index,
                                               std::string_view value) const;
  // The values that currently have at least one object in `index`.
  std::vector<std::string> IndexValues(std::string_view index) const;

 private:
  using Index = std::unordered_map<std::string, std::unordered_set<std::string>>;
  // An object's values for each indexer, in the order of indexers_.
  using IndexValuesOf = std::vector<std::vector<std::string>>;

  // What a selector read looks at: the stored objects that may match, and
  // whether they all do (every key of the selector indexed).
  struct Candidates {
    std::vector<std::pair<std::string, ObjectPtr>> items;  // key, as stored
    bool exact = false;
  };
  Candidates CandidatesByLabels(std::string_view ns,
                                const std::map<std::string, std::string>& selector) const;

  IndexValuesOf ValuesOf(const Object* obj) const;
  void IndexLocked(const std::string& key, const IndexValuesOf& old_values,
                   const IndexValuesOf& new_values);
  // The object as this store keeps it.
  ObjectPtr Stored(const ObjectPtr& obj) const;

  const bool packed_ = false;
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, ObjectPtr> items_;
  Indexers indexers_;
  std::map<std::string, Index, std::less<>> indices_;
};

}  // namespace caphv::kube
