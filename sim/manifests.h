// File: sim/manifests.h
//
// The simulator's manifests (config/harvester-sim/**.yaml), compiled into the
// binary, and a YAML-to-JSON reader for them and for environment files.
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

// All non-empty documents of a multi-document YAML stream, as JSON. Plain
// scalars are typed the way Kubernetes' YAML decoder types them (null, bool,
// integer, float, string); quoted scalars stay strings.
kube::StatusOr<std::vector<kube::Object>> ParseYamlDocuments(const std::string& text);

// The CRDs, in install order (from crds/*.yaml).
kube::StatusOr<std::vector<kube::Object>> CrdManifests();

}  // namespace caphv::sim
