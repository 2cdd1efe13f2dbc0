// File: kube/object.cc
//
// Metadata accessors of kube/object.h.

#include "kube/object.h"

namespace caphv::kube {
namespace {

std::string MetaString(const Object& o, const char* key) {
  auto m = o.find("metadata");
  if (m == o.end() || !m->is_object()) return {};
  auto v = m->find(key);
  if (v == m->end() || !v->is_string()) return {};
  return v->get<std::string>();
}

}  // namespace

std::string NamespaceOf(const Object& o) { return MetaString(o, "namespace"); }
std::string NameOf(const Object& o) { return MetaString(o, "name"); }
std::string ResourceVersionOf(const Object& o) { return MetaString(o, "resourceVersion"); }
std::string UidOf(const Object& o) { return MetaString(o, "uid"); }
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

// Moves the value at `path` of `from` into the same place of `to`.
void MovePath(Object& from, Object& to, FieldPath path) {
  Object* src = &from;
  for (std::string_view key : path) {
    if (!src->is_object()) return;
    auto it = src->find(key);
    if (it == src->end()) return;
    src = &*it;
  }
  Object* dst = &to;
  for (std::string_view key : path) {
    if (dst->is_null()) *dst = Object::object();
    dst = &(*dst)[std::string(key)];
  }
  *dst = std::move(*src);
}

}  // namespace

void KeepOnly(Object& o, std::initializer_list<FieldPath> first,
              std::initializer_list<FieldPath> more) {
  if (!o.is_object()) return;
  Object out = Object::object();
  MovePath(o, out, {"apiVersion"});
  MovePath(o, out, {"kind"});
  for (const auto& group : {first, more}) {
    for (FieldPath path : group) MovePath(o, out, path);
  }
  o = std::move(out);
}

void KeepOnly(Object& o, std::initializer_list<FieldPath> paths) { KeepOnly(o, paths, {}); }

}  // namespace caphv::kube
