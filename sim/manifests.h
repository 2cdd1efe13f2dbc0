// File: sim/manifests.h
//
// The simulator's manifests (config/harvester-sim/**.yaml), compiled into the
// binary. YAML is read with api/yaml.h, the project's one YAML reader.
//
// Thread safety: all functions are pure or read immutable data.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/status.h"

namespace caphv::sim {

struct EmbeddedFile {
  std::string_view path;     // relative to config/harvester-sim, e.g. "crds/x.yaml"
  std::string_view content;  // the file's bytes
};

// Every embedded manifest, sorted by path.
const std::vector<EmbeddedFile>& EmbeddedFiles();

// The content of one embedded file; NotFound when absent.
kube::StatusOr<std::string_view> FindManifest(std::string_view path);

// The CRDs, in install order (from crds/*.yaml).
kube::StatusOr<std::vector<kube::Object>> CrdManifests();

}  // namespace caphv::sim
