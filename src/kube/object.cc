// File: kube/object.cc
//
// Metadata accessors of kube/object.h, and the path readers of
// kube/json_path.h.

#include "kube/object.h"

#include "kube/json_path.h"

namespace caphv::kube {

const Object* Find(const Object& o, FieldPath path) {
  const Object* cur = &o;
  for (std::string_view key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string_view StringAt(const Object& o, FieldPath path) {
  const Object* v = Find(o, path);
  if (v == nullptr || !v->is_string()) return {};
  return v->get_ref<const std::string&>();
}

bool TrueAt(const Object& o, FieldPath path) {
  const Object* v = Find(o, path);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

std::map<std::string, std::string> LabelsOf(const Object& o) {
  std::map<std::string, std::string> out;
  const Object* labels = Find(o, {"metadata", "labels"});
  if (labels == nullptr || !labels->is_object()) return out;
  for (const auto& [k, v] : labels->items()) {
    if (v.is_string()) out.emplace(k, v.get<std::string>());
  }
  return out;
}

std::string NamespaceOf(const Object& o) {
  return std::string(StringAt(o, {"metadata", "namespace"}));
}
std::string NameOf(const Object& o) { return std::string(StringAt(o, {"metadata", "name"})); }
std::string ResourceVersionOf(const Object& o) {
  return std::string(StringAt(o, {"metadata", "resourceVersion"}));
}
std::string UidOf(const Object& o) { return std::string(StringAt(o, {"metadata", "uid"})); }
std::string KeyOf(const Object& o) {
  std::string ns = NamespaceOf(o);
  return ns.empty() ? NameOf(o) : ns + "/" + NameOf(o);
}

bool ServesVersion(const Object& api_group, std::string_view version) {
  auto versions = api_group.find("versions");  // end() unless an object
  if (versions == api_group.end() || !versions->is_array()) return false;
  for (const auto& v : *versions) {
    if (v.is_object() && v.value("version", "") == version) return true;
  }
  return false;
}

const std::initializer_list<FieldPath> kCachedMetadata = {
    {"metadata", "name"},
    {"metadata", "namespace"},
    {"metadata", "uid"},
    {"metadata", "resourceVersion"},
    {"metadata", "generation"},
    {"metadata", "creationTimestamp"},
    {"metadata", "deletionTimestamp"},
    {"metadata", "labels"},
    {"metadata", "annotations"},
    {"metadata", "finalizers"},
    {"metadata", "ownerReferences"},
};

namespace {
// Whether `x` and `y` hold the same keys with the same values, but for the
// keys of `skip`.
bool SameOutside(const Object& x, const Object& y, std::initializer_list<std::string_view> skip) {
  auto skipped = [&](const std::string& k) {
    for (std::string_view s : skip) {
      if (k == s) return true;
    }
    return false;
  };
  size_t compared = 0;
  for (const auto& [k, v] : x.items()) {
    if (skipped(k)) continue;
    auto it = y.find(k);
    if (it == y.end() || *it != v) return false;
    ++compared;
  }
  size_t others = 0;
  for (const auto& [k, v] : y.items()) others += skipped(k) ? 0 : 1;
  return compared == others;
}
}  // namespace

bool SameBut(const Object& a, const Object& b, std::initializer_list<std::string_view> skip) {
  if (!a.is_object() || !b.is_object()) return false;
  if (!SameOutside(a, b, skip)) return false;
  const auto ma = a.find("metadata");
  const auto mb = b.find("metadata");
  if ((ma == a.end()) != (mb == b.end())) return false;
  if (ma == a.end()) return true;
  if (!ma->is_object() || !mb->is_object()) return *ma == *mb;
  return SameOutside(*ma, *mb, {"resourceVersion", "managedFields"});
}

bool ChangedBeyondResourceVersion(const Object& old_obj, const Object& new_obj) {
  if (ResourceVersionOf(old_obj) == ResourceVersionOf(new_obj)) return true;
  return !SameBut(old_obj, new_obj, {"metadata"});
}

}  // namespace caphv::kube
