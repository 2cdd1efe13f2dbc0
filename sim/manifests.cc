// File: sim/manifests.cc

#include "sim/manifests.h"

#include "api/yaml.h"

namespace caphv::sim {

kube::StatusOr<std::string_view> FindManifest(std::string_view path) {
  for (const auto& f : EmbeddedFiles()) {
    if (f.path == path) return f.content;
  }
  return kube::Status(kube::StatusCode::kNotFound, "no embedded manifest " + std::string(path));
}

kube::StatusOr<std::vector<kube::Object>> CrdManifests() {
  std::vector<kube::Object> out;
  for (const auto& f : EmbeddedFiles()) {
    if (!f.path.starts_with("crds/")) continue;
    CAPHV_ASSIGN_OR_RETURN(auto docs, api::ParseYaml(f.content));
    for (auto& d : docs) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace caphv::sim
