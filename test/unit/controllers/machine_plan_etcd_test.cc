// File: test/unit/controllers/machine_plan_etcd_test.cc
//
// The HarvesterMachine planner and a control-plane machine's etcd member:
// the Node finalizer while the VM lives, the member's removal (through
// RKE2's annotation) before the VM goes, the last member kept, the Cluster's
// own deletion, the timeout, and the finalizer released at the end.

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;

workload::EtcdNodeView EtcdNode() {
  workload::EtcdNodeView n;
  n.name = "m-0";
  n.etcd = true;
  n.member = "m-0-1a2b3c4d";
  n.resource_version = "7";
  return n;
}

// A running control-plane machine whose Node registered and is initialised.
MachineObservation RunningControlPlane() {
  auto o = Base(false);
  o.control_plane = true;
  o.machine_has_node_ref = true;
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vm = OurVm();
  o.vm->running = true;
  o.vmi = VmiView{"Running", {api::MachineAddress{"InternalIP", "10.0.0.5"}}, ""};
  api::Condition init;
  init.type = std::string(kNodeInitialized);
  init.status = "True";
  init.reason = "NodeInitialized";
  init.observed_generation = 1;
  o.hm.status.conditions.push_back(init);
  o.workload.ready = true;
  o.etcd_node = EtcdNode();
  o.other_etcd_members = 2;
  o.now = std::chrono::system_clock::now();
  return o;
}

MachineObservation DeletingControlPlane() {
  auto o = RunningControlPlane();
  o.deleting = true;
  o.vm->pvcs_marked_for_removal = true;
  o.hm.metadata.deletion_timestamp = api::FormatTime(o.now);
  return o;
}

TEST(MachinePlanEtcdTest, ARunningControlPlaneGuardsItsEtcdNodeOnce) {
  auto o = RunningControlPlane();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kGuardEtcdNode);
  EXPECT_EQ(p.action->name, "m-0");
  EXPECT_EQ(p.action->body["metadata"]["finalizers"],
            Object::array({std::string(workload::kEtcdNodeFinalizer)}));

  o.etcd_node->has_finalizer = true;
  EXPECT_FALSE(PlanMachine(o).action);
  // A worker's Node, or a Node without etcd, is never guarded.
  o = RunningControlPlane();
  o.control_plane = false;
  EXPECT_FALSE(PlanMachine(o).action);
  o = RunningControlPlane();
  o.etcd_node->etcd = false;
  EXPECT_FALSE(PlanMachine(o).action);
}

TEST(MachinePlanEtcdTest, DeletionAsksRke2ToRemoveTheMemberWaitsThenDeletesTheVm) {
  auto o = DeletingControlPlane();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRequestEtcdRemoval);
  EXPECT_EQ(p.action->body["metadata"]["annotations"]["etcd.rke2.cattle.io/remove"], "true");
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "RemovingEtcdMember");

  o.etcd_node->removal_requested = true;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "RemovingEtcdMember");

  o.etcd_node->removed_member = "m-0-1a2b3c4d";
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "EtcdMemberRemoved");
}

TEST(MachinePlanEtcdTest, RemovedByTheControlPlaneProviderFirstGoesStraightToTheVm) {
  auto o = DeletingControlPlane();
  o.etcd_node->removal_requested = true;
  o.etcd_node->removed_member = "m-0-1a2b3c4d";
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
}

TEST(MachinePlanEtcdTest, TheLastMemberIsKeptAndTheClustersDeletionSkipsRemoval) {
  auto o = DeletingControlPlane();
  o.other_etcd_members = 0;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "EtcdMemberKept");

  o = DeletingControlPlane();
  o.cluster_deleting = true;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_EQ(Cond(p, kEtcdMemberRemoved), nullptr);
}

TEST(MachinePlanEtcdTest, WorkersAndNodelessMachinesDeleteTheirVmAtOnce) {
  auto o = DeletingControlPlane();
  o.control_plane = false;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  o = DeletingControlPlane();
  o.etcd_node.reset();
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
}

TEST(MachinePlanEtcdTest, AfterTheTimeoutTheVmGoesWithAWarning) {
  auto o = DeletingControlPlane();
  o.etcd_node->removal_requested = true;
  o.now += kEtcdRemovalTimeout + std::chrono::seconds(1);
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "EtcdMemberRemovalTimedOut");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_NE(p.events[0].message.find("etcdctl member remove"), std::string::npos);
  EXPECT_TRUE(p.etcd_member_left);
  // Decided once: a later plan (the VM's deletion failed and is retried)
  // does not count the member again.
  o.hm.status.conditions = p.status.conditions;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_FALSE(p.etcd_member_left);

  // An unreachable workload cluster: wait, then the same.
  o = DeletingControlPlane();
  o.workload = ConnectionView{};
  o.workload.reason = "Connecting";
  o.workload.message = "being built";
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "WaitingForWorkloadCluster");
  o.now += kEtcdRemovalTimeout;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);
  EXPECT_EQ(Reason(p, kEtcdMemberRemoved), "EtcdMemberRemovalFailed");
  EXPECT_TRUE(p.etcd_member_left);
}

TEST(MachinePlanEtcdTest, TheNodeFinalizerGoesAfterTheVmBeforeOursAndNotOnAnotherNode) {
  auto o = DeletingControlPlane();
  o.vm.reset();
  o.vm_absence_confirmed = true;
  o.etcd_node->has_finalizer = true;
  o.etcd_node->removed_member = "m-0-1a2b3c4d";
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReleaseEtcdNode);
  EXPECT_EQ(p.action->name, "m-0");
  EXPECT_EQ(p.action->body["metadata"]["finalizers"], Object::array());

  o.etcd_node->has_finalizer = false;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

// The workload cluster does not answer once the VM is gone: the Node may keep
// the finalizer, so the deletion waits for it, then finishes with a Warning
// saying how to lift it; not for a worker, a machine whose Node never
// initialised, or when the Cluster goes too.
TEST(MachinePlanEtcdTest, AnUnreachableWorkloadHoldsTheLastStepUntilTheTimeout) {
  auto o = DeletingControlPlane();
  o.vm.reset();
  o.vm_absence_confirmed = true;
  o.etcd_node.reset();
  o.workload = ConnectionView{};
  o.workload.reason = "HarvesterConnectionFailed";
  o.workload.message = "connection refused";
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "WaitingForWorkloadCluster");
  ASSERT_NE(Cond(p, kVmProvisioningReady), nullptr);
  EXPECT_NE(Cond(p, kVmProvisioningReady)->message.find("connection refused"), std::string::npos);
  EXPECT_TRUE(p.events.empty());

  o.now += kEtcdRemovalTimeout;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "EtcdNodeFinalizerLeft");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_NE(p.events[0].message.find("kubectl patch node m-0"), std::string::npos)
      << p.events[0].message;

  // Before the timeout, these finish at once.
  o.now -= kEtcdRemovalTimeout;
  const auto finished_at_once = [](MachineObservation m) {
    auto plan = PlanMachine(m);
    return plan.action && plan.action->kind == ActionKind::kRemoveFinalizer;
  };
  auto worker = o;
  worker.control_plane = false;
  EXPECT_TRUE(finished_at_once(worker));
  auto going = o;
  going.cluster_deleting = true;
  EXPECT_TRUE(finished_at_once(going));
  auto never_initialised = o;
  never_initialised.hm.status.conditions.clear();
  EXPECT_TRUE(finished_at_once(never_initialised));
  EXPECT_FALSE(finished_at_once(o));
}

}  // namespace
}  // namespace caphv::controllers
