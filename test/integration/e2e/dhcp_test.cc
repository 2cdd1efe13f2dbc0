// End-to-end: a machine without static addressing (no vmNetworkConfig) that
// leases its address over DHCP, with two disks: the image disk booting first
// and an empty data disk of a StorageClass.

#include <regex>

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

using DhcpTest = E2ETest;

// The disk of the VM named `disk` in spec.template.spec.domain.devices.disks.
Object DiskOf(const Object& vm, const std::string& disk) {
  for (const auto& d :
       vm["spec"]["template"]["spec"]["domain"]["devices"].value("disks", Object::array())) {
    if (d.value("name", "") == disk) return d;
  }
  return Object::object();
}

// The claim behind volume `volume` of the VM, "" if none.
std::string ClaimOf(const Object& vm, const std::string& volume) {
  for (const auto& v : vm["spec"]["template"]["spec"].value("volumes", Object::array())) {
    if (v.value("name", "") == volume) return Str(v, "/persistentVolumeClaim/claimName");
  }
  return "";
}

TEST_F(DhcpTest, MultiDiskMachineLeasesItsAddress) {
  CreateCluster(HarvesterClusterSpec());
  Object spec = MachineSpec();
  spec["volumes"].push_back({{"volumeType", "storageClass"},
                             {"storageClass", "harvester-longhorn"},
                             {"volumeSize", "10Gi"},
                             {"bootOrder", 2}});
  const std::string name = cluster_ + "-cp-0";
  CreateMachine(name, true, spec);
  const auto machines = WaitForRunningMachines(1);
  ASSERT_EQ(machines.size(), 1u);

  // The VM: both disks, the image disk first.
  auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  std::vector<std::string> claims;
  for (int i = 0; i < 2; ++i) {
    const std::string disk = "disk-" + std::to_string(i);
    const Object d = DiskOf(*vm, disk);
    ASSERT_FALSE(d.empty()) << disk << " missing: " << (*vm)["spec"]["template"].dump();
    EXPECT_EQ(d.value("bootOrder", 0), i + 1) << d.dump();
    claims.push_back(ClaimOf(*vm, disk));
    const std::regex claim_name(name + "-disk-" + std::to_string(i) + "-[0-9a-f]{5}");
    EXPECT_TRUE(std::regex_match(claims.back(), claim_name)) << claims.back();
  }
  auto templates = Object::parse(
      Str(*vm, "/metadata/annotations/harvesterhci.io~1volumeClaimTemplates"), nullptr, false);
  ASSERT_TRUE(templates.is_array() && templates.size() == 2) << templates.dump();
  EXPECT_EQ(Str(templates[0], "/metadata/annotations/harvesterhci.io~1imageId"),
            "default/image-ubuntu");
  EXPECT_EQ(Str(templates[0], "/spec/resources/requests/storage"), "40Gi");
  EXPECT_EQ(Str(templates[1], "/spec/storageClassName"), "harvester-longhorn");
  EXPECT_EQ(Str(templates[1], "/spec/resources/requests/storage"), "10Gi");

  // The disks Harvester made of it are Bound.
  for (const auto& claim : claims) {
    std::string phase;
    EXPECT_TRUE(Eventually(
        [&] {
          auto pvc = harvester_->Get(kube::resources::kPersistentVolumeClaims, target_ns_, claim);
          phase = pvc.ok() ? Str(*pvc, "/status/phase") : pvc.status().ToString();
          return phase == "Bound";
        },
        kWait, kPoll))
        << claim << ": " << phase;
  }

  // A DHCP lease from vlan100's range 10.0.10.100-199, reported everywhere.
  auto hm = HarvesterMachine(name);
  ASSERT_TRUE(hm.has_value());
  const Object& st = (*hm)["status"];
  EXPECT_TRUE(st.value("allocatedIPAddress", "").empty()) << st.dump();
  std::string ip;
  for (const auto& a : st.value("addresses", Object::array())) {
    if (a.value("type", "") == "ExternalIP") ip = a.value("address", "");
  }
  const int octet = LastOctetIn(ip, "10.0.10.");
  EXPECT_TRUE(octet >= 100 && octet <= 199) << st.dump();
  auto vmi = harvester_->Get(kVirtualMachineInstances, target_ns_, name);
  ASSERT_TRUE(vmi.ok());
  EXPECT_EQ(Str(*vmi, "/status/interfaces/0/ipAddress"), ip);
  bool machine_has_ip = false;
  for (const auto& a : machines[0]["status"].value("addresses", Object::array())) {
    if (a.value("address", "") == ip) machine_has_ip = true;
  }
  EXPECT_TRUE(machine_has_ip) << machines[0]["status"].dump();
  EXPECT_TRUE(st.value("ready", false));
  EXPECT_TRUE(ConditionTrue(*hm, "Ready")) << ConditionOf(*hm, "Ready").dump();
  EXPECT_EQ(ConditionOf(*hm, "VMIPAllocated").value("reason", ""), "DHCP")
      << ConditionOf(*hm, "VMIPAllocated").dump();
  EXPECT_EQ(Str(*hm, "/spec/providerID"), "harvester://" + kube::UidOf(*vm));

  // No cloud-provider configuration was asked for, and the cluster says so.
  auto hc = mgmt_->Get(kHarvesterClusters, ns(), cluster_);
  ASSERT_TRUE(hc.ok()) << hc.status().ToString();
  EXPECT_TRUE(ConditionTrue(*hc, "CloudProviderConfigReady"))
      << ConditionOf(*hc, "CloudProviderConfigReady").dump();
  EXPECT_EQ(ConditionOf(*hc, "CloudProviderConfigReady").value("reason", ""), "NotRequested");
}

}  // namespace
}  // namespace caphv::e2e
