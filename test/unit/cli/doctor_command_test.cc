// File: test/unit/cli/doctor_command_test.cc
//
// What `caphv doctor` prints: one line per check, ✓ / ! (passed, worth a
// look) / ✗ with the fix; or JSON with -o json.

#include "doctor_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace caphv::cli {
namespace {

const std::vector<Check> kChecks = {
    {"image", true, "default/ubuntu is Active, StorageClass longhorn-ubuntu", "", false},
    {"identity expiry", true, "the token of the identity kubeconfig expires at X",
     "download a new kubeconfig", true},
    {"key pair", false, "default/key not found", "create the KeyPair", false},
};

TEST(DoctorRender, OneLinePerCheckWithTheFix) {
  EXPECT_EQ(RenderChecks(kChecks, false),
            "✓ image: default/ubuntu is Active, StorageClass longhorn-ubuntu\n"
            "! identity expiry: the token of the identity kubeconfig expires at X; fix: download "
            "a new kubeconfig\n"
            "✗ key pair: default/key not found; fix: create the KeyPair\n");
}

TEST(DoctorRender, Json) {
  const auto j = api::Json::parse(RenderChecks(kChecks, true));
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0], api::Json::parse(R"({"name":"image","ok":true,
      "detail":"default/ubuntu is Active, StorageClass longhorn-ubuntu"})"));
  EXPECT_EQ(j[1]["warning"], true);
  EXPECT_EQ(j[2]["ok"], false);
  EXPECT_EQ(j[2]["fix"], "create the KeyPair");
}

}  // namespace
}  // namespace caphv::cli
