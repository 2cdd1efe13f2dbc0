// Unit tests for sim/kubevirt.h: what the simulator decides about VMs.

#include "sim/kubevirt.h"

#include <gtest/gtest.h>

#include "kube/base64.h"

namespace caphv::sim {
namespace {

using kube::Object;
using std::chrono::milliseconds;

Object Vm() {
  Object templates =
      Object::array({{{"metadata",
                       {{"name", "vm1-disk-0-abc1d"},
                        {"annotations", {{"harvesterhci.io/imageId", "default/image-ubuntu"}}}}},
                      {"spec",
                       {{"accessModes", {"ReadWriteMany"}},
                        {"resources", {{"requests", {{"storage", "10Gi"}}}}},
                        {"volumeMode", "Block"},
                        {"storageClassName", "longhorn-image-ubuntu"}}}}});
  return {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachine"},
      {"metadata",
       {{"name", "vm1"},
        {"namespace", "default"},
        {"uid", "1111-2222"},
        {"generation", 2},
        {"labels", {{"harvesterhci.io/creator", "harvester"}}},
        {"annotations", {{"harvesterhci.io/volumeClaimTemplates", templates.dump()}}}}},
      {"spec",
       {{"runStrategy", "Always"},
        {"template",
         {{"metadata", {{"labels", {{"harvesterhci.io/vmName", "vm1"}}}}},
          {"spec",
           {{"domain",
             {{"memory", {{"guest", "4Gi"}}},
              {"resources", {{"limits", {{"cpu", "2"}, {"memory", "4Gi"}}}}},
              {"devices",
               {{"interfaces",
                 Object::array({{{"name", "nic-1"}, {"bridge", Object::object()}}})}}}}},
            {"networks", Object::array({{{"name", "nic-1"},
                                         {"multus", {{"networkName", "default/vlan100"}}}}})},
            {"volumes",
             Object::array({{{"name", "cloudinitdisk"},
                             {"cloudInitNoCloud",
                              {{"secretRef", {{"name", "vm1-cloud-init"}}},
                               {"networkDataSecretRef", {{"name", "vm1-cloud-init"}}}}}}})}}}}}}}};
}

const char kNetworkV1[] =
    "version: 1\nconfig:\n- type: physical\n  name: eth0\n  subnets:\n  - type: static\n"
    "    address: 10.0.10.23\n    netmask: 255.255.255.0\n    gateway: 10.0.10.1\n"
    "- type: nameserver\n  address: [1.1.1.1]\n";

AdmissionWorld World() {
  AdmissionWorld w;
  w.image_exists = [](const std::string& ns, const std::string& n) {
    return ns == "default" && n == "image-ubuntu";
  };
  w.network_exists = [](const std::string& ns, const std::string& n) {
    return ns == "default" && n == "vlan100";
  };
  return w;
}

TEST(NetworkData, StaticAddressFromV1AndV2) {
  EXPECT_EQ(StaticAddress(kNetworkV1, 0), "10.0.10.23");
  EXPECT_FALSE(StaticAddress(kNetworkV1, 1));
  EXPECT_EQ(StaticAddress("version: 2\nethernets:\n  eth1:\n    addresses: [10.0.0.5/24]\n", 1),
            "10.0.0.5");
  EXPECT_EQ(StaticAddress("network:\n  version: 1\n  config:\n  - type: physical\n    name: eth0\n"
                          "    subnets: [{type: static, address: 10.9.0.2/16}]\n",
                          0),
            "10.9.0.2");
  EXPECT_FALSE(
      StaticAddress("version: 1\nconfig:\n- {type: physical, name: eth0, subnets: "
                    "[{type: dhcp}]}\n",
                    0));
  EXPECT_FALSE(StaticAddress("", 0));
}

TEST(NetworkData, ReadsSecretAndInline) {
  Object secret = {{"data", {{"networkdata", kube::Base64Encode(kNetworkV1)}}}};
  EXPECT_EQ(NetworkDataFromSecret(secret), kNetworkV1);
  Object vm = Vm();
  EXPECT_EQ(NetworkDataSecretName(vm), "vm1-cloud-init");
  EXPECT_EQ(InlineNetworkData(vm), "");
  vm["spec"]["template"]["spec"]["volumes"][0]["cloudInitNoCloud"]["networkData"] = "x: 1";
  EXPECT_EQ(InlineNetworkData(vm), "x: 1");
}

TEST(PlanNics, StaticAddressAndStableMac) {
  auto nics = PlanNics(Vm(), kNetworkV1);
  ASSERT_EQ(nics.size(), 1u);
  EXPECT_EQ(nics[0].name, "nic-1");
  EXPECT_EQ(nics[0].network, "default/vlan100");
  EXPECT_EQ(nics[0].ip, "10.0.10.23");
  EXPECT_EQ(nics[0].mac, GeneratedMac("1111-2222", 0));
  EXPECT_EQ(nics[0].mac.rfind("52:54:00:", 0), 0u);
  EXPECT_NE(GeneratedMac("1111-2222", 0), GeneratedMac("1111-2222", 1));
}

TEST(ValidateVm, AcceptsAWellFormedVm) {
  EXPECT_TRUE(ValidateVm(Vm(), kNetworkV1, World()).empty());
}

TEST(ValidateVm, RequiresGuestMemoryOrLimit) {
  Object vm = Vm();
  vm["spec"]["template"]["spec"]["domain"].erase("memory");
  EXPECT_TRUE(ValidateVm(vm, "", World()).empty());  // the limit suffices
  vm["spec"]["template"]["spec"]["domain"]["resources"]["limits"].erase("memory");
  auto errors = ValidateVm(vm, "", World());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("memory.guest"), std::string::npos);
}

TEST(ValidateVm, RejectsUnknownImageAndNetwork) {
  Object vm = Vm();
  vm["spec"]["template"]["spec"]["networks"][0]["multus"]["networkName"] = "default/nope";
  std::string t = vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"];
  auto templates = Object::parse(t);
  templates[0]["metadata"]["annotations"]["harvesterhci.io/imageId"] = "default/missing";
  vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"] = templates.dump();
  auto errors = ValidateVm(vm, "", World());
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("default/missing"), std::string::npos);
  EXPECT_NE(errors[1].find("default/nope"), std::string::npos);
}

TEST(ValidateVm, RejectsInvalidTemplatesJson) {
  Object vm = Vm();
  vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"] = "{not json";
  EXPECT_EQ(ValidateVm(vm, "", World()).size(), 1u);
}

TEST(ValidateVm, RejectsAnAddressInUseByAnotherVm) {
  AdmissionWorld w = World();
  w.ips_in_use["10.0.10.23"] = "default/other";
  auto errors = ValidateVm(Vm(), kNetworkV1, w);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("10.0.10.23"), std::string::npos);
  w.ips_in_use["10.0.10.23"] = "default/vm1";  // its own address
  EXPECT_TRUE(ValidateVm(Vm(), kNetworkV1, w).empty());
}

TEST(Claims, NamedAsTheTemplatesNameThem) {
  auto claims = ClaimsFromVm(Vm());
  ASSERT_TRUE(claims.ok());
  ASSERT_EQ(claims->size(), 1u);
  const Object& pvc = (*claims)[0];
  EXPECT_EQ(pvc["metadata"]["name"], "vm1-disk-0-abc1d");
  EXPECT_EQ(pvc["metadata"]["namespace"], "default");
  EXPECT_EQ(pvc["metadata"]["annotations"]["harvesterhci.io/imageId"], "default/image-ubuntu");
  EXPECT_FALSE(pvc["metadata"].contains("ownerReferences"));
  EXPECT_EQ(pvc["spec"]["storageClassName"], "longhorn-image-ubuntu");
  auto bound = BoundClaimStatus(pvc);
  EXPECT_EQ(bound["phase"], "Bound");
  EXPECT_EQ(bound["capacity"]["storage"], "10Gi");
}

TEST(Claims, RemovedListIsCommaSeparated) {
  Object vm = Vm();
  vm["metadata"]["annotations"]["harvesterhci.io/removedPersistentVolumeClaims"] = "a, b,,c";
  EXPECT_EQ(RemovedClaims(vm), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(RemovedClaims(Vm()).empty());
}

TEST(Stage, FollowsDelaysStrategyAndFailure) {
  const milliseconds boot(1000), ip(500);
  Object vm = Vm();
  EXPECT_EQ(StageOf(vm, milliseconds(0), boot, ip), Stage::kScheduling);
  EXPECT_EQ(UntilNextStage(Stage::kScheduling, milliseconds(200), boot, ip), milliseconds(800));
  EXPECT_EQ(StageOf(vm, milliseconds(1200), boot, ip), Stage::kBooting);
  EXPECT_EQ(UntilNextStage(Stage::kBooting, milliseconds(1200), boot, ip), milliseconds(300));
  EXPECT_EQ(StageOf(vm, milliseconds(1500), boot, ip), Stage::kRunning);
  EXPECT_EQ(StageOf(vm, milliseconds(0), milliseconds(0), milliseconds(0)), Stage::kRunning);
  vm["metadata"]["annotations"][kFailAnnotation] = "true";
  EXPECT_EQ(StageOf(vm, milliseconds(1500), boot, ip), Stage::kFailed);
  vm["spec"]["runStrategy"] = "Halted";
  EXPECT_EQ(StageOf(vm, milliseconds(1500), boot, ip), Stage::kStopped);
}

TEST(BuildVmi, RunningVmiHasInterfacesAndOwner) {
  Object vm = Vm();
  auto nics = PlanNics(vm, kNetworkV1);
  Object vmi = BuildVmi(vm, Stage::kRunning, nics);
  EXPECT_EQ(vmi["metadata"]["name"], "vm1");
  EXPECT_EQ(vmi["metadata"]["ownerReferences"][0]["uid"], "1111-2222");
  EXPECT_EQ(vmi["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(vmi["metadata"]["labels"]["harvesterhci.io/vmName"], "vm1");
  EXPECT_EQ(vmi["status"]["phase"], "Running");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["name"], "nic-1");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["ipAddress"], "10.0.10.23");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["mac"], nics[0].mac);
  EXPECT_EQ(vmi["status"]["conditions"][0]["status"], "True");

  Object booting = BuildVmi(vm, Stage::kBooting, nics);
  EXPECT_EQ(booting["status"]["phase"], "Running");
  EXPECT_FALSE(booting["status"]["interfaces"][0].contains("ipAddress"));
  EXPECT_EQ(booting["status"]["conditions"][0]["status"], "False");

  Object failed = BuildVmi(vm, Stage::kFailed, nics);
  EXPECT_EQ(failed["status"]["phase"], "Failed");
  EXPECT_EQ(BuildVmi(vm, Stage::kScheduling, nics)["status"]["phase"], "Scheduling");
}

TEST(BuildVmi, TopologyAnnotationsOnlyForTheNodeDriver) {
  Object vm = Vm();
  // No annotations at all: an empty map would not survive the apiserver.
  EXPECT_FALSE(BuildVmi(vm, Stage::kRunning, {})["metadata"].contains("annotations"));
  vm["metadata"]["labels"]["harvesterhci.io/creator"] = "docker-machine-driver-harvester";
  EXPECT_TRUE(BuildVmi(vm, Stage::kRunning, {})["metadata"]["annotations"].contains(
      "topology.kubernetes.io/zone"));
}

TEST(BuildVmStatus, PrintableStatusAndReady) {
  Object vm = Vm();
  auto running = BuildVmStatus(vm, Stage::kRunning);
  EXPECT_EQ(running["printableStatus"], "Running");
  EXPECT_EQ(running["ready"], true);
  EXPECT_EQ(running["created"], true);
  EXPECT_EQ(running["observedGeneration"], 2);
  EXPECT_EQ(BuildVmStatus(vm, Stage::kScheduling)["printableStatus"], "Starting");
  EXPECT_EQ(BuildVmStatus(vm, Stage::kStopped)["printableStatus"], "Stopped");
  EXPECT_EQ(BuildVmStatus(vm, Stage::kFailed)["ready"], false);
}

TEST(BuildNode, TaintedUntilTheCloudProviderRuns) {
  Object vm = Vm();
  Object node = BuildNode(vm);
  EXPECT_EQ(node["metadata"]["name"], "vm1");
  EXPECT_EQ(node["spec"]["taints"][0]["key"], kUninitializedTaint);
  EXPECT_FALSE(node["spec"].contains("providerID"));
  EXPECT_EQ(ProviderIdFor(vm), "harvester://1111-2222");
  auto status = BuildNodeStatus(vm, PlanNics(vm, kNetworkV1), true);
  EXPECT_EQ(status["conditions"][0]["status"], "True");
  EXPECT_EQ(status["addresses"][0]["type"], "InternalIP");
  EXPECT_EQ(status["addresses"][0]["address"], "10.0.10.23");
  EXPECT_EQ(status["addresses"][1]["type"], "Hostname");
  EXPECT_EQ(status["capacity"]["memory"], "4Gi");
  EXPECT_EQ(BuildNodeStatus(vm, {}, false)["conditions"][0]["status"], "False");
}

TEST(NodeSpecPatch, DropsTaintsSetsProviderIdAndGuardsWithTheResourceVersion) {
  Object node = BuildNode(Vm());
  node["metadata"]["resourceVersion"] = "42";
  node["spec"]["taints"].push_back(
      {{"key", "node.kubernetes.io/not-ready"}, {"effect", "NoSchedule"}});
  Object p = NodeSpecPatch(node, {"node.kubernetes.io/not-ready"}, "");
  EXPECT_EQ(p["metadata"]["resourceVersion"], "42");
  ASSERT_EQ(p["spec"]["taints"].size(), 1u);
  EXPECT_EQ(p["spec"]["taints"][0]["key"], kUninitializedTaint);
  EXPECT_FALSE(p["spec"].contains("providerID"));

  p = NodeSpecPatch(node, {"node.kubernetes.io/not-ready", kUninitializedTaint}, "harvester://u");
  EXPECT_TRUE(p["spec"]["taints"].is_null());
  EXPECT_EQ(p["spec"]["providerID"], "harvester://u");
  EXPECT_EQ(p["metadata"]["resourceVersion"], "42");

  EXPECT_TRUE(NodeSpecPatch(node, {"absent"}, "").empty());
}

}  // namespace
}  // namespace caphv::sim
