// Unit tests for sim/ipam.h: Harvester's IPPool admission and bookkeeping.

#include "sim/ipam.h"

#include <gtest/gtest.h>

namespace caphv::sim {
namespace {

kube::Object Pool(const std::string& start, const std::string& end) {
  return {{"metadata", {{"name", "p"}}},
          {"spec",
           {{"ranges", kube::Object::array({{{"subnet", "192.168.100.0/24"},
                                             {"rangeStart", start},
                                             {"rangeEnd", end},
                                             {"gateway", "192.168.100.1"}}})}}}};
}

TEST(PoolAdmission, AddressesAreReadAsStrictlyAsGoReadsThem) {
  // Go's net.ParseIP refuses leading zeros (since Go 1.17), so Harvester's
  // IPPool webhook calls such a bound an invalid IP.
  auto why = ValidateIpPool("", Pool("192.168.100.050", "192.168.100.99"), {});
  ASSERT_EQ(why.size(), 1u);
  EXPECT_NE(why[0].find("invalid range start 192.168.100.050: invalid IP 192.168.100.050"),
            std::string::npos)
      << why[0];
  EXPECT_TRUE(ValidateIpPool("", Pool("192.168.100.50", "192.168.100.99"), {}).empty());
}

TEST(PoolRanges, AppliesHarvesterDefaults) {
  kube::Object pool = {{"spec", {{"ranges", kube::Object::array({{{"subnet", "10.1.0.0/29"}}})}}}};
  auto ranges = PoolRanges(pool);
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ(FormatIpv4((*ranges)[0].start), "10.1.0.1");
  EXPECT_EQ(FormatIpv4((*ranges)[0].end), "10.1.0.6");
  EXPECT_EQ(FormatIpv4((*ranges)[0].gateway), "10.1.0.1");
  // The gateway is in the range and never counted.
  EXPECT_EQ(PoolTotal(*ranges), 5);
  EXPECT_FALSE(PoolRanges(kube::Object{{"spec", {{"ranges", kube::Object::array()}}}}).ok());
}

TEST(PoolReserve, RecordsOwnerAndCounters) {
  const auto pool = Pool("192.168.100.50", "192.168.100.52");
  auto ranges = *PoolRanges(pool);
  PoolStatus st = PoolStatusOf(pool, ranges);
  EXPECT_EQ(st.total, 3);
  auto ip = PoolReserve(ranges, st, "default/lb-a");
  ASSERT_TRUE(ip.ok());
  EXPECT_EQ(*ip, "192.168.100.50");
  EXPECT_EQ(st.allocated.at("192.168.100.50"), "default/lb-a");
  EXPECT_EQ(st.last_allocated, "192.168.100.50");
  EXPECT_EQ(st.available, 2);
  // Idempotent for the same owner.
  EXPECT_EQ(*PoolReserve(ranges, st, "default/lb-a"), "192.168.100.50");
  EXPECT_EQ(st.available, 2);
  EXPECT_EQ(*PoolReserve(ranges, st, "default/lb-b"), "192.168.100.51");
  EXPECT_EQ(*PoolReserve(ranges, st, "default/lb-c"), "192.168.100.52");
  EXPECT_FALSE(PoolReserve(ranges, st, "default/lb-d").ok());

  auto json = PoolStatusToJson(st);
  EXPECT_EQ(json["available"], 0);
  EXPECT_EQ(json["total"], 3);
  EXPECT_EQ(json["allocated"]["192.168.100.51"], "default/lb-b");
}

TEST(PoolRelease, MovesToHistoryAndIsSticky) {
  const auto pool = Pool("192.168.100.50", "192.168.100.59");
  auto ranges = *PoolRanges(pool);
  PoolStatus st = PoolStatusOf(pool, ranges);
  ASSERT_EQ(*PoolReserve(ranges, st, "ns/a"), "192.168.100.50");
  ASSERT_EQ(*PoolReserve(ranges, st, "ns/b"), "192.168.100.51");
  EXPECT_TRUE(PoolRelease(st, "ns/a"));
  EXPECT_FALSE(PoolRelease(st, "ns/a"));
  EXPECT_FALSE(st.allocated.contains("192.168.100.50"));
  EXPECT_EQ(st.history.at("192.168.100.50"), "ns/a");
  EXPECT_EQ(st.available, 9);
  // A new owner avoids addresses with history; the old owner gets its own back.
  EXPECT_EQ(*PoolReserve(ranges, st, "ns/c"), "192.168.100.52");
  EXPECT_EQ(*PoolReserve(ranges, st, "ns/a"), "192.168.100.50");
  EXPECT_FALSE(st.history.contains("192.168.100.50"));
}

TEST(PoolStatusOf, ReadsExistingStatusAndCountsForeignEntries) {
  auto pool = Pool("192.168.100.50", "192.168.100.54");
  pool["status"] = {{"total", 99},
                    {"available", 99},
                    {"lastAllocated", "192.168.100.50"},
                    {"allocated", {{"192.168.100.50", "other/vm-ip"}}}};
  auto ranges = *PoolRanges(pool);
  PoolStatus st = PoolStatusOf(pool, ranges);
  EXPECT_EQ(st.total, 5);
  EXPECT_EQ(st.available, 4);
  EXPECT_EQ(*PoolReserve(ranges, st, "ns/x"), "192.168.100.51");
}

TEST(LeaseFrom, SkipsUsedAddresses) {
  const uint32_t s = *ParseIpv4("10.0.10.100"), e = *ParseIpv4("10.0.10.101");
  EXPECT_EQ(LeaseFrom(s, e, {}), s);
  EXPECT_EQ(LeaseFrom(s, e, {s}), s + 1);
  EXPECT_FALSE(LeaseFrom(s, e, {s, s + 1}));
}

kube::Object Pool(const std::string& name, const std::string& net, int start, int end,
                  kube::Object scope = nullptr) {
  kube::Object selector = {{"network", "default/vlan100"}};
  if (!scope.is_null()) selector["scope"] = scope;
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"ranges", kube::Object::array({{{"subnet", net + ".0/24"},
                                             {"rangeStart", net + "." + std::to_string(start)},
                                             {"rangeEnd", net + "." + std::to_string(end)},
                                             {"gateway", net + ".1"}}})},
            {"selector", selector}}}};
}

kube::Object GlobalScope() {
  return kube::Object::array({{{"project", "*"}, {"namespace", "*"}, {"guestCluster", "*"}}});
}

PoolAdmissionWorld World(std::vector<kube::Object> others) {
  PoolAdmissionWorld w;
  w.other_pools = std::move(others);
  w.network_exists = [](const std::string& ns, const std::string& name) {
    return ns == "default" && name == "vlan100";
  };
  return w;
}

bool Says(const std::vector<std::string>& errors, const std::string& what) {
  for (const auto& e : errors) {
    if (e.find(what) != std::string::npos) return true;
  }
  return false;
}

TEST(ValidateIpPool, OneGlobalPoolAndNoOverlap) {
  const auto global = Pool("capi-pool", "192.168.100", 50, 99, GlobalScope());
  EXPECT_TRUE(IsGlobalPool(global));
  EXPECT_TRUE(ValidateIpPool("CREATE", global, World({})).empty());
  // A pool without a scope (CAPHV's, the Go provider's) sits next to it.
  EXPECT_TRUE(ValidateIpPool("CREATE", Pool("mine", "10.7.0", 10, 20), World({global})).empty());
  auto errs =
      ValidateIpPool("CREATE", Pool("second", "10.8.0", 10, 20, GlobalScope()), World({global}));
  EXPECT_TRUE(Says(errs,
                   "can't create IP pool second because there is already a global IP pool: "
                   "capi-pool"))
      << ::testing::PrintToString(errs);
  errs = ValidateIpPool("CREATE", Pool("overlap", "192.168.100", 90, 120), World({global}));
  EXPECT_TRUE(Says(errs,
                   "can't create IP pool overlap because the ranges [{RangeStart:192.168.100.90 "
                   "RangeEnd:192.168.100.120 Subnet:{IP:192.168.100.0 Mask:ffffff00} "
                   "Gateway:192.168.100.1}] overlap with other pools"))
      << ::testing::PrintToString(errs);
  // A pool does not overlap itself on UPDATE.
  EXPECT_TRUE(ValidateIpPool("UPDATE", global, World({global})).empty());
}

TEST(ValidateIpPool, NetworkMustBeAnExistingNamespacedNad) {
  auto pool = Pool("p", "10.7.0", 10, 20);
  pool["spec"]["selector"]["network"] = "vlan100";
  EXPECT_EQ(ValidateIpPool("CREATE", pool, World({})),
            std::vector<std::string>{"can't create IP pool p because invalid network vlan100"});
  pool["spec"]["selector"]["network"] = "default/vlan200";
  EXPECT_EQ(ValidateIpPool("UPDATE", pool, World({})),
            std::vector<std::string>{"can't update IP pool p because "
                                     "network-attachment-definitions.k8s.cni.cncf.io \"vlan200\" "
                                     "not found"});
}

TEST(ValidateIpPool, RangeEndsAllocationsAndDelete) {
  auto pool = Pool("p", "10.7.0", 0, 20);
  EXPECT_TRUE(Says(ValidateIpPool("CREATE", pool, World({})),
                   "invalid range start 10.7.0.0: IP 10.7.0.0 is the network address"));
  pool = Pool("p", "10.7.0", 10, 255);
  EXPECT_TRUE(Says(ValidateIpPool("CREATE", pool, World({})),
                   "invalid range end 10.7.0.255: IP 10.7.0.255 is the broadcast address"));
  pool = Pool("p", "10.7.0", 10, 20);
  pool["status"]["allocated"] = {{"10.7.0.15", "ns/m@1"}};
  EXPECT_TRUE(ValidateIpPool("UPDATE", pool, World({})).empty());
  pool["status"]["allocated"]["10.7.0.99"] = "ns/m2@1";
  EXPECT_TRUE(
      Says(ValidateIpPool("UPDATE", pool, World({})), "allocated IP 10.7.0.99 is excluded"));
  EXPECT_EQ(ValidateIpPool("DELETE", pool, World({})),
            std::vector<std::string>{"can't delete pool before releasing all the allocated IP"});
  pool["status"]["allocated"] = kube::Object::object();
  EXPECT_TRUE(ValidateIpPool("DELETE", pool, World({})).empty());
}

TEST(ValidateIpPool, NonZeroPrioritiesAreUnique) {
  auto a = Pool("a", "10.7.0", 10, 20);
  auto b = Pool("b", "10.8.0", 10, 20);
  a["spec"]["selector"]["priority"] = 5;
  b["spec"]["selector"]["priority"] = 5;
  EXPECT_TRUE(Says(ValidateIpPool("CREATE", b, World({a})),
                   "the priority can't be the same as the pool a"));
  a["spec"]["selector"]["priority"] = 0;
  b["spec"]["selector"]["priority"] = 0;
  EXPECT_TRUE(ValidateIpPool("CREATE", b, World({a})).empty());
}

}  // namespace
}  // namespace caphv::sim
