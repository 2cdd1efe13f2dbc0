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

}  // namespace caphv::kube
