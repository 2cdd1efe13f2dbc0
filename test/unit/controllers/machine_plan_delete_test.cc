// File: test/unit/controllers/machine_plan_delete_test.cc
//
// The HarvesterMachine planner: pause, the deletion order at each step, and
// a small model of Harvester in which every write is followed by a "crash"
// (the next plan starts from a fresh observation of the world), so the whole
// lifecycle is replayed as if the manager died between any two steps.

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;
using std::chrono::seconds;

// --- paused ------------------------------------------------------------------------------

TEST(MachinePlanTest, PausedDoesNothingAtAllDeletionIncluded) {
  for (bool deleting : {false, true}) {
    auto o = Base(true);
    o.has_finalizer = false;
    o.paused = true;
    o.deleting = deleting;
    o.vm = OurVm();
    auto p = PlanMachine(o);
    EXPECT_FALSE(p.action) << "deleting=" << deleting;
    EXPECT_EQ(Reason(p, api::kPausedCondition), "Paused");
  }
  auto o = Base(false);
  api::Condition paused;
  paused.type = "Paused";
  paused.status = "True";
  paused.reason = "Paused";
  paused.observed_generation = 1;
  o.hm.status.conditions.push_back(paused);
  EXPECT_EQ(Reason(PlanMachine(o), api::kPausedCondition), "NotPaused");
}

// --- deletion ----------------------------------------------------------------------------

MachineObservation Deleting(bool pool_mode) {
  auto o = Base(pool_mode);
  o.deleting = true;
  o.hm.spec.provider_id = "harvester://vm-uid";
  return o;
}

TEST(MachinePlanTest, DeletionMarksPvcsThenDeletesTheVmThenWaitsForIt) {
  auto o = Deleting(false);
  o.vm = OurVm();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kMarkPvcsForRemoval);
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Deleting");

  o.vm->pvcs_marked_for_removal = true;
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteVm);

  o.vm->deleting = true;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(MachinePlanTest, AVmTheCacheDoesNotShowIsLookedUpBeforeAnythingIsReleased) {
  auto o = Deleting(true);
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kConfirmVmGone);
}

TEST(MachinePlanTest, AfterTheVmPvcsThenSecretThenAddressThenFinalizer) {
  auto o = Deleting(true);
  o.vm_absence_confirmed = true;
  const std::string disk0 = harvester::PvcName("m-0", "hm-uid", 0);
  o.pvcs = {{disk0, false}, {"m-0-disk-7-legacy1", false}, {"m-01-disk-0-zzz", false}};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeletePvc);
  EXPECT_EQ(p.action->name, disk0);

  o.pvcs = {{disk0, true}, {"m-0-disk-7-legacy1", false}, {"m-01-disk-0-zzz", false}};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->name, "m-0-disk-7-legacy1");

  o.pvcs = {{disk0, true}, {"m-0-disk-7-legacy1", true}, {"m-01-disk-0-zzz", false}};
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait_for_pvcs, (std::vector<std::string>{disk0, "m-0-disk-7-legacy1"}));

  o.pvcs = {{"m-01-disk-0-zzz", false}};  // another machine's disk
  o.cloud_init_secret = SecretView{true, "h"};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeleteCloudInitSecret);

  o.cloud_init_secret.reset();
  Object b = PoolObject("pool-b", "10.9.0.20", "10.9.0.21");
  b["status"] = {{"allocated", {{"10.9.0.21", MachineOwnerId(o)}}}};
  o.pools = {Candidate(b)};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReleaseAddress);
  EXPECT_EQ(p.action->name, "pool-b");

  o.pools = {Candidate(PoolObject("pool-b", "10.9.0.20", "10.9.0.21"))};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

TEST(MachinePlanTest, BesideAVmOfAnotherClusterOnlyThisMachinesOwnThingsGo) {
  auto o = Deleting(false);
  o.vm = OurVm();
  o.vm->ours = false;
  o.vm->uid = "their-vm-uid";  // not the VM spec.providerID names
  const std::string disk1 = harvester::PvcName("m-0", "hm-uid", 1);
  o.pvcs = {{"m-0-disk-0-theirs", false}, {disk1, false}};
  o.cloud_init_secret = SecretView{false, ""};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kDeletePvc);
  EXPECT_EQ(p.action->name, disk1);
  o.pvcs = {{"m-0-disk-0-theirs", false}};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

TEST(MachinePlanTest, BrokenIdentityDuringDeletionKeepsTheFinalizerWhileSomethingExists) {
  auto o = Deleting(false);
  o.harvester = {false, "IdentitySecretUnavailable", "cannot read the identity Secret team/id",
                 seconds(20), ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "IdentitySecretUnavailable");
  EXPECT_EQ(p.wait.after, seconds(20));
  EXPECT_EQ(p.events.size(), 1u);

  // A machine that never got a VM nor an address holds nothing there.
  o.hm.spec.provider_id.clear();
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

TEST(MachinePlanTest, AMissingHarvesterClusterBlocksDeletionOnlyWhenSomethingWasCreated) {
  auto o = Deleting(false);
  o.hc.reset();
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "HarvesterClusterNotFound");
  o.hm.spec.provider_id.clear();
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

TEST(MachinePlanTest, WithoutAFinalizerDeletionDoesNothing) {
  auto o = Deleting(false);
  o.has_finalizer = false;
  o.vm = OurVm();
  EXPECT_FALSE(PlanMachine(o).action);
}

// --- the whole lifecycle, crashing after every write ----------------------------------------

// Harvester and the machine as the planner would observe them.
struct World {
  bool pool_mode = true;
  bool finalizer = false;
  bool deleting = false;
  std::string provider_id;
  std::optional<VmView> vm;
  bool vm_cached = true;  // false: it lacks CAPHV's labels (the Go provider's)
  std::optional<VmiView> vmi;
  std::optional<VmiView> unlabelled_vmi;  // runs, but the cache cannot see it
  std::vector<PvcView> pvcs;
  std::optional<SecretView> secret;
  bool unlabelled_secret = false;  // exists, but the cache cannot see it
  Object pool_a = PoolObject("pool-a", "10.9.0.10", "10.9.0.12");
  std::optional<Object> node;  // the workload Node (the workload cluster is reachable)
  int node_writes = 0;
  int vm_creates = 0;
  int reservations = 0;
  std::vector<ActionKind> writes;
};

MachineObservation Observe(const World& w, const api::HarvesterMachineStatus& status) {
  auto o = Base(w.pool_mode);
  o.hm.status = status;
  o.has_finalizer = w.finalizer;
  o.deleting = w.deleting;
  o.hm.spec.provider_id = w.provider_id;
  if (w.vm_cached) o.vm = w.vm;
  o.vmi = w.vmi;
  o.pvcs = w.pvcs;
  o.cloud_init_secret = w.secret;
  if (w.pool_mode) o.pools = {Candidate(w.pool_a)};
  o.workload = {true, "", "", {}, "https://workload"};
  if (w.node) o.node = workload::ViewOfNode(*w.node);
  return o;
}

// Runs plans until one waits; after every write the next plan starts from a
// fresh observation (what a restarted manager sees). Reads fold into the
// current observation.
MachinePlan Drive(World& w, api::HarvesterMachineStatus& status) {
  MachineObservation o = Observe(w, status);
  for (int step = 0; step < 50; ++step) {
    MachinePlan p = PlanMachine(o);
    for (const auto& c : p.status.conditions) {
      EXPECT_FALSE(c.reason.empty()) << c.type << " has no reason (the CRD refuses it)";
    }
    if (!p.action) {
      status = p.status;
      return p;
    }
    const MachineAction& a = *p.action;
    switch (a.kind) {
      case ActionKind::kReadCreationInputs:
        o.inputs = Inputs();
        continue;
      case ActionKind::kConfirmVmGone:
        o.vm_absence_confirmed = !w.vm;
        o.vm = w.vm;
        continue;
      case ActionKind::kAddFinalizer:
        w.finalizer = true;
        break;
      case ActionKind::kRemoveFinalizer:
        w.finalizer = false;
        break;
      case ActionKind::kReserveAddress:
      case ActionKind::kReleaseAddress:
        EXPECT_EQ(a.body["metadata"]["resourceVersion"], w.pool_a["metadata"]["resourceVersion"]);
        w.pool_a.merge_patch(a.body);
        w.pool_a["metadata"]["resourceVersion"] = std::to_string(
            std::stoi(w.pool_a["metadata"]["resourceVersion"].get<std::string>()) + 1);
        if (a.kind == ActionKind::kReserveAddress) ++w.reservations;
        break;
      case ActionKind::kApplyCloudInitSecret:
        w.secret = SecretView{
            true, a.body["metadata"]["annotations"][std::string(kAnnotationContentHash)]};
        break;
      case ActionKind::kCreateVm:
        EXPECT_FALSE(w.vm) << "a second VM";
        ++w.vm_creates;
        w.vm = OurVm();
        for (size_t i = 0; i < 2; ++i) {
          w.pvcs.push_back({harvester::PvcName("m-0", "hm-uid", i), false});
        }
        break;
      case ActionKind::kSetProviderID:
        w.provider_id = a.value;
        break;
      case ActionKind::kAdoptCloudInitSecret:
        EXPECT_EQ(a.name, "m-0-cloud-init");
        if (w.unlabelled_secret) w.secret = SecretView{true, ""};
        w.unlabelled_secret = false;
        break;
      case ActionKind::kAdoptVm:
        EXPECT_TRUE(a.body["metadata"]["labels"].contains(std::string(harvester::kLabelClusterId)));
        w.vm->ours = w.vm->adopted = w.vm_cached = true;
        break;
      case ActionKind::kAdoptVmi:
        if (w.unlabelled_vmi) w.vmi = w.unlabelled_vmi;
        w.unlabelled_vmi.reset();
        break;
      case ActionKind::kMarkPvcsForRemoval:
        w.vm->pvcs_marked_for_removal = true;
        break;
      case ActionKind::kDeleteVm:
        w.vm->deleting = true;
        break;
      case ActionKind::kDeletePvc:
        for (auto& pvc : w.pvcs) pvc.deleting |= pvc.name == a.name;
        break;
      case ActionKind::kDeleteCloudInitSecret:
        w.secret.reset();
        break;
      case ActionKind::kInitializeNode:
        // A JSON Patch: its `test`s hold on the world's Node (patch() throws otherwise).
        *w.node = w.node->patch(a.body);
        (*w.node)["metadata"]["resourceVersion"] = "2";
        ++w.node_writes;
        break;
      case ActionKind::kGuardEtcdNode:
      case ActionKind::kRequestEtcdRemoval:
      case ActionKind::kReleaseEtcdNode:
        ADD_FAILURE() << "this world's machine is no control plane: " << ActionName(a.kind);
        break;
    }
    w.writes.push_back(a.kind);
    status = p.status;       // as if reported (or not: the next plan re-derives)
    o = Observe(w, status);  // the crash
  }
  ADD_FAILURE() << "no wait after 50 steps";
  return {};
}

TEST(MachinePlanTest, LifecycleSurvivesACrashAfterEveryWriteWithOneVmAndOneAddress) {
  World w;
  api::HarvesterMachineStatus status;
  MachinePlan p = Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kAddFinalizer, ActionKind::kReserveAddress,
                                     ActionKind::kApplyCloudInitSecret, ActionKind::kCreateVm,
                                     ActionKind::kSetProviderID}));
  EXPECT_EQ(status.allocated_ip_address, "10.9.0.10");

  // Replaying from the same world changes nothing.
  w.writes.clear();
  Drive(w, status);
  EXPECT_TRUE(w.writes.empty());

  // Harvester starts the VM.
  w.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.10"}}};
  Drive(w, status);
  EXPECT_TRUE(w.writes.empty());
  EXPECT_TRUE(status.ready.value_or(false));

  // The guest registers its Node uninitialised: one write, whatever crashes.
  const Object other = {{"key", "example.com/dedicated"}, {"effect", "NoExecute"}};
  w.node =
      Object{{"metadata", {{"name", "m-0"}, {"resourceVersion", "1"}}},
             {"spec",
              {{"taints", Object::array({other,
                                         {{"key", "node.cloudprovider.kubernetes.io/uninitialized"},
                                          {"effect", "NoSchedule"}}})}}}};
  Drive(w, status);
  EXPECT_EQ(w.writes, (std::vector<ActionKind>{ActionKind::kInitializeNode}));
  EXPECT_EQ((*w.node)["spec"]["providerID"], "harvester://vm-uid");
  EXPECT_EQ((*w.node)["spec"]["taints"], Object::array({other}));
  w.writes.clear();
  // After the crash that follows it (status not reported): nothing more.
  status.conditions.clear();
  Drive(w, status);
  EXPECT_TRUE(w.writes.empty());
  EXPECT_EQ(w.node_writes, 1);
  EXPECT_TRUE(api::IsConditionTrue(status.conditions, kNodeInitialized));

  // Deletion; Harvester removes the VM but leaves the PVCs to us.
  w.deleting = true;
  p = Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kMarkPvcsForRemoval, ActionKind::kDeleteVm}));
  w.vm.reset();
  w.vmi.reset();
  w.writes.clear();
  p = Drive(w, status);
  EXPECT_EQ(w.writes, (std::vector<ActionKind>{ActionKind::kDeletePvc, ActionKind::kDeletePvc}));
  EXPECT_EQ(p.wait_for_pvcs.size(), 2u);
  w.pvcs.clear();
  w.writes.clear();
  Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kDeleteCloudInitSecret,
                                     ActionKind::kReleaseAddress, ActionKind::kRemoveFinalizer}));
  EXPECT_EQ(w.vm_creates, 1);
  EXPECT_EQ(w.reservations, 1);
  EXPECT_FALSE(w.pool_a["status"]["allocated"].contains("10.9.0.10"));
  EXPECT_FALSE(w.finalizer);
}

// A machine the Go provider v0.2.x made: a VM, Secret and VMI without
// CAPHV's labels, an address held under "<namespace>/<name>", spec.providerID
// naming the VM.
World GoProviderWorld() {
  World w;
  w.finalizer = true;
  w.provider_id = "harvester://vm-uid";
  VmView vm;
  vm.uid = "vm-uid";
  vm.running = true;
  vm.cloud_init_secret = "m-0-cloud-init";
  vm.remove_pvcs_patch = Object{{"metadata", {{"annotations", {{"x", "y"}}}}}};
  w.vm = vm;
  w.vm_cached = false;
  w.unlabelled_secret = true;
  w.unlabelled_vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.11"}}};
  w.pvcs = {{"m-0-disk-0-ab12c", false}, {"m-0-disk-1-x9y8z", false}};
  w.pool_a["status"]["allocated"]["10.9.0.11"] = "team/m-0";
  return w;
}

TEST(MachinePlanTest, AGoProviderMachineIsTakenOverWithoutASecondVmOrAddress) {
  World w = GoProviderWorld();
  api::HarvesterMachineStatus status;
  MachinePlan p = Drive(w, status);
  EXPECT_EQ(w.writes, (std::vector<ActionKind>{ActionKind::kAdoptCloudInitSecret,
                                               ActionKind::kAdoptVm, ActionKind::kAdoptVmi}));
  EXPECT_EQ(w.vm_creates, 0);
  EXPECT_EQ(w.reservations, 0);
  EXPECT_EQ(status.allocated_ip_address, "10.9.0.11");
  EXPECT_TRUE(status.ready.value_or(false));
  ASSERT_EQ(status.addresses.size(), 1u);
  EXPECT_EQ(status.addresses[0].address, "10.9.0.11");

  // Taken over once: replaying changes nothing.
  w.writes.clear();
  Drive(w, status);
  EXPECT_TRUE(w.writes.empty());

  // Deleting it removes everything the Go provider made, and its address.
  w.deleting = true;
  Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kMarkPvcsForRemoval, ActionKind::kDeleteVm}));
  w.vm.reset();
  w.vmi.reset();
  w.writes.clear();
  Drive(w, status);
  EXPECT_EQ(w.writes, (std::vector<ActionKind>{ActionKind::kDeletePvc, ActionKind::kDeletePvc}));
  w.pvcs.clear();
  w.writes.clear();
  Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kDeleteCloudInitSecret,
                                     ActionKind::kReleaseAddress, ActionKind::kRemoveFinalizer}));
  EXPECT_TRUE(w.pool_a["status"]["allocated"].empty());
}

TEST(MachinePlanTest, AGoProviderMachineDeletedBeforeTheTakeoverIsAdoptedThenCleanedUp) {
  World w = GoProviderWorld();
  w.deleting = true;
  api::HarvesterMachineStatus status;
  Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kAdoptCloudInitSecret, ActionKind::kAdoptVm,
                                     ActionKind::kMarkPvcsForRemoval, ActionKind::kDeleteVm}));
  w.vm.reset();
  w.pvcs.clear();
  w.writes.clear();
  Drive(w, status);
  EXPECT_EQ(w.writes,
            (std::vector<ActionKind>{ActionKind::kDeleteCloudInitSecret,
                                     ActionKind::kReleaseAddress, ActionKind::kRemoveFinalizer}));
  EXPECT_EQ(w.vm_creates, 0);
}

}  // namespace
}  // namespace caphv::controllers
