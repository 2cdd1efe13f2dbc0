// File: api/yaml.h
//
// YAML <-> JSON for manifests (CRDs, test data, CLI output), with the scalar
// resolution Kubernetes users expect from sigs.k8s.io/yaml: a quoted scalar is
// a string; a plain scalar is null (~, null, empty), a boolean (true/false,
// yes/no, on/off in any of the usual cases), an integer, a float, or else a
// string. ToYaml quotes every string that would otherwise read back as
// another type, so ParseYaml(ToYaml(j)) == j.
//
// Thread safety: stateless; safe to call concurrently.

#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/fields.h"
#include "kube/status.h"

namespace caphv::api {

// Every non-empty document of a (multi-document) YAML stream.
kube::StatusOr<std::vector<Json>> ParseYaml(std::string_view text);

// Block-style YAML of `value`, ending with a newline.
std::string ToYaml(const Json& value);

// Reads a whole file; kNotFound/kInternal on failure.
kube::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace caphv::api
