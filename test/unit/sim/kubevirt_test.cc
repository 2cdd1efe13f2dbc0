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

TEST(WhyClaimCannotBind, TheClassMustExistAndBeTheImages) {
  const std::set<std::string> classes = {"harvester-longhorn", "longhorn-image-ubuntu"};
  EXPECT_EQ(WhyClaimCannotBind("", "harvester-longhorn", classes, ""), "");
  EXPECT_EQ(WhyClaimCannotBind("fast", "harvester-longhorn", classes, ""),
            "storageclass.storage.k8s.io \"fast\" not found");
  EXPECT_EQ(WhyClaimCannotBind("longhorn-image-ubuntu", "", classes, "longhorn-image-ubuntu"), "");
  EXPECT_NE(WhyClaimCannotBind("harvester-longhorn", "", classes, "longhorn-image-ubuntu"), "");
  EXPECT_NE(WhyClaimCannotBind("", "", classes, ""), "");
}

TEST(BuildPendingVmi, SaysWhyInKubeVirtsWords) {
  const VolumeWait w{"ErrorPvcNotFound", "FailedPvcNotFound", "PVC x does not exist"};
  Object vmi = BuildPendingVmi(Vm(), w);
  EXPECT_EQ(vmi["status"]["phase"], "Pending");
  EXPECT_EQ(vmi["status"]["conditions"][0]["reason"], "FailedPvcNotFound");
  Object status = BuildWaitingVmStatus(Vm(), w);
  EXPECT_EQ(status["printableStatus"], "ErrorPvcNotFound");
  EXPECT_EQ(status["ready"], false);
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

// KubeVirt's VMI admitter: an efi bootloader is Secure Boot unless
// secureBoot is false, and Secure Boot needs the SMM feature.
TEST(ValidateVm, SecureBootNeedsSmmAsKubeVirtRules) {
  Object vm = Vm();
  Object& domain = vm["spec"]["template"]["spec"]["domain"];
  domain["firmware"] = {{"bootloader", {{"efi", Object::object()}}}};
  auto errors = ValidateVm(vm, "", World());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0],
            "spec.template.spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which "
            "is currently disabled.");
  domain["firmware"]["bootloader"]["efi"]["secureBoot"] = true;
  EXPECT_EQ(ValidateVm(vm, "", World()).size(), 1u);
  domain["features"] = {{"smm", {{"enabled", false}}}};
  EXPECT_EQ(ValidateVm(vm, "", World()).size(), 1u);
  domain["features"]["smm"] = Object::object();  // present: enabled
  EXPECT_TRUE(ValidateVm(vm, "", World()).empty());
  domain.erase("features");
  domain["firmware"]["bootloader"]["efi"]["secureBoot"] = false;
  EXPECT_TRUE(ValidateVm(vm, "", World()).empty());
}

// Harvester accepts a VM whose image is missing (its PVC is skipped and
// the VM waits, ErrorPvcNotFound); a missing network is refused.
TEST(ValidateVm, RejectsAnUnknownNetworkNotAnUnknownImage) {
  Object vm = Vm();
  vm["spec"]["template"]["spec"]["networks"][0]["multus"]["networkName"] = "default/nope";
  std::string t = vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"];
  auto templates = Object::parse(t);
  templates[0]["metadata"]["annotations"]["harvesterhci.io/imageId"] = "default/missing";
  vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"] = templates.dump();
  auto errors = ValidateVm(vm, "", World());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("default/nope"), std::string::npos);
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
  Object vmi = BuildVmi(vm, Stage::kRunning, nics, {.runs = true});
  EXPECT_EQ(vmi["metadata"]["name"], "vm1");
  EXPECT_EQ(vmi["metadata"]["ownerReferences"][0]["uid"], "1111-2222");
  EXPECT_EQ(vmi["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(vmi["metadata"]["labels"]["harvesterhci.io/vmName"], "vm1");
  EXPECT_EQ(vmi["status"]["phase"], "Running");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["name"], "nic-1");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["ipAddress"], "10.0.10.23");
  EXPECT_EQ(vmi["status"]["interfaces"][0]["mac"], nics[0].mac);
  EXPECT_EQ(vmi["status"]["conditions"][0]["status"], "True");

  EXPECT_EQ(vmi["status"]["interfaces"][0]["ipAddresses"],
            Object::array({"10.0.10.23", LinkLocalAddress(nics[0].mac)}));
  EXPECT_EQ(vmi["status"]["interfaces"].size(), nics.size());

  Object booting = BuildVmi(vm, Stage::kBooting, nics, {.runs = true});
  EXPECT_EQ(booting["status"]["phase"], "Running");
  EXPECT_FALSE(booting["status"]["interfaces"][0].contains("ipAddress"));
  EXPECT_EQ(booting["status"]["conditions"][0]["status"], "False");

  Object failed = BuildVmi(vm, Stage::kFailed, nics, {.runs = true});
  EXPECT_EQ(failed["status"]["phase"], "Failed");
  EXPECT_EQ(BuildVmi(vm, Stage::kScheduling, nics, {})["status"]["phase"], "Scheduling");
}

// KubeVirt learns a bridge NIC's address only from qemu-guest-agent.
TEST(BuildVmi, WithoutTheGuestAgentNoAddressIsReported) {
  Object vm = Vm();
  auto nics = PlanNics(vm, kNetworkV1);
  Object vmi = BuildVmi(vm, Stage::kRunning, nics, {});
  EXPECT_EQ(vmi["status"]["phase"], "Running");
  EXPECT_EQ(vmi["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(vmi["status"]["conditions"].size(), 1u);  // no AgentConnected
  ASSERT_EQ(vmi["status"]["interfaces"].size(), nics.size());
  for (const auto& nic : vmi["status"]["interfaces"]) {
    EXPECT_FALSE(nic.contains("ipAddress")) << nic.dump();
    EXPECT_FALSE(nic.contains("ipAddresses")) << nic.dump();
    EXPECT_EQ(nic["infoSource"].get<std::string>().find("guest-agent"), std::string::npos);
  }
  EXPECT_FALSE(vmi["status"].contains("guestOSInfo"));
}

// An RKE2 guest's agent also reports the CNI's interfaces, unnamed.
TEST(BuildVmi, AnRke2GuestReportsItsPodNetworkInterfacesUnnamed) {
  Object vm = Vm();
  auto nics = PlanNics(vm, kNetworkV1);
  Object vmi = BuildVmi(vm, Stage::kRunning, nics, {.runs = true, .pod_network = true});
  const Object& ifs = vmi["status"]["interfaces"];
  ASSERT_EQ(ifs.size(), nics.size() + 2);
  EXPECT_EQ(ifs[nics.size()]["interfaceName"], "cni0");
  EXPECT_FALSE(ifs[nics.size()].contains("name"));
  EXPECT_EQ(ifs[nics.size()]["infoSource"], "guest-agent");
  EXPECT_EQ(ifs[nics.size() + 1]["interfaceName"], "flannel.1");
  EXPECT_EQ(ifs[nics.size()]["ipAddress"].get<std::string>().rfind("10.42.", 0), 0u);
}

TEST(LinkLocalAddress, Eui64OfTheMac) {
  EXPECT_EQ(LinkLocalAddress("52:54:00:12:34:56"), "fe80::5054:ff:fe12:3456");
  EXPECT_EQ(LinkLocalAddress("not a mac"), "");
}

TEST(BuildVmi, TopologyAnnotationsOnlyForTheNodeDriver) {
  Object vm = Vm();
  // No annotations at all: an empty map would not survive the apiserver.
  EXPECT_FALSE(BuildVmi(vm, Stage::kRunning, {}, {})["metadata"].contains("annotations"));
  vm["metadata"]["labels"]["harvesterhci.io/creator"] = "docker-machine-driver-harvester";
  EXPECT_TRUE(BuildVmi(vm, Stage::kRunning, {}, {})["metadata"]["annotations"].contains(
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
  auto condition = [](const Object& st, const std::string& type) {
    for (const auto& c : st["conditions"]) {
      if (c["type"] == type) return c["status"].get<std::string>();
    }
    return std::string("absent");
  };
  // All four a kubelet posts: Cluster API v1.11+ needs them for NodeHealthy.
  EXPECT_EQ(condition(status, "Ready"), "True");
  EXPECT_EQ(condition(status, "MemoryPressure"), "False");
  EXPECT_EQ(condition(status, "DiskPressure"), "False");
  EXPECT_EQ(condition(status, "PIDPressure"), "False");
  EXPECT_EQ(status["addresses"][0]["type"], "InternalIP");
  EXPECT_EQ(status["addresses"][0]["address"], "10.0.10.23");
  EXPECT_EQ(status["addresses"][1]["type"], "Hostname");
  EXPECT_EQ(status["capacity"]["memory"], "4Gi");
  auto stopped = BuildNodeStatus(vm, {}, false);
  EXPECT_EQ(condition(stopped, "Ready"), "False");
  EXPECT_EQ(condition(stopped, "MemoryPressure"), "Unknown");
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
