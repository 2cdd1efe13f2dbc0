// File: kube/store.cc
//
// Indexed, thread-safe object cache. See store.h.

#include "kube/store.h"

#include <algorithm>
#include <mutex>

#include "kube/msgpack.h"

namespace caphv::kube {

std::vector<std::string> IndexByNamespace(const Object& o) { return {NamespaceOf(o)}; }

std::string LabelIndexName(std::string_view label_key) { return "label:" + std::string(label_key); }

IndexFunc IndexByLabel(std::string label_key) {
  return [key = std::move(label_key)](const Object& o) -> std::vector<std::string> {
    auto md = o.find("metadata");
    if (md == o.end() || !md->is_object()) return {};
    auto labels = md->find("labels");
    if (labels == md->end() || !labels->is_object()) return {};
    auto v = labels->find(key);
    if (v == labels->end() || !v->is_string()) return {};
    return {v->get<std::string>()};
  };
}

namespace {
void ShrinkArrays(Object& o) {
  if (o.is_array()) {
    auto& arr = o.get_ref<Object::array_t&>();
    arr.shrink_to_fit();
    for (auto& e : arr) ShrinkArrays(e);
  } else if (o.is_object()) {
    for (auto& [k, v] : o.items()) ShrinkArrays(v);
  }
}
}  // namespace

void DropManagedFields(Object& o) {
  auto md = o.find("metadata");
  if (md != o.end() && md->is_object()) md->erase("managedFields");
}

void CompactObject(Object& o) {
  DropManagedFields(o);
  ShrinkArrays(o);
}

ObjectPtr Pack(const Object& o) {
  return std::make_shared<const Object>(Object::binary(EncodeMsgpack(o)));
}

ObjectPtr Unpack(ObjectPtr stored) {
  if (!stored || !stored->is_binary()) return stored;
  const auto& bytes = stored->get_binary();
  Object decoded = DecodeMsgpack(bytes);
  // Never for what Pack wrote; nlohmann's decoder then says what is wrong.
  if (decoded.is_discarded()) decoded = Object::from_msgpack(bytes.begin(), bytes.end());
  return std::make_shared<const Object>(std::move(decoded));
}

bool LabelsMatch(const Object& o, const std::map<std::string, std::string>& selector) {
  if (selector.empty()) return true;
  auto md = o.find("metadata");
  if (md == o.end() || !md->is_object()) return false;
  auto labels = md->find("labels");
  if (labels == md->end() || !labels->is_object()) return false;
  for (const auto& [k, v] : selector) {
    auto it = labels->find(k);
    if (it == labels->end() || !it->is_string() || it->get_ref<const std::string&>() != v) {
      return false;
    }
  }
  return true;
}

Store::Store() : Store(Indexers{{std::string(kNamespaceIndex), IndexByNamespace}}) {}

Store::Store(Indexers indexers, bool packed) : packed_(packed), indexers_(std::move(indexers)) {
  for (const auto& [name, fn] : indexers_) indices_[name];
}

Status Store::AddIndexers(const Indexers& indexers) {
  std::unique_lock lock(mu_);
  if (!items_.empty()) {
    return Status(StatusCode::kInvalidArgument, "cannot add indexers to a store holding objects");
  }
  for (const auto& [name, fn] : indexers) {
    if (indexers_.count(name)) {
      return Status(StatusCode::kInvalidArgument, "indexer \"" + name + "\" already exists");
    }
  }
  for (const auto& [name, fn] : indexers) {
    indexers_[name] = fn;
    indices_[name];
  }
  return Status::Ok();
}

Store::IndexValuesOf Store::ValuesOf(const Object* obj) const {
  IndexValuesOf out;
  out.reserve(indexers_.size());
  for (const auto& [name, fn] : indexers_) {
    out.push_back(obj ? fn(*obj) : std::vector<std::string>{});
  }
  return out;
}

void Store::IndexLocked(const std::string& key, const IndexValuesOf& old_values,
                        const IndexValuesOf& new_values) {
  size_t i = 0;
  for (const auto& [name, fn] : indexers_) {
    const std::vector<std::string>& before = old_values.at(i);
    const std::vector<std::string>& after = new_values.at(i);
    ++i;
    if (before == after) continue;
    Index& index = indices_.find(name)->second;
    for (const auto& v : before) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.erase(it);
    }
    for (const auto& v : after) index[v].insert(key);
  }
}

ObjectPtr Store::Stored(const ObjectPtr& obj) const {
  return packed_ && !obj->is_binary() ? Pack(*obj) : obj;
}

ObjectPtr Store::Upsert(ObjectPtr obj) {
  ObjectPtr plain = Unpack(obj);
  ObjectPtr stored = Stored(std::move(obj));
  std::string key = KeyOf(*plain);
  std::unique_lock lock(mu_);
  ObjectPtr& slot = items_[key];
  ObjectPtr old = Unpack(std::move(slot));
  IndexLocked(key, ValuesOf(old.get()), ValuesOf(plain.get()));
  slot = std::move(stored);
  return old;
}

ObjectPtr Store::Delete(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = Unpack(std::move(it->second));
  items_.erase(it);
  IndexLocked(key, ValuesOf(old.get()), ValuesOf(nullptr));
  return old;
}

std::unordered_map<std::string, ObjectPtr> Store::Replace(std::vector<ObjectPtr> objects) {
  std::unique_lock lock(mu_);
  std::unordered_map<std::string, ObjectPtr> fresh;
  fresh.reserve(objects.size());
  for (auto& [name, index] : indices_) index.clear();
  const IndexValuesOf none = ValuesOf(nullptr);
  for (auto& o : objects) {
    // A packed object is decoded for its key and index values only.
    ObjectPtr plain = Unpack(o);
    std::string key = KeyOf(*plain);
    IndexLocked(key, none, ValuesOf(plain.get()));
    plain.reset();
    fresh[std::move(key)] = Stored(std::move(o));
  }
  std::swap(items_, fresh);
  return fresh;
}

ObjectPtr Store::Get(const std::string& key) const {
  ObjectPtr stored;
  {
    std::shared_lock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return nullptr;
    stored = it->second;
  }
  return Unpack(std::move(stored));
}

namespace {
// Decodes, outside the store's lock, what a read collected under it.
std::vector<ObjectPtr> Unpacked(std::vector<ObjectPtr> stored) {
  for (auto& o : stored) o = Unpack(std::move(o));
  return stored;
}
}  // namespace

ObjectPtr Store::Get(std::string_view ns, std::string_view name) const {
  std::string key = ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
  return Get(key);
}

std::vector<ObjectPtr> Store::List() const {
  std::vector<ObjectPtr> out;
  {
    std::shared_lock lock(mu_);
    out.reserve(items_.size());
    for (const auto& [key, obj] : items_) out.push_back(obj);
  }
  return Unpacked(std::move(out));
}

std::vector<ObjectPtr> Store::List(std::string_view ns) const {
  if (ns.empty()) return List();
  std::vector<ObjectPtr> out;
  {
    std::shared_lock lock(mu_);
    auto idx = indices_.find(kNamespaceIndex);
    if (idx != indices_.end()) {
      auto keys = idx->second.find(std::string(ns));
      if (keys == idx->second.end()) return out;
      for (const auto& k : keys->second) out.push_back(items_.at(k));
    } else {
      const std::string prefix = std::string(ns) + "/";
      for (const auto& [key, obj] : items_) {
        if (key.starts_with(prefix)) out.push_back(obj);
      }
    }
  }
  return Unpacked(std::move(out));
}

Store::Candidates Store::CandidatesByLabels(
    std::string_view ns, const std::map<std::string, std::string>& selector) const {
  Candidates out;
  const std::string prefix = ns.empty() ? std::string() : std::string(ns) + "/";
  std::shared_lock lock(mu_);
  // The label indexes of the selector's keys: the smallest set of keys
  // narrows, the others are tested by membership.
  std::vector<const std::unordered_set<std::string>*> sets;
  for (const auto& [k, v] : selector) {
    auto idx = indices_.find(LabelIndexName(k));
    if (idx == indices_.end()) continue;
    auto keys = idx->second.find(v);
    if (keys == idx->second.end()) return {{}, true};  // no object has that label value
    sets.push_back(&keys->second);
  }
  out.exact = sets.size() == selector.size();
  const auto take = [&](const std::string& key, const ObjectPtr& obj) {
    if (!key.starts_with(prefix)) return;
    for (const auto* set : sets) {
      if (!set->contains(key)) return;
    }
    out.items.emplace_back(key, obj);
  };
  if (sets.empty()) {
    auto by_ns = indices_.find(kNamespaceIndex);
    if (ns.empty() || by_ns == indices_.end()) {
      for (const auto& [key, obj] : items_) take(key, obj);
    } else if (auto keys = by_ns->second.find(std::string(ns)); keys != by_ns->second.end()) {
      for (const auto& key : keys->second) take(key, items_.at(key));
    }
    return out;
  }
  const auto* smallest = *std::min_element(
      sets.begin(), sets.end(), [](const auto* a, const auto* b) { return a->size() < b->size(); });
  for (const auto& key : *smallest) take(key, items_.at(key));
  return out;
}

std::vector<ObjectPtr> Store::ListByLabels(
    std::string_view ns, const std::map<std::string, std::string>& selector) const {
  Candidates c = CandidatesByLabels(ns, selector);
  std::vector<ObjectPtr> out;
  for (auto& [key, stored] : c.items) {
    ObjectPtr o = Unpack(std::move(stored));
    if (c.exact || LabelsMatch(*o, selector)) out.push_back(std::move(o));
  }
  return out;
}

std::vector<std::string> Store::KeysByLabels(
    std::string_view ns, const std::map<std::string, std::string>& selector) const {
  Candidates c = CandidatesByLabels(ns, selector);
  std::vector<std::string> out;
  out.reserve(c.items.size());
  for (auto& [key, stored] : c.items) {
    if (c.exact || LabelsMatch(*Unpack(std::move(stored)), selector)) out.push_back(key);
  }
  return out;
}

void Store::ForEachByLabels(std::string_view ns, const std::map<std::string, std::string>& selector,
                            const std::function<bool(const Object&)>& visit) const {
  Candidates c = CandidatesByLabels(ns, selector);
  for (auto& [key, stored] : c.items) {
    const ObjectPtr o = Unpack(std::move(stored));
    if (!c.exact && !LabelsMatch(*o, selector)) continue;
    if (!visit(*o)) return;
  }
}

std::vector<std::string> Store::ListKeys() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(key);
  return out;
}

size_t Store::Size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

StatusOr<std::vector<std::string>> Store::IndexKeys(std::string_view index,
                                                    std::string_view value) const {
  std::shared_lock lock(mu_);
  auto idx = indices_.find(index);
  if (idx == indices_.end()) {
    return Status(StatusCode::kInvalidArgument, "no index \"" + std::string(index) + "\"");
  }
  std::vector<std::string> out;
  auto keys = idx->second.find(std::string(value));
  if (keys != idx->second.end()) out.assign(keys->second.begin(), keys->second.end());
  return out;
}

StatusOr<std::vector<ObjectPtr>> Store::ByIndex(std::string_view index,
                                                std::string_view value) const {
  std::shared_lock lock(mu_);
  auto idx = indices_.find(index);
  if (idx == indices_.end()) {
    return Status(StatusCode::kInvalidArgument, "no index \"" + std::string(index) + "\"");
  }
  std::vector<ObjectPtr> out;
  auto keys = idx->second.find(std::string(value));
  if (keys == idx->second.end()) return out;
  out.reserve(keys->second.size());
  for (const auto& k : keys->second) out.push_back(items_.at(k));
  lock.unlock();
  return Unpacked(std::move(out));
}

std::vector<std::string> Store::IndexValues(std::string_view index) const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  auto idx = indices_.find(index);
  if (idx == indices_.end()) return out;
  for (const auto& [value, keys] : idx->second) out.push_back(value);
  return out;
}

}  // namespace caphv::kube
