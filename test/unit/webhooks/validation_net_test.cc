// Unit tests of the webhooks' subnet-mask rule and object references.

#include "webhooks/validation_net.h"

#include <gtest/gtest.h>

namespace caphv::webhooks {
namespace {

TEST(NetTest, SubnetMasksAreContiguousAndNotZero) {
  EXPECT_EQ(SubnetMaskPrefix("255.255.255.0"), 24);
  EXPECT_EQ(SubnetMaskPrefix("255.255.255.255"), 32);
  for (const char* bad : {"255.0.255.0", "0.0.0.0", "24", "fd00::"}) {
    EXPECT_FALSE(SubnetMaskPrefix(bad).has_value()) << bad;
  }
}

TEST(NetTest, References) {
  std::string why;
  auto r = ParseObjectRef("default/my-ip-pool", true, &why);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->namespace_, "default");
  EXPECT_EQ(r->name, "my-ip-pool");
  r = ParseObjectRef("capi-vm-pool", true, &why);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->namespace_, "");
  // Image display names may hold characters object names may not.
  EXPECT_TRUE(ParseObjectRef("default/sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2", false, &why));
  EXPECT_FALSE(ParseObjectRef("default/sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2", true, &why));
  for (const char* bad : {"", "/name", "ns/", "a/b/c", "Default/x"}) {
    EXPECT_FALSE(ParseObjectRef(bad, false, &why).has_value()) << bad;
    EXPECT_FALSE(why.empty());
  }
  EXPECT_FALSE(ParseObjectRef("default/my image", false, &why).has_value());
}

}  // namespace
}  // namespace caphv::webhooks
