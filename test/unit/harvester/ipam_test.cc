// File: test/unit/harvester/ipam_test.cc

#include "harvester/ipam.h"

#include <gtest/gtest.h>

namespace caphv::harvester {
namespace {

using Outcome = AllocationDecision::Outcome;
using kube::Object;

Object Pool(const std::string& name, Object ranges, Object allocated = Object::object(),
            std::string last = "", Object history = Object::object()) {
  Object pool = {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
                 {"kind", "IPPool"},
                 {"metadata", {{"name", name}, {"resourceVersion", "42"}}},
                 {"spec", {{"ranges", ranges}}}};
  if (!allocated.empty() || !last.empty() || !history.empty()) {
    pool["status"] = {{"allocated", allocated},
                      {"allocatedHistory", history},
                      {"lastAllocated", last},
                      {"total", 0},
                      {"available", 0}};
  }
  return pool;
}

IpPool Parsed(const Object& obj) {
  auto p = ParseIpPool(obj);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : IpPool{};
}

PoolCandidate Candidate(const Object& obj) {
  return {obj["metadata"]["name"].get<std::string>(), Parsed(obj)};
}

const Object kSmallRange = Object::array(
    {{{"subnet", "172.16.3.0/24"}, {"rangeStart", "172.16.3.40"}, {"rangeEnd", "172.16.3.41"}}});

TEST(IpamTest, OwnerIdKeepsNamespaceNameShapeAndIsUniquePerManagementCluster) {
  auto a = IpOwnerId("mgmt-a", "ns", "m1");
  EXPECT_EQ(a.rfind("ns/m1@", 0), 0u);
  EXPECT_EQ(a.size(), std::string("ns/m1@").size() + 12);
  EXPECT_NE(a, IpOwnerId("mgmt-b", "ns", "m1"));
  EXPECT_EQ(a, IpOwnerId("mgmt-a", "ns", "m1"));
}

TEST(IpamTest, OrderedPoolRefsPrefersListThenSingleRef) {
  api::VMNetworkConfig c;
  c.ip_pool_ref = "single";
  EXPECT_EQ(OrderedPoolRefs(c), std::vector<std::string>{"single"});
  c.ip_pool_refs = {"pool-a", "default/pool-b", "pool-a", ""};
  EXPECT_EQ(OrderedPoolRefs(c), (std::vector<std::string>{"pool-a", "pool-b"}));
  EXPECT_TRUE(OrderedPoolRefs(api::VMNetworkConfig{}).empty());
}

TEST(IpamTest, AMachinesOwnVmNetworkReplacesTheClusters) {
  api::HarvesterCluster hc;
  hc.metadata.namespace_ = "ns";
  hc.metadata.name = "c";
  api::VMNetworkConfig cluster_net;
  cluster_net.ip_pool_refs = {"cp-pool", "cp-spare"};
  cluster_net.gateway = "10.0.0.1";
  hc.spec.vm_network_config = cluster_net;
  api::HarvesterMachine control_plane;
  EXPECT_EQ(VmPoolRefs(hc, control_plane), (std::vector<std::string>{"cp-pool", "cp-spare"}));
  EXPECT_EQ(MachineVmNetwork(control_plane, hc)->gateway, "10.0.0.1");

  api::HarvesterMachine worker;
  api::VMNetworkConfig worker_net;
  worker_net.ip_pool_ref = "default/worker-pool";
  worker_net.gateway = "10.1.0.1";
  worker.spec.vm_network_config = worker_net;
  // Only its own pools, never the cluster's as a fallback.
  EXPECT_EQ(VmPoolRefs(hc, worker), (std::vector<std::string>{"worker-pool"}));
  EXPECT_EQ(MachineVmNetwork(worker, hc)->gateway, "10.1.0.1");

  // A machine network on a DHCP cluster.
  api::HarvesterCluster dhcp;
  EXPECT_TRUE(VmPoolRefs(dhcp, control_plane).empty());
  EXPECT_FALSE(MachineVmNetwork(control_plane, dhcp).has_value());
  EXPECT_EQ(VmPoolRefs(dhcp, worker), (std::vector<std::string>{"worker-pool"}));
}

TEST(IpamTest, ParseDefaultsAndTotals) {
  auto p = Parsed(Pool("p", Object::array({{{"subnet", "10.0.0.0/29"}}})));
  ASSERT_EQ(p.ranges.size(), 1u);
  // .1-.6 usable; gateway defaults to .1 and is excluded.
  EXPECT_EQ(FormatIpv4(p.ranges[0].start), "10.0.0.1");
  EXPECT_EQ(FormatIpv4(p.ranges[0].end), "10.0.0.6");
  EXPECT_EQ(FormatIpv4(*p.ranges[0].gateway), "10.0.0.1");
  EXPECT_EQ(TotalAddresses(p), 5);
  EXPECT_FALSE(Assignable(p.ranges[0], *ParseIpv4("10.0.0.0")));  // network
  EXPECT_FALSE(Assignable(p.ranges[0], *ParseIpv4("10.0.0.7")));  // broadcast
  EXPECT_FALSE(Assignable(p.ranges[0], *ParseIpv4("10.0.0.1")));  // gateway
  EXPECT_TRUE(Assignable(p.ranges[0], *ParseIpv4("10.0.0.2")));

  // Reversed bounds are swapped; explicit gateway outside the range costs nothing.
  auto q = Parsed(Pool("q", Object::array({{{"subnet", "10.0.0.0/24"},
                                            {"rangeStart", "10.0.0.20"},
                                            {"rangeEnd", "10.0.0.11"},
                                            {"gateway", "10.0.0.254"}}})));
  EXPECT_EQ(FormatIpv4(q.ranges[0].start), "10.0.0.11");
  EXPECT_EQ(TotalAddresses(q), 10);
}

TEST(IpamTest, ParseRejectsBadPools) {
  EXPECT_FALSE(ParseIpPool(Pool("p", Object::array())).ok());
  EXPECT_FALSE(ParseIpPool(Pool("p", Object::array({{{"subnet", "10.0.0.0"}}}))).ok());
  auto outside = ParseIpPool(
      Pool("p", Object::array({{{"subnet", "10.0.0.0/24"}, {"rangeStart", "10.0.1.5"}}})));
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("rangeStart 10.0.1.5"), std::string::npos);
}

TEST(IpamTest, AllocatesFirstFreeAfterLastAllocated) {
  auto pool = Pool("p", Object::array({{{"subnet", "10.0.0.0/29"}}}),
                   {{"10.0.0.2", "x/a"}, {"10.0.0.4", "x/b"}}, "10.0.0.4");
  auto d = DecideAllocation({Candidate(pool)}, "ns/me@1");
  EXPECT_EQ(d.outcome, Outcome::kAllocate);
  EXPECT_EQ(d.pool, "p");
  EXPECT_EQ(d.ip, "10.0.0.5");
  // Wraps around past the end, skipping the gateway .1.
  auto full_tail = Pool("p", Object::array({{{"subnet", "10.0.0.0/29"}}}),
                        {{"10.0.0.5", "x/a"}, {"10.0.0.6", "x/b"}}, "10.0.0.6");
  EXPECT_EQ(DecideAllocation({Candidate(full_tail)}, "me").ip, "10.0.0.2");
  // No status at all: first usable after the gateway.
  auto fresh = Pool("p", Object::array({{{"subnet", "10.0.0.0/29"}}}));
  EXPECT_EQ(DecideAllocation({Candidate(fresh)}, "me").ip, "10.0.0.2");
}

TEST(IpamTest, PrefersAddressFromOwnHistory) {
  auto pool = Pool("p", Object::array({{{"subnet", "10.0.0.0/24"}}}), Object::object(), "10.0.0.9",
                   {{"10.0.0.7", "me"}, {"10.0.0.3", "other"}});
  EXPECT_EQ(DecideAllocation({Candidate(pool)}, "me").ip, "10.0.0.7");
  EXPECT_EQ(DecideAllocation({Candidate(pool)}, "someone").ip, "10.0.0.10");
}

TEST(IpamTest, AdoptsAddressAlreadyHeldInAnyPool) {
  auto a = Pool("pool-a", kSmallRange);  // has room
  auto b = Pool("pool-b",
                Object::array({{{"subnet", "172.16.3.0/24"},
                                {"rangeStart", "172.16.3.42"},
                                {"rangeEnd", "172.16.3.43"}}}),
                {{"172.16.3.43", "ns/me@1"}}, "172.16.3.43");
  auto d = DecideAllocation({Candidate(a), Candidate(b)}, "ns/me@1");
  EXPECT_EQ(d.outcome, Outcome::kAdopt);
  EXPECT_EQ(d.pool, "pool-b");
  EXPECT_EQ(d.ip, "172.16.3.43");
}

TEST(IpamTest, FallsBackInOrderAndExplainsExhaustion) {
  auto a = Pool("pool-a", kSmallRange, {{"172.16.3.40", "n/m1"}, {"172.16.3.41", "n/m2"}},
                "172.16.3.41");
  auto b = Pool("pool-b", Object::array({{{"subnet", "172.16.3.0/24"},
                                          {"rangeStart", "172.16.3.42"},
                                          {"rangeEnd", "172.16.3.43"}}}));
  auto d = DecideAllocation({Candidate(a), Candidate(b)}, "n/m3");
  EXPECT_EQ(d.outcome, Outcome::kAllocate);
  EXPECT_EQ(d.pool, "pool-b");
  EXPECT_EQ(d.ip, "172.16.3.42");

  auto b_full = Pool("pool-b",
                     Object::array({{{"subnet", "172.16.3.0/24"},
                                     {"rangeStart", "172.16.3.42"},
                                     {"rangeEnd", "172.16.3.43"}}}),
                     {{"172.16.3.42", "n/m3"}, {"172.16.3.43", "n/m4"}}, "172.16.3.43");
  auto e = DecideAllocation({Candidate(a), Candidate(b_full), {"pool-c", std::nullopt}}, "n/m5");
  EXPECT_EQ(e.outcome, Outcome::kExhausted);
  EXPECT_NE(e.message.find("pool-a: all 2 addresses are in use"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("pool-b: all 2 addresses are in use"), std::string::npos);
  EXPECT_NE(e.message.find("pool-c: not found"), std::string::npos);
  EXPECT_NE(e.message.find("ipPoolRefs"), std::string::npos);

  auto none = DecideAllocation({}, "n/m5");
  EXPECT_EQ(none.outcome, Outcome::kExhausted);
  EXPECT_NE(none.message.find("no IP pool is configured"), std::string::npos);
}

TEST(IpamTest, ForeignEntriesOutsideRangeDoNotBreakAndNetworkSelectorFilters) {
  auto pool = Pool("p", kSmallRange, {{"172.16.3.40", "lb/x"}}, "garbage");
  pool["spec"]["selector"] = {{"network", "default/vlan100"}};
  auto d = DecideAllocation({Candidate(pool)}, "me", {"default/vlan200"});
  EXPECT_EQ(d.outcome, Outcome::kExhausted);
  EXPECT_NE(d.message.find("serves network default/vlan100"), std::string::npos);
  auto ok = DecideAllocation({Candidate(pool)}, "me", {"default/vlan100"});
  EXPECT_EQ(ok.outcome, Outcome::kAllocate);
  EXPECT_EQ(ok.ip, "172.16.3.41");
}

TEST(IpamTest, ReservePatchIsGuardedAndComplete) {
  auto pool = Parsed(
      Pool("p", kSmallRange, {{"172.16.3.40", "other"}}, "172.16.3.40", {{"172.16.3.41", "old"}}));
  auto patch = ReservePatch(pool, "172.16.3.41", "ns/me@1");
  ASSERT_TRUE(patch.ok()) << patch.status().ToString();
  EXPECT_EQ(*patch, (Object{{"metadata", {{"resourceVersion", "42"}}},
                            {"status",
                             {{"allocated", {{"172.16.3.41", "ns/me@1"}}},
                              {"allocatedHistory", {{"172.16.3.41", nullptr}}},
                              {"lastAllocated", "172.16.3.41"},
                              {"total", 2},
                              {"available", 0}}}}));
  // Applying the merge patch gives the expected pool status.
  Object obj =
      Pool("p", kSmallRange, {{"172.16.3.40", "other"}}, "172.16.3.40", {{"172.16.3.41", "old"}});
  obj.merge_patch(*patch);
  EXPECT_EQ(obj["status"]["allocated"].size(), 2u);
  EXPECT_TRUE(obj["status"]["allocatedHistory"].empty());

  EXPECT_FALSE(ReservePatch(pool, "172.16.3.40", "me").ok());  // taken
  EXPECT_FALSE(ReservePatch(pool, "172.16.3.42", "me").ok());  // outside the range
  EXPECT_FALSE(ReservePatch(pool, "bogus", "me").ok());
}

TEST(IpamTest, ReleaseRemovesOnlyOurEntries) {
  Object obj =
      Pool("p", kSmallRange, {{"172.16.3.40", "other"}, {"172.16.3.41", "ns/me@1"}}, "172.16.3.41");
  auto pool = Parsed(obj);
  EXPECT_FALSE(ReleasePatch(pool, "nobody"));
  auto patch = ReleasePatch(pool, "ns/me@1");
  ASSERT_TRUE(patch);
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "42");
  obj.merge_patch(*patch);
  EXPECT_EQ(obj["status"]["allocated"], (Object{{"172.16.3.40", "other"}}));
  EXPECT_EQ(obj["status"]["allocatedHistory"], (Object{{"172.16.3.41", "ns/me@1"}}));
  EXPECT_EQ(obj["status"]["available"], 1);
  EXPECT_EQ(obj["status"]["total"], 2);
  EXPECT_EQ(obj["status"]["lastAllocated"], "172.16.3.41");
}

TEST(IpamTest, LargePoolsAreCheap) {
  auto pool =
      Pool("big", Object::array({{{"subnet", "10.0.0.0/8"}}}), {{"10.0.0.2", "a"}}, "10.0.0.2");
  auto parsed = Parsed(pool);
  EXPECT_EQ(TotalAddresses(parsed), (1 << 24) - 3);
  EXPECT_EQ(DecideAllocation({Candidate(pool)}, "me").ip, "10.0.0.3");
}

TEST(IpamTest, TheGoProvidersOwnerFormatIsTheSameMachine) {
  const std::string me = IpOwnerId("mgmt", "team", "m-0");
  EXPECT_TRUE(SameOwner(me, me));
  EXPECT_TRUE(SameOwner("team/m-0", me));
  EXPECT_FALSE(SameOwner("team/m-00", me));
  EXPECT_FALSE(SameOwner("team/m-0@0123456789ab", me));  // another management cluster
  EXPECT_FALSE(SameOwner("other/m-0", me));
  EXPECT_FALSE(SameOwner("team/m-0", "team/m-0-no-suffix"));
}

TEST(IpamTest, ReleaseRemovesTheGoProvidersEntryOfTheMachine) {
  IpPool pool =
      Parsed(Pool("p", kSmallRange, {{"10.0.0.3", "team/m-0"}, {"10.0.0.4", "team/m-1"}}));
  auto patch = ReleasePatch(pool, IpOwnerId("mgmt", "team", "m-0"));
  ASSERT_TRUE(patch);
  EXPECT_TRUE((*patch)["status"]["allocated"]["10.0.0.3"].is_null());
  EXPECT_FALSE((*patch)["status"]["allocated"].contains("10.0.0.4"));
}

}  // namespace
}  // namespace caphv::harvester
