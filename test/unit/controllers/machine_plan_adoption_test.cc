// File: test/unit/controllers/machine_plan_adoption_test.cc
//
// PlanMachine, the identity rule case by case: which VMs, Secrets, VMIs and
// pool entries on Harvester are this machine's (adopted, relabelled) and
// which are another cluster's (never touched). The takeover lifecycles with a
// crash after every write are in machine_plan_delete_test.cc.

#include <gtest/gtest.h>

#include "controllers/machine/machine_plan.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "machine_plan_fixtures.h"

namespace caphv::controllers {
namespace {

using namespace machine_plan_test;  // NOLINT(google-build-using-namespace)

// A VM spec.providerID names but without this cluster's labels.
VmView RecordedVm() {
  VmView vm = OurVm();
  vm.ours = false;
  vm.running = true;
  vm.cloud_init_secret = "m-0-cloud-init";
  return vm;
}

MachineObservation Recorded() {
  auto o = Base(false);
  o.hm.spec.provider_id = "harvester://vm-uid";
  o.vm = RecordedVm();
  return o;
}

TEST(MachinePlanAdoptionTest, ARecordedVmNotInTheCacheIsLookedUpLive) {
  auto o = Recorded();
  o.vm.reset();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kConfirmVmGone);
  // Known absent: deleted outside Cluster API; nothing is made again.
  o.vm_absence_confirmed = true;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMNotFound");
}

TEST(MachinePlanAdoptionTest, TheCloudInitSecretTheVmNamesIsRelabelledFirst) {
  auto o = Recorded();
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kAdoptCloudInitSecret);
  EXPECT_EQ(p.action->name, "m-0-cloud-init");
  const Object& labels = p.action->body["metadata"]["labels"];
  EXPECT_EQ(labels[std::string(harvester::kLabelClusterId)],
            harvester::ClusterId({kMgmtId, "team", "c1"}));
  EXPECT_EQ(labels[std::string(harvester::kLabelManagedBy)], "caphv");
  EXPECT_EQ(p.action->body["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)],
            "team/m-0");
}

TEST(MachinePlanAdoptionTest, ThenTheVmWithTheLabelsOfAVmCaphvWouldMake) {
  auto o = Recorded();
  o.control_plane = true;
  o.cloud_init_secret_adopted = true;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kAdoptVm);
  harvester::VmInputs vi;
  vi.name = "m-0";
  vi.cluster = {kMgmtId, "team", "c1"};
  vi.control_plane = true;
  const auto want = harvester::VmLabels(vi);
  EXPECT_EQ(p.action->body["metadata"]["labels"], Object(want));
  EXPECT_EQ(p.action->body["spec"]["template"]["metadata"]["labels"], Object(want));
  EXPECT_EQ(want.at(std::string(harvester::kLabelLegacyMachineType)), "controlplane-c1");
  EXPECT_TRUE(p.action->body["metadata"]["annotations"].contains(
      std::string(harvester::kAnnotationAdopted)));
}

TEST(MachinePlanAdoptionTest, AnAlreadyLabelledSecretIsNotPatchedAgain) {
  auto o = Recorded();
  o.cloud_init_secret = SecretView{true, "hash"};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kAdoptVm);
}

TEST(MachinePlanAdoptionTest, TheRunningVmiOfAnAdoptedVmIsRelabelledOnce) {
  auto o = Recorded();
  o.vm->ours = true;
  o.vm->adopted = true;
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kAdoptVmi);
  EXPECT_TRUE(
      p.action->body["metadata"]["labels"].contains(std::string(harvester::kLabelClusterId)));
  // Patched (or found gone) in this reconcile: the VM's own state decides.
  o.vmi_adopted = true;
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMProvisioning");
}

TEST(MachinePlanAdoptionTest, CaphvsOwnVmsNeverHaveTheirVmiPatched) {
  auto o = Recorded();
  o.vm->ours = true;  // not adopted: its VMI carries the labels from the start
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMProvisioning");
}

TEST(MachinePlanAdoptionTest, AVmSpecProviderIdDoesNotNameIsAnotherClustersEvenUnlabelled) {
  auto o = Recorded();
  o.hm.spec.provider_id.clear();  // e.g. the Go provider crashed before recording it
  auto p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMNameConflict");
  o.hm.spec.provider_id = "harvester://another-uid";
  p = PlanMachine(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kVmProvisioningReady), "VMNameConflict");
}

TEST(MachinePlanAdoptionTest, AVmOfAnotherClusterIsNeverTouchedWhileDeleting) {
  auto o = Recorded();
  o.deleting = true;
  o.hm.spec.provider_id = "harvester://another-uid";
  o.pvcs = {{"m-0-disk-0-ab12c", false}};
  o.cloud_init_secret = SecretView{false, ""};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kRemoveFinalizer);
}

TEST(MachinePlanAdoptionTest, TheGoProvidersPoolEntryIsThisMachinesAddress) {
  auto o = Base(true);
  Object pool = PoolObject("pool-a", "10.9.0.10", "10.9.0.12");
  pool["status"]["allocated"]["10.9.0.12"] = "team/m-0";
  pool["status"]["allocated"]["10.9.0.10"] = "team/m-1";  // another machine's
  o.pools = {Candidate(pool)};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_NE(p.action->kind, ActionKind::kReserveAddress);
  EXPECT_EQ(p.status.allocated_ip_address, "10.9.0.12");
  EXPECT_EQ(p.status.allocated_pool_ref, "pool-a");
}

TEST(MachinePlanAdoptionTest, AnEntryOfAnotherManagementClusterIsNotThisMachines) {
  auto o = Base(true);
  Object pool = PoolObject("pool-a", "10.9.0.10", "10.9.0.12");
  pool["status"]["allocated"]["10.9.0.10"] = "team/m-0@0123456789ab";
  o.pools = {Candidate(pool)};
  auto p = PlanMachine(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, ActionKind::kReserveAddress);
  EXPECT_EQ(p.action->value, "10.9.0.11");
}

TEST(MachinePlanAdoptionTest, TheRecordedManagementClusterIdKeepsTheIdentityAfterAMove) {
  std::map<std::string, std::string> annotations = {
      {std::string(harvester::kAnnotationManagementClusterId), "old-mgmt"}};
  EXPECT_EQ(harvester::ManagementClusterIdOf(annotations, "new-mgmt"), "old-mgmt");
  EXPECT_EQ(harvester::ManagementClusterIdOf({}, "new-mgmt"), "new-mgmt");
  // The same machine's pool entry and labels then match.
  auto o = Base(true);
  o.management_cluster_id = "old-mgmt";
  Object pool = PoolObject("pool-a", "10.9.0.10", "10.9.0.12");
  pool["status"]["allocated"]["10.9.0.11"] = harvester::IpOwnerId("old-mgmt", "team", "m-0");
  o.pools = {Candidate(pool)};
  auto p = PlanMachine(o);
  EXPECT_EQ(p.status.allocated_ip_address, "10.9.0.11");
}

}  // namespace
}  // namespace caphv::controllers
