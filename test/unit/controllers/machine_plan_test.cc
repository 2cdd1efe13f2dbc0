// File: test/unit/controllers/machine_plan_test.cc
//
// The HarvesterMachine planner, case by case: the normal path, from the owner
// Machine to the Secret and VM created, and the inputs it waits for or
// reports (bootstrap data, the cluster's infrastructure, the connection).

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

}  // namespace
}  // namespace caphv::controllers
