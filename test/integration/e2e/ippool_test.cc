// End-to-end: VM addresses from an ordered list of Harvester IP pools. The
// first pool fills, then the next; when every pool is full the machine says
// so (condition and Warning event) and waits, and it gets the first address
// that frees, without anyone touching it.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

class IPPoolTest : public E2ETest {};

TEST_F(IPPoolTest, FallsBackAcrossPoolsAndWaitsForAFreeAddress) {
  const auto pools = CreatePools({2, 2});
  const Pool& first = pools[0];
  const Pool& second = pools[1];
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig(pools);
  ASSERT_TRUE(spec["vmNetworkConfig"].contains("ipPoolRefs"));
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  for (int i = 0; i < 3; ++i) CreateMachine(cluster_ + "-w-" + std::to_string(i), false);
  ASSERT_EQ(WaitForRunningMachines(4).size(), 4u);

  // Two addresses from each pool, each recorded on its machine and in its pool.
  std::map<std::string, int> per_pool;
  std::map<std::string, std::string> ip_of;
  for (const auto& hm : HarvesterMachines()) {
    const Object& st = hm["status"];
    const std::string ip = st.value("allocatedIPAddress", "");
    const std::string pool_ref = st.value("allocatedPoolRef", "");
    ip_of[NameOf(hm)] = ip;
    ++per_pool[pool_ref];
    const Pool& pool = pool_ref == first.name ? first : second;
    EXPECT_TRUE(pool.Contains(ip)) << NameOf(hm) << ": " << ip << " from " << pool_ref;
    EXPECT_EQ(EntriesOf(pool.name, NameOf(hm)), std::vector<std::string>{ip}) << NameOf(hm);
  }
  EXPECT_EQ(per_pool[first.name], 2) << MachinesSummary();
  EXPECT_EQ(per_pool[second.name], 2) << MachinesSummary();
  EXPECT_EQ(Allocated(first.name).size(), 2u);
  EXPECT_EQ(Allocated(second.name).size(), 2u);

  // A fifth machine finds every pool full: it says so and gets no VM.
  const std::string waiting = cluster_ + "-w-3";
  CreateMachine(waiting, false);
  Object condition;
  ASSERT_TRUE(Eventually(
      [&] {
        auto hm = HarvesterMachine(waiting);
        if (hm) condition = ConditionOf(*hm, "VMIPAllocated");
        return condition.value("status", "") == "False" &&
               condition.value("reason", "") == "VMIPPoolExhausted";
      },
      kWait, kPoll))
      << "VMIPAllocated: " << condition.dump() << MachinesSummary();
  Object warning;
  EXPECT_TRUE(Eventually(
      [&] {
        for (const auto& e : EventsOf(waiting)) {
          if (e.value("reason", "") == "VMIPPoolExhausted" && e.value("type", "") == "Warning" &&
              Str(e, "/involvedObject/kind") == "HarvesterMachine") {
            warning = e;
            return true;
          }
        }
        return false;
      },
      std::chrono::seconds(30), kPoll))
      << ::testing::PrintToString(EventsOf(waiting).size()) << " events";
  EXPECT_FALSE(harvester_->Get(kVirtualMachines, target_ns_, waiting).ok())
      << "a VM was created without an address";
  // What the operations guide's CAPHVIPPoolAllocationErrors alert watches.
  EXPECT_GE(Metric("caphv_ippool_allocation_errors_total").value_or(0), 1.0);
  EXPECT_TRUE(HarvesterMachine(waiting)
                  ->value("status", Object::object())
                  .value("allocatedIPAddress", "")
                  .empty());

  // One machine goes: the waiting one takes its address by itself.
  const std::string leaving = cluster_ + "-w-0";
  const std::string freed = ip_of[leaving];
  ASSERT_TRUE(mgmt_->Delete(kMachines, ns(), leaving).ok());
  std::string got;
  EXPECT_TRUE(Eventually(
      [&] {
        auto hm = HarvesterMachine(waiting);
        got = hm ? (*hm)["status"].value("allocatedIPAddress", "") : "";
        return got == freed;
      },
      kWait, kPoll))
      << "waiting machine has \"" << got << "\", expected the freed " << freed << MachinesSummary();
  EXPECT_GE(Metric("caphv_ippool_releases_total").value_or(0), 1.0);
  const auto machines = WaitForRunningMachines(4);
  auto hm = HarvesterMachine(waiting);
  ASSERT_TRUE(hm.has_value());
  EXPECT_TRUE(ConditionTrue(*hm, "VMIPAllocated")) << ConditionOf(*hm, "VMIPAllocated").dump();
  const Pool& freed_pool = first.Contains(freed) ? first : second;
  EXPECT_EQ((*hm)["status"].value("allocatedPoolRef", ""), freed_pool.name);
  EXPECT_EQ(EntriesOf(freed_pool.name, waiting), std::vector<std::string>{freed});
  EXPECT_TRUE(EntriesOf(freed_pool.name, leaving).empty());
  EXPECT_EQ(Allocated(first.name).size() + Allocated(second.name).size(), 4u);
}

}  // namespace
}  // namespace caphv::e2e
