// File: cmd/caphv/discovery.cc

#include "discovery.h"

#include <vector>

namespace caphv::cli {

kube::StatusOr<kube::Object> Discovery::Resources(const std::string& group_version) {
  if (auto it = resources_.find(group_version); it != resources_.end()) return it->second;
  const std::string path = group_version.find('/') == std::string::npos ? "/api/" + group_version
                                                                        : "/apis/" + group_version;
  auto got = client_.GetPath(path);
  kube::Object list = nullptr;
  if (got.ok()) {
    list = *got;
  } else if (!got.status().IsNotFound()) {
    return got.status();
  }
  resources_[group_version] = list;
  return list;
}

kube::StatusOr<std::optional<kube::GroupVersionResource>> Discovery::Find(
    std::string_view group, std::string_view resource) {
  std::vector<std::string> versions;
  if (group.empty()) {
    versions = {"v1"};
  } else {
    auto it = groups_.find(std::string(group));
    if (it == groups_.end()) {
      auto got = client_.GetPath("/apis/" + std::string(group));
      kube::Object g = nullptr;
      if (got.ok()) {
        g = *got;
      } else if (!got.status().IsNotFound()) {
        return got.status();
      }
      it = groups_.emplace(std::string(group), g).first;
    }
    const kube::Object& g = it->second;
    if (g.is_object()) {
      const std::string preferred =
          g.value("preferredVersion", kube::Object::object()).value("version", std::string());
      if (!preferred.empty()) versions.push_back(preferred);
      for (const auto& v : g.value("versions", kube::Object::array())) {
        const std::string version = v.value("version", std::string());
        if (!version.empty() && version != preferred) versions.push_back(version);
      }
    }
  }
  for (const auto& version : versions) {
    const std::string gv = group.empty() ? version : std::string(group) + "/" + version;
    auto list = Resources(gv);
    if (!list.ok()) return list.status();
    if (!list->is_object()) continue;
    for (const auto& r : list->value("resources", kube::Object::array())) {
      if (r.value("name", std::string()) == resource) {
        return std::optional<kube::GroupVersionResource>(kube::GroupVersionResource{
            std::string(group), version, std::string(resource), r.value("namespaced", true)});
      }
    }
  }
  return std::optional<kube::GroupVersionResource>();
}

kube::StatusOr<std::optional<kube::GroupVersionResource>> Discovery::ForKind(
    const std::string& api_version, const std::string& kind) {
  auto list = Resources(api_version);
  if (!list.ok()) return list.status();
  if (list->is_object()) {
    const auto slash = api_version.find('/');
    const std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
    const std::string version =
        slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    for (const auto& r : list->value("resources", kube::Object::array())) {
      const std::string name = r.value("name", std::string());
      if (r.value("kind", std::string()) == kind && name.find('/') == std::string::npos) {
        return std::optional<kube::GroupVersionResource>(
            kube::GroupVersionResource{group, version, name, r.value("namespaced", true)});
      }
    }
  }
  return std::optional<kube::GroupVersionResource>();
}

}  // namespace caphv::cli
