// Unit tests of the validation rules: every valid manifest passes, every bad
// manifest under test/data/manifests/invalid is rejected with the field path
// and error type its header names, and the update rules behave.

#include "webhooks/validation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "../api/test_paths.h"
#include "api/yaml.h"

namespace caphv::webhooks {
namespace {

using api::Json;

struct Manifest {
  std::string path;
  std::map<std::string, std::string> header;  // "# key: value" lines
  std::vector<Json> docs;
};

Manifest Load(const std::filesystem::path& p) {
  Manifest m;
  m.path = p.string();
  auto text = api::ReadFile(m.path);
  EXPECT_TRUE(text.ok()) << m.path;
  if (!text.ok()) return m;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# ", 0) != 0) continue;
    auto colon = line.find(": ");
    if (colon != std::string::npos) m.header[line.substr(2, colon - 2)] = line.substr(colon + 2);
  }
  auto docs = api::ParseYaml(*text);
  EXPECT_TRUE(docs.ok()) << m.path;
  if (docs.ok()) m.docs = *docs;
  return m;
}

std::vector<Manifest> LoadDir(const std::string& which) {
  std::vector<Manifest> out;
  for (const auto& e : std::filesystem::directory_iterator(testing::ManifestDir(which))) {
    out.push_back(Load(e.path()));
  }
  return out;
}

FieldErrors Admit(const Manifest& m) {
  const Json& obj = m.docs.back();
  const Json* old = m.docs.size() == 2 ? &m.docs.front() : nullptr;
  return ValidateAdmission(obj.value("kind", ""), obj, old);
}

ErrorType ParseType(const std::string& s) {
  if (s == "Required") return ErrorType::kRequired;
  if (s == "Invalid") return ErrorType::kInvalid;
  if (s == "Forbidden") return ErrorType::kForbidden;
  if (s == "Duplicate") return ErrorType::kDuplicate;
  return ErrorType::kNotSupported;
}

TEST(ValidationManifestsTest, ValidManifestsPass) {
  auto manifests = LoadDir("valid");
  ASSERT_GE(manifests.size(), 10u);
  for (const auto& m : manifests) {
    ASSERT_EQ(m.docs.size(), 1u) << m.path;
    EXPECT_EQ(ToAggregateString(Admit(m)), "") << m.path;
    // An update that changes nothing passes too (SSA no-ops, finalizers).
    const Json& obj = m.docs.front();
    EXPECT_TRUE(ValidateAdmission(obj["kind"].get<std::string>(), obj, &obj).empty()) << m.path;
  }
}

TEST(ValidationManifestsTest, InvalidManifestsFailWithTheExpectedField) {
  auto manifests = LoadDir("invalid");
  ASSERT_GE(manifests.size(), 50u);
  for (const auto& m : manifests) {
    SCOPED_TRACE(m.path);
    ASSERT_TRUE(m.header.count("expect") && m.header.count("type") && m.header.count("operation"));
    const std::string& op = m.header.at("operation");
    ASSERT_EQ(m.docs.size(), op == "update" ? 2u : 1u);
    const Json& obj = m.docs.back();
    EXPECT_EQ(obj["metadata"].value("namespace", "default"), "default");
    EXPECT_FALSE(obj["metadata"].value("name", "").empty());
    if (op == "update") {
      // The old object on its own is fine.
      EXPECT_TRUE(
          ValidateAdmission(obj["kind"].get<std::string>(), m.docs.front(), nullptr).empty());
    }
    FieldErrors errs = Admit(m);
    bool found = false;
    for (const auto& e : errs) {
      found =
          found || (e.field == m.header.at("expect") && e.type == ParseType(m.header.at("type")));
    }
    EXPECT_TRUE(found) << "want " << m.header.at("type") << " at " << m.header.at("expect")
                       << ", got " << ToAggregateString(errs);
  }
}

TEST(FieldErrorTest, RendersAsTheGoProviderWordsItsErrors) {
  EXPECT_EQ(Required("spec.sshUser").ToString(), "spec.sshUser is required");
  EXPECT_EQ(Required("spec.volumes", "must contain at least one volume").ToString(),
            "spec.volumes must contain at least one volume");
  // Numbers are not shown, strings are quoted after the path.
  EXPECT_EQ(Invalid("spec.cpu", 0, "must be greater than 0").ToString(),
            "spec.cpu must be greater than 0");
  EXPECT_EQ(Invalid("spec.memory", "4 GB", "is not a valid resource quantity").ToString(),
            "spec.memory \"4 GB\" is not a valid resource quantity");
  EXPECT_EQ(Forbidden("spec.x", "cannot be changed").ToString(), "spec.x cannot be changed");
  EXPECT_EQ(Duplicate("spec.networks[1]", "a").ToString(), "spec.networks[1] \"a\" is a duplicate");
  EXPECT_EQ(Duplicate("spec.volumes[1].bootOrder", 2, "is taken").ToString(),
            "spec.volumes[1].bootOrder 2 is taken");
  EXPECT_EQ(NotSupported("spec.loadBalancerConfig.ipamType", "ippool", {"dhcp", "pool"}).ToString(),
            "spec.loadBalancerConfig.ipamType must be \"dhcp\" or \"pool\" (got \"ippool\")");
  EXPECT_EQ(
      NotSupported("spec.volumes[0].volumeType", "", {"image", "storageClass"}, '\'').ToString(),
      "spec.volumes[0].volumeType must be 'image' or 'storageClass'");
  EXPECT_EQ(NotSupported("op", "x", {"In", "NotIn", "Exists"}).ToString(),
            "op must be \"In\", \"NotIn\" or \"Exists\" (got \"x\")");
  FieldErrors two = {Required("a"), Invalid("b", 0, "must be greater than 0")};
  EXPECT_EQ(ToAggregateString(two), "a is required; b must be greater than 0");
  EXPECT_EQ(ToAggregateString({}), "");
  kube::Status st = ToDenialStatus(two, "HarvesterMachine", "ns", "m");
  EXPECT_EQ(st.http_status(), 403);
  EXPECT_EQ(st.reason(), "Forbidden");
  EXPECT_EQ(st.message(),
            "validation failed for HarvesterMachine ns/m: a is required; b must be greater than 0");
  ASSERT_EQ(st.causes().size(), 2u);
  EXPECT_EQ(st.causes()[0].type, "FieldValueRequired");
  EXPECT_EQ(st.causes()[0].field, "a");
  EXPECT_EQ(st.causes()[0].message, "a is required");
  EXPECT_EQ(st.causes()[1].type, "FieldValueInvalid");
}

api::HarvesterMachine ValidMachine() {
  api::HarvesterMachine m;
  m.spec.cpu = 2;
  m.spec.memory = "4Gi";
  m.spec.ssh_user = "sles";
  m.spec.ssh_key_pair = "default/key";
  m.spec.volumes = {{"image", "default/img", "", "40Gi", 1}};
  m.spec.networks = {"default/production"};
  return m;
}

TEST(MachineUpdateTest, ProviderIDMayBeSetOnceThenNotChanged) {
  auto old_m = ValidMachine();
  auto new_m = old_m;
  new_m.spec.provider_id = "harvester://uid-1";
  EXPECT_TRUE(ValidateHarvesterMachineUpdate(old_m, new_m).empty());
  auto newer = new_m;
  newer.spec.provider_id = "harvester://uid-2";
  auto errs = ValidateHarvesterMachineUpdate(new_m, newer);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.providerID");
}

TEST(MachineUpdateTest, SpecIsFrozenOnceTheVMExists) {
  auto old_m = ValidMachine();
  auto new_m = old_m;
  new_m.spec.cpu = 4;
  EXPECT_TRUE(ValidateHarvesterMachineUpdate(old_m, new_m).empty()) << "no VM yet";
  old_m.status.ready = true;
  auto errs = ValidateHarvesterMachineUpdate(old_m, new_m);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].type, ErrorType::kForbidden);
  EXPECT_EQ(errs[0].ToString().rfind("spec.cpu cannot be changed once the VM exists", 0), 0u)
      << errs[0].ToString();
  // Quantities compare by value; failureDomain stays mutable.
  new_m = old_m;
  new_m.spec.memory = "4096Mi";
  new_m.spec.volumes[0].volume_size = "40960Mi";
  new_m.spec.failure_domain = "zone-b";
  EXPECT_TRUE(ValidateHarvesterMachineUpdate(old_m, new_m).empty());
  // provisioned alone also counts.
  old_m.status.ready.reset();
  old_m.status.initialization = api::Initialization{true};
  new_m.spec.networks.push_back("default/storage");
  errs = ValidateHarvesterMachineUpdate(old_m, new_m);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.networks");
}

TEST(MachineUpdateTest, MetadataOnlyUpdatesOfLegacyObjectsPass) {
  auto legacy = ValidMachine();
  legacy.spec.volumes[0].volume_size = "";  // accepted by the Go provider's CRD
  ASSERT_FALSE(ValidateHarvesterMachine(legacy).empty());
  auto updated = legacy;
  updated.metadata.finalizers = {"harvestermachine.infrastructure.cluster.x-k8s.io/finalizer"};
  EXPECT_TRUE(ValidateHarvesterMachineUpdate(legacy, updated).empty());
}

TEST(TemplateUpdateTest, TemplatesMayChangeAndAreValidatedLikeOnCreate) {
  api::HarvesterMachineTemplate old_t;
  old_t.spec.template_.spec = ValidMachine().spec;
  auto new_t = old_t;
  new_t.spec.template_.spec.memory = "4096Mi";
  new_t.spec.template_.metadata.labels["team"] = "a";
  EXPECT_TRUE(ValidateHarvesterMachineTemplateUpdate(old_t, new_t).empty());
  // The Go provider does not freeze template specs, nor does CAPHV.
  new_t.spec.template_.spec.cpu = 3;
  EXPECT_TRUE(ValidateHarvesterMachineTemplateUpdate(old_t, new_t).empty());
  new_t.spec.template_.spec.cpu = -1;
  auto errs = ValidateHarvesterMachineTemplateUpdate(old_t, new_t);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.template.spec.cpu");
}

TEST(TemplateUpdateTest, ClusterTemplateDefaultsCompareEqual) {
  api::HarvesterClusterTemplate old_t;
  auto& spec = old_t.spec.template_.spec;
  spec.target_namespace = "default";
  spec.identity_secret = {"default", "hv-identity-secret"};
  spec.load_balancer_config.ipam_type = "dhcp";
  spec.load_balancer_config.listeners = {{"rke2-server", 9345, "", 9345}};
  auto new_t = old_t;
  new_t.spec.template_.spec.load_balancer_config.listeners[0].protocol = "TCP";
  EXPECT_TRUE(ValidateHarvesterClusterTemplateUpdate(old_t, new_t).empty());
  new_t.spec.template_.spec.load_balancer_config.listeners[0].protocol = "SCTP";
  EXPECT_EQ(ValidateHarvesterClusterTemplateUpdate(old_t, new_t).size(), 1u);
}

// The HarvesterMachineTemplate of the Go provider's ClusterClass: what the
// ClusterClass patches fill is left empty.
Json ClusterClassMachineTemplate() {
  return {{"kind", "HarvesterMachineTemplate"},
          {"metadata", {{"name", "harvester-rke2-worker"}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"cpu", 2},
                {"memory", "4Gi"},
                {"sshUser", "sles"},
                {"sshKeyPair", ""},
                {"volumes", Json::array()},
                {"networks", Json::array()}}}}}}}};
}

TEST(TemplateTest, UnsetValuesAreLeftToClusterClassPatches) {
  Json t = ClusterClassMachineTemplate();
  EXPECT_EQ(ToAggregateString(ValidateAdmission("HarvesterMachineTemplate", t, nullptr)), "");
  // Even an empty spec: every value is still to be filled.
  Json bare = {{"kind", "HarvesterMachineTemplate"}, {"metadata", {{"name", "t"}}}};
  EXPECT_EQ(ToAggregateString(ValidateAdmission("HarvesterMachineTemplate", bare, nullptr)), "");
  t["spec"]["template"]["spec"]["cpu"] = 0;
  t["spec"]["template"]["spec"]["memory"] = "";
  t["spec"]["template"]["spec"]["volumes"] = {{{"volumeType", "image"}, {"imageName", ""}}};
  EXPECT_EQ(ToAggregateString(ValidateAdmission("HarvesterMachineTemplate", t, nullptr)), "");
  // The same machine, stamped as is, is refused: concrete objects stay strict.
  Json m = {{"kind", "HarvesterMachine"},
            {"metadata", {{"name", "m"}}},
            {"spec", ClusterClassMachineTemplate()["spec"]["template"]["spec"]}};
  std::set<std::string> fields;
  for (const auto& e : ValidateAdmission("HarvesterMachine", m, nullptr)) fields.insert(e.field);
  EXPECT_EQ(fields, (std::set<std::string>{"spec.sshKeyPair", "spec.volumes", "spec.networks"}));
}

TEST(TemplateTest, ValuesThatAreSetAreValidated) {
  Json t = ClusterClassMachineTemplate();
  auto& spec = t["spec"]["template"]["spec"];
  spec["cpu"] = -2;
  spec["memory"] = "4 GB";
  spec["sshKeyPair"] = "a/b/c";
  spec["networks"] = {"Not_A_Network"};
  spec["volumes"] = {{{"volumeType", "storageClass"},
                      {"storageClass", "longhorn"},
                      {"volumeSize", "10Gi"},
                      {"bootOrder", 1}},
                     {{"volumeType", "floppy"}}};
  std::set<std::string> fields;
  for (const auto& e : ValidateAdmission("HarvesterMachineTemplate", t, nullptr)) {
    fields.insert(e.field);
  }
  EXPECT_EQ(fields, (std::set<std::string>{"spec.template.spec.cpu", "spec.template.spec.memory",
                                           "spec.template.spec.sshKeyPair",
                                           "spec.template.spec.networks[0]",
                                           "spec.template.spec.volumes[0].volumeType",
                                           "spec.template.spec.volumes[1].volumeType"}));
}

TEST(TemplateTest, ThePlaceholderEndpointOfTheClusterClassPasses) {
  Json listener = {
      {"name", "rke2-server"}, {"port", 9345}, {"protocol", "TCP"}, {"backendPort", 9345}};
  Json spec = {{"identitySecret", {{"namespace", "default"}, {"name", "hv-identity-secret"}}},
               {"loadBalancerConfig", {{"ipamType", "dhcp"}, {"listeners", {listener}}}},
               {"targetNamespace", "default"},
               {"controlPlaneEndpoint", {{"host", "0.0.0.0"}, {"port", 6443}}}};
  Json t = {{"kind", "HarvesterClusterTemplate"},
            {"metadata", {{"name", "harvester-rke2-cluster"}}},
            {"spec", {{"template", {{"spec", spec}}}}}};
  EXPECT_EQ(ToAggregateString(ValidateAdmission("HarvesterClusterTemplate", t, nullptr)), "");
  // Placeholders for what patches set (targetNamespace, identity) pass too.
  t["spec"]["template"]["spec"]["targetNamespace"] = "";
  t["spec"]["template"]["spec"]["identitySecret"] = {{"namespace", ""}, {"name", ""}};
  t["spec"]["template"]["spec"]["loadBalancerConfig"]["ipamType"] = "";
  EXPECT_EQ(ToAggregateString(ValidateAdmission("HarvesterClusterTemplate", t, nullptr)), "");
  t["spec"]["template"]["spec"]["loadBalancerConfig"]["ipamType"] = "ippool";
  auto errs = ValidateAdmission("HarvesterClusterTemplate", t, nullptr);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.template.spec.loadBalancerConfig.ipamType");
}

TEST(ClusterTest, WhatTheGoProviderWritesBackIsAccepted) {
  // Once it made the inline pools, the Go provider records their names in
  // ipPoolRef next to ipPool; ipPoolRefs wins over ipPoolRef.
  api::HarvesterCluster c;
  c.spec.target_namespace = "default";
  c.spec.identity_secret = {"default", "hv"};
  c.spec.load_balancer_config.ipam_type = "pool";
  c.spec.load_balancer_config.ip_pool_ref = "default-c1-lb-ippool";
  c.spec.load_balancer_config.ip_pool = api::IPPoolSpec{};
  c.spec.load_balancer_config.ip_pool->vm_network = "default/production";
  c.spec.load_balancer_config.ip_pool->subnet = "10.0.0.0/24";
  c.spec.load_balancer_config.ip_pool->gateway = "10.0.0.1";
  c.spec.vm_network_config = api::VMNetworkConfig{};
  auto& vm = *c.spec.vm_network_config;
  vm.gateway = "10.0.0.1";
  vm.subnet_mask = "255.255.255.0";
  c.spec.load_balancer_config.ip_pool->range_end = "10.0.0.9";
  vm.ip_pool = c.spec.load_balancer_config.ip_pool;
  vm.ip_pool->range_start = "10.0.0.10";
  vm.ip_pool->range_end.clear();
  vm.ip_pool_ref = "default-c1-vm-ippool";
  EXPECT_EQ(ToAggregateString(ValidateHarvesterCluster(c)), "");
  vm.ip_pool.reset();
  vm.ip_pool_refs = {"pool-a", "pool-b", "pool-a"};
  EXPECT_EQ(ToAggregateString(ValidateHarvesterCluster(c)), "");
}

TEST(ClusterUpdateTest, PoolChangesAreAllowed) {
  api::HarvesterCluster old_c;
  old_c.spec.target_namespace = "default";
  old_c.spec.identity_secret = {"default", "hv"};
  old_c.spec.load_balancer_config.ipam_type = "pool";
  old_c.spec.vm_network_config = api::VMNetworkConfig{};
  old_c.spec.vm_network_config->ip_pool_ref = "pool-a";
  old_c.spec.vm_network_config->gateway = "10.0.0.1";
  old_c.spec.vm_network_config->subnet_mask = "255.255.255.0";
  ASSERT_TRUE(ValidateHarvesterCluster(old_c).empty());
  auto new_c = old_c;
  new_c.spec.vm_network_config->ip_pool_ref = "";
  new_c.spec.vm_network_config->ip_pool_refs = {"pool-a", "pool-b"};
  EXPECT_TRUE(ValidateHarvesterClusterUpdate(old_c, new_c).empty());
  new_c.spec.identity_secret.namespace_ = "other";
  auto errs = ValidateHarvesterClusterUpdate(old_c, new_c);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.identitySecret.namespace");
}

api::HarvesterCluster PoolCluster() {
  api::HarvesterCluster c;
  c.spec.target_namespace = "default";
  c.spec.identity_secret = {"default", "hv"};
  c.spec.load_balancer_config.ipam_type = "pool";
  c.spec.load_balancer_config.ip_pool = api::IPPoolSpec{};
  c.spec.load_balancer_config.ip_pool->vm_network = "default/production";
  c.spec.load_balancer_config.ip_pool->subnet = "10.0.0.0/24";
  c.spec.load_balancer_config.ip_pool->gateway = "10.0.0.1";
  return c;
}

// Harvester's IPPool webhook takes a network only as <namespace>/<name>.
TEST(ClusterTest, InlineLbAndVmPoolsMayNotOverlap) {
  auto c = PoolCluster();
  c.spec.load_balancer_config.ip_pool->range_start = "10.0.0.10";
  c.spec.load_balancer_config.ip_pool->range_end = "10.0.0.19";
  c.spec.vm_network_config = api::VMNetworkConfig{};
  auto& vm = *c.spec.vm_network_config;
  vm.gateway = "10.0.0.1";
  vm.subnet_mask = "255.255.255.0";
  vm.ip_pool = *c.spec.load_balancer_config.ip_pool;
  vm.ip_pool->range_start = "10.0.0.20";
  vm.ip_pool->range_end = "10.0.0.99";
  EXPECT_EQ(ToAggregateString(ValidateHarvesterCluster(c)), "");
  vm.ip_pool->range_start = "10.0.0.19";
  auto errs = ValidateHarvesterCluster(c);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.vmNetworkConfig.ipPool");
  // Without bounds a pool spans its whole subnet.
  vm.ip_pool->range_start.clear();
  vm.ip_pool->range_end.clear();
  EXPECT_EQ(ValidateHarvesterCluster(c).size(), 1u);
}

TEST(ClusterTest, AnInlinePoolNetworkNeedsItsNamespace) {
  auto c = PoolCluster();
  ASSERT_EQ(ToAggregateString(ValidateHarvesterCluster(c)), "");
  c.spec.load_balancer_config.ip_pool->vm_network = "production";
  auto errs = ValidateHarvesterCluster(c);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.loadBalancerConfig.ipPool.vmNetwork");
  EXPECT_NE(errs[0].detail.find("<namespace>/<name>"), std::string::npos) << errs[0].detail;
}

// Harvester's load balancer webhook refuses a second listener on a
// protocol's backend port, the api-server listener's TCP 6443 included.
TEST(ClusterTest, DuplicateBackendPortsAreRefused) {
  auto c = PoolCluster();
  c.spec.load_balancer_config.listeners = {{"https", 443, "TCP", 30443}, {"dns", 53, "UDP", 30443}};
  ASSERT_EQ(ToAggregateString(ValidateHarvesterCluster(c)), "");
  c.spec.load_balancer_config.listeners.push_back({"alt", 8443, "TCP", 30443});
  auto errs = ValidateHarvesterCluster(c);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.loadBalancerConfig.listeners[2].backendPort");
  c.spec.load_balancer_config.listeners = {{"apiserver2", 443, "TCP", 6443}};
  errs = ValidateHarvesterCluster(c);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.loadBalancerConfig.listeners[0].backendPort");
  EXPECT_NE(errs[0].detail.find("api-server"), std::string::npos) << errs[0].detail;
}

TEST(ClusterUpdateTest, TheIpamTypeIsImmutable) {
  auto old_c = PoolCluster();
  auto new_c = old_c;
  new_c.spec.load_balancer_config.ipam_type = "dhcp";
  auto errs = ValidateHarvesterClusterUpdate(old_c, new_c);
  ASSERT_EQ(errs.size(), 1u) << ToAggregateString(errs);
  EXPECT_EQ(errs[0].field, "spec.loadBalancerConfig.ipamType");
  EXPECT_EQ(
      errs[0].ToString().rfind("spec.loadBalancerConfig.ipamType \"dhcp\" cannot be changed", 0),
      0u)
      << errs[0].ToString();
}

TEST(ValidateAdmissionTest, DecodeErrorsBecomeFieldErrors) {
  Json obj = {{"kind", "HarvesterMachine"}, {"spec", {{"cpu", "two"}}}};
  auto errs = ValidateAdmission("HarvesterMachine", obj, nullptr);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.cpu");
  EXPECT_EQ(ValidateAdmission("Machine", obj, nullptr)[0].type, ErrorType::kNotSupported);
}

TEST(ValidateAdmissionTest, ReportsEveryProblemAtOnce) {
  api::HarvesterMachine m;
  auto errs = ValidateHarvesterMachine(m);
  std::set<std::string> fields;
  for (const auto& e : errs) fields.insert(e.field);
  for (const char* f : {"spec.cpu", "spec.memory", "spec.sshUser", "spec.sshKeyPair",
                        "spec.volumes", "spec.networks"}) {
    EXPECT_TRUE(fields.count(f)) << f << " in " << ToAggregateString(errs);
  }
}

}  // namespace
}  // namespace caphv::webhooks
