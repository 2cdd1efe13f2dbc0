// File: test/unit/harvester/naming_test.cc

#include "harvester/naming.h"

#include <gtest/gtest.h>

#include "harvester/ipv4.h"

namespace caphv::harvester {
namespace {

TEST(NamingTest, HexHashIsSha256Prefix) {
  // sha256("abc") = ba7816bf8f01cfea...
  EXPECT_EQ(HexHash("abc", 16), "ba7816bf8f01cfea");
  EXPECT_EQ(HexHash("abc", 5), "ba781");
  EXPECT_EQ(HexHash("abc", 100).size(), 64u);
}

TEST(NamingTest, ClusterIdDiffersPerManagementClusterNamespaceAndName) {
  ClusterIdentity a{"mgmt-1", "ns", "demo"};
  ClusterIdentity b{"mgmt-2", "ns", "demo"};
  ClusterIdentity c{"mgmt-1", "other", "demo"};
  ClusterIdentity d{"mgmt-1", "ns", "demo2"};
  EXPECT_EQ(ClusterId(a).size(), 20u);
  EXPECT_EQ(ClusterId(a), ClusterId(ClusterIdentity{"mgmt-1", "ns", "demo"}));
  EXPECT_NE(ClusterId(a), ClusterId(b));
  EXPECT_NE(ClusterId(a), ClusterId(c));
  EXPECT_NE(ClusterId(a), ClusterId(d));
  // Field boundaries matter: ("a", "b-c") vs ("a-b", "c").
  EXPECT_NE(ClusterId({"m", "a", "b-c"}), ClusterId({"m", "a-b", "c"}));
}

TEST(NamingTest, Rfc1035NameLikeTheGoProvider) {
  EXPECT_EQ(Rfc1035Name({"default", "my-cluster", "lb"}), "default-my-cluster-lb");
  EXPECT_EQ(Rfc1035Name({"NS", "My_Cluster.x", "lb"}), "ns-my-cluster-x-lb");
  EXPECT_EQ(Rfc1035Name({"1abc", "x"}), "a-1abc-x");
  EXPECT_EQ(Rfc1035Name({"--a--"}), "a");
  std::string long_name(100, 'x');
  auto n = Rfc1035Name({long_name, "lb"});
  EXPECT_EQ(n.size(), 63u);
  EXPECT_TRUE(IsDns1123Label(n));
  // Cut ending on a dash is trimmed.
  EXPECT_EQ(Rfc1035Name({std::string(62, 'a'), "b"}), std::string(62, 'a'));
}

TEST(NamingTest, Dns1123LabelsAndSubdomains) {
  EXPECT_TRUE(IsDns1123Label("default"));
  EXPECT_TRUE(IsDns1123Label("a-1"));
  EXPECT_FALSE(IsDns1123Label("Default"));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
  EXPECT_TRUE(IsDns1123Subdomain("my-vm-image.qcow2"));
  EXPECT_FALSE(IsDns1123Subdomain("a..b"));
  EXPECT_FALSE(IsDns1123Subdomain("x86_64"));
  const std::string label(63, 'a');
  EXPECT_TRUE(IsDns1123Subdomain(label + "." + label + "." + label + "." + std::string(61, 'a')));
  EXPECT_FALSE(IsDns1123Subdomain(label + "." + label + "." + label + "." + label));  // 255
}

TEST(NamingTest, NameWithHashFitsAndIsStable) {
  auto a = NameWithHash(std::string(80, 'a'), "seed", 63);
  EXPECT_EQ(a.size(), 63u);
  EXPECT_EQ(a, NameWithHash(std::string(80, 'a'), "seed", 63));
  EXPECT_NE(a, NameWithHash(std::string(80, 'a'), "seed2", 63));
  EXPECT_EQ(NameWithHash("vm-disk-0", "x"), "vm-disk-0-" + HexHash("x", 5));
}

TEST(NamingTest, LabelsAndOwnership) {
  ClusterIdentity c{"mgmt", "ns", "demo"};
  auto labels = ClusterLabels(c);
  EXPECT_EQ(labels.at("cluster.x-k8s.io/cluster-name"), "demo");
  EXPECT_EQ(labels.at(std::string(kLabelClusterId)), ClusterId(c));
  EXPECT_TRUE(OwnedBy(labels, c));
  EXPECT_FALSE(OwnedBy(labels, ClusterIdentity{"other-mgmt", "ns", "demo"}));
  EXPECT_FALSE(OwnedBy({}, c));
  EXPECT_NE(ClusterSelector(c).find("cluster.x-k8s.io/cluster-name=demo"), std::string::npos);
}

TEST(NamingTest, QualifiedNames) {
  EXPECT_EQ(QualifiedName("key", "default"), "default/key");
  EXPECT_EQ(QualifiedName("other/key", "default"), "other/key");
  EXPECT_EQ(SplitQualifiedName("a/b", "x"), (std::pair<std::string, std::string>{"a", "b"}));
  EXPECT_EQ(CloudInitSecretName("vm-1"), "vm-1-cloud-init");
}

TEST(NamingTest, Dns1123Label) {
  EXPECT_TRUE(IsDns1123Label("a"));
  EXPECT_TRUE(IsDns1123Label("demo-cp-x7k2p"));
  EXPECT_FALSE(IsDns1123Label(""));
  EXPECT_FALSE(IsDns1123Label("-a"));
  EXPECT_FALSE(IsDns1123Label("a-"));
  EXPECT_FALSE(IsDns1123Label("A"));
  EXPECT_FALSE(IsDns1123Label("a.b"));
  EXPECT_FALSE(IsDns1123Label(std::string(64, 'a')));
}

TEST(Ipv4Test, ParseAndFormat) {
  EXPECT_EQ(ParseIpv4("10.0.0.1"), 0x0a000001u);
  EXPECT_EQ(ParseIpv4("255.255.255.255"), 0xffffffffu);
  EXPECT_EQ(ParseIpv4("0.0.0.0"), 0u);
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.4 ", " 1.2.3.4",
                          "1..2.3", "a.b.c.d", "1.2.3.-4", "1234.1.1.1"}) {
    EXPECT_FALSE(ParseIpv4(bad)) << bad;
  }
  EXPECT_EQ(FormatIpv4(0xc0a80101u), "192.168.1.1");
}

TEST(Ipv4Test, CidrAndMasks) {
  auto s = ParseCidr("192.168.100.7/24");
  ASSERT_TRUE(s);
  EXPECT_EQ(FormatIpv4(s->network), "192.168.100.0");
  EXPECT_EQ(s->prefix, 24);
  EXPECT_EQ(FormatIpv4(BroadcastAddress(*s)), "192.168.100.255");
  EXPECT_EQ(FormatIpv4(FirstHost(*s)), "192.168.100.1");
  EXPECT_EQ(FormatIpv4(LastHost(*s)), "192.168.100.254");
  EXPECT_TRUE(Contains(*s, *ParseIpv4("192.168.100.200")));
  EXPECT_FALSE(Contains(*s, *ParseIpv4("192.168.101.1")));
  EXPECT_FALSE(ParseCidr("10.0.0.0/33"));
  EXPECT_FALSE(ParseCidr("10.0.0.0"));
  EXPECT_FALSE(ParseCidr("10.0.0.0/"));
  EXPECT_FALSE(ParseCidr("10.0.0.0/08"));
  EXPECT_EQ(ParseCidr("0.0.0.0/0")->prefix, 0);
  auto p32 = *ParseCidr("10.1.1.1/32");
  EXPECT_EQ(FirstHost(p32), LastHost(p32));
  auto p31 = *ParseCidr("10.1.1.0/31");
  EXPECT_EQ(FormatIpv4(FirstHost(p31)), "10.1.1.0");
  EXPECT_EQ(FormatIpv4(LastHost(p31)), "10.1.1.1");
  EXPECT_EQ(FormatIpv4(MaskFromPrefix(16)), "255.255.0.0");
  EXPECT_EQ(MaskFromPrefix(0), 0u);
  EXPECT_EQ(PrefixFromMask("255.255.255.0"), 24);
  EXPECT_EQ(PrefixFromMask("255.255.255.255"), 32);
  EXPECT_EQ(PrefixFromMask("0.0.0.0"), 0);
  EXPECT_FALSE(PrefixFromMask("255.0.255.0"));
  EXPECT_FALSE(PrefixFromMask("255.255.255"));
}

TEST(NamingTest, InlinePoolNamesAreTheGoProvidersNames) {
  EXPECT_EQ(VmPoolName("ns", "hc"), "ns-hc-vm-ippool");
  EXPECT_EQ(LbPoolName("ns", "hc"), "ns-hc-lb-ippool");
}

}  // namespace
}  // namespace caphv::harvester
