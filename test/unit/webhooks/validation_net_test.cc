// Unit tests of the address, mask, CIDR, name and reference checks.

#include "webhooks/validation_net.h"

#include <gtest/gtest.h>

namespace caphv::webhooks {
namespace {

TEST(NetTest, IPs) {
  EXPECT_EQ(ParseIPv4("10.0.0.1"), 0x0A000001u);
  for (const char* bad : {"", "10.0.0", "10.0.0.256", "010.0.0.1", "10.0.0.1 ", "a.b.c.d",
                          "10.0.0.1/24", "1.2.3.4.5"}) {
    EXPECT_FALSE(ParseIPv4(bad).has_value()) << bad;
  }
  EXPECT_TRUE(IsIP("fd00::1"));
  EXPECT_TRUE(IsIP("172.16.0.1"));
  EXPECT_FALSE(IsIP("fd00::1::2"));
  EXPECT_FALSE(IsIP("gateway.local"));
}

TEST(NetTest, MasksMustBeContiguous) {
  EXPECT_EQ(MaskPrefixLength("255.255.255.0"), 24);
  EXPECT_EQ(MaskPrefixLength("255.255.0.0"), 16);
  EXPECT_EQ(MaskPrefixLength("255.255.255.255"), 32);
  EXPECT_EQ(MaskPrefixLength("128.0.0.0"), 1);
  EXPECT_EQ(MaskPrefixLength("255.255.255.252"), 30);
  for (const char* bad :
       {"255.0.255.0", "0.0.0.0", "255.255.0.255", "24", "/24", "0.255.255.255", "255.255.255.1"}) {
    EXPECT_FALSE(MaskPrefixLength(bad).has_value()) << bad;
  }
}

TEST(NetTest, Cidrs) {
  auto c = ParseIPv4Cidr("10.0.0.7/24");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->network, 0x0A000000u);
  EXPECT_EQ(c->prefix, 24);
  EXPECT_TRUE(InSubnet(0x0A0000FEu, c->network, c->prefix));
  EXPECT_FALSE(InSubnet(0x0A000100u, c->network, c->prefix));
  EXPECT_TRUE(InSubnet(0x01020304u, 0, 0));
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "x/24"}) {
    EXPECT_FALSE(ParseIPv4Cidr(bad).has_value()) << bad;
  }
  EXPECT_TRUE(IsCidr("fd00::/64"));
  EXPECT_FALSE(IsCidr("fd00::/129"));
}

TEST(NetTest, Names) {
  EXPECT_TRUE(IsDns1123Label("default"));
  EXPECT_TRUE(IsDns1123Label("a-1"));
  EXPECT_FALSE(IsDns1123Label("Default"));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_TRUE(IsDns1123Subdomain("my-vm-image.qcow2"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain("x86_64"));
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
