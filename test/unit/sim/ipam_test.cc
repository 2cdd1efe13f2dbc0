// Unit tests for sim/ipam.h: address arithmetic and Harvester's IPPool bookkeeping.

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

TEST(Ipv4, ParsesAndFormats) {
  EXPECT_EQ(ParseIpv4("10.0.10.23"), 0x0a000a17u);
  EXPECT_EQ(FormatIpv4(0x0a000a17u), "10.0.10.23");
  EXPECT_FALSE(ParseIpv4("10.0.10"));
  EXPECT_FALSE(ParseIpv4("10.0.10.256"));
  EXPECT_FALSE(ParseIpv4("10.0.10.1x"));
  EXPECT_EQ(PrefixToMask(24), "255.255.255.0");
  EXPECT_EQ(PrefixToMask(16), "255.255.0.0");
  auto c = ParseCidr("10.0.10.23/24");
  ASSERT_TRUE(c);
  EXPECT_EQ(FormatIpv4(c->Network()), "10.0.10.0");
  EXPECT_EQ(FormatIpv4(c->Broadcast()), "10.0.10.255");
  EXPECT_FALSE(ParseCidr("10.0.10.0/33"));
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

}  // namespace
}  // namespace caphv::sim
