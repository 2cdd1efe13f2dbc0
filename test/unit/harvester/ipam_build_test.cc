// File: test/unit/harvester/ipam_build_test.cc
//
// BuildIpPool: the IPPool CAPHV creates from an inline ipPool spec has the
// shape Harvester's load-balancer controller reads, reads back through
// ParseIpPool with the same range, and invalid input is refused with a
// message naming the field.

#include <gtest/gtest.h>

#include "harvester/ipam.h"

namespace caphv::harvester {
namespace {

using kube::Object;
using kube::StatusCode;

api::IPPoolSpec Spec() {
  api::IPPoolSpec spec;
  spec.vm_network = "default/vlan100";
  spec.subnet = "192.168.100.0/24";
  spec.gateway = "192.168.100.1";
  spec.range_start = "192.168.100.50";
  spec.range_end = "192.168.100.99";
  return spec;
}

const std::map<std::string, std::string> kLabels = {{"cluster.x-k8s.io/cluster-name", "demo"}};

TEST(IpamBuildTest, BuildsTheHarvesterShape) {
  auto pool = BuildIpPool("capi-demo-vms", Spec(), kLabels, "VM addresses of demo");
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  const Object expected = Object::parse(R"({
    "apiVersion": "loadbalancer.harvesterhci.io/v1beta1",
    "kind": "IPPool",
    "metadata": {"name": "capi-demo-vms",
                 "labels": {"cluster.x-k8s.io/cluster-name": "demo"}},
    "spec": {
      "description": "VM addresses of demo",
      "ranges": [{"subnet": "192.168.100.0/24", "gateway": "192.168.100.1",
                  "rangeStart": "192.168.100.50", "rangeEnd": "192.168.100.99"}],
      "selector": {"network": "default/vlan100"}
    }
  })");
  EXPECT_EQ(*pool, expected) << pool->dump(2);
  EXPECT_FALSE(pool->contains("status"));  // status: {} fails Harvester's validation
}

TEST(IpamBuildTest, RoundTripsThroughParseIpPool) {
  auto built = BuildIpPool("capi-demo-vms", Spec(), kLabels, "");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  auto parsed = ParseIpPool(*built);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->name, "capi-demo-vms");
  EXPECT_EQ(parsed->network, "default/vlan100");
  ASSERT_EQ(parsed->ranges.size(), 1u);
  const PoolRange& r = parsed->ranges[0];
  EXPECT_EQ(r.subnet, *ParseCidr("192.168.100.0/24"));
  EXPECT_EQ(FormatIpv4(r.start), "192.168.100.50");
  EXPECT_EQ(FormatIpv4(r.end), "192.168.100.99");
  ASSERT_TRUE(r.gateway.has_value());
  EXPECT_EQ(FormatIpv4(*r.gateway), "192.168.100.1");
  EXPECT_EQ(TotalAddresses(*parsed), 50);
  EXPECT_TRUE(parsed->allocated.empty());

  // A fresh pool serves its first address to the first machine.
  auto decision =
      DecideAllocation({{"capi-demo-vms", *parsed}}, "ns/m1@0123456789ab", {"default/vlan100"});
  EXPECT_EQ(decision.outcome, AllocationDecision::Outcome::kAllocate);
  EXPECT_EQ(decision.ip, "192.168.100.50");
}

TEST(IpamBuildTest, EmptyRangeBoundsAreOmittedAndDefaultToTheWholeSubnet) {
  api::IPPoolSpec spec = Spec();
  spec.range_start.clear();
  spec.range_end.clear();
  spec.subnet = "10.0.0.0/29";
  spec.gateway = "10.0.0.1";
  auto built = BuildIpPool("p", spec, {}, "");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const Object& range = (*built)["spec"]["ranges"][0];
  EXPECT_FALSE(range.contains("rangeStart"));
  EXPECT_FALSE(range.contains("rangeEnd"));
  EXPECT_FALSE((*built)["metadata"].contains("labels"));
  EXPECT_EQ((*built)["spec"]["description"], "");
  auto parsed = ParseIpPool(*built);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(FormatIpv4(parsed->ranges[0].start), "10.0.0.1");
  EXPECT_EQ(FormatIpv4(parsed->ranges[0].end), "10.0.0.6");
  EXPECT_EQ(TotalAddresses(*parsed), 5);  // .1 .. .6 minus the gateway
}

TEST(IpamBuildTest, EmptyNetworkServesAnyNetwork) {
  api::IPPoolSpec spec = Spec();
  spec.vm_network.clear();
  auto built = BuildIpPool("p", spec, {}, "");
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_FALSE((*built)["spec"]["selector"].contains("network"));
  // Never a scope: {*,*,*} would make it Harvester's single global pool.
  EXPECT_FALSE((*built)["spec"]["selector"].contains("scope"));
  auto parsed = ParseIpPool(*built);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->network, "");
}

struct InvalidCase {
  const char* what;
  api::IPPoolSpec spec;
  const char* message_prefix;
};

TEST(IpamBuildTest, RefusesInvalidInputNamingTheField) {
  auto with = [](auto change) {
    api::IPPoolSpec s = Spec();
    change(s);
    return s;
  };
  const std::vector<InvalidCase> cases = {
      {"subnet empty", with([](auto& s) { s.subnet = ""; }), "ipPool.subnet: "},
      {"subnet without prefix", with([](auto& s) { s.subnet = "192.168.100.0"; }),
       "ipPool.subnet: "},
      {"subnet prefix too long", with([](auto& s) { s.subnet = "192.168.100.0/33"; }),
       "ipPool.subnet: "},
      {"subnet IPv6", with([](auto& s) { s.subnet = "fd00::/64"; }), "ipPool.subnet: "},
      {"gateway empty", with([](auto& s) { s.gateway = ""; }), "ipPool.gateway: "},
      {"gateway not IPv4", with([](auto& s) { s.gateway = "192.168.100.300"; }),
       "ipPool.gateway: "},
      {"gateway outside", with([](auto& s) { s.gateway = "192.168.101.1"; }), "ipPool.gateway: "},
      {"rangeStart not IPv4", with([](auto& s) { s.range_start = "first"; }),
       "ipPool.rangeStart: "},
      {"rangeStart outside", with([](auto& s) { s.range_start = "10.0.0.5"; }),
       "ipPool.rangeStart: "},
      {"rangeEnd not IPv4", with([](auto& s) { s.range_end = "192.168.100.099"; }),
       "ipPool.rangeEnd: "},
      {"rangeEnd outside", with([](auto& s) { s.range_end = "192.168.99.255"; }),
       "ipPool.rangeEnd: "},
  };
  for (const auto& c : cases) {
    auto built = BuildIpPool("p", c.spec, {}, "");
    ASSERT_FALSE(built.ok()) << c.what;
    EXPECT_EQ(built.status().code(), StatusCode::kInvalidArgument) << c.what;
    EXPECT_EQ(built.status().message().rfind(c.message_prefix, 0), 0u)
        << c.what << ": " << built.status().message();
  }
  auto unnamed = BuildIpPool("", Spec(), {}, "");
  ASSERT_FALSE(unnamed.ok());
  EXPECT_EQ(unnamed.status().code(), StatusCode::kInvalidArgument);
}

TEST(IpamBuildTest, MessagesShowTheOffendingValue) {
  api::IPPoolSpec spec = Spec();
  spec.range_end = "192.168.99.255";
  auto built = BuildIpPool("p", spec, {}, "");
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.status().message().find("192.168.99.255"), std::string::npos);
  EXPECT_NE(built.status().message().find("192.168.100.0/24"), std::string::npos);
}

}  // namespace
}  // namespace caphv::harvester
