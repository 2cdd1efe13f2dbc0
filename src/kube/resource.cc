#include "kube/resource.h"

namespace caphv::kube {

std::string GroupVersionResource::CollectionPath(std::string_view ns) const {
  std::string p = ApiPrefix();
  if (namespaced && !ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += "/";
  p += resource;
  return p;
}

std::string GroupVersionResource::ObjectPath(std::string_view ns, std::string_view name,
                                             std::string_view subresource) const {
  std::string p = CollectionPath(namespaced ? ns : std::string_view{});
  p += "/";
  p += name;
  if (!subresource.empty()) {
    p += "/";
    p += subresource;
  }
  return p;
}

}  // namespace caphv::kube
