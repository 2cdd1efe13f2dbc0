// File: kube/store.cc
//
// Indexed, thread-safe object cache. See store.h.

#include "kube/store.h"

#include <mutex>

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

void CompactObject(Object& o) {
  auto md = o.find("metadata");
  if (md != o.end() && md->is_object()) md->erase("managedFields");
  ShrinkArrays(o);
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

Store::Store(Indexers indexers) : indexers_(std::move(indexers)) {
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

void Store::IndexLocked(const std::string& key, const Object* old_obj, const Object* new_obj) {
  for (const auto& [name, fn] : indexers_) {
    Index& index = indices_.find(name)->second;
    std::vector<std::string> old_values = old_obj ? fn(*old_obj) : std::vector<std::string>{};
    std::vector<std::string> new_values = new_obj ? fn(*new_obj) : std::vector<std::string>{};
    if (old_values == new_values) continue;
    for (const auto& v : old_values) {
      auto it = index.find(v);
      if (it == index.end()) continue;
      it->second.erase(key);
      if (it->second.empty()) index.erase(it);
    }
    for (const auto& v : new_values) index[v].insert(key);
  }
}

ObjectPtr Store::Upsert(ObjectPtr obj) {
  std::string key = KeyOf(*obj);
  std::unique_lock lock(mu_);
  ObjectPtr& slot = items_[key];
  ObjectPtr old = std::move(slot);
  IndexLocked(key, old.get(), obj.get());
  slot = std::move(obj);
  return old;
}

ObjectPtr Store::Delete(const std::string& key) {
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it == items_.end()) return nullptr;
  ObjectPtr old = std::move(it->second);
  items_.erase(it);
  IndexLocked(key, old.get(), nullptr);
  return old;
}

std::unordered_map<std::string, ObjectPtr> Store::Replace(std::vector<ObjectPtr> objects) {
  std::unordered_map<std::string, ObjectPtr> fresh;
  fresh.reserve(objects.size());
  for (auto& o : objects) {
    std::string key = KeyOf(*o);
    fresh[std::move(key)] = std::move(o);
  }
  std::unique_lock lock(mu_);
  for (auto& [name, index] : indices_) index.clear();
  for (const auto& [key, obj] : fresh) IndexLocked(key, nullptr, obj.get());
  std::swap(items_, fresh);
  return fresh;
}

ObjectPtr Store::Get(const std::string& key) const {
  std::shared_lock lock(mu_);
  auto it = items_.find(key);
  return it == items_.end() ? nullptr : it->second;
}

ObjectPtr Store::Get(std::string_view ns, std::string_view name) const {
  std::string key = ns.empty() ? std::string(name) : std::string(ns) + "/" + std::string(name);
  return Get(key);
}

std::vector<ObjectPtr> Store::List() const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  out.reserve(items_.size());
  for (const auto& [key, obj] : items_) out.push_back(obj);
  return out;
}

std::vector<ObjectPtr> Store::List(std::string_view ns) const {
  if (ns.empty()) return List();
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto idx = indices_.find(kNamespaceIndex);
  if (idx != indices_.end()) {
    auto keys = idx->second.find(std::string(ns));
    if (keys == idx->second.end()) return out;
    for (const auto& k : keys->second) out.push_back(items_.at(k));
    return out;
  }
  for (const auto& [key, obj] : items_) {
    if (NamespaceOf(*obj) == ns) out.push_back(obj);
  }
  return out;
}

std::vector<ObjectPtr> Store::ListByLabels(
    std::string_view ns, const std::map<std::string, std::string>& selector) const {
  std::vector<ObjectPtr> out;
  for (auto& o : List(ns)) {
    if (LabelsMatch(*o, selector)) out.push_back(std::move(o));
  }
  return out;
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
  return out;
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
