// File: generate/templates.h
//
// The manifests of templates/ that `caphv generate` renders, compiled in
// (src/generate/embed_templates.cmake) so the binary needs no source tree and
// its objects are the ones the repository documents.
//
// Thread safety: immutable data.

#pragma once

#include <string_view>

namespace caphv::generate {

inline constexpr char kClusterClassTemplate[] = "clusterclass-harvester-rke2.yaml";
inline constexpr char kCloudProviderTemplate[] = "clusterresourceset-harvester-cloud-provider.yaml";
inline constexpr char kCsiDriverTemplate[] = "clusterresourceset-harvester-csi-driver.yaml";
inline constexpr char kHealthCheckTemplate[] = "machinehealthcheck-harvester-rke2.yaml";

// The text of templates/<name>; empty if it is not compiled in.
std::string_view EmbeddedTemplate(std::string_view name);

}  // namespace caphv::generate
