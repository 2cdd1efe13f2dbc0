// File: test/unit/controllers/machine_plan_pools_test.cc
//
// The HarvesterMachine planner and addresses from pools: the first free
// address reserved, a machine's own VM network, an address held adopted, and
// exhausted pools.

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;

// --- addresses from pools --------------------------------------------------------------

TEST(MachinePlanTest, PoolModeReservesTheFirstFreeAddressOfTheFirstPoolWithRoom) {
  auto o = Base(true);
  Object a = PoolObject("pool-a", "10.9.0.10", "10.9.0.10");
  a["status"] = {{"allocated", {{"10.9.0.10", "team/other@abc"}}}};
  o.pools = {Candidate(a), Candidate(PoolObject("pool-b", "10.9.0.20", "10.9.0.21"))};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReserveAddress);
  EXPECT_EQ(p.action->name, "pool-b");
  EXPECT_EQ(p.action->value, "10.9.0.20");
  EXPECT_EQ(p.action->body["metadata"]["resourceVersion"], "1");
}

// Per-role networks: a worker's own vmNetworkConfig replaces the cluster's
// for it: its address comes from its own pool (never the cluster's), and its
// cloud-init carries its own gateway.
TEST(MachinePlanTest, AMachinesOwnVmNetworkReplacesTheClustersPoolsAndGateway) {
  auto o = Base(true);
  api::VMNetworkConfig workers;
  workers.ip_pool_ref = "workers";
  workers.gateway = "10.7.0.1";
  workers.subnet_mask = "255.255.0.0";
  o.hm.spec.vm_network_config = workers;
  // The cluster's pools have room; the worker's pool is the one used.
  auto worker_pool = [](const std::string& holder) {
    Object w = PoolObject("workers", "10.7.3.4", "10.7.3.9");
    w["spec"]["ranges"][0]["subnet"] = "10.7.0.0/16";
    w["spec"]["ranges"][0]["gateway"] = "10.7.0.1";
    if (!holder.empty()) w["status"] = {{"allocated", {{"10.7.3.4", holder}}}};
    return Candidate(w);
  };
  o.pools = {Candidate(PoolObject("pool-a", "10.9.0.10", "10.9.0.11")), worker_pool("")};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReserveAddress);
  EXPECT_EQ(p.action->name, "workers");
  EXPECT_EQ(p.action->value, "10.7.3.4");

  // Its pool missing, it waits and says where the pools are configured.
  const auto all = o.pools;
  o.pools = {all[0]};
  p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kVmIpAllocated), "VMIPPoolExhausted");
  const std::string message = Cond(p, kVmIpAllocated)->message;
  EXPECT_NE(message.find("workers: not found"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.vmNetworkConfig.ipPoolRefs of the HarvesterMachine"),
            std::string::npos)
      << message;
  o.pools = all;

  // Reserved: the cloud-init network data is the worker network's.
  o.hm.status.allocated_ip_address = "10.7.3.4";
  o.hm.status.allocated_pool_ref = "workers";
  o.pools[1] = worker_pool(harvester::IpOwnerId(kMgmtId, "team", "m-0"));
  o.inputs = Inputs();
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret) << Reason(p, kVmIpAllocated);
  auto network_data = kube::Base64Decode(p.action->body["data"]["networkdata"].get<std::string>());
  ASSERT_TRUE(network_data);
  EXPECT_NE(network_data->find("10.7.3.4"), std::string::npos) << *network_data;
  EXPECT_NE(network_data->find("10.7.0.1"), std::string::npos) << *network_data;
  EXPECT_EQ(network_data->find("10.9.0.1"), std::string::npos) << *network_data;
}

TEST(MachinePlanTest, AnAddressThisMachineHoldsIsAdoptedNeverASecondOne) {
  // A crash between the reservation and the status write: the pool shows
  // the entry, the status does not.
  auto o = Base(true);
  Object b = PoolObject("pool-b", "10.9.0.20", "10.9.0.21");
  b["status"] = {{"allocated", {{"10.9.0.21", MachineOwnerId(o)}}}};
  o.pools = {Candidate(PoolObject("pool-a", "10.9.0.10", "10.9.0.11")), Candidate(b)};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReadCreationInputs);
  EXPECT_EQ(p.status.allocated_ip_address, "10.9.0.21");
  EXPECT_EQ(p.status.allocated_pool_ref, "pool-b");
  EXPECT_EQ(Reason(p, kVmIpAllocated), "VMIPAllocated");
}

TEST(MachinePlanTest, ExhaustedPoolsWarnWaitForAPoolChangeAndRecover) {
  auto o = Base(true);
  Object a = PoolObject("pool-a", "10.9.0.10", "10.9.0.10");
  a["status"] = {{"allocated", {{"10.9.0.10", "team/other@abc"}}}};
  o.pools = {Candidate(a)};  // pool-b does not exist
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmIpAllocated), "VMIPPoolExhausted");
  EXPECT_TRUE(p.wait_for_pool);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "VMIPPoolExhausted");

  // The other machine went away: its address is free again.
  o.hm.status = p.status;
  o.pools = {Candidate(PoolObject("pool-a", "10.9.0.10", "10.9.0.10"))};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReserveAddress);
  EXPECT_EQ(p.action->value, "10.9.0.10");
}

}  // namespace
}  // namespace caphv::controllers
