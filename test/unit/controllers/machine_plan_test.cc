// File: test/unit/controllers/machine_plan_test.cc
//
// The HarvesterMachine planner, case by case: every branch a user can hit,
// and a small model of Harvester in which every write is followed by a
// "crash" (the next plan starts from a fresh observation of the world), so
// the whole lifecycle is replayed as if the manager died between any two
// steps.

#include "controllers/machine_plan.h"

#include <gtest/gtest.h>

#include "api/conditions.h"
#include "kube/base64.h"

namespace caphv::controllers {
namespace {

using kube::Object;
using std::chrono::seconds;

constexpr char kMgmtId[] = "mgmt-uid";

const api::Condition* Cond(const MachinePlan& p, std::string_view type) {
  return api::FindCondition(p.status.conditions, type);
}

std::string Reason(const MachinePlan& p, std::string_view type) {
  const api::Condition* c = Cond(p, type);
  return c ? c->reason : "<none>";
}

Object PoolObject(const std::string& name, const std::string& start, const std::string& end) {
  return {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
          {"kind", "IPPool"},
          {"metadata", {{"name", name}, {"resourceVersion", "1"}}},
          {"spec",
           {{"ranges", Object::array({{{"subnet", "10.9.0.0/24"},
                                       {"gateway", "10.9.0.1"},
                                       {"rangeStart", start},
                                       {"rangeEnd", end}}})}}}};
}

harvester::PoolCandidate Candidate(const Object& pool) {
  auto parsed = harvester::ParseIpPool(pool);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return {kube::NameOf(pool), *parsed};
}

CreationInputs Inputs() {
  CreationInputs in;
  in.bootstrap_data = "#cloud-config\nruncmd: [echo hi]\n";
  in.bootstrap_format = "cloud-config";
  in.ssh_public_key = "ssh-ed25519 AAAA test";
  in.images["default/ubuntu"] = {"default", "image-abc", "longhorn-image-abc"};
  return in;
}

// A machine whose Cluster is ready, with its bootstrap data and a working
// Harvester connection: everything a first create needs but the VM.
MachineObservation Base(bool pool_mode) {
  MachineObservation o;
  o.hm.metadata.name = "m-0";
  o.hm.metadata.namespace_ = "team";
  o.hm.metadata.uid = "hm-uid";
  o.hm.metadata.generation = 1;
  o.hm.spec.cpu = 2;
  o.hm.spec.memory = "4Gi";
  o.hm.spec.ssh_user = "ubuntu";
  o.hm.spec.ssh_key_pair = "default/key";
  o.hm.spec.networks = {"default/vlan1"};
  o.hm.spec.volumes = {
      api::Volume{"image", "default/ubuntu", "", "40Gi", 1},
      api::Volume{"storageClass", "", "longhorn", "10Gi", 0},
  };
  o.key = "team/m-0";
  o.has_finalizer = true;
  o.machine_found = true;
  o.bootstrap_secret = "m-0-bootstrap";
  o.cluster_name = "c1";
  o.cluster_found = true;
  o.infrastructure_ready = true;
  api::HarvesterCluster hc;
  hc.metadata.name = "c1";
  hc.metadata.namespace_ = "team";
  hc.spec.target_namespace = "guests";
  if (pool_mode) {
    api::VMNetworkConfig vnc;
    vnc.ip_pool_refs = {"pool-a", "pool-b"};
    vnc.gateway = "10.9.0.1";
    vnc.subnet_mask = "255.255.255.0";
    hc.spec.vm_network_config = vnc;
  }
  o.hc = hc;
  o.management_cluster_id = kMgmtId;
  o.harvester = {true, "", "", {}, "https://harvester:6443"};
  return o;
}

VmView OurVm(bool deleting = false) {
  VmView vm;
  vm.uid = "vm-uid";
  vm.ours = true;
  vm.deleting = deleting;
  vm.remove_pvcs_patch = Object{{"metadata", {{"annotations", {{"x", "y"}}}}}};
  return vm;
}

// --- normal path, step by step ----------------------------------------------------

TEST(MachinePlanTest, WaitsForClusterApiToSetTheOwnerMachine) {
  auto o = Base(false);
  o.machine_found = false;
  o.has_finalizer = false;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(MachinePlanTest, AddsTheFinalizerBeforeAnythingElse) {
  auto o = Base(false);
  o.has_finalizer = false;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kAddFinalizer);
}

TEST(MachinePlanTest, WaitsForTheClusterInfrastructureAndThenTheBootstrapData) {
  auto o = Base(false);
  o.infrastructure_ready = false;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kInfrastructureReady), "WaitingForClusterInfrastructure");
  EXPECT_EQ(Reason(p, api::kReadyCondition), "WaitingForClusterInfrastructure");

  o = Base(false);
  o.bootstrap_secret.clear();
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kBootstrapDataReady), "WaitingForBootstrapData");
  EXPECT_TRUE(p.events.empty());
}

TEST(MachinePlanTest, ConnectingIsReportedWithoutAWarningAndWaitsForTheConnection) {
  auto o = Base(false);
  o.harvester = {false, "Connecting", "connecting to Harvester (identity team/id)", {}, ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "Connecting");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  EXPECT_TRUE(p.events.empty());
}

TEST(MachinePlanTest, AFailedConnectionWarnsOnceAndRetriesAtItsBackoff) {
  auto o = Base(false);
  o.harvester = {false, "HarvesterConnectionFailed", "cannot reach https://10.1.1.1:6443",
                 seconds(8), ""};
  auto p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "HarvesterConnectionFailed");
  EXPECT_EQ(p.wait, Wait::After(seconds(8), p.wait.why));
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_NE(p.events[0].message.find("10.1.1.1"), std::string::npos);

  // Reported already: the same failure again is no new event.
  o.hm.status = p.status;
  EXPECT_TRUE(PlanMachine(o).events.empty());
}

TEST(MachinePlanTest, DhcpFirstCreateReadsInputsThenWritesTheSecretThenTheVm) {
  auto o = Base(false);
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReadCreationInputs);
  EXPECT_EQ(Reason(p, kVmIpAllocated), "DHCP");

  o.inputs = Inputs();
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  EXPECT_TRUE(p.action->create);
  const Object& secret = p.action->body;
  EXPECT_EQ(kube::NameOf(secret), "m-0-cloud-init");
  EXPECT_EQ(kube::NamespaceOf(secret), "guests");
  EXPECT_EQ(secret["metadata"]["annotations"]["harvester.infrastructure.cluster.x-k8s.io/owner"],
            "team/m-0");
  const std::string hash = secret["metadata"]["annotations"][std::string(kAnnotationContentHash)];

  o.cloud_init_secret = SecretView{true, hash};
  p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kCreateVm);
  EXPECT_EQ(kube::NameOf(p.action->body), "m-0");
  EXPECT_EQ(kube::NamespaceOf(p.action->body), "guests");
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMProvisioning");
}

TEST(MachinePlanTest, AnOutdatedSecretOfOursIsAppliedAgainNotCreated) {
  auto o = Base(false);
  o.inputs = Inputs();
  o.cloud_init_secret = SecretView{true, "stale"};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  EXPECT_FALSE(p.action->create);
}

TEST(MachinePlanTest, TheCloudInitSecretOfAnotherClusterIsNeverOverwritten) {
  auto o = Base(false);
  o.inputs = Inputs();
  o.cloud_init_secret = SecretView{false, ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "CloudInitSecretConflict");
  ASSERT_EQ(p.events.size(), 1u);
}

TEST(MachinePlanTest, StaticAddressIsUsedWithoutPools) {
  auto o = Base(true);
  o.hm.spec.network_config = api::NetworkConfig{"10.9.0.50", "255.255.255.0", "10.9.0.1", {}, {}};
  o.inputs = Inputs();
  auto p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kVmIpAllocated), "StaticAddress");
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  auto network_data = kube::Base64Decode(p.action->body["data"]["networkdata"].get<std::string>());
  ASSERT_TRUE(network_data);
  EXPECT_NE(network_data->find("10.9.0.50"), std::string::npos) << *network_data;
}

TEST(MachinePlanTest, MissingInputsAreReportedAndLookedAtAgainLater) {
  auto o = Base(false);
  CreationInputs in;
  in.error_reason = "KeyPairNotFound";
  in.error_message = "cannot read Harvester KeyPair default/key (spec.sshKeyPair): not found";
  in.retry_after = seconds(30);
  o.inputs = in;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "KeyPairNotFound");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kRequeueAfter);
  EXPECT_EQ(p.wait.after, seconds(30));
  EXPECT_EQ(p.events.size(), 1u);
}

TEST(MachinePlanTest, BootstrapDataThatIsBrokenCloudConfigIsReported) {
  auto o = Base(false);
  auto in = Inputs();
  in.bootstrap_data = "#cloud-config\n- just\n- a list\n";
  o.inputs = in;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "InvalidBootstrapData");
}

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
  o.node_provider_id = "harvester://vm-uid";
  EXPECT_EQ(Reason(PlanMachine(o), kNodeRegistered), "NodeRegistered");
  o.node_provider_id.reset();
  o.machine_has_node_ref = true;
  EXPECT_EQ(Reason(PlanMachine(o), kNodeRegistered), "NodeRegistered");
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
  std::optional<VmiView> vmi;
  std::vector<PvcView> pvcs;
  std::optional<SecretView> secret;
  Object pool_a = PoolObject("pool-a", "10.9.0.10", "10.9.0.12");
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
  o.vm = w.vm;
  o.vmi = w.vmi;
  o.pvcs = w.pvcs;
  o.cloud_init_secret = w.secret;
  if (w.pool_mode) o.pools = {Candidate(w.pool_a)};
  return o;
}

// Runs plans until one waits; after every write the next plan starts from a
// fresh observation (what a restarted manager sees). Reads fold into the
// current observation.
MachinePlan Drive(World& w, api::HarvesterMachineStatus& status) {
  MachineObservation o = Observe(w, status);
  for (int step = 0; step < 50; ++step) {
    MachinePlan p = PlanMachine(o);
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

}  // namespace
}  // namespace caphv::controllers
