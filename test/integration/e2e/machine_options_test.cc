// End-to-end: what a HarvesterMachine of the Go provider v0.7+ may say about
// its own VM.
// - Per-role networks: the control plane takes its address from the
//   cluster's pool on vlan100, the workers (a MachineDeployment whose
//   template carries spec.vmNetworkConfig) from their own pool on vlan200,
//   with their own gateway in cloud-init; the cluster's deletion returns
//   every address to its pool.
// - Firmware: a Secure Boot machine with a persistent TPM runs; its VM has
//   the SMM feature, without which the simulated KubeVirt refuses it as
//   KubeVirt does.

#include "e2e_fixture.h"
#include "kube/base64.h"

namespace caphv::e2e {
namespace {

class MachineOptionsTest : public E2ETest {};

TEST_F(MachineOptionsTest, ControlPlanesAndWorkersGetAddressesFromTheirOwnNetworksAndPools) {
  const Pool cp_pool = CreatePools({2}).front();
  const Pool worker_pool = CreatePools({3}, "default/vlan200").front();
  ASSERT_NE(cp_pool.prefix, worker_pool.prefix);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({cp_pool});
  CreateCluster(spec);
  const std::string cp = cluster_ + "-cp-0";
  CreateMachine(cp, true);
  Object worker = MachineSpec();
  worker["networks"] = Object::array({"default/vlan200"});
  worker["vmNetworkConfig"] = VmNetworkConfig({worker_pool});
  CreateMachineDeployment(cluster_ + "-md", 2, worker);
  ASSERT_EQ(WaitForRunningMachines(3).size(), 3u) << MachinesSummary();

  int workers = 0;
  for (const auto& hm : HarvesterMachines()) {
    const std::string name = NameOf(hm);
    SCOPED_TRACE(name);
    const Pool& pool = name == cp ? cp_pool : worker_pool;
    workers += name == cp ? 0 : 1;
    const std::string ip = hm["status"].value("allocatedIPAddress", "");
    EXPECT_EQ(hm["status"].value("allocatedPoolRef", ""), pool.name);
    EXPECT_TRUE(pool.Contains(ip)) << ip;
    EXPECT_EQ(EntriesOf(pool.name, name), std::vector<std::string>{ip});
    bool reported = false;
    for (const auto& a : hm["status"].value("addresses", Object::array())) {
      reported |= a.value("address", "") == ip;
    }
    EXPECT_TRUE(reported) << hm["status"].dump();
    // The VM's NIC is on the role's network, its cloud-init on its gateway.
    auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    EXPECT_EQ((*vm)["spec"]["template"]["spec"]["networks"][0]["multus"]["networkName"],
              name == cp ? "default/vlan100" : "default/vlan200");
    auto secret = harvester_->Get(kube::resources::kSecrets, target_ns_, name + "-cloud-init");
    ASSERT_TRUE(secret.ok()) << secret.status().ToString();
    auto network_data = kube::Base64Decode((*secret)["data"].value("networkdata", ""));
    ASSERT_TRUE(network_data);
    EXPECT_NE(network_data->find(pool.prefix + "1"), std::string::npos) << *network_data;
    const Pool& other = name == cp ? worker_pool : cp_pool;
    EXPECT_EQ(network_data->find(other.prefix), std::string::npos) << *network_data;
  }
  EXPECT_EQ(workers, 2);

  DeleteClusterAndWait();
  EXPECT_TRUE(Allocated(cp_pool.name).empty());
  EXPECT_TRUE(Allocated(worker_pool.name).empty());
}

TEST_F(MachineOptionsTest, ASecureBootMachineWithAPersistentTpmRuns) {
  CreateCluster(HarvesterClusterSpec());
  const std::string name = cluster_ + "-cp-0";
  Object spec = MachineSpec();
  spec["firmware"] = {{"efi", true}, {"secureBoot", true}};
  spec["tpm"] = {{"enabled", true}, {"persistent", true}};
  CreateMachine(name, true, spec);
  ASSERT_EQ(WaitForRunningMachines(1).size(), 1u) << MachinesSummary();

  auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  const Object& domain = (*vm)["spec"]["template"]["spec"]["domain"];
  EXPECT_EQ(domain["firmware"]["bootloader"]["efi"]["secureBoot"], true) << domain.dump();
  EXPECT_EQ(domain["features"]["smm"]["enabled"], true) << domain.dump();
  EXPECT_EQ(domain["devices"]["tpm"]["persistent"], true) << domain.dump();

  // Without SMM, Harvester's KubeVirt refuses such a VM.
  Object copy = *vm;
  copy["metadata"] = {{"name", name + "-nosmm"}, {"namespace", target_ns_}};
  copy["metadata"]["annotations"] = (*vm)["metadata"].value("annotations", Object::object());
  copy.erase("status");
  copy["spec"]["template"]["spec"]["domain"].erase("features");
  auto refused = harvester_->Create(kVirtualMachines, target_ns_, copy);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("SecureBoot requires SMM, which is currently disabled"),
            std::string::npos)
      << refused.status().ToString();

  DeleteClusterAndWait();
  EXPECT_TRUE(OnHarvester(kVirtualMachines).empty());
}

}  // namespace
}  // namespace caphv::e2e
