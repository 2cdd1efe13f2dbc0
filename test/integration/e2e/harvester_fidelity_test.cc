// End-to-end: what a real Harvester does that a kind simulator would hide.
//  - Inline IP pools (loadBalancerConfig.ipPool, vmNetworkConfig.ipPool) on a
//    Harvester that already has its one global pool (the bed's capi-pool):
//    Harvester's IPPool webhook refuses a second global pool, so CAPHV's
//    pools carry no scope; the cluster provisions from them, machine
//    addresses are only the declared NIC's (never the link-local address the
//    guest agent also reports), and deleting the cluster deletes the pools.
//  - KubeVirt reports a bridge NIC's address only through qemu-guest-agent.
//    A guest whose user data lost the agent (the simulator's namespace knob
//    sim.caphv.io/strip-guest-agent) runs but never shows an address, and the
//    machine says what it waits for; bootstrap data CAPHV cannot merge (a
//    shell script) is said once, with a Warning Event, before the same wait.

#include "e2e_fixture.h"
#include "kube/base64.h"

namespace caphv::e2e {
namespace {

const GroupVersionResource kStorageClasses{"storage.k8s.io", "v1", "storageclasses", false};

class HarvesterFidelityTest : public E2ETest {
 protected:
  // A /24 of 172.21.x.0 no pool of the bed uses.
  std::string FreePrefix() const { return caphv::testing::UnusedPoolPrefix(*harvester_, "172.21"); }

  // The target namespace made before the cluster, labelled as given.
  void CreateTargetNamespace(const Object& labels) {
    Object ns = {{"apiVersion", "v1"},
                 {"kind", "Namespace"},
                 {"metadata", {{"name", target_ns_}, {"labels", labels}}}};
    auto r = harvester_->Create(kube::resources::kNamespaces, "", ns);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Waits until HarvesterMachine `name` reports VMProvisioningReady False
  // with `reason`; returns that condition.
  Object WaitForProvisioningReason(const std::string& name, const std::string& reason) {
    Object condition;
    EXPECT_TRUE(Eventually(
        [&] {
          auto hm = HarvesterMachine(name);
          if (hm) condition = ConditionOf(*hm, "VMProvisioningReady");
          return condition.value("status", "") == "False" &&
                 condition.value("reason", "") == reason;
        },
        kWait, kPoll))
        << "VMProvisioningReady: " << condition.dump() << MachinesSummary();
    return condition;
  }

  // The VMI of `name` runs, and no interface of it shows an address.
  void ExpectRunningWithoutAddress(const std::string& name) {
    Object vmi;
    ASSERT_TRUE(Eventually(
        [&] {
          auto got = harvester_->Get(kVirtualMachineInstances, target_ns_, name);
          if (got.ok()) vmi = *got;
          return got.ok() && Str(vmi, "/status/phase") == "Running";
        },
        kWait, kPoll))
        << vmi.dump();
    for (const auto& nic : vmi["status"].value("interfaces", Object::array())) {
      EXPECT_FALSE(nic.contains("ipAddress")) << nic.dump();
    }
    auto hm = HarvesterMachine(name);
    ASSERT_TRUE(hm);
    EXPECT_FALSE((*hm)["status"].value("ready", false)) << hm->dump();
    EXPECT_TRUE((*hm)["status"].value("addresses", Object::array()).empty()) << hm->dump();
  }
};

TEST_F(HarvesterFidelityTest, InlinePoolsNextToTheGlobalPoolProvisionAndGoWithTheCluster) {
  auto global = harvester_->Get(kIPPools, "", "capi-pool");
  ASSERT_TRUE(global.ok()) << global.status().ToString();
  ASSERT_EQ(Str(*global, "/spec/selector/scope/0/namespace"), "*")
      << "the bed's capi-pool is Harvester's global pool";

  const std::string lb_net = FreePrefix();
  const std::string vm_net = FreePrefix();
  ASSERT_NE(lb_net, vm_net);
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"},
                                {"ipPool",
                                 {{"vmNetwork", "default/vlan100"},
                                  {"subnet", lb_net + "0/24"},
                                  {"gateway", lb_net + "1"},
                                  {"rangeStart", lb_net + "10"},
                                  {"rangeEnd", lb_net + "12"}}}};
  spec["vmNetworkConfig"] = {{"gateway", vm_net + "1"},
                             {"subnetMask", "255.255.255.0"},
                             {"ipPool",
                              {{"vmNetwork", "default/vlan100"},
                               {"subnet", vm_net + "0/24"},
                               {"gateway", vm_net + "1"},
                               {"rangeStart", vm_net + "10"},
                               {"rangeEnd", vm_net + "19"}}}};
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachine(cluster_ + "-w-0", false);
  ASSERT_EQ(WaitForRunningMachines(2).size(), 2u);
  const Object hc = WaitForClusterReady();

  // Two pools of this cluster, neither global, each serving its own side.
  kube::ListOptions mine;
  mine.label_selector = std::string(kClusterNameLabel) + "=" + cluster_;
  auto pools = harvester_->List(kIPPools, "", mine);
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
  ASSERT_EQ(pools->items.size(), 2u);
  for (const auto& p : pools->items) {
    EXPECT_FALSE(p["spec"]["selector"].contains("scope")) << p.dump();
    EXPECT_EQ(Str(p, "/spec/selector/network"), "default/vlan100");
  }
  EXPECT_EQ(Str(hc, "/spec/controlPlaneEndpoint/host").rfind(lb_net, 0), 0u) << hc.dump();
  for (const auto& hm : HarvesterMachines()) {
    const Object addresses = hm["status"].value("addresses", Object::array());
    ASSERT_EQ(addresses.size(), 1u) << hm.dump();
    EXPECT_EQ(addresses[0].value("address", "").rfind(vm_net, 0), 0u) << hm.dump();
    // KubeVirt shows the guest agent's link-local address too; the machine does not.
    auto vmi = harvester_->Get(kVirtualMachineInstances, target_ns_, NameOf(hm));
    ASSERT_TRUE(vmi.ok());
    bool link_local = false;
    for (const auto& nic : (*vmi)["status"].value("interfaces", Object::array())) {
      for (const auto& ip : nic.value("ipAddresses", Object::array())) {
        if (ip.get<std::string>().rfind("fe80:", 0) == 0) link_local = true;
      }
    }
    EXPECT_TRUE(link_local) << vmi->dump();
  }
  // The global pool was never touched by this cluster.
  for (const auto& [ip, owner] : Allocated("capi-pool")) {
    EXPECT_EQ(owner.find(ns() + "/"), std::string::npos) << ip << " " << owner;
  }

  DeleteClusterAndWait();
  EXPECT_TRUE(Eventually(
      [&] {
        auto left = harvester_->List(kIPPools, "", mine);
        return left.ok() && left->items.empty();
      },
      kWait, kPoll))
      << "the cluster's pools stayed on Harvester";
}

TEST_F(HarvesterFidelityTest, AGuestWithoutTheAgentNeverShowsAnAddressAndTheMachineSaysWhy) {
  CreateTargetNamespace({{"sim.caphv.io/strip-guest-agent", "true"}});
  CreateCluster(HarvesterClusterSpec());
  const std::string name = cluster_ + "-cp-0";
  CreateMachine(name, true);
  const Object condition = WaitForProvisioningReason(name, "WaitingForIPAddress");
  EXPECT_NE(condition.value("message", "").find("qemu-guest-agent"), std::string::npos)
      << condition.dump();
  ExpectRunningWithoutAddress(name);
  // The bootstrap data was merged: CAPHV did its part.
  auto hm = HarvesterMachine(name);
  ASSERT_TRUE(hm);
  EXPECT_EQ(ConditionOf(*hm, "BootstrapDataReady").value("reason", ""), "BootstrapDataReady");
}

TEST_F(HarvesterFidelityTest, BootstrapDataThatCannotBeMergedIsReportedOnce) {
  // The bootstrap provider wrote a shell script.
  auto secret = mgmt_->Patch(
      kube::resources::kSecrets, ns(), BootstrapSecret("control-plane"), kube::PatchType::kMerge,
      {{"data", {{"value", kube::Base64Encode("#!/bin/sh\necho e2e\n")}, {"format", nullptr}}}});
  ASSERT_TRUE(secret.ok()) << secret.status().ToString();
  CreateCluster(HarvesterClusterSpec());
  const std::string name = cluster_ + "-cp-0";
  CreateMachine(name, true);

  const Object condition = WaitForProvisioningReason(name, "WaitingForIPAddress");
  EXPECT_NE(condition.value("message", "").find("not merged"), std::string::npos)
      << condition.dump();
  auto hm = HarvesterMachine(name);
  ASSERT_TRUE(hm);
  const Object bootstrap = ConditionOf(*hm, "BootstrapDataReady");
  EXPECT_EQ(bootstrap.value("reason", ""), "BootstrapDataNotMerged") << bootstrap.dump();
  EXPECT_NE(bootstrap.value("message", "").find("shellscript"), std::string::npos);
  EXPECT_TRUE(HasWarning(name, "BootstrapDataNotMerged"));
  int warnings = 0;
  for (const auto& e : EventsOf(name)) {
    if (e.value("reason", "") == "BootstrapDataNotMerged") warnings += e.value("count", 1);
  }
  EXPECT_EQ(warnings, 1) << "said once, not at every reconcile";
  ExpectRunningWithoutAddress(name);
}

// A data disk of a storage class Harvester does not have: the PVC stays
// Pending, KubeVirt holds the VM (WaitingForVolumeBinding) and the machine
// says why; once the class exists the VM starts by itself.
TEST_F(HarvesterFidelityTest, AMissingStorageClassHoldsTheVmUntilItExists) {
  const std::string sc = "fidelity-" + cluster_;
  CreateCluster(HarvesterClusterSpec());
  const std::string name = cluster_ + "-cp-0";
  Object spec = MachineSpec();
  spec["volumes"].push_back({{"volumeType", "storageClass"},
                             {"storageClass", sc},
                             {"volumeSize", "10Gi"},
                             {"bootOrder", 2}});
  CreateMachine(name, true, spec);
  const Object condition = WaitForProvisioningReason(name, "VMVolumesNotReady");
  EXPECT_NE(condition.value("message", "").find("WaitingForVolumeBinding"), std::string::npos)
      << condition.dump();
  EXPECT_NE(condition.value("message", "").find("storageclass.storage.k8s.io \"" + sc + "\""),
            std::string::npos)
      << condition.dump();
  EXPECT_TRUE(HasWarning(name, "VMVolumesNotReady"));

  Object storage_class = {
      {"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"},
      {"metadata", {{"name", sc}}},        {"provisioner", "driver.longhorn.io"},
      {"reclaimPolicy", "Delete"},         {"volumeBindingMode", "Immediate"}};
  auto created = harvester_->Create(kStorageClasses, "", storage_class);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(WaitForRunningMachines(1).size(), 1u);
  DeleteClusterAndWait();
  harvester_->Delete(kStorageClasses, "", sc).IgnoreError();
}

}  // namespace
}  // namespace caphv::e2e
