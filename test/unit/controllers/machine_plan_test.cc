// File: test/unit/controllers/machine_plan_test.cc
//
// The HarvesterMachine planner, case by case: the normal path, from the owner
// Machine to a registered Node, with addresses from pools, adoption and
// conflicts with objects of another cluster.

#include "controllers/machine/machine_plan.h"

#include <gtest/gtest.h>

#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)
using kube::Object;
using std::chrono::seconds;

// --- normal path, step by step ----------------------------------------------------

TEST(MachinePlanTest, WaitsForClusterApiToSetTheOwnerMachine) {
  auto o = Base(false);
  o.machine_found = false;
  o.has_finalizer = false;
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(MachinePlanTest, ReportsTheFailureDomainTheMachineIsIn) {
  auto o = Base(false);
  EXPECT_EQ(PlanMachine(o).status.failure_domain, "");
  // The HarvesterMachine's own field, unless its Machine names one.
  o.hm.spec.failure_domain = "zone-a";
  EXPECT_EQ(PlanMachine(o).status.failure_domain, "zone-a");
  o.machine_failure_domain = "zone-b";
  EXPECT_EQ(PlanMachine(o).status.failure_domain, "zone-b");
  // Paused: the status stays as it was reported.
  o.paused = true;
  o.hm.status.failure_domain = "zone-a";
  EXPECT_EQ(PlanMachine(o).status.failure_domain, "zone-a");
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

TEST(MachinePlanTest, AProvisionedMachineStaysReadyWhileItsConnectionIsBuilt) {
  // Provisioned and reported Ready.
  auto o = Base(false);
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Running", {{"ExternalIP", "10.9.0.7"}}};
  o.workload = {true, "", "", {}, "https://workload"};
  const auto ready = PlanMachine(o);
  ASSERT_EQ(Reason(ready, api::kReadyCondition), "Ready");
  o.hm.status = ready.status;

  // The manager restarted: its first connection to Harvester is under way.
  o.harvester = {false, "Connecting", "connecting to Harvester (identity team/id)", {}, ""};
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
  EXPECT_EQ(p.status.conditions, ready.status.conditions);
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_TRUE(p.events.empty());

  // The connection failed: that is reported.
  o.harvester = {false, "HarvesterConnectionFailed", "cannot reach https://10.1.1.1:6443",
                 seconds(8), ""};
  EXPECT_EQ(Reason(PlanMachine(o), kVmProvisioningReady), "HarvesterConnectionFailed");
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

TEST(MachinePlanTest, BootstrapDataThatCannotBeMergedIsSaidOnceAndRemembered) {
  auto o = Base(false);
  auto in = Inputs();
  in.bootstrap_data = "#!/bin/sh\necho hi\n";
  in.bootstrap_format = "";
  o.inputs = in;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  EXPECT_EQ(Reason(p, kBootstrapDataReady), "BootstrapDataNotMerged");
  EXPECT_EQ(Cond(p, kBootstrapDataReady)->status, "True");
  EXPECT_NE(Cond(p, kBootstrapDataReady)->message.find("shellscript"), std::string::npos);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_TRUE(p.events[0].warning);
  EXPECT_EQ(p.events[0].reason, "BootstrapDataNotMerged");
  const Object& ann = p.action->body["metadata"]["annotations"];
  const std::string why = ann[std::string(kAnnotationUserDataNotMerged)];
  EXPECT_NE(why.find("shellscript"), std::string::npos);

  // Reported once: the next reconciles (the VM runs, no inputs read) keep the
  // reason from the Secret's annotation and emit nothing more.
  o.hm.status.conditions = p.status.conditions;
  o.inputs.reset();
  o.cloud_init_secret = SecretView{true, "h", why};
  o.vm = OurVm();
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vmi = VmiView{"Running", {}};
  p = PlanMachine(o);
  EXPECT_EQ(Reason(p, kBootstrapDataReady), "BootstrapDataNotMerged");
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "WaitingForIPAddress");
  EXPECT_NE(Cond(p, kVmProvisioningReady)->message.find("not merged"), std::string::npos);
}

TEST(MachinePlanTest, Rke2JinjaBootstrapDataIsMergedWithTheGuestAgentAndKey) {
  auto o = Base(false);
  auto in = Inputs();
  in.bootstrap_data = "## template: jinja\n#cloud-config\nruncmd:\n- rke2 up\n";
  o.inputs = in;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, ActionKind::kApplyCloudInitSecret);
  EXPECT_EQ(Reason(p, kBootstrapDataReady), "BootstrapDataReady");
  EXPECT_TRUE(p.events.empty());
  EXPECT_FALSE(p.action->body["metadata"]["annotations"].contains(
      std::string(kAnnotationUserDataNotMerged)));
  auto user_data = kube::Base64Decode(p.action->body["data"]["userdata"].get<std::string>());
  ASSERT_TRUE(user_data);
  EXPECT_EQ(user_data->rfind("## template: jinja\n#cloud-config\n", 0), 0u) << *user_data;
  EXPECT_NE(user_data->find("qemu-guest-agent"), std::string::npos) << *user_data;
  EXPECT_NE(user_data->find("ssh-ed25519 AAAA test"), std::string::npos) << *user_data;
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
  o.hc->status.failure_domains =
      harvester::FailureDomainsOfHosts({{"h1", "zone-a"}, {"h2", "zone-b"}});
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
