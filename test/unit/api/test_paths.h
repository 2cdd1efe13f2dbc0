// File: test/unit/api/test_paths.h
//
// Where the source tree is, for tests that read checked-in files:
// $CAPHV_SOURCE_DIR, else derived from this file's compile-time path.

#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace caphv::testing {

inline std::filesystem::path SourceDir() {
  if (const char* env = std::getenv("CAPHV_SOURCE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  // <src>/test/unit/api/test_paths.h (normalised: includers may spell it
  // "../api/test_paths.h").
  return std::filesystem::path(__FILE__)
      .lexically_normal()
      .parent_path()
      .parent_path()
      .parent_path()
      .parent_path();
}

inline std::filesystem::path ManifestDir(const std::string& which) {
  return SourceDir() / "test" / "data" / "manifests" / which;
}

}  // namespace caphv::testing
