// Integration tests: the simulator playing KubeVirt, Harvester's VM
// controller and webhook, and the guest cluster, against the real test bed.

#include <gtest/gtest.h>

#include <thread>

#include "sim/env.h"
#include "sim_fixture.h"

namespace caphv::sim::testing {
namespace {

using caphv::testing::Eventually;
using caphv::testing::UniqueName;
using kube::Object;
using std::chrono::seconds;

std::string Str(const Object& o, const std::string& pointer) {
  auto p = Object::json_pointer(pointer);
  return o.contains(p) && o[p].is_string() ? o[p].get<std::string>() : "";
}

bool HasTaint(const Object& node, const std::string& key) {
  for (const auto& t : node["spec"].value("taints", Object::array())) {
    if (t.value("key", "") == key) return true;
  }
  return false;
}

std::string NodeReady(const Object& node) {
  for (const auto& c :
       node.value("status", Object::object()).value("conditions", Object::array())) {
    if (c.value("type", "") == "Ready") return c.value("status", "");
  }
  return "";
}

TEST_F(SimTest, RunningVmGetsVmiPvcAndNode) {
  StartSim();
  const std::string name = UniqueName("vm");
  auto vm = CreateVm(name, "10.0.10.23");
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  const std::string uid = kube::UidOf(*vm);

  Object vmi;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = Get(gvr::kVirtualMachineInstances, name);
        if (!got.ok()) return false;
        vmi = *got;
        return Str(vmi, "/status/interfaces/0/ipAddress") == "10.0.10.23";
      },
      seconds(20)))
      << vmi.dump();
  EXPECT_EQ(Str(vmi, "/status/phase"), "Running");
  EXPECT_EQ(Str(vmi, "/status/interfaces/0/name"), "nic-1");
  EXPECT_EQ(Str(vmi, "/status/interfaces/0/mac").rfind("52:54:00:", 0), 0u);
  EXPECT_EQ(Str(vmi, "/metadata/ownerReferences/0/uid"), uid);
  EXPECT_EQ(Str(vmi, "/metadata/labels/harvesterhci.io~1vmName"), name);

  ASSERT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachines, name);
    return got.ok() && Str(*got, "/status/printableStatus") == "Running" &&
           (*got)["status"].value("ready", false);
  }));
  Object pvc;
  ASSERT_TRUE(Eventually([&] {
    auto got = Get(kube::resources::kPersistentVolumeClaims, name + "-disk-0-abc1d");
    if (got.ok()) pvc = *got;
    return got.ok() && Str(pvc, "/status/phase") == "Bound";
  })) << pvc.dump();
  EXPECT_EQ(Str(pvc, "/metadata/annotations/harvesterhci.io~1imageId"), "default/image-ubuntu");
  EXPECT_EQ(Str(pvc, "/spec/storageClassName"), "longhorn-image-ubuntu");

  // The guest Node: Ready, addressed, and initialised by the cloud provider.
  Object node;
  ASSERT_TRUE(Eventually([&] {
    auto got = w_->Get(kube::resources::kNodes, "", name);
    if (got.ok()) node = *got;
    return got.ok() && Str(node, "/spec/providerID") == "harvester://" + uid;
  })) << node.dump();
  EXPECT_EQ(NodeReady(node), "True");
  EXPECT_FALSE(HasTaint(node, "node.cloudprovider.kubernetes.io/uninitialized"));
  EXPECT_EQ(Str(node, "/status/addresses/0/address"), "10.0.10.23");
  EXPECT_TRUE(Eventually([&] {
    auto got = w_->Get(kube::resources::kNodes, "", name);
    return got.ok() && !HasTaint(*got, "node.kubernetes.io/not-ready");
  }));

  // Settled: the simulator writes only what differs, so nothing changes by itself.
  auto before = Get(gvr::kVirtualMachineInstances, name);
  auto vm_before = Get(gvr::kVirtualMachines, name);
  ASSERT_TRUE(before.ok() && vm_before.ok());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto after = Get(gvr::kVirtualMachineInstances, name);
  auto vm_after = Get(gvr::kVirtualMachines, name);
  ASSERT_TRUE(after.ok() && vm_after.ok());
  EXPECT_EQ(kube::ResourceVersionOf(*before), kube::ResourceVersionOf(*after));
  EXPECT_EQ(kube::ResourceVersionOf(*vm_before), kube::ResourceVersionOf(*vm_after));

  // Delete as a provider does: removedPersistentVolumeClaims first.
  auto p = h_->Patch(
      gvr::kVirtualMachines, ns_->name(), name, kube::PatchType::kMerge,
      {{"metadata",
        {{"annotations",
          {{"harvesterhci.io/removedPersistentVolumeClaims", name + "-disk-0-abc1d"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(h_->Delete(gvr::kVirtualMachines, ns_->name(), name).ok());
  EXPECT_TRUE(Eventually([&] { return Get(gvr::kVirtualMachines, name).status().IsNotFound(); }));
  EXPECT_TRUE(
      Eventually([&] { return Get(gvr::kVirtualMachineInstances, name).status().IsNotFound(); }));
  EXPECT_TRUE(Eventually([&] {
    auto got = Get(kube::resources::kPersistentVolumeClaims, name + "-disk-0-abc1d");
    return got.status().IsNotFound() ||
           (got.ok() && (*got)["metadata"].contains("deletionTimestamp"));
  }));
  EXPECT_TRUE(
      Eventually([&] { return w_->Get(kube::resources::kNodes, "", name).status().IsNotFound(); }));
}

TEST_F(SimTest, DhcpLeaseWithoutStaticNetworkData) {
  StartSim();
  const std::string a = UniqueName("vm"), b = UniqueName("vm");
  ASSERT_TRUE(CreateVm(a, "").ok());
  ASSERT_TRUE(CreateVm(b, "").ok());
  std::string ip_a, ip_b;
  ASSERT_TRUE(Eventually([&] {
    auto va = Get(gvr::kVirtualMachineInstances, a);
    auto vb = Get(gvr::kVirtualMachineInstances, b);
    if (!va.ok() || !vb.ok()) return false;
    ip_a = Str(*va, "/status/interfaces/0/ipAddress");
    ip_b = Str(*vb, "/status/interfaces/0/ipAddress");
    return !ip_a.empty() && !ip_b.empty();
  }));
  EXPECT_EQ(ip_a.rfind("10.0.10.1", 0), 0u) << ip_a;  // the vlan100 DHCP range .100-.199
  EXPECT_NE(ip_a, ip_b);
}

TEST_F(SimTest, WebhookRejectsWhatHarvesterRejects) {
  StartSim();
  // No memory.guest and no memory limit.
  Object vm = MakeVm(UniqueName("vm"), "");
  vm["spec"]["template"]["spec"]["domain"].erase("memory");
  vm["spec"]["template"]["spec"]["domain"]["resources"]["limits"].erase("memory");
  auto created = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("memory.guest"), std::string::npos)
      << created.status().ToString();

  // Unknown image: accepted, as by Harvester, which then makes no PVC for
  // that disk; KubeVirt holds the VM (ErrorPvcNotFound), its VMI Pending.
  const std::string no_image = UniqueName("vm");
  vm = MakeVm(no_image, "");
  auto templates = Object::parse(
      vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"].get<std::string>());
  templates[0]["metadata"]["annotations"]["harvesterhci.io/imageId"] = "default/no-such-image";
  vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"] = templates.dump();
  ASSERT_TRUE(h_->Create(kube::resources::kSecrets, ns_->name(), MakeCloudInit(no_image, "")).ok());
  created = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Object held;
  EXPECT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachines, no_image);
    if (got.ok()) held = *got;
    return got.ok() && Str(held, "/status/printableStatus") == "ErrorPvcNotFound";
  })) << held.dump();
  auto pending = Get(gvr::kVirtualMachineInstances, no_image);
  ASSERT_TRUE(pending.ok());
  EXPECT_EQ(Str(*pending, "/status/phase"), "Pending");
  EXPECT_TRUE(Get(kube::resources::kPersistentVolumeClaims, no_image + "-disk-0-abc1d")
                  .status()
                  .IsNotFound());
  ASSERT_TRUE(h_->Delete(gvr::kVirtualMachines, ns_->name(), no_image).ok());

  // Unknown network.
  vm = MakeVm(UniqueName("vm"), "");
  vm["spec"]["template"]["spec"]["networks"][0]["multus"]["networkName"] = "default/vlan999";
  created = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
  ASSERT_FALSE(created.ok());
  EXPECT_NE(created.status().message().find("vlan999"), std::string::npos);

  // An address already in use.
  const std::string first = UniqueName("vm");
  ASSERT_TRUE(CreateVm(first, "10.0.10.77").ok());
  ASSERT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachineInstances, first);
    return got.ok() && Str(*got, "/status/interfaces/0/ipAddress") == "10.0.10.77";
  }));
  auto second = CreateVm(UniqueName("vm"), "10.0.10.77");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("10.0.10.77"), std::string::npos);

  // A valid VM passes.
  EXPECT_TRUE(CreateVm(UniqueName("vm"), "10.0.10.78").ok());
}

TEST_F(SimTest, DelaysShowEachStage) {
  StartSim({"--boot-delay", "1s", "--ip-delay", "1s"});
  const std::string name = UniqueName("vm");
  ASSERT_TRUE(CreateVm(name, "10.0.10.30").ok());
  bool saw_scheduling = false, saw_running_without_ip = false;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = Get(gvr::kVirtualMachineInstances, name);
        if (!got.ok()) return false;
        const std::string phase = Str(*got, "/status/phase");
        const std::string ip = Str(*got, "/status/interfaces/0/ipAddress");
        if (phase == "Scheduling") saw_scheduling = true;
        if (phase == "Running" && ip.empty()) saw_running_without_ip = true;
        return !ip.empty();
      },
      seconds(20), std::chrono::milliseconds(50)));
  EXPECT_TRUE(saw_scheduling);
  EXPECT_TRUE(saw_running_without_ip);
}

TEST_F(SimTest, NoCloudProviderLeavesNodeUninitialized) {
  StartSim({"--no-cloud-provider"});
  const std::string name = UniqueName("vm");
  ASSERT_TRUE(CreateVm(name, "10.0.10.31").ok());
  Object node;
  ASSERT_TRUE(Eventually([&] {
    auto got = w_->Get(kube::resources::kNodes, "", name);
    if (got.ok()) node = *got;
    return got.ok() && NodeReady(node) == "True";
  }));
  std::this_thread::sleep_for(seconds(1));  // well past the cloud provider's delay
  auto got = w_->Get(kube::resources::kNodes, "", name);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(HasTaint(*got, "node.cloudprovider.kubernetes.io/uninitialized"));
  EXPECT_EQ(Str(*got, "/spec/providerID"), "");
  ASSERT_TRUE(h_->Delete(gvr::kVirtualMachines, ns_->name(), name).ok());
  EXPECT_TRUE(
      Eventually([&] { return w_->Get(kube::resources::kNodes, "", name).status().IsNotFound(); }));
}

TEST_F(SimTest, FailAnnotationFailsVmiAndNode) {
  StartSim();
  const std::string name = UniqueName("vm");
  ASSERT_TRUE(CreateVm(name, "10.0.10.32").ok());
  ASSERT_TRUE(Eventually([&] {
    auto got = w_->Get(kube::resources::kNodes, "", name);
    return got.ok() && NodeReady(*got) == "True";
  }));
  auto p = h_->Patch(gvr::kVirtualMachines, ns_->name(), name, kube::PatchType::kMerge,
                     {{"metadata", {{"annotations", {{"sim.caphv.io/fail", "true"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachineInstances, name);
    return got.ok() && Str(*got, "/status/phase") == "Failed";
  }));
  EXPECT_TRUE(Eventually([&] {
    auto got = w_->Get(kube::resources::kNodes, "", name);
    return got.ok() && NodeReady(*got) == "False";
  }));
  EXPECT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachines, name);
    return got.ok() && !(*got)["status"].value("ready", true);
  }));
}

TEST_F(SimTest, HaltedVmLosesItsVmi) {
  StartSim();
  const std::string name = UniqueName("vm");
  ASSERT_TRUE(CreateVm(name, "10.0.10.33").ok());
  ASSERT_TRUE(Eventually([&] { return Get(gvr::kVirtualMachineInstances, name).ok(); }));
  auto p = h_->Patch(gvr::kVirtualMachines, ns_->name(), name, kube::PatchType::kMerge,
                     {{"spec", {{"runStrategy", "Halted"}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_TRUE(
      Eventually([&] { return Get(gvr::kVirtualMachineInstances, name).status().IsNotFound(); }));
  EXPECT_TRUE(Eventually([&] {
    auto got = Get(gvr::kVirtualMachines, name);
    return got.ok() && Str(*got, "/status/printableStatus") == "Stopped";
  }));
}

TEST_F(SimTest, FaultInjectionOnlySlowsThingsDown) {
  StartSim({"--fault-rate", "0.4"});
  const std::string name = UniqueName("vm");
  ASSERT_TRUE(CreateVm(name, "10.0.10.34").ok());
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = w_->Get(kube::resources::kNodes, "", name);
        return got.ok() && !Str(*got, "/spec/providerID").empty();
      },
      seconds(60)));
  std::string log;
  caphv::testing::RunCommand("grep -c 'injected fault' " + sim_->log_path(), &log);
  EXPECT_GT(std::atoi(log.c_str()), 0) << "no fault was injected";
}

}  // namespace
}  // namespace caphv::sim::testing
