// Unit tests of the one IP syntax module: dotted quads, IPv6 recognition,
// masks, CIDRs and host ranges.

#include "harvester/ipv4.h"

#include <gtest/gtest.h>

namespace caphv::harvester {
namespace {

TEST(Ipv4Test, DottedQuadsAreStrict) {
  EXPECT_EQ(ParseIpv4("10.0.0.1"), 0x0A000001u);
  EXPECT_EQ(ParseIpv4("255.255.255.255"), 0xFFFFFFFFu);
  for (const char* bad : {"", "10.0.0", "10.0.0.256", "010.0.0.1", "10.0.0.1 ", " 10.0.0.1",
                          "a.b.c.d", "10.0.0.1/24", "1.2.3.4.5", "1..2.3", "0x0A.0.0.1"}) {
    EXPECT_FALSE(ParseIpv4(bad).has_value()) << bad;
  }
  EXPECT_FALSE(ParseIpv4(std::string_view("10.0.0.1\0x", 10)).has_value());
  EXPECT_EQ(FormatIpv4(0x0a000a17u), "10.0.10.23");
}

TEST(Ipv4Test, IsIpTakesBothFamilies) {
  EXPECT_TRUE(IsIp("fd00::1"));
  EXPECT_TRUE(IsIp("172.16.0.1"));
  EXPECT_FALSE(IsIp("fd00::1::2"));
  EXPECT_FALSE(IsIp("gateway.local"));
  EXPECT_FALSE(IsIp(""));
  EXPECT_FALSE(IsIp(std::string_view("fd00::1\0x", 9)));
}

TEST(Ipv4Test, MasksMustBeContiguous) {
  EXPECT_EQ(PrefixFromMask("255.255.255.0"), 24);
  EXPECT_EQ(PrefixFromMask("255.255.0.0"), 16);
  EXPECT_EQ(PrefixFromMask("255.255.255.255"), 32);
  EXPECT_EQ(PrefixFromMask("128.0.0.0"), 1);
  EXPECT_EQ(PrefixFromMask("255.255.255.252"), 30);
  EXPECT_EQ(PrefixFromMask("0.0.0.0"), 0);
  for (const char* bad :
       {"255.0.255.0", "255.255.0.255", "24", "/24", "0.255.255.255", "255.255.255.1"}) {
    EXPECT_FALSE(PrefixFromMask(bad).has_value()) << bad;
  }
  EXPECT_EQ(FormatIpv4(MaskFromPrefix(24)), "255.255.255.0");
  EXPECT_EQ(MaskFromPrefix(0), 0u);
  EXPECT_EQ(MaskFromPrefix(32), 0xFFFFFFFFu);
}

TEST(Ipv4Test, CidrsClearHostBits) {
  auto c = ParseCidr("10.0.0.7/24");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->network, 0x0A000000u);
  EXPECT_EQ(c->prefix, 24);
  EXPECT_TRUE(Contains(*c, 0x0A0000FEu));
  EXPECT_FALSE(Contains(*c, 0x0A000100u));
  EXPECT_TRUE(Contains({0, 0}, 0x01020304u));
  EXPECT_EQ(FormatIpv4(BroadcastAddress(*c)), "10.0.0.255");
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "x/24",
                          "010.0.0.0/8", "10.0.0.0/2 4"}) {
    EXPECT_FALSE(ParseCidr(bad).has_value()) << bad;
  }
}

TEST(Ipv4Test, HostsSkipNetworkAndBroadcastButNotOnPointToPoint) {
  auto c = ParseCidr("10.1.0.0/29");
  ASSERT_TRUE(c);
  EXPECT_EQ(FormatIpv4(FirstHost(*c)), "10.1.0.1");
  EXPECT_EQ(FormatIpv4(LastHost(*c)), "10.1.0.6");
  auto p2p = ParseCidr("10.1.0.4/31");
  ASSERT_TRUE(p2p);
  EXPECT_EQ(FormatIpv4(FirstHost(*p2p)), "10.1.0.4");
  EXPECT_EQ(FormatIpv4(LastHost(*p2p)), "10.1.0.5");
}

}  // namespace
}  // namespace caphv::harvester
