// Unit tests of the validation rules: every valid manifest passes, every bad
// manifest under test/data/manifests/invalid is rejected with the field path
// and error type its header names, and the update rules behave.

#include "webhooks/validation.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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
  return ValidateAdmission(obj.value("kind", ""), obj, old, /*dry_run=*/false);
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
    EXPECT_EQ(ToAggregateString(Admit(m)), "[]") << m.path;
    // An update that changes nothing passes too (SSA no-ops, finalizers).
    const Json& obj = m.docs.front();
    EXPECT_TRUE(ValidateAdmission(obj["kind"].get<std::string>(), obj, &obj, false).empty())
        << m.path;
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
      EXPECT_TRUE(ValidateAdmission(obj["kind"].get<std::string>(), m.docs.front(), nullptr, false)
                      .empty());
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

TEST(FieldErrorTest, RendersLikeKubernetes) {
  EXPECT_EQ(Required("spec.volumes[1].volumeSize", "a disk needs a size").ToString(),
            "spec.volumes[1].volumeSize: Required value: a disk needs a size");
  EXPECT_EQ(Required("spec.sshUser").ToString(), "spec.sshUser: Required value");
  EXPECT_EQ(Invalid("spec.cpu", 0, "must be greater than 0").ToString(),
            "spec.cpu: Invalid value: 0: must be greater than 0");
  EXPECT_EQ(Invalid("spec.memory", "4 GB", "bad").ToString(),
            "spec.memory: Invalid value: \"4 GB\": bad");
  EXPECT_EQ(Forbidden("spec.x", "no").ToString(), "spec.x: Forbidden: no");
  EXPECT_EQ(Duplicate("spec.networks[1]", "a").ToString(),
            "spec.networks[1]: Duplicate value: \"a\"");
  EXPECT_EQ(NotSupported("spec.loadBalancerConfig.ipamType", "ippool", {"dhcp", "pool"}).ToString(),
            "spec.loadBalancerConfig.ipamType: Unsupported value: \"ippool\": supported values: "
            "\"dhcp\", \"pool\"");
  FieldErrors two = {Required("a"), Required("b")};
  EXPECT_EQ(ToAggregateString(two), "[a: Required value, b: Required value]");
  kube::Status st = ToInvalidStatus(two, "HarvesterMachine", "m");
  EXPECT_TRUE(st.IsInvalid());
  EXPECT_EQ(st.http_status(), 422);
  EXPECT_EQ(st.message(),
            "HarvesterMachine \"m\" is invalid: [a: Required value, b: Required value]");
  ASSERT_EQ(st.causes().size(), 2u);
  EXPECT_EQ(st.causes()[0].type, "FieldValueRequired");
  EXPECT_EQ(st.causes()[0].field, "a");
  EXPECT_EQ(st.causes()[0].message, "Required value");
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
  EXPECT_EQ(errs[0].ToString().rfind("spec.cpu: Forbidden", 0), 0u) << errs[0].ToString();
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

TEST(TemplateUpdateTest, SemanticallyEqualSpecsPass) {
  api::HarvesterMachineTemplate old_t;
  old_t.spec.template_.spec = ValidMachine().spec;
  auto new_t = old_t;
  new_t.spec.template_.spec.memory = "4096Mi";
  new_t.spec.template_.metadata.labels["team"] = "a";
  EXPECT_TRUE(ValidateHarvesterMachineTemplateUpdate(old_t, new_t).empty());
  new_t.spec.template_.spec.cpu = 3;
  auto errs = ValidateHarvesterMachineTemplateUpdate(old_t, new_t);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.template.spec");
  // Topology dry-runs skip immutability but not validation.
  EXPECT_TRUE(
      ValidateHarvesterMachineTemplateUpdate(old_t, new_t, {.skip_immutability = true}).empty());
  new_t.spec.template_.spec.cpu = 0;
  errs = ValidateHarvesterMachineTemplateUpdate(old_t, new_t, {.skip_immutability = true});
  ASSERT_EQ(errs.size(), 1u);
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
  new_t.spec.template_.spec.load_balancer_config.listeners[0].protocol = "UDP";
  EXPECT_EQ(ValidateHarvesterClusterTemplateUpdate(old_t, new_t).size(), 1u);
}

TEST(TemplateUpdateTest, TopologyDryRunDetection) {
  api::ObjectMeta meta;
  EXPECT_FALSE(ShouldSkipImmutabilityChecks(true, meta));
  meta.annotations["topology.cluster.x-k8s.io/dry-run"] = "";
  EXPECT_TRUE(ShouldSkipImmutabilityChecks(true, meta));
  EXPECT_FALSE(ShouldSkipImmutabilityChecks(false, meta));
  // Through the admission dispatch.
  Json old_t = {{"kind", "HarvesterMachineTemplate"},
                {"metadata", {{"name", "t"}}},
                {"spec", {{"template", {{"spec", api::Encode(ValidMachine().spec)}}}}}};
  Json new_t = old_t;
  new_t["spec"]["template"]["spec"]["cpu"] = 8;
  EXPECT_EQ(ValidateAdmission("HarvesterMachineTemplate", new_t, &old_t, true).size(), 1u);
  new_t["metadata"]["annotations"] = {{"topology.cluster.x-k8s.io/dry-run", ""}};
  EXPECT_TRUE(ValidateAdmission("HarvesterMachineTemplate", new_t, &old_t, true).empty());
  EXPECT_EQ(ValidateAdmission("HarvesterMachineTemplate", new_t, &old_t, false).size(), 1u);
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

TEST(ValidateAdmissionTest, DecodeErrorsBecomeFieldErrors) {
  Json obj = {{"kind", "HarvesterMachine"}, {"spec", {{"cpu", "two"}}}};
  auto errs = ValidateAdmission("HarvesterMachine", obj, nullptr, false);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].field, "spec.cpu");
  EXPECT_EQ(ValidateAdmission("Machine", obj, nullptr, false)[0].type, ErrorType::kNotSupported);
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
