// File: test/unit/harvester/cloud_init_test.cc

#include "harvester/cloud_init.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "golden.h"
#include "kube/base64.h"

namespace caphv::harvester {
namespace {

using caphv::testing::MatchesGolden;

constexpr char kKey[] = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests caphv@test";

// A bootstrap in the style of the RKE2/kubeadm bootstrap providers.
constexpr char kBootstrap[] = R"(#cloud-config
write_files:
- path: /etc/rancher/rke2/config.yaml
  owner: root:root
  permissions: '0640'
  content: |
    token: abc
    tls-san:
      - 10.0.0.10
- path: /opt/flag
  permissions: "0600"
  content: "yes"
runcmd:
- curl -sfL https://get.rke2.io | sh -
- [systemctl, enable, --now, rke2-server.service]
packages: [curl]
ntp:
  enabled: true
ssh_authorized_keys:
- ssh-rsa AAAAbootstrap bootstrap@key
)";

UserDataInputs Inputs(std::string bootstrap) {
  UserDataInputs in;
  in.bootstrap = std::move(bootstrap);
  in.ssh_user = "sles";
  in.ssh_public_key = kKey;
  return in;
}

YAML::Node Load(const std::string& text) { return YAML::Load(text); }

TEST(CloudInitTest, DetectsFormats) {
  EXPECT_EQ(DetectUserDataFormat("#cloud-config\na: 1"), "cloud-config");
  EXPECT_EQ(DetectUserDataFormat("#cloud-config-archive\n- a"), "cloud-config-archive");
  EXPECT_EQ(DetectUserDataFormat("#!/bin/bash\necho"), "shellscript");
  EXPECT_EQ(DetectUserDataFormat("## template: jinja\n#cloud-config"), "jinja");
  EXPECT_EQ(DetectUserDataFormat("Content-Type: multipart/mixed; boundary=x"), "mime-multipart");
  EXPECT_EQ(DetectUserDataFormat("MIME-Version: 1.0\n"), "mime-multipart");
  EXPECT_EQ(DetectUserDataFormat("{\"ignition\":{\"version\":\"3.3.0\"}}"), "ignition");
  EXPECT_EQ(DetectUserDataFormat("#include\nhttp://x"), "include");
  EXPECT_EQ(DetectUserDataFormat("  \n"), "empty");
  EXPECT_EQ(DetectUserDataFormat("hello"), "unknown");
}

TEST(CloudInitTest, OtherFormatsPassThroughUntouched) {
  for (std::string data :
       {std::string("#!/bin/sh\necho hi\n"), std::string("Content-Type: multipart/mixed\n\n--x--"),
        std::string("{\"ignition\":{\"version\":\"3.3.0\"}}"),
        std::string("## template: jinja\n#cloud-config\n{% if v1.region %}a: 1\n{% endif %}\n"),
        std::string("## template: jinja\n#cloud-config\n{# note #}\na: 1\n"),
        std::string("## template: jinja\n#!/bin/sh\necho {{ v1.local_hostname }}\n"),
        std::string("## template: jinja\n#cloud-config\nfqdn: {{ v1.local_hostname\n")}) {
    auto out = MergeUserData(Inputs(data));
    ASSERT_TRUE(out.ok());
    EXPECT_FALSE(out->merged) << data;
    EXPECT_EQ(out->text, data);
    EXPECT_FALSE(out->not_merged_because.empty()) << data;
  }
  // The bootstrap Secret's `format: ignition` wins over content sniffing.
  UserDataInputs in = Inputs("#cloud-config\n{}\n");
  in.bootstrap_format = "ignition";
  auto out = MergeUserData(in);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->merged);
  EXPECT_EQ(out->format, "ignition");
}

TEST(CloudInitTest, MergeKeepsBootstrapAndAddsOurs) {
  auto out = MergeUserData(Inputs(kBootstrap));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->merged);
  ASSERT_EQ(out->text.rfind("#cloud-config\n", 0), 0u);
  EXPECT_TRUE(MatchesGolden("userdata_rke2_merged.yaml", out->text));

  YAML::Node y = Load(out->text);
  // Bootstrap content intact, quoted scalars still strings.
  EXPECT_EQ(y["write_files"][0]["content"].as<std::string>(),
            "token: abc\ntls-san:\n  - 10.0.0.10\n");
  EXPECT_EQ(y["write_files"][0]["permissions"].Tag(), "!");
  EXPECT_EQ(y["write_files"][0]["permissions"].as<std::string>(), "0640");
  EXPECT_EQ(y["write_files"][1]["content"].Tag(), "!");  // "yes" stays a string
  EXPECT_EQ(y["ntp"]["enabled"].as<std::string>(), "true");
  EXPECT_EQ(y["ntp"]["enabled"].Tag(), "?");
  // Lists merged: guest agent first in runcmd, bootstrap commands after.
  ASSERT_EQ(y["runcmd"].size(), 3u);
  EXPECT_EQ(y["runcmd"][0][3].as<std::string>(), "qemu-guest-agent.service");
  EXPECT_EQ(y["runcmd"][1].as<std::string>(), "curl -sfL https://get.rke2.io | sh -");
  ASSERT_EQ(y["packages"].size(), 2u);
  EXPECT_EQ(y["packages"][1].as<std::string>(), "qemu-guest-agent");
  ASSERT_EQ(y["ssh_authorized_keys"].size(), 2u);
  EXPECT_EQ(y["ssh_authorized_keys"][1].as<std::string>(), kKey);
  // The SSH user is created (the Go provider ignored sshUser), default user kept.
  ASSERT_EQ(y["users"].size(), 2u);
  EXPECT_EQ(y["users"][0].as<std::string>(), "default");
  EXPECT_EQ(y["users"][1]["name"].as<std::string>(), "sles");
  EXPECT_EQ(y["users"][1]["ssh_authorized_keys"][0].as<std::string>(), kKey);
}

// What the RKE2 bootstrap provider writes: a Jinja header before the
// cloud-config. It is merged like plain cloud-config and keeps its header; a
// user's {{ ... }} expressions come back verbatim for cloud-init to render.
TEST(CloudInitTest, JinjaHeadedCloudConfigIsMergedAndKeepsItsHeader) {
  const std::string rke2 = std::string("## template: jinja\n") + kBootstrap +
                           "bootcmd:\n- echo {{ ds.meta_data.local_hostname }} > /etc/name\n"
                           "fqdn: {{ v1.local_hostname }}.example\n";
  auto out = MergeUserData(Inputs(rke2));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(out->merged);
  EXPECT_EQ(out->format, "jinja");
  EXPECT_TRUE(out->not_merged_because.empty());
  ASSERT_EQ(out->text.rfind("## template: jinja\n#cloud-config\n", 0), 0u) << out->text;
  EXPECT_NE(out->text.find("echo {{ ds.meta_data.local_hostname }} > /etc/name"), std::string::npos)
      << out->text;
  EXPECT_NE(out->text.find("fqdn: {{ v1.local_hostname }}.example"), std::string::npos)
      << out->text;
  EXPECT_EQ(out->text.find("caphv-jinja"), std::string::npos) << out->text;

  // Past the header (its expressions rendered, as cloud-init does first) it
  // is the cloud-config of the plain merge, plus the two keys.
  std::string rendered = out->text.substr(out->text.find('\n') + 1);
  for (size_t at = rendered.find("{{"); at != std::string::npos; at = rendered.find("{{")) {
    rendered.replace(at, rendered.find("}}", at) + 2 - at, "host1");
  }
  YAML::Node y = Load(rendered);
  EXPECT_EQ(y["fqdn"].as<std::string>(), "host1.example");
  ASSERT_EQ(y["packages"].size(), 2u);
  EXPECT_EQ(y["packages"][1].as<std::string>(), "qemu-guest-agent");
  EXPECT_EQ(y["runcmd"][0][3].as<std::string>(), "qemu-guest-agent.service");
  EXPECT_EQ(y["ssh_authorized_keys"][1].as<std::string>(), kKey);
  EXPECT_EQ(y["users"][1]["name"].as<std::string>(), "sles");

  auto twice = MergeUserData(Inputs(out->text));
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->text, out->text);
}

// Found by fuzz/cloud_init_fuzzer: a bootstrap cloud-config whose alias
// refers to its own ancestor overflowed the manager's stack while being
// re-emitted; one repeated into an exponential tree would exhaust memory.
// Both are refused with an error.
TEST(CloudInitTest, AliasGraphsAreRefusedNotWalkedForever) {
  UserDataInputs in;
  in.bootstrap = "#cloud-config\nanchors: &a\n  <<: *a\n";
  auto cyclic = MergeUserData(in);
  ASSERT_FALSE(cyclic.ok());
  EXPECT_NE(cyclic.status().message().find("an alias that refers to itself"), std::string::npos)
      << cyclic.status().message();
  std::string laughs = "#cloud-config\na0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 8; ++i) {
    const std::string prev = "*a" + std::to_string(i - 1);
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev + ", " + prev +
              ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev + ", " + prev +
              ", " + prev + ", " + prev + "]\n";
  }
  in.bootstrap = laughs;
  EXPECT_FALSE(MergeUserData(in).ok());
}

TEST(CloudInitTest, NotMergedSaysWhy) {
  auto out = MergeUserData(Inputs("#!/bin/sh\necho hi\n"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->not_merged_because, "user data of format shellscript, which is not #cloud-config");
  out = MergeUserData(Inputs("## template: jinja\n#cloud-config\n{% set a = 1 %}\n"));
  ASSERT_TRUE(out.ok());
  EXPECT_NE(out->not_merged_because.find("statements"), std::string::npos);
}

TEST(CloudInitTest, MergeIsIdempotent) {
  auto once = MergeUserData(Inputs(kBootstrap));
  ASSERT_TRUE(once.ok());
  auto twice = MergeUserData(Inputs(once->text));
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(once->text, twice->text);
}

TEST(CloudInitTest, ExistingUserGetsTheKeyAndExistingUsersListIsKept) {
  auto out = MergeUserData(
      Inputs("#cloud-config\nusers:\n- name: sles\n  groups: [wheel]\n- name: ops\n"));
  ASSERT_TRUE(out.ok());
  YAML::Node y = Load(out->text);
  ASSERT_EQ(y["users"].size(), 2u);  // no "default" added to a list the bootstrap wrote
  EXPECT_EQ(y["users"][0]["groups"][0].as<std::string>(), "wheel");
  EXPECT_EQ(y["users"][0]["ssh_authorized_keys"][0].as<std::string>(), kKey);

  auto added = MergeUserData(Inputs("#cloud-config\nusers:\n- name: ops\n"));
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(Load(added->text)["users"].size(), 2u);
}

TEST(CloudInitTest, EmptyBootstrapGetsOurCloudConfig) {
  auto out = MergeUserData(Inputs(""));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->merged);
  EXPECT_TRUE(MatchesGolden("userdata_empty_bootstrap.yaml", out->text));
}

TEST(CloudInitTest, RejectsBrokenCloudConfig) {
  EXPECT_FALSE(MergeUserData(Inputs("#cloud-config\n- a list\n")).ok());
  EXPECT_FALSE(MergeUserData(Inputs("#cloud-config\nruncmd: echo hi\n")).ok());
  EXPECT_FALSE(MergeUserData(Inputs("#cloud-config\nruncmd: [\n")).ok());
}

TEST(CloudInitTest, StaticMultiNicNetworkData) {
  auto in = DefaultNics(3, "172.16.3.40", "255.255.0.0", "172.16.0.1", {"172.16.0.53", "1.1.1.1"},
                        {"example.internal"});
  auto out = BuildNetworkData(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_TRUE(MatchesGolden("networkdata_static_multinic.yaml", *out));
  YAML::Node y = Load(*out);
  EXPECT_EQ(y["version"].as<int>(), 1);
  ASSERT_EQ(y["config"].size(), 4u);
  EXPECT_EQ(y["config"][0]["subnets"][0]["type"].as<std::string>(), "static");
  EXPECT_EQ(y["config"][0]["subnets"][0]["netmask"].as<std::string>(), "255.255.0.0");
  EXPECT_EQ(y["config"][1]["name"].as<std::string>(), "eth1");
  EXPECT_EQ(y["config"][1]["subnets"][0]["type"].as<std::string>(), "dhcp");
  EXPECT_EQ(y["config"][3]["type"].as<std::string>(), "nameserver");
}

TEST(CloudInitTest, DhcpNetworkData) {
  auto out = BuildNetworkData(DefaultNics(2, "", "", "", {}, {}));
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(MatchesGolden("networkdata_dhcp.yaml", *out));
}

TEST(CloudInitTest, CidrAddressAndMacAreUsedAndQuoted) {
  NetworkDataInputs in;
  in.nics = {{"eth0", "52:54:00:12:34:56", "10.0.0.5/24", "", "10.0.0.1"}};
  auto out = BuildNetworkData(in);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_NE(out->find("mac_address: \"52:54:00:12:34:56\""), std::string::npos) << *out;
  EXPECT_NE(out->find("netmask: \"255.255.255.0\""), std::string::npos);
  EXPECT_NE(out->find("address: \"10.0.0.5\""), std::string::npos);
}

TEST(CloudInitTest, NetworkDataValidation) {
  // No mask anywhere: an error, not a silent 255.255.0.0 (Go provider bug).
  EXPECT_FALSE(BuildNetworkData(DefaultNics(1, "10.0.0.5", "", "10.0.0.1", {}, {})).ok());
  EXPECT_FALSE(BuildNetworkData(DefaultNics(1, "10.0.0.5", "255.0.255.0", "", {}, {})).ok());
  EXPECT_FALSE(BuildNetworkData(DefaultNics(1, "10.0.0.5", "255.255.255.0", "10.0.1.1", {}, {}))
                   .ok());  // gateway outside the subnet
  EXPECT_FALSE(BuildNetworkData(DefaultNics(1, "10.0.0.500", "255.255.255.0", "", {}, {})).ok());
  EXPECT_FALSE(BuildNetworkData(DefaultNics(0, "", "", "", {}, {})).ok());
  EXPECT_FALSE(BuildNetworkData(DefaultNics(1, "", "", "", {"dns.example"}, {})).ok());
  NetworkDataInputs contradiction;
  contradiction.nics = {{"eth0", "", "10.0.0.5/24", "255.255.0.0", ""}};
  EXPECT_FALSE(BuildNetworkData(contradiction).ok());
}

TEST(CloudInitTest, SecretHasLowercaseKeysAndOwner) {
  CloudInitSecretInputs in;
  in.name = "vm-1-cloud-init";
  in.namespace_ = "default";
  in.labels = {{"a", "b"}};
  in.user_data = "#cloud-config\n{}\n";
  in.network_data = "version: 1\n";
  in.owner_vm_name = "vm-1";
  in.owner_vm_uid = "uid-1";
  auto s = BuildCloudInitSecret(in);
  EXPECT_EQ(*kube::Base64Decode(s["data"]["userdata"].get<std::string>()), in.user_data);
  EXPECT_EQ(*kube::Base64Decode(s["data"]["networkdata"].get<std::string>()), "version: 1\n");
  EXPECT_EQ(s["metadata"]["ownerReferences"][0]["kind"], "VirtualMachine");
  EXPECT_EQ(s["metadata"]["labels"]["a"], "b");
  in.network_data.reset();
  in.owner_vm_uid.clear();
  auto t = BuildCloudInitSecret(in);
  EXPECT_FALSE(t["data"].contains("networkdata"));
  EXPECT_FALSE(t["metadata"].contains("ownerReferences"));
}

}  // namespace
}  // namespace caphv::harvester

namespace caphv::harvester {
namespace {

api::HarvesterMachineSpec TwoNics() {
  api::HarvesterMachineSpec m;
  m.networks = {"default/vlan100", "default/storage"};
  return m;
}

api::VMNetworkConfig ClusterNet() {
  api::VMNetworkConfig c;
  c.ip_pool_ref = "pool";
  c.gateway = "172.16.0.1";
  c.subnet_mask = "255.255.0.0";
  c.dns_servers = {"172.16.0.53"};
  return c;
}

TEST(EffectiveNetworkDataTest, PoolAddressWithClusterSettings) {
  auto in = EffectiveNetworkData(TwoNics(), ClusterNet(), "172.16.3.40");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  ASSERT_EQ(in->nics.size(), 2u);
  EXPECT_EQ(in->nics[0].address, "172.16.3.40");
  EXPECT_EQ(in->nics[0].netmask, "255.255.0.0");
  EXPECT_EQ(in->nics[0].gateway, "172.16.0.1");
  EXPECT_TRUE(in->nics[1].address.empty());
  EXPECT_EQ(in->dns_servers, std::vector<std::string>{"172.16.0.53"});
  EXPECT_FALSE(EffectiveNetworkData(TwoNics(), ClusterNet(), "").ok());
}

TEST(EffectiveNetworkDataTest, MachineConfigWinsAndBorrowsClusterMask) {
  auto m = TwoNics();
  m.network_config = api::NetworkConfig{"10.1.0.9", "", "10.1.0.1", {}, {}};
  auto in = EffectiveNetworkData(m, ClusterNet(), "172.16.3.40");
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(in->nics[0].address, "10.1.0.9");
  EXPECT_EQ(in->nics[0].netmask, "255.255.0.0");
  EXPECT_EQ(in->dns_servers, std::vector<std::string>{"172.16.0.53"});
  // No mask anywhere: an error, never a silent default.
  auto no_mask = EffectiveNetworkData(m, std::nullopt, "");
  ASSERT_FALSE(no_mask.ok());
  EXPECT_NE(no_mask.status().message().find("subnetMask"), std::string::npos);
  m.network_config->address = "10.1.0.9/24";
  EXPECT_TRUE(EffectiveNetworkData(m, std::nullopt, "").ok());
}

TEST(EffectiveNetworkDataTest, DhcpWithoutAnyConfig) {
  auto in = EffectiveNetworkData(TwoNics(), std::nullopt, "");
  ASSERT_TRUE(in.ok());
  for (const auto& nic : in->nics) EXPECT_TRUE(nic.address.empty());
  EXPECT_FALSE(EffectiveNetworkData(api::HarvesterMachineSpec{}, std::nullopt, "").ok());
}

}  // namespace
}  // namespace caphv::harvester
