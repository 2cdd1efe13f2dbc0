// File: test/unit/harvester/golden.h
//
// Golden-file comparison for builder outputs. Files live in
// test/data/golden/harvester/. With CAPHV_UPDATE_GOLDEN=1 in the
// environment the expected file is (re)written from the actual output and
// the check passes; review the diff before committing.

#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace caphv::testing {

inline std::filesystem::path GoldenDir() {
  std::filesystem::path root;
  if (const char* env = std::getenv("CAPHV_SOURCE_DIR"); env != nullptr && *env != '\0') {
    root = env;
  } else {
    // <src>/test/unit/harvester/golden.h
    root = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path().parent_path();
  }
  return root / "test" / "data" / "golden" / "harvester";
}

inline ::testing::AssertionResult MatchesGolden(const std::string& file,
                                                const std::string& actual) {
  const auto path = GoldenDir() / file;
  if (const char* update = std::getenv("CAPHV_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    std::ofstream(path, std::ios::binary) << actual;
    return ::testing::AssertionSuccess();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return ::testing::AssertionFailure()
           << "golden file " << path << " is missing (run with CAPHV_UPDATE_GOLDEN=1)";
  }
  std::stringstream expected;
  expected << in.rdbuf();
  if (expected.str() == actual) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "output differs from " << path << "\n--- expected\n"
                                       << expected.str() << "\n--- actual\n"
                                       << actual;
}

}  // namespace caphv::testing
