// End-to-end: a worker's VM deleted on Harvester, outside Cluster API. CAPHV
// makes no new VM for that machine (a disk clone, a cloud-init Secret and a
// pool address for nothing): the HarvesterMachine says the VM is gone
// (VMNotFound, one Warning event, caphv_machine_vm_lost_total) and fails, and
// Cluster API's MachineHealthCheck replaces the Machine with a new one.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

const GroupVersionResource kMachineHealthChecks{"cluster.x-k8s.io", "v1beta1",
                                                "machinehealthchecks", true};

class VmLostTest : public E2ETest {};

TEST_F(VmLostTest, AVmDeletedOnHarvesterIsNotMadeAgainTheMachineIsReplaced) {
  CreateCluster(HarvesterClusterSpec());
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment("workers", 1);
  ASSERT_EQ(WaitForRunningMachines(2).size(), 2u);
  Object mhc = {
      {"apiVersion", "cluster.x-k8s.io/v1beta1"},
      {"kind", "MachineHealthCheck"},
      {"metadata", {{"name", cluster_ + "-workers"}, {"namespace", ns()}}},
      {"spec",
       {{"clusterName", cluster_},
        {"selector", {{"matchLabels", {{"cluster.x-k8s.io/deployment-name", "workers"}}}}},
        {"maxUnhealthy", "100%"},
        {"unhealthyConditions",
         Object::array({{{"type", "Ready"}, {"status", "Unknown"}, {"timeout", "300s"}}})}}}};
  auto created = mgmt_->Create(kMachineHealthChecks, ns(), mhc);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  std::string worker;
  for (const auto& hm : HarvesterMachines()) {
    if (NameOf(hm) != cluster_ + "-cp-0") worker = NameOf(hm);
  }
  ASSERT_FALSE(worker.empty()) << MachinesSummary();
  auto vm = harvester_->Get(kVirtualMachines, target_ns_, worker);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  const std::string old_uid = Str(*vm, "/metadata/uid");
  ASSERT_TRUE(harvester_->Delete(kVirtualMachines, target_ns_, worker).ok());

  Object condition;
  ASSERT_TRUE(Eventually(
      [&] {
        auto hm = HarvesterMachine(worker);
        if (!hm) return true;  // already replaced
        condition = ConditionOf(*hm, "VMProvisioningReady");
        return condition.value("reason", "") == "VMNotFound";
      },
      kWait, kPoll))
      << condition.dump() << MachinesSummary();
  // No VM of that name came back with another uid.
  if (auto again = harvester_->Get(kVirtualMachines, target_ns_, worker); again.ok()) {
    EXPECT_EQ(Str(*again, "/metadata/uid"), old_uid) << "a new VM was made for the machine";
  }
  EXPECT_GE(Metric("caphv_machine_vm_lost_total").value_or(0), 1.0);

  // The MachineHealthCheck replaces it: a new worker Machine runs.
  ASSERT_TRUE(Eventually(
      [&] {
        if (HarvesterMachine(worker)) return false;
        auto running = 0;
        for (const auto& m : Machines()) {
          if (Str(m, "/status/phase") == "Running" && NameOf(m) != worker) ++running;
        }
        return running == 2;
      },
      kWait, kPoll))
      << MachinesSummary();
  EXPECT_FALSE(harvester_->Get(kVirtualMachines, target_ns_, worker).ok())
      << "the lost machine's name got a VM again";
}

}  // namespace
}  // namespace caphv::e2e
