// File: test/unit/cli/doctor_command_test.cc
//
// What `caphv doctor` prints: one line per check, ✓ / ! (passed, worth a
// look) / ✗ with the fix; or JSON with -o json.

#include "doctor_command.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace caphv::cli {
namespace {

const std::vector<Check> kChecks = {
    {"image", true, "default/ubuntu is Active, StorageClass longhorn-ubuntu", "", false},
    {"identity expiry", true, "the token of the identity kubeconfig expires at X",
     "download a new kubeconfig", true},
    {"key pair", false, "default/key not found", "create the KeyPair", false},
};

TEST(DoctorRender, OneLinePerCheckWithTheFix) {
  EXPECT_EQ(RenderChecks(kChecks, false),
            "✓ image: default/ubuntu is Active, StorageClass longhorn-ubuntu\n"
            "! identity expiry: the token of the identity kubeconfig expires at X; fix: download "
            "a new kubeconfig\n"
            "✗ key pair: default/key not found; fix: create the KeyPair\n");
}

TEST(DoctorRender, Json) {
  const auto j = api::Json::parse(RenderChecks(kChecks, true));
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0], api::Json::parse(R"({"name":"image","ok":true,
      "detail":"default/ubuntu is Active, StorageClass longhorn-ubuntu"})"));
  EXPECT_EQ(j[1]["warning"], true);
  EXPECT_EQ(j[2]["ok"], false);
  EXPECT_EQ(j[2]["fix"], "create the KeyPair");
}

// Which webhooks a dry-run create goes through: by rule (group, resource,
// CREATE, not cluster-scoped only), namespaceSelector and objectSelector --
// the ones `caphv doctor` expects to answer for a provider.
TEST(DoctorWebhooks, TheWebhooksACreateGoesThrough) {
  const auto configs = std::vector<api::Json>{api::Json::parse(R"({
    "kind": "ValidatingWebhookConfiguration",
    "webhooks": [
      {"name": "vcluster", "rules": [{"apiGroups": ["cluster.x-k8s.io"],
        "resources": ["clusters"], "operations": ["CREATE", "UPDATE"]}]},
      {"name": "vupdate-only", "rules": [{"apiGroups": ["cluster.x-k8s.io"],
        "resources": ["clusters"], "operations": ["UPDATE"]}]},
      {"name": "vteam-a", "namespaceSelector": {"matchExpressions": [
          {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-a"]}]},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "operations": ["*"]}]},
      {"name": "vlabelled-objects", "objectSelector": {"matchLabels": {"x": "y"}},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "operations": ["*"]}]},
      {"name": "vcluster-scoped", "rules": [{"apiGroups": ["*"], "resources": ["*"],
        "operations": ["*"], "scope": "Cluster"}]}
    ]})")};
  const api::Json team_a = {{"kubernetes.io/metadata.name", "team-a"}};
  const api::Json team_b = {{"kubernetes.io/metadata.name", "team-b"}};
  EXPECT_EQ(WebhooksFor(configs, "cluster.x-k8s.io", "clusters", team_b),
            std::vector<std::string>{"vcluster"});
  EXPECT_EQ(WebhooksFor(configs, "cluster.x-k8s.io", "clusters", team_a),
            (std::vector<std::string>{"vcluster", "vteam-a"}));
  EXPECT_TRUE(WebhooksFor(configs, "cert-manager.io", "issuers", team_b).empty());
}

TEST(DoctorWebhooks, LabelSelectors) {
  const api::Json labels = {{"env", "prod"}, {"tier", "web"}};
  EXPECT_TRUE(SelectorMatches(api::Json::object(), labels));
  EXPECT_TRUE(SelectorMatches({{"matchLabels", {{"env", "prod"}}}}, labels));
  EXPECT_FALSE(SelectorMatches({{"matchLabels", {{"env", "dev"}}}}, labels));
  auto expr = [](const std::string& key, const std::string& op, api::Json values) {
    return api::Json{
        {"matchExpressions", {{{"key", key}, {"operator", op}, {"values", std::move(values)}}}}};
  };
  EXPECT_TRUE(SelectorMatches(expr("env", "In", {"prod", "dev"}), labels));
  EXPECT_FALSE(SelectorMatches(expr("env", "NotIn", {"prod"}), labels));
  EXPECT_TRUE(SelectorMatches(expr("zone", "NotIn", {"a"}), labels));
  EXPECT_TRUE(SelectorMatches(expr("tier", "Exists", api::Json::array()), labels));
  EXPECT_FALSE(SelectorMatches(expr("zone", "Exists", api::Json::array()), labels));
  EXPECT_TRUE(SelectorMatches(expr("zone", "DoesNotExist", api::Json::array()), labels));
}

}  // namespace
}  // namespace caphv::cli
