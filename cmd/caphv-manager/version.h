// File: cmd/caphv-manager/version.h
//
// What this caphv-manager binary is: its version, the git commit it was
// built from and the build date, fixed when CMake configured the build
// (cmd/caphv-manager/CMakeLists.txt: the cache variable CAPHV_VERSION,
// default "v" + the project version; `git rev-parse --short HEAD`, or
// "unknown"; $SOURCE_DATE_EPOCH, else the commit's date, as UTC RFC 3339,
// or "unknown"). Never the time of the build, so rebuilding the same commit
// gives the same binary. Defined in the generated version.cc, which only the
// executable compiles.
//
// Thread safety: constants.

#pragma once

#include <string>
#include <string_view>

namespace caphv::manager {

struct BuildInfo {
  std::string_view version;  // "v0.11.0"
  std::string_view commit;   // "1a2b3c4" or "unknown"
  std::string_view date;     // "2026-11-24T10:00:00Z" or "unknown"
};

const BuildInfo& Build();

// "caphv-manager v0.11.0 (commit 1a2b3c4, built 2026-11-24T10:00:00Z)": what
// --version prints.
std::string VersionLine();

}  // namespace caphv::manager
