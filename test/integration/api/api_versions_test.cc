// Both API versions through the real kube-apiserver: v1alpha1 (the Go
// provider v0.2.x, stored) and v1beta1 (upstream's name for the same schema
// since its v0.5). An object written at one version reads back at the other
// with the same spec (the schemas are one); upstream v0.10.1's own samples and example
// (v1beta1, read from its release archive) are accepted and lose no field;
// a bad v1beta1 object meets CAPHV's webhook and the Go provider's words.

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "webhook_fixture.h"

namespace caphv::testing {
namespace {

kube::GroupVersionResource At(api::Kind kind, const std::string& version) {
  kube::GroupVersionResource gvr = api::ResourceOf(kind);
  gvr.version = version;
  return gvr;
}

std::optional<api::Kind> KindNamed(const std::string& name) {
  for (api::Kind k : {api::Kind::kHarvesterCluster, api::Kind::kHarvesterMachine,
                      api::Kind::kHarvesterClusterTemplate, api::Kind::kHarvesterMachineTemplate}) {
    if (api::InfoOf(k).name == name) return k;
  }
  return std::nullopt;
}

// Every value of `want` is in `have` (lists element by element).
bool Covers(const Json& want, const Json& have, const std::string& path, std::string* why) {
  if (want.is_object()) {
    if (!have.is_object()) return *why = path + " is not an object", false;
    for (const auto& [k, v] : want.items()) {
      if (!have.contains(k)) return *why = path + "." + k + " is missing", false;
      if (!Covers(v, have[k], path + "." + k, why)) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return *why = path + " differs", false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Covers(want[i], have[i], path + "[" + std::to_string(i) + "]", why)) return false;
    }
    return true;
  }
  if (want != have) return *why = path + ": " + want.dump() + " != " + have.dump(), false;
  return true;
}

class ApiVersionsTest : public WebhookFixture {};

TEST_F(ApiVersionsTest, AnObjectWrittenAtOneVersionReadsTheSameAtTheOther) {
  int n = 0;
  for (const auto& m : LoadDir("valid")) {
    for (const std::string from : {"v1alpha1", "v1beta1"}) {
      const std::string to = from == "v1alpha1" ? "v1beta1" : "v1alpha1";
      SCOPED_TRACE(m.file + ": written at " + from);
      Json doc = m.docs.front();
      auto kind = KindNamed(doc["kind"]);
      ASSERT_TRUE(kind);
      doc["apiVersion"] = "infrastructure.cluster.x-k8s.io/" + from;
      doc["metadata"]["namespace"] = ns_->name();
      const std::string name = "rt-" + std::to_string(n++);
      doc["metadata"]["name"] = name;
      doc.erase("status");  // the status subresource is written separately
      auto created = client_->Create(At(*kind, from), ns_->name(), doc);
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      auto read = client_->Get(At(*kind, to), ns_->name(), name);
      ASSERT_TRUE(read.ok()) << read.status().ToString();
      EXPECT_EQ((*read)["apiVersion"], "infrastructure.cluster.x-k8s.io/" + to);
      EXPECT_EQ((*read).value("spec", Json()), (*created).value("spec", Json()));
      std::string why;
      EXPECT_TRUE(
          Covers(doc.value("spec", Json::object()), (*read).value("spec", Json()), "spec", &why))
          << why;
      // Status: the schemas are one (CrdTest checks both versions carry the
      // same schema and subresources); the running manager rewrites the
      // status of these objects, so it is not compared here.
      client_->Delete(At(*kind, from), ns_->name(), name).IgnoreError();
    }
  }
  EXPECT_GE(n, 20);
}

TEST_F(ApiVersionsTest, UpstreamV010SamplesAreAcceptedAtV1beta1AndLoseNothing) {
  int ours = 0;
  // Its kubebuilder samples have no spec (both providers refuse them); these
  // are the manifests it ships for use, clusterctl variables filled in.
  const std::map<std::string, std::string> variables = {
      {"CLUSTER_NAME", "up"},
      {"NAMESPACE", ns_->name()},
      {"CONTROL_PLANE_MACHINE_COUNT", "3"},
      {"WORKER_MACHINE_COUNT", "2"},
      {"KUBERNETES_VERSION", "v1.32.4+rke2r1"},
      {"HARVESTER_ENDPOINT", "10.0.0.2"},
      {"HARVESTER_KUBECONFIG_B64", "YXBpVmVyc2lvbjogdjEK"},
      {"CLOUD_CONFIG_KUBECONFIG_B64", "YXBpVmVyc2lvbjogdjEK"},
      {"IP_POOL_NAME", "pool-a"},
      {"SSH_KEYPAIR", "default/key"},
      {"SSH_USER", "sles"},
      {"TARGET_HARVESTER_NAMESPACE", "default"},
      {"VM_DISK_SIZE", "40Gi"},
      {"VM_IMAGE_NAME", "default/sles"},
      {"VM_NETWORK", "default/vlan1"},
      {"RANCHER_TURTLES_LABEL", ""},
  };
  static const std::regex kVariable(R"re(\$\{([A-Z_]+)(:[^}]*)?\})re");
  for (const std::string file :
       {"examples/worker-machinedeployment.yaml",
        "templates/clusterclass/rke2/clusterclass-harvester-rke2.yaml",
        "templates/clusterclass/rke2/clusterclass-harvester-rke2-example.yaml",
        "templates/cluster-template-rke2.yaml", "templates/cluster-template-rke2-dhcp.yaml",
        "templates/cluster-template-rke2-stig.yaml"}) {
    const auto read = caphv::testing::ReadGoProviderFile("v0.10.1", file);
    ASSERT_TRUE(read) << "cannot read " << file << " from "
                      << caphv::testing::GoProviderArchive("v0.10.1");
    std::string text = *read;
    std::string filled;
    auto last = text.cbegin();
    for (std::sregex_iterator it(text.begin(), text.end(), kVariable), end; it != end; ++it) {
      filled.append(last, (*it)[0].first);
      auto v = variables.find((*it)[1].str());
      ASSERT_NE(v, variables.end()) << file << ": " << (*it)[0].str();
      filled += v->second;
      last = (*it)[0].second;
    }
    filled.append(last, text.cend());
    text = filled;
    auto docs = api::ParseYaml(text);
    ASSERT_TRUE(docs.ok()) << file;
    for (Json doc : *docs) {
      auto kind = KindNamed(doc.value("kind", ""));
      if (!kind) continue;
      SCOPED_TRACE(file + ": " + doc["kind"].get<std::string>());
      EXPECT_EQ(doc["apiVersion"], "infrastructure.cluster.x-k8s.io/v1beta1");
      doc["metadata"]["namespace"] = ns_->name();
      const std::string name = doc["metadata"]["name"];
      auto created = client_->Create(At(*kind, "v1beta1"), ns_->name(), doc);
      if (!created.ok() && created.status().IsAlreadyExists()) {
        client_->Delete(At(*kind, "v1beta1"), ns_->name(), name).IgnoreError();
        ASSERT_TRUE(Eventually(
            [&] {
              return client_->Get(At(*kind, "v1beta1"), ns_->name(), name).status().IsNotFound();
            },
            std::chrono::seconds(10)));
        created = client_->Create(At(*kind, "v1beta1"), ns_->name(), doc);
      }
      ASSERT_TRUE(created.ok()) << created.status().ToString();
      auto stored = client_->Get(At(*kind, "v1alpha1"), ns_->name(), name);
      ASSERT_TRUE(stored.ok()) << stored.status().ToString();
      std::string why;
      EXPECT_TRUE(Covers(doc["spec"], (*stored)["spec"], "spec", &why)) << why;
      client_->Delete(At(*kind, "v1beta1"), ns_->name(), name).IgnoreError();
      ++ours;
    }
  }
  EXPECT_GE(ours, 12);
}

TEST_F(ApiVersionsTest, ABadV1beta1ObjectMeetsTheWebhook) {
  Json doc = LoadDir("valid").front().docs.front();
  for (const auto& m : LoadDir("valid")) {
    if (m.docs.front()["kind"] == "HarvesterMachine") doc = m.docs.front();
  }
  ASSERT_EQ(doc["kind"], "HarvesterMachine");
  doc["apiVersion"] = "infrastructure.cluster.x-k8s.io/v1beta1";
  doc["metadata"]["namespace"] = ns_->name();
  doc["metadata"]["name"] = "bad-beta";
  doc["spec"]["cpu"] = 0;
  doc["spec"]["firmware"] = {{"secureBoot", true}};
  auto created = client_->Create(At(api::Kind::kHarvesterMachine, "v1beta1"), ns_->name(), doc,
                                 {.dry_run = true});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().message(),
            "admission webhook \"vharvestermachine.kb.io\" denied the request: validation failed "
            "for HarvesterMachine " +
                ns_->name() +
                "/bad-beta: spec.cpu must be greater than 0; spec.firmware.secureBoot requires "
                "spec.firmware.efi to be true");
}

}  // namespace
}  // namespace caphv::testing
