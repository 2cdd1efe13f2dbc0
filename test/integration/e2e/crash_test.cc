// End-to-end: caphv-manager killed with SIGKILL in the middle of provisioning
// (as soon as the first VM exists) and started again. The machines finish
// provisioning and nothing is doubled: one VM, one cloud-init Secret and one
// pool entry per HarvesterMachine.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

using CrashRecoveryTest = E2ETest;

TEST_F(CrashRecoveryTest, KilledMidProvisioningAndRestarted) {
  const Pool pool = CreatePool(8);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 2);

  ASSERT_TRUE(Eventually([&] { return !OnHarvester(kVirtualMachines).empty(); }, kWait,
                         std::chrono::milliseconds(50)))
      << "no VM was created" << MachinesSummary();
  KillManager();
  const size_t vms_at_kill = OnHarvester(kVirtualMachines).size();
  std::cout << "killed caphv-manager with " << vms_at_kill << " VM(s) on Harvester\n";
  StartManager();

  const auto machines = WaitForRunningMachines(3);
  ASSERT_EQ(machines.size(), 3u);
  // Settled, and still settled a moment later: nothing is created twice.
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "right away" : "5 s later");
    if (round == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
    std::set<std::string> machine_names;
    for (const auto& hm : HarvesterMachines()) {
      const std::string name = NameOf(hm);
      machine_names.insert(name);
      EXPECT_EQ(EntriesOf(pool.name, name).size(), 1u) << name;
      EXPECT_EQ(hm["status"].value("allocatedIPAddress", ""),
                EntriesOf(pool.name, name).empty() ? "" : EntriesOf(pool.name, name).front());
      int disks = 0;
      for (const auto& pvc : NamesOnHarvester(kube::resources::kPersistentVolumeClaims)) {
        if (pvc.rfind(name + "-disk-", 0) == 0) ++disks;
      }
      EXPECT_EQ(disks, 1) << name;
    }
    EXPECT_EQ(machine_names.size(), 3u);
    const auto vms = NamesOnHarvester(kVirtualMachines);
    EXPECT_EQ(std::set<std::string>(vms.begin(), vms.end()), machine_names);
    EXPECT_EQ(vms.size(), 3u);
    std::set<std::string> cloud_init;
    for (const auto& s : NamesOnHarvester(kube::resources::kSecrets)) {
      if (s.size() > 11 && s.compare(s.size() - 11, 11, "-cloud-init") == 0) cloud_init.insert(s);
    }
    std::set<std::string> expected;
    for (const auto& n : machine_names) expected.insert(n + "-cloud-init");
    EXPECT_EQ(cloud_init, expected);
    EXPECT_EQ(Allocated(pool.name).size(), 3u) << ::testing::PrintToString(Allocated(pool.name));
  }
}

}  // namespace
}  // namespace caphv::e2e
