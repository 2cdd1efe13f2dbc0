// File: test/unit/harvester/vm_builder_test.cc

#include "harvester/vm_builder.h"

#include <gtest/gtest.h>

#include "golden.h"

namespace caphv::harvester {
namespace {

using caphv::testing::MatchesGolden;
using kube::Object;

VmInputs ControlPlaneInputs() {
  VmInputs in;
  in.name = "demo-cp-x7k2p";
  in.namespace_ = "default";
  in.machine_uid = "0b8c6e3a-3f1d-4c8e-9d6a-1e2f3a4b5c6d";
  in.cluster = {"mgmt-uid-1", "capi-demo", "demo"};
  in.control_plane = true;
  in.spec.cpu = 2;
  in.spec.memory = "4Gi";
  in.spec.ssh_user = "sles";
  in.spec.ssh_key_pair = "mykey";
  api::Volume boot;
  boot.volume_type = "image";
  boot.image_name = "default/sles15-sp7";
  boot.volume_size = "40Gi";
  in.spec.volumes = {boot};
  in.spec.networks = {"default/vlan100"};
  in.images["default/sles15-sp7"] = {"default", "image-abcde", "longhorn-image-abcde"};
  return in;
}

VmInputs WorkerInputs() {
  VmInputs in = ControlPlaneInputs();
  in.name = "demo-md-0-9zq4r";
  in.machine_uid = "7f00d7a2-0000-4000-8000-000000000001";
  in.control_plane = false;
  in.spec.cpu = 4;
  in.spec.memory = "8Gi";
  api::Volume data;
  data.volume_type = "storageClass";
  data.storage_class = "harvester-longhorn";
  data.volume_size = "10Gi";
  // A data disk first; the image disk must still boot first.
  in.spec.volumes.insert(in.spec.volumes.begin(), data);
  in.spec.networks = {"default/vlan100", "storage-net"};
  in.images["default/sles15-sp7"].storage_class_name = "lh-0d5f1a77";
  in.spec.node_affinity = Object::parse(R"({"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]}]}})");
  return in;
}

Object Build(const VmInputs& in) {
  auto vm = BuildVirtualMachine(in);
  EXPECT_TRUE(vm.ok()) << vm.status().ToString();
  return vm.ok() ? *vm : Object();
}

Object ClaimTemplates(const Object& vm) {
  return Object::parse(
      vm["metadata"]["annotations"]["harvesterhci.io/volumeClaimTemplates"].get<std::string>());
}

TEST(VmBuilderTest, ControlPlaneGolden) {
  Object vm = Build(ControlPlaneInputs());
  EXPECT_TRUE(MatchesGolden("vm_control_plane.json", vm.dump(2) + "\n"));
}

TEST(VmBuilderTest, WorkerMultiDiskMultiNicGolden) {
  Object vm = Build(WorkerInputs());
  EXPECT_TRUE(MatchesGolden("vm_worker_multidisk.json", vm.dump(2) + "\n"));
}

TEST(VmBuilderTest, SecureBootAndPersistentTpmGolden) {
  VmInputs in = ControlPlaneInputs();
  in.spec.firmware = api::Firmware{.efi = true, .secure_boot = true};
  in.spec.tpm = api::Tpm{.enabled = true, .persistent = true};
  Object vm = Build(in);
  EXPECT_TRUE(MatchesGolden("vm_secure_boot_tpm.json", vm.dump(2) + "\n"));
  const Object& domain = vm["spec"]["template"]["spec"]["domain"];
  EXPECT_EQ(domain["firmware"]["bootloader"]["efi"]["secureBoot"], true);
  // KubeVirt refuses Secure Boot without SMM.
  EXPECT_EQ(domain["features"]["smm"]["enabled"], true);
  EXPECT_EQ(domain["devices"]["tpm"]["persistent"], true);
}

TEST(VmBuilderTest, EfiWithoutSecureBootSaysSoAndNeedsNoSmm) {
  // KubeVirt takes an efi block without secureBoot as Secure Boot on.
  VmInputs in = ControlPlaneInputs();
  in.spec.firmware = api::Firmware{.efi = true};
  in.spec.tpm = api::Tpm{.enabled = true};
  Object domain = Build(in)["spec"]["template"]["spec"]["domain"];
  EXPECT_EQ(domain["firmware"]["bootloader"]["efi"]["secureBoot"], false);
  EXPECT_FALSE(domain.contains("features"));
  EXPECT_EQ(domain["devices"]["tpm"]["persistent"], false);
}

TEST(VmBuilderTest, BiosAndNoTpmUnlessAsked) {
  VmInputs in = ControlPlaneInputs();
  in.spec.firmware = api::Firmware{.secure_boot = true};  // without efi: the webhook refuses it
  in.spec.tpm = api::Tpm{.persistent = true};             // not enabled
  Object domain = Build(in)["spec"]["template"]["spec"]["domain"];
  EXPECT_FALSE(domain.contains("firmware"));
  EXPECT_FALSE(domain.contains("features"));
  EXPECT_FALSE(domain["devices"].contains("tpm"));
}

TEST(VmBuilderTest, RunStrategyAlwaysNeverRunning) {
  Object vm = Build(ControlPlaneInputs());
  EXPECT_EQ(vm["spec"]["runStrategy"], "Always");
  EXPECT_FALSE(vm["spec"].contains("running"));
}

TEST(VmBuilderTest, CpuIsCoresNotCubed) {
  Object vm = Build(WorkerInputs());
  const auto& cpu = vm["spec"]["template"]["spec"]["domain"]["cpu"];
  EXPECT_EQ(cpu, (Object{{"cores", 4}, {"sockets", 1}, {"threads", 1}}));
}

TEST(VmBuilderTest, MemoryAndResourcesAsHarvesterSetsThem) {
  Object vm = Build(ControlPlaneInputs());
  const auto& domain = vm["spec"]["template"]["spec"]["domain"];
  EXPECT_EQ(domain["memory"]["guest"], "3996Mi");  // 4Gi - 100Mi reserved
  EXPECT_EQ(domain["resources"]["limits"], (Object{{"cpu", "2"}, {"memory", "4Gi"}}));
  // requests = limits * 100 / overcommit (cpu 1600 %, memory 150 %).
  EXPECT_EQ(domain["resources"]["requests"], (Object{{"cpu", "125m"}, {"memory", "2863311530"}}));

  VmInputs custom = ControlPlaneInputs();
  custom.resources = {100, 100, "256Mi"};
  Object vm2 = Build(custom);
  const auto& d2 = vm2["spec"]["template"]["spec"]["domain"];
  EXPECT_EQ(d2["resources"]["requests"], (Object{{"cpu", "2"}, {"memory", "4Gi"}}));
  EXPECT_EQ(d2["memory"]["guest"], "3840Mi");
}

TEST(VmBuilderTest, ImageDiskUsesImageStorageClassAndImageId) {
  Object vm = Build(WorkerInputs());
  Object claims = ClaimTemplates(vm);
  ASSERT_EQ(claims.size(), 2u);
  // Blank disk: its own class, no image annotation.
  EXPECT_EQ(claims[0]["spec"]["storageClassName"], "harvester-longhorn");
  EXPECT_FALSE(claims[0]["metadata"].contains("annotations"));
  // Image disk: status.storageClassName of the image (lh-<uid> on v1.8.2+).
  EXPECT_EQ(claims[1]["spec"]["storageClassName"], "lh-0d5f1a77");
  EXPECT_EQ(claims[1]["metadata"]["annotations"]["harvesterhci.io/imageId"], "default/image-abcde");
  for (const auto& c : claims) {
    EXPECT_EQ(c["spec"]["accessModes"], Object::array({"ReadWriteMany"}));
    EXPECT_EQ(c["spec"]["volumeMode"], "Block");
  }
  EXPECT_EQ(claims[1]["spec"]["resources"]["requests"]["storage"], "40Gi");

  VmInputs fallback = ControlPlaneInputs();
  fallback.images["default/sles15-sp7"].storage_class_name = "";
  EXPECT_EQ(ClaimTemplates(Build(fallback))[0]["spec"]["storageClassName"], "longhorn-image-abcde");
}

TEST(VmBuilderTest, BootOrderImageFirstUnlessUserSetIt) {
  Object vm = Build(WorkerInputs());
  const auto& disks = vm["spec"]["template"]["spec"]["domain"]["devices"]["disks"];
  ASSERT_EQ(disks.size(), 3u);
  EXPECT_FALSE(disks[0].contains("bootOrder"));  // blank data disk
  EXPECT_EQ(disks[1]["bootOrder"], 1);           // image disk
  EXPECT_EQ(disks[2]["name"], "cloudinitdisk");

  VmInputs user = WorkerInputs();
  user.spec.volumes[0].boot_order = 2;
  user.spec.volumes[1].boot_order = 1;
  Object vm2 = Build(user);
  const auto& d2 = vm2["spec"]["template"]["spec"]["domain"]["devices"]["disks"];
  EXPECT_EQ(d2[0]["bootOrder"], 2);
  EXPECT_EQ(d2[1]["bootOrder"], 1);

  user.spec.volumes[0].boot_order = 1;
  auto dup = BuildVirtualMachine(user);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("spec.volumes[1].bootOrder"), std::string::npos);
}

TEST(VmBuilderTest, PvcNamesAreDeterministicPerMachineUid) {
  VmInputs in = ControlPlaneInputs();
  EXPECT_EQ(ClaimTemplates(Build(in)), ClaimTemplates(Build(in)));
  std::string name = ClaimTemplates(Build(in))[0]["metadata"]["name"];
  EXPECT_EQ(name.rfind("demo-cp-x7k2p-disk-0-", 0), 0u);
  EXPECT_EQ(name.size(), std::string("demo-cp-x7k2p-disk-0-").size() + 5);
  EXPECT_EQ(name, PvcName(in.name, in.machine_uid, 0));
  in.machine_uid = "another-uid";
  EXPECT_NE(ClaimTemplates(Build(in))[0]["metadata"]["name"], name);
  // The volume refers to the claim of its template.
  Object vm = Build(in);
  EXPECT_EQ(vm["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            ClaimTemplates(vm)[0]["metadata"]["name"]);
}

TEST(VmBuilderTest, DiskOwnerOfInvertsPvcName) {
  EXPECT_EQ(DiskOwnerOf(PvcName("vm", "uid", 0)), "vm");
  EXPECT_EQ(DiskOwnerOf(PvcName("vm", "uid", 12)), "vm");
  // A VM whose own name holds "-disk-": its disks are not another VM's.
  EXPECT_EQ(DiskOwnerOf(PvcName("a-disk-b", "uid", 0)), "a-disk-b");
  EXPECT_EQ(DiskOwnerOf("data-volume"), "");
  EXPECT_EQ(DiskOwnerOf("-disk-0"), "");
}

TEST(VmBuilderTest, OneInterfacePerNetwork) {
  VmInputs in = WorkerInputs();
  in.mac_addresses = {"52:54:00:00:00:01", ""};
  Object vm = Build(in);
  const auto& spec = vm["spec"]["template"]["spec"];
  ASSERT_EQ(spec["networks"].size(), 2u);
  EXPECT_EQ(spec["networks"][0],
            (Object{{"name", "nic-0"}, {"multus", {{"networkName", "default/vlan100"}}}}));
  EXPECT_EQ(spec["networks"][1]["multus"]["networkName"], "default/storage-net");
  const auto& ifaces = spec["domain"]["devices"]["interfaces"];
  ASSERT_EQ(ifaces.size(), 2u);
  EXPECT_EQ(ifaces[1],
            (Object{{"name", "nic-1"}, {"model", "virtio"}, {"bridge", Object::object()}}));
  EXPECT_EQ(ifaces[0]["macAddress"], "52:54:00:00:00:01");
}

TEST(VmBuilderTest, CloudInitDiskReferencesSecret) {
  VmInputs in = ControlPlaneInputs();
  Object vm = Build(in);
  const auto& vols = vm["spec"]["template"]["spec"]["volumes"];
  EXPECT_EQ(vols.back(),
            (Object{{"name", "cloudinitdisk"},
                    {"cloudInitNoCloud",
                     {{"secretRef", {{"name", "demo-cp-x7k2p-cloud-init"}}},
                      {"networkDataSecretRef", {{"name", "demo-cp-x7k2p-cloud-init"}}}}}}));
  in.network_data = false;
  in.cloud_init_secret_name = "custom";
  Object vm2 = Build(in);
  EXPECT_EQ(vm2["spec"]["template"]["spec"]["volumes"].back()["cloudInitNoCloud"],
            (Object{{"secretRef", {{"name", "custom"}}}}));
}

TEST(VmBuilderTest, LabelsAnnotationsAndAntiAffinitySpreadSiblings) {
  VmInputs in = ControlPlaneInputs();
  Object vm = Build(in);
  const auto& labels = vm["metadata"]["labels"];
  EXPECT_EQ(labels, vm["spec"]["template"]["metadata"]["labels"]);
  EXPECT_EQ(labels["cluster.x-k8s.io/cluster-name"], "demo");
  EXPECT_EQ(labels[std::string(kLabelClusterId)], ClusterId(in.cluster));
  EXPECT_EQ(labels[std::string(kLabelRole)], "control-plane");
  EXPECT_EQ(labels["harvesterhci.io/vmName"], "demo-cp-x7k2p");
  EXPECT_EQ(labels["guestcluster.harvesterhci.io/name"], "demo");
  EXPECT_EQ(labels["harvestercluster/machinetype"], "controlplane-demo");
  const auto& ann = vm["spec"]["template"]["metadata"]["annotations"];
  EXPECT_EQ(ann["harvesterhci.io/sshNames"], "[\"default/mykey\"]");
  EXPECT_EQ(vm["spec"]["template"]["spec"]["hostname"], "demo-cp-x7k2p");

  const auto& term = vm["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
                       ["preferredDuringSchedulingIgnoredDuringExecution"][0];
  EXPECT_EQ(term["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname");
  const auto& match = term["podAffinityTerm"]["labelSelector"]["matchLabels"];
  // The selector matches a sibling control plane VM, not only this VM.
  VmInputs sibling = ControlPlaneInputs();
  sibling.name = "demo-cp-other";
  sibling.machine_uid = "u2";
  Object sibling_labels = Build(sibling)["spec"]["template"]["metadata"]["labels"];
  for (const auto& [k, v] : match.items()) EXPECT_EQ(sibling_labels[k], v) << k;
  EXPECT_FALSE(match.contains("harvesterhci.io/vmName"));
  // ...and not a worker of the same cluster, nor a VM of another cluster.
  Object worker_labels = Build(WorkerInputs())["metadata"]["labels"];
  EXPECT_NE(worker_labels[std::string(kLabelRole)], match[std::string(kLabelRole)]);
  VmInputs other = ControlPlaneInputs();
  other.cluster.management_cluster_id = "mgmt-uid-2";
  EXPECT_NE(Build(other)["metadata"]["labels"][std::string(kLabelClusterId)],
            match[std::string(kLabelClusterId)]);
  EXPECT_FALSE(
      Build(WorkerInputs())["metadata"]["labels"].contains("harvestercluster/machinetype"));
}

TEST(VmBuilderTest, UserAffinityIsCopied) {
  Object vm = Build(WorkerInputs());
  EXPECT_EQ(vm["spec"]["template"]["spec"]["affinity"]["nodeAffinity"],
            WorkerInputs().spec.node_affinity.json());
  EXPECT_FALSE(vm["spec"]["template"]["spec"]["affinity"].contains("podAffinity"));
}

TEST(VmBuilderTest, AFailureDomainJoinsEveryTermTheUserWrote) {
  VmInputs in = WorkerInputs();
  in.spec.node_affinity = Object::parse(R"({"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["h9"]}]}]},
      "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference":
        {"matchExpressions": [{"key": "ssd", "operator": "Exists"}]}}]})");
  in.failure_domain = NodeRequirement{"topology.kubernetes.io/zone", "zone-b"};
  const Object pin = Object::parse(
      R"({"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]})");
  Object na = Build(in)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"];
  const Object& terms = na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);
  Object first = Object::parse(R"([{"key": "gpu", "operator": "Exists"}])");
  first.push_back(pin);
  EXPECT_EQ(terms[0]["matchExpressions"], first);
  EXPECT_EQ(terms[1]["matchExpressions"], Object::array({pin}));
  EXPECT_EQ(terms[1]["matchFields"][0]["values"][0], "h9");
  // Preferences are the user's alone.
  EXPECT_EQ(na["preferredDuringSchedulingIgnoredDuringExecution"],
            in.spec.node_affinity.json()["preferredDuringSchedulingIgnoredDuringExecution"]);

  // No affinity of the user's: one term, the pin.
  in.spec.node_affinity = {};
  na = Build(in)["spec"]["template"]["spec"]["affinity"]["nodeAffinity"];
  EXPECT_EQ(na, Object::parse(R"({"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}]}})"));
  // No domain: no node affinity at all.
  in.failure_domain.reset();
  EXPECT_FALSE(Build(in)["spec"]["template"]["spec"]["affinity"].contains("nodeAffinity"));
}

TEST(VmBuilderTest, ValidationErrorsNameTheField) {
  auto expect_error = [](VmInputs in, const std::string& field) {
    auto vm = BuildVirtualMachine(in);
    ASSERT_FALSE(vm.ok()) << field;
    EXPECT_EQ(vm.status().code(), kube::StatusCode::kInvalidArgument);
    EXPECT_NE(vm.status().message().find(field), std::string::npos) << vm.status().message();
  };
  VmInputs in = ControlPlaneInputs();
  in.spec.cpu = 0;
  expect_error(in, "spec.cpu");
  in = ControlPlaneInputs();
  in.spec.memory = "lots";
  expect_error(in, "spec.memory");
  in.spec.memory = "64Mi";  // below the reserved 100Mi
  expect_error(in, "spec.memory");
  in = ControlPlaneInputs();
  in.spec.volumes[0].volume_size = "";  // the Go provider dereferenced nil here
  expect_error(in, "spec.volumes[0].volumeSize");
  in = ControlPlaneInputs();
  in.images.clear();
  expect_error(in, "spec.volumes[0].imageName");
  in = ControlPlaneInputs();
  in.spec.volumes[0].volume_type = "imag";
  expect_error(in, "spec.volumes[0].volumeType");
  in = ControlPlaneInputs();
  in.spec.volumes[0] = api::Volume{"storageClass", "", "", "1Gi", 0};
  expect_error(in, "spec.volumes[0].storageClass");
  in = ControlPlaneInputs();
  in.spec.networks.clear();
  expect_error(in, "spec.networks");
  in = ControlPlaneInputs();
  in.name = "Bad_Name";
  expect_error(in, "metadata.name");
  in = ControlPlaneInputs();
  in.machine_uid.clear();
  expect_error(in, "metadata.uid");
  in = ControlPlaneInputs();
  in.mac_addresses = {"a", "b"};
  expect_error(in, "macAddresses");
}

TEST(VmBuilderTest, RemovePvcsPatchListsEveryClaim) {
  Object vm = Build(WorkerInputs());
  auto names = PvcNamesOf(vm);
  ASSERT_EQ(names.size(), 2u);
  auto patch = RemovePvcsPatch(vm);
  ASSERT_TRUE(patch);
  EXPECT_EQ((*patch)["metadata"]["annotations"]["harvesterhci.io/removedPersistentVolumeClaims"],
            names[0] + "," + names[1]);
  EXPECT_FALSE(RemovePvcsPatch(Object{{"metadata", Object::object()}}));
  EXPECT_TRUE(PvcNamesOf(Object{{"metadata",
                                 {{"annotations",
                                   {{"harvesterhci.io/volumeClaimTemplates", "not json"}}}}}})
                  .empty());
}

TEST(VmBuilderTest, QuantityFormatting) {
  EXPECT_EQ(FormatBytes(4LL << 30), "4Gi");
  EXPECT_EQ(FormatBytes(1536LL << 20), "1536Mi");
  EXPECT_EQ(FormatBytes(1000), "1000");
  EXPECT_EQ(FormatBytes(0), "0");
  EXPECT_EQ(FormatMillis(2000), "2");
  EXPECT_EQ(FormatMillis(125), "125m");
  EXPECT_EQ(FormatMillis(62), "62m");
}

}  // namespace
}  // namespace caphv::harvester

namespace caphv::harvester {
namespace {

// What KubeVirt shows of an RKE2 guest once its agent runs: the declared NIC
// with its IPv4 and link-local IPv6, and the guest's other interfaces,
// unnamed (agent_poller / netstat in KubeVirt).
TEST(VmiAddressesTest, OnlyTheDeclaredInterfacesAndNoLinkLocal) {
  const kube::Object vmi = kube::Object::parse(R"({
    "spec": {"domain": {"devices": {"interfaces": [{"name": "nic-0", "bridge": {}}]}}},
    "status": {"interfaces": [
      {"name": "nic-0", "interfaceName": "enp1s0", "ipAddress": "10.9.0.7",
       "ipAddresses": ["10.9.0.7", "fe80::5054:ff:fe12:3456", "FE80::1"],
       "infoSource": "domain, guest-agent"},
      {"interfaceName": "cni0", "ipAddress": "10.42.0.1", "ipAddresses": ["10.42.0.1"],
       "infoSource": "guest-agent"},
      {"interfaceName": "flannel.1", "ipAddress": "10.42.0.0", "infoSource": "guest-agent"},
      {"name": "nic-9", "ipAddress": "192.168.5.5"},
      {"name": "nic-0", "ipAddresses": ["169.254.3.4", "127.0.0.1", "::1", "10.9.0.8"]}
    ]}
  })");
  EXPECT_EQ(VmiAddresses(vmi), (std::vector<std::string>{"10.9.0.7", "10.9.0.8"}));
}

TEST(VmiAddressesTest, NoAgentNoAddress) {
  const kube::Object vmi = kube::Object::parse(R"({
    "spec": {"domain": {"devices": {"interfaces": [{"name": "nic-0"}]}}},
    "status": {"interfaces": [{"name": "nic-0", "mac": "52:54:00:12:34:56",
                               "infoSource": "domain"}]}
  })");
  EXPECT_TRUE(VmiAddresses(vmi).empty());
  EXPECT_TRUE(VmiAddresses(kube::Object::object()).empty());
}

// The cache keeps a VM as VmFields() leaves it: every reader still gives what
// it gives on the whole VM, and what CAPHV wrote and never reads is gone.
TEST(CompactVmTest, TheReadersReadTheSameFromTheCompactVm) {
  Object vm = Build(ControlPlaneInputs());
  vm["metadata"]["uid"] = "vm-uid";
  vm["metadata"]["resourceVersion"] = "12";
  vm["metadata"]["managedFields"] = Object::array({{{"manager", "caphv"}}});
  vm["status"] = Object::parse(R"({"printableStatus": "Running", "ready": true, "created": true,
      "conditions": [{"type": "Ready", "status": "True"}],
      "volumeSnapshotStatuses": [{"name": "disk-0", "enabled": false}]})");
  Object compact = vm;
  VmFields().Apply(compact);
  EXPECT_EQ(CloudInitSecretOf(compact), CloudInitSecretOf(vm));
  EXPECT_FALSE(CloudInitSecretOf(vm).empty());
  EXPECT_EQ(PvcNamesOf(compact), PvcNamesOf(vm));
  EXPECT_FALSE(PvcNamesOf(vm).empty());
  EXPECT_EQ(RemovePvcsPatch(compact), RemovePvcsPatch(vm));
  EXPECT_EQ(compact["metadata"]["labels"], vm["metadata"]["labels"]);
  EXPECT_EQ(compact["status"]["conditions"], vm["status"]["conditions"]);
  EXPECT_EQ(compact["status"]["printableStatus"], "Running");
  EXPECT_FALSE(compact["metadata"].contains("managedFields"));
  EXPECT_FALSE(compact["spec"]["template"]["spec"].contains("domain"));
  EXPECT_FALSE(compact["spec"]["template"]["spec"].contains("affinity"));
  EXPECT_FALSE(compact["status"].contains("volumeSnapshotStatuses"));
  EXPECT_EQ(kube::KeyOf(compact), kube::KeyOf(vm));
  EXPECT_LT(compact.dump().size(), vm.dump().size() / 2);
}

TEST(CompactVmTest, AVmiKeepsItsAddressesPhaseAndRunningSince) {
  Object vmi = Object::parse(R"({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
    "metadata": {"name": "m-0", "namespace": "hv", "labels": {"l": "v"}},
    "spec": {"domain": {"cpu": {"cores": 2}, "devices": {"interfaces": [{"name": "nic-0"}],
             "disks": [{"name": "disk-0"}]}}},
    "status": {"phase": "Running", "nodeName": "h1", "guestOSInfo": {"id": "ubuntu"},
      "interfaces": [{"name": "nic-0", "ipAddress": "10.9.0.7"},
                     {"interfaceName": "cni0", "ipAddress": "10.42.0.1"}],
      "phaseTransitionTimestamps": [{"phase": "Running", "phaseTransitionTimestamp": "t"}],
      "conditions": [{"type": "Ready", "status": "True"}],
      "volumeStatus": [{"name": "disk-0", "target": "vda"}]}})");
  Object compact = vmi;
  VmiFields().Apply(compact);
  EXPECT_EQ(VmiAddresses(compact), VmiAddresses(vmi));
  EXPECT_EQ(VmiAddresses(vmi), std::vector<std::string>{"10.9.0.7"});
  EXPECT_EQ(compact["status"]["phase"], "Running");
  EXPECT_EQ(compact["status"]["phaseTransitionTimestamps"],
            vmi["status"]["phaseTransitionTimestamps"]);
  EXPECT_FALSE(compact["status"].contains("guestOSInfo"));
  EXPECT_FALSE(compact["status"].contains("volumeStatus"));
  EXPECT_FALSE(compact["spec"]["domain"].contains("cpu"));
  EXPECT_EQ(kube::KeyOf(compact), kube::KeyOf(vmi));
  EXPECT_FALSE(compact["metadata"].contains("labels"));
}

}  // namespace
}  // namespace caphv::harvester
