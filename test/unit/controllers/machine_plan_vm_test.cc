// File: test/unit/controllers/machine_plan_vm_test.cc
//
// The HarvesterMachine planner and an existing VM: adopted, refused when it
// is another cluster's, deleted or replaced outside Cluster API, and its way
// to ready (running with an address, volumes, scheduling, failure domains,
// the Node awaited).

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;

// --- an existing VM --------------------------------------------------------------------

TEST(MachinePlanTest, AnExistingVmOfThisClusterIsAdoptedAndGetsTheProviderId) {
  auto o = Base(false);
  o.vm = OurVm();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kSetProviderID);
  EXPECT_EQ(p.action->value, "harvester://vm-uid");
  EXPECT_EQ(Reason(p, kMachineCreated), "MachineCreated");
}

TEST(MachinePlanTest, AVmOfAnotherClusterIsRefusedWithAConditionAndAnEvent) {
  auto o = Base(false);
  o.vm = OurVm();
  o.vm->ours = false;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMNameConflict");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "VMNameConflict");
}

// A VM deleted on Harvester is not made again: the machine fails, once,
// for a MachineHealthCheck to replace it.
TEST(MachinePlanTest, AVmDeletedOutsideClusterApiIsReportedNotRecreated) {
  auto o = Base(false);
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.inputs = Inputs();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kConfirmVmGone);

  o.vm_absence_confirmed = true;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action) << "nothing may be created for a machine whose VM was deleted";
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMNotFound");
  EXPECT_FALSE(p.status.ready.value_or(true));
  EXPECT_EQ(p.status.failure_reason, "UpdateError");
  EXPECT_NE(p.status.failure_message.find("deleted outside Cluster API"), std::string::npos);
  EXPECT_TRUE(p.vm_lost);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].reason, "VMNotFound");

  // Said once.
  o.hm.status = p.status;
  p = PlanMachine(o);
  EXPECT_FALSE(p.vm_lost);
  EXPECT_TRUE(p.events.empty());
  EXPECT_FALSE(p.action);
}

TEST(MachinePlanTest, AReplacedVmIsAProviderIdMismatch) {
  auto o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://older";
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "ProviderIDMismatch");
}

TEST(MachinePlanTest, TheVmIsReadyOnceItRunsWithAnAddressThenTheNodeIsAwaited) {
  auto o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Scheduled", {}};
  auto p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMProvisioning");
  EXPECT_FALSE(p.status.ready.value_or(false));

  o.vmi = VmiView{"Running", {}};
  EXPECT_EQ(Reason(PlanMachine(o), kVmProvisioningReady), "WaitingForIPAddress");

  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}};
  o.control_plane = true;
  o.workload = {false, "Connecting", "Secret team/c1-kubeconfig does not exist yet", {}, ""};
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));
  ASSERT_TRUE(p.status.initialization);
  EXPECT_TRUE(p.status.initialization->provisioned);
  EXPECT_EQ(p.status.addresses.size(), 1u);
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");
  EXPECT_EQ(Reason(p, kNodeRegistered), "WaitingForWorkloadCluster");

  o.workload = {true, "", "", {}, "https://workload"};
  EXPECT_EQ(Reason(PlanMachine(o), kNodeRegistered), "WaitingForNode");
  o.node = workload::NodeView{"m-0", "harvester://vm-uid"};
  EXPECT_EQ(Reason(PlanMachine(o), kNodeRegistered), "NodeRegistered");
  o.node.reset();
  o.machine_has_node_ref = true;
  EXPECT_EQ(Reason(PlanMachine(o), kNodeRegistered), "NodeRegistered");
}

// KubeVirt holds a VM whose volumes are not there (a missing image, a
// storage class that does not exist): the machine says so, with a warning.
TEST(MachinePlanTest, AVmHeldForItsVolumesSaysWhy) {
  auto o = Base(false);
  o.vm = OurVm();
  o.vm->printable_status = "WaitingForVolumeBinding";
  o.vm->not_synchronized =
      "PVC guests/m-0-disk-1 is not bound: storageclass.storage.k8s.io \"fast\" not found";
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Pending", {}};
  auto p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMVolumesNotReady");
  EXPECT_NE(Cond(p, kVmProvisioningReady)->message.find("storageclass.storage.k8s.io \"fast\""),
            std::string::npos);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_FALSE(p.action);

  o.vm->printable_status = "Starting";
  EXPECT_EQ(Reason(PlanMachine(o), kVmProvisioningReady), "VMProvisioning");
}

// Cluster API put the Machine in a failure domain the cluster publishes: the
// VM is pinned there by the domain's node label, and the machine reports it.
TEST(MachinePlanTest, AMachineInAFailureDomainGetsAVmPinnedToIt) {
  auto o = Base(false);
  auto hc = *o.hc;
  hc.status.failure_domains =
      harvester::FailureDomainsOfHosts({{"h1", "zone-a"}, {"h2", "zone-b"}});
  o.hc = std::make_shared<const api::HarvesterCluster>(std::move(hc));
  o.machine_failure_domain = "zone-b";
  o.hm.spec.failure_domain = "zone-a";  // the Machine's wins
  o.inputs = Inputs();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  o.cloud_init_secret = SecretView{
      true, p.action->body["metadata"]["annotations"][std::string(kAnnotationContentHash)]};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kCreateVm);
  EXPECT_EQ(p.action->body["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                          ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
            Object::parse(R"([{"matchExpressions": [{"key": "topology.kubernetes.io/zone",
                "operator": "In", "values": ["zone-b"]}]}])"));
  EXPECT_EQ(p.status.failure_domain, "zone-b");
}

// No host takes the VM: the machine says why in KubeVirt's words, with a
// warning, and waits for KubeVirt to say more.
TEST(MachinePlanTest, AnUnschedulableVmSaysWhy) {
  auto o = Base(false);
  o.vm = OurVm();
  o.vm->printable_status = "ErrorUnschedulable";
  o.vm->unschedulable =
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Scheduling", {}};
  o.machine_failure_domain = "zone-x";
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMUnschedulable");
  EXPECT_EQ(Cond(p, kVmProvisioningReady)->message,
            "no Harvester host can run the VM guests/m-0 in failure domain zone-x: 0/3 nodes are "
            "available: 3 node(s) didn't match Pod's node affinity/selector.");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);

  o.vm->printable_status = "Starting";  // a host took it
  EXPECT_EQ(Reason(PlanMachine(o), kVmProvisioningReady), "VMProvisioning");
}

TEST(MachinePlanTest, OnceTheControlPlaneIsInitializedClusterApiWatchesTheNodes) {
  auto o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}};
  o.control_plane = true;
  o.control_plane_initialized = true;  // the workload cluster is not even looked at
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Cond(p, kNodeRegistered), nullptr);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  // The nodeRef Cluster API sets is reported with the same message as a
  // Node found earlier: no status write for it.
  o.machine_has_node_ref = true;
  p = PlanMachine(o);
  o.control_plane_initialized = false;
  o.machine_has_node_ref = false;
  EXPECT_EQ(Cond(PlanMachine(o), kNodeRegistered)->reason, "WaitingForWorkloadCluster");
  o.control_plane = false;  // a worker: Cluster API re-reconciles it once initialized
  EXPECT_EQ(Cond(PlanMachine(o), kNodeRegistered), nullptr);
  o.control_plane = true;
  o.workload = {true, "", "", {}, "https://workload"};
  o.node = workload::NodeView{"m-0", "harvester://vm-uid"};
  EXPECT_EQ(Cond(p, kNodeRegistered)->message, Cond(PlanMachine(o), kNodeRegistered)->message);
}

TEST(MachinePlanTest, AFailedVmIsNotReady) {
  auto o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.hm.status.ready = true;
  o.vmi = VmiView{"Failed", {}};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.status.ready.value_or(true));
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMProvisioningFailed");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "VMProvisioningFailed");
}

// A failed write is reported on the condition its action's row names, with
// its name and the object in the message, once as a Warning; a Conflict is
// only retried, and writes to the management cluster report nothing.
TEST(MachinePlanTest, AFailedActionIsReportedOnTheConditionOfItsRow) {
  auto o = Base(true);
  o.pools = {Candidate(PoolObject("pool-a", "10.9.0.10", "10.9.0.11"))};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kReserveAddress);
  const MachineAction reserve = *p.action;

  MarkActionFailed(o, reserve, kube::Status(kube::StatusCode::kConflict, "changed"), p);
  EXPECT_NE(Reason(p, kVmIpAllocated), "VMIPAllocationFailed");
  EXPECT_TRUE(p.events.empty());

  MarkActionFailed(o, reserve, kube::Status(kube::StatusCode::kForbidden, "denied"), p);
  const api::Condition* c = Cond(p, kVmIpAllocated);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "False");
  EXPECT_EQ(c->reason, "VMIPAllocationFailed");
  EXPECT_EQ(c->message, "ReserveAddress pool-a: denied");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "VMIPAllocationFailed");
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_EQ(p.events[0].reason, "VMIPAllocationFailed");

  auto q = PlanMachine(o);
  MarkActionFailed(o, MachineAction{ActionKind::kSetProviderID, "m-0", "harvester://x", {}, false},
                   kube::Status(kube::StatusCode::kForbidden, "denied"), q);
  EXPECT_EQ(q.status.conditions, PlanMachine(o).status.conditions);
  EXPECT_TRUE(q.events.empty());
}

}  // namespace
}  // namespace caphv::controllers
