// File: test/unit/controllers/machine_plan_writes_test.cc
//
// What a HarvesterMachine reconcile writes: nothing for a machine whose
// status is as planned (a restart over ready machines), and which status
// changes are written at once rather than held (StatusChangeIsUrgent).

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)

// A control-plane machine whose VM runs with an address, its workload
// cluster reachable and its Node as `node` says.
MachineObservation RunningControlPlane(workload::NodeView node) {
  MachineObservation o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}};
  o.control_plane = true;
  o.workload = {true, "", "", {}, "https://workload"};
  o.node = std::move(node);
  return o;
}

// A machine that runs with an address, its Node registered and initialised:
// the observation a new manager makes of it after a restart, its status the
// one the previous manager reported.
MachineObservation ReadyAfterRestart() {
  MachineObservation o = RunningControlPlane({"m-0", "harvester://vm-uid"});
  o.machine_has_node_ref = true;
  for (int i = 0; i < 4; ++i) {
    MachinePlan p = PlanMachine(o);
    EXPECT_FALSE(p.action) << ActionName(p.action->kind);
    o.hm.status = p.status;  // as written by the previous manager
  }
  return o;
}

TEST(MachinePlanWritesTest, ARestartOverAReadyMachinePlansNoWrite) {
  const MachineObservation o = ReadyAfterRestart();
  ASSERT_TRUE(o.hm.status.ready.value_or(false));
  const MachinePlan p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.status, o.hm.status);  // Report writes a status only when it differs
  EXPECT_TRUE(p.events.empty());
  EXPECT_FALSE(p.wait_for_pool);
  EXPECT_TRUE(p.wait_for_pvcs.empty());
}

TEST(MachinePlanWritesTest, AReadyPoolMachinePlansNoWriteEither) {
  MachineObservation o = Base(true);
  auto pool = PoolObject("pool-a", "10.9.0.10", "10.9.0.20");
  pool["status"]["allocated"] = {{"10.9.0.10", MachineOwnerId(o)}};
  o.pools = {Candidate(pool)};
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.10"}}};
  o.workload = {true, "", "", {}, "https://workload"};
  o.node = workload::NodeView{"m-0", "harvester://vm-uid"};
  o.machine_has_node_ref = true;
  for (int i = 0; i < 4; ++i) o.hm.status = PlanMachine(o).status;
  ASSERT_TRUE(o.hm.status.ready.value_or(false));
  ASSERT_EQ(o.hm.status.allocated_ip_address, "10.9.0.10");
  const MachinePlan p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.status, o.hm.status);
  EXPECT_TRUE(p.events.empty());
}

TEST(MachinePlanWritesTest, ProgressMayWaitAFailureReadinessOrAnAddressMayNot) {
  MachineObservation o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Scheduled", {}};
  o.hm.status = PlanMachine(o).status;  // VMProvisioning, as reported

  o.vmi = VmiView{"Running", {}};  // -> WaitingForIPAddress
  MachinePlan p = PlanMachine(o);
  ASSERT_NE(p.status, o.hm.status);
  EXPECT_FALSE(StatusChangeIsUrgent(o.hm.status, p, false));

  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}};  // -> ready
  p = PlanMachine(o);
  ASSERT_TRUE(p.status.ready.value_or(false));
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, false));

  // Only the addresses change (a second NIC got one).
  o.hm.status = p.status;
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}, {"ExternalIP", "10.9.0.8"}}};
  p = PlanMachine(o);
  ASSERT_NE(p.status.addresses, o.hm.status.addresses);
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, false));

  // A failure comes with its Warning.
  MachinePlan failing = p;
  failing.events.push_back({true, "VMProvisioningFailed", "boom"});
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, failing, false));
}

// The Node's initialisation before its registration is progress: it is
// folded with the registration, which completes the machine and is written
// at once (the reconciler remembers whose write initialised the Node, so a
// later reconcile reports the same reason).
TEST(MachinePlanWritesTest, TheNodeInitialisedMayWaitItsRegistrationMayNot) {
  MachineObservation o = RunningControlPlane({"m-0", "", true});
  o.control_plane_initialized = true;  // Cluster API sets the nodeRef itself
  for (int i = 0; i < 3; ++i) o.hm.status = PlanMachine(o).status;
  MachinePlan p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kInitializeNode);
  o.node = workload::NodeView{"m-0", "harvester://vm-uid", false};
  o.node_initialized_here = true;
  p = PlanMachine(o);
  ASSERT_EQ(Reason(p, kNodeInitialized), "NodeInitialized");
  ASSERT_FALSE(api::IsConditionTrue(p.status.conditions, kNodeRegistered));
  EXPECT_FALSE(StatusChangeIsUrgent(o.hm.status, p, false));

  // Cluster API set the Machine's nodeRef: the machine is complete.
  o.machine_has_node_ref = true;
  p = PlanMachine(o);
  ASSERT_TRUE(api::IsConditionTrue(p.status.conditions, kNodeRegistered));
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, false));
}

// The first control-plane machine: Cluster API does not watch the workload
// cluster's Nodes yet, and finds the Node when this object changes. That
// change is not held.
TEST(MachinePlanWritesTest, TheFirstControlPlanesNodeRegistrationIsWrittenAtOnce) {
  MachineObservation o = RunningControlPlane({"m-0", "", true});
  for (int i = 0; i < 3; ++i) o.hm.status = PlanMachine(o).status;
  ASSERT_EQ(PlanMachine(o).action->kind, ActionKind::kInitializeNode);
  o.node = workload::NodeView{"m-0", "harvester://vm-uid", false};
  o.node_initialized_here = true;
  const MachinePlan p = PlanMachine(o);
  ASSERT_EQ(Reason(p, kNodeRegistered), "NodeRegistered");
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, false));
}

TEST(MachinePlanWritesTest, AnUnsetInitializationIsNotProvisionedFalse) {
  api::HarvesterMachineStatus reported;  // a machine seen the first time
  MachinePlan p;
  p.status.ready = false;
  p.status.initialization = api::Initialization{false};
  EXPECT_FALSE(StatusChangeIsUrgent(reported, p, false));
  p.status.initialization = api::Initialization{true};
  EXPECT_TRUE(StatusChangeIsUrgent(reported, p, false));
}

TEST(MachinePlanWritesTest, PausingIsWrittenAtOnce) {
  MachineObservation o = ReadyAfterRestart();
  o.paused = true;
  const MachinePlan p = PlanMachine(o);
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, false));
}

TEST(MachinePlanWritesTest, ADeletingMachinesStepsMayWaitItsFailuresMayNot) {
  MachineObservation o = ReadyAfterRestart();
  o.deleting = true;
  MachinePlan p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_FALSE(p.status.ready.value_or(true));  // no longer ready: it goes
  EXPECT_FALSE(StatusChangeIsUrgent(o.hm.status, p, true));
  p.events.push_back({true, "VMDeletionFailed", "boom"});
  EXPECT_TRUE(StatusChangeIsUrgent(o.hm.status, p, true));
}

}  // namespace
}  // namespace caphv::controllers
