// ParseYaml on documents whose aliases make a graph rather than a tree:
// found by fuzz/cloud_init_fuzzer in the cloud-init merge, the same walk here.

#include "api/yaml.h"

#include <gtest/gtest.h>

#include <string>

namespace caphv::api {
namespace {

TEST(ParseYamlTest, AnAliasReferringToItsOwnAncestorIsAnError) {
  auto parsed = ParseYaml("anchors: &a\n  <<: *a\n");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("an alias that refers to itself"), std::string::npos)
      << parsed.status().message();
}

TEST(ParseYamlTest, AnExponentialAliasTreeIsAnError) {
  std::string doc = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 9; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    doc += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev + ", " + prev + ", " +
           prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " +
           prev + ", " + prev + "]\n";
  }
  EXPECT_FALSE(ParseYaml(doc).ok());
}

TEST(ParseYamlTest, SharedAliasesWithinTheBoundsAreExpanded) {
  auto parsed = ParseYaml("base: &b {cpu: 2}\nmachine:\n  <<: *b\n  copy: *b\n");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ((*parsed)[0]["machine"]["copy"]["cpu"], 2);
}

}  // namespace
}  // namespace caphv::api
