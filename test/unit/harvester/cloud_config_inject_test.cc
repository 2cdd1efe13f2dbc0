// File: test/unit/harvester/cloud_config_inject_test.cc
//
// InjectCloudConfig: the cloud-config lands base64-encoded in the cloud
// provider's Secret of a ClusterResourceSet manifest stream (replacing a
// stringData entry), or in a Secret appended to it; other documents stay
// byte-for-byte; injecting twice gives the same text; invalid YAML is
// refused naming the document.

#include <gtest/gtest.h>

#include "api/yaml.h"
#include "harvester/cloud_provider.h"
#include "kube/base64.h"

namespace caphv::harvester {
namespace {

using kube::Object;

const std::string kCloudConfig = "apiVersion: v1\nkind: Config\ncurrent-context: default\n";

const std::string kServiceAccount =
    "# The cloud provider runs as this account.\n"
    "apiVersion: v1\n"
    "kind: ServiceAccount\n"
    "metadata:\n"
    "  name: cloud-controller-manager\n"
    "  namespace: kube-system\n";

const std::string kDaemonSet =
    "apiVersion: apps/v1\n"
    "kind: DaemonSet\n"
    "metadata: {name: harvester-cloud-provider, namespace: kube-system}\n"
    "spec:\n"
    "  template:\n"
    "    spec:\n"
    "      containers:\n"
    "      - name: ccm\n"
    "        args: [\"--cloud-config=/etc/kubernetes/cloud-config\"]  # keep\n";

std::vector<Object> Documents(const std::string& text) {
  auto docs = api::ParseYaml(text);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return docs.ok() ? *docs : std::vector<Object>{};
}

std::string Inject(const std::string& manifests, const std::string& name = "cloud-config",
                   const std::string& key = "cloud-config") {
  auto out = InjectCloudConfig(manifests, name, key, kCloudConfig);
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return out.ok() ? *out : std::string();
}

std::string DecodedData(const Object& secret, const std::string& key) {
  auto decoded = kube::Base64Decode(secret["data"][key].get<std::string>());
  EXPECT_TRUE(decoded.has_value());
  return decoded.value_or("");
}

TEST(CloudConfigInjectTest, FillsTheExistingSecretAndKeepsOtherDocuments) {
  const std::string secret =
      "apiVersion: v1\n"
      "kind: Secret\n"
      "metadata:\n"
      "  name: cloud-config\n"
      "  namespace: kube-system\n"
      "type: Opaque\n"
      "data:\n"
      "  other: b3RoZXI=\n";
  const std::string manifests = kServiceAccount + "---\n" + secret + "---\n" + kDaemonSet;
  const std::string out = Inject(manifests);

  // The documents before and after the Secret are untouched, comments included.
  EXPECT_EQ(out.rfind(kServiceAccount + "---\n", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - kDaemonSet.size() - 5), "\n---\n" + kDaemonSet) << out;

  auto docs = Documents(out);
  ASSERT_EQ(docs.size(), 3u) << out;
  EXPECT_EQ(docs[0]["kind"], "ServiceAccount");
  EXPECT_EQ(docs[2]["kind"], "DaemonSet");
  const Object& s = docs[1];
  EXPECT_EQ(s["kind"], "Secret");
  EXPECT_EQ(s["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(s["type"], "Opaque");
  EXPECT_EQ(DecodedData(s, "cloud-config"), kCloudConfig);
  EXPECT_EQ(s["data"]["other"], "b3RoZXI=");  // other keys of the Secret stay
}

TEST(CloudConfigInjectTest, ReplacesStringDataEntry) {
  const std::string manifests =
      "apiVersion: v1\n"
      "kind: Secret\n"
      "metadata:\n"
      "  name: cloud-config\n"
      "  namespace: kube-system\n"
      "stringData:\n"
      "  cloud-config: PLACEHOLDER\n"
      "  port: \"6443\"\n";
  auto docs = Documents(Inject(manifests));
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(DecodedData(docs[0], "cloud-config"), kCloudConfig);
  EXPECT_FALSE(docs[0]["stringData"].contains("cloud-config"));
  // A quoted number stays a string (Secret stringData values must be strings).
  EXPECT_EQ(docs[0]["stringData"]["port"], "6443");
}

TEST(CloudConfigInjectTest, DropsStringDataWhenItOnlyHeldTheCloudConfig) {
  const std::string manifests =
      "kind: Secret\n"
      "apiVersion: v1\n"
      "metadata: {name: cloud-config, namespace: kube-system}\n"
      "stringData: {cloud-config: \"PLACEHOLDER\"}\n";
  auto docs = Documents(Inject(manifests));
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_FALSE(docs[0].contains("stringData"));
  EXPECT_EQ(DecodedData(docs[0], "cloud-config"), kCloudConfig);
}

TEST(CloudConfigInjectTest, SecretWithoutNamespaceMatches) {
  const std::string manifests =
      kDaemonSet + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: cloud-config\n";
  auto docs = Documents(Inject(manifests));
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(DecodedData(docs[1], "cloud-config"), kCloudConfig);
}

TEST(CloudConfigInjectTest, AppendsSecretWhenNoneMatches) {
  // A Secret of that name in another namespace, another Secret name in
  // kube-system and a ConfigMap of that name are not the target.
  const std::string others =
      "apiVersion: v1\nkind: Secret\nmetadata: {name: cloud-config, namespace: default}\n"
      "---\n"
      "apiVersion: v1\nkind: Secret\nmetadata: {name: other, namespace: kube-system}\n"
      "---\n"
      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cloud-config, namespace: kube-system}";
  const std::string out = Inject(others + "\n");
  EXPECT_EQ(out.rfind(others + "\n---\n", 0), 0u) << out;
  EXPECT_EQ(out.back(), '\n');
  auto docs = Documents(out);
  ASSERT_EQ(docs.size(), 4u) << out;
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(docs[i].contains("data")) << i;
  const Object& s = docs[3];
  EXPECT_EQ(s["apiVersion"], "v1");
  EXPECT_EQ(s["kind"], "Secret");
  EXPECT_EQ(s["metadata"]["name"], "cloud-config");
  EXPECT_EQ(s["metadata"]["namespace"], "kube-system");
  EXPECT_EQ(s["type"], "Opaque");
  EXPECT_EQ(DecodedData(s, "cloud-config"), kCloudConfig);
}

TEST(CloudConfigInjectTest, EmptyManifestsGetJustTheSecret) {
  for (const std::string blank : {"", "\n", "---\n", "  \n---\n\n"}) {
    const std::string out = Inject(blank, "hv-cloud", "config");
    auto docs = Documents(out);
    ASSERT_EQ(docs.size(), 1u) << out;
    EXPECT_EQ(docs[0]["metadata"]["name"], "hv-cloud");
    EXPECT_EQ(DecodedData(docs[0], "config"), kCloudConfig);
    EXPECT_EQ(out.find("---"), std::string::npos) << out;
    EXPECT_EQ(out.back(), '\n');
  }
}

TEST(CloudConfigInjectTest, InjectingTwiceGivesTheSameText) {
  const std::vector<std::string> inputs = {
      "",
      kServiceAccount,
      kServiceAccount + "---\n" + kDaemonSet,
      "---\n" + kServiceAccount + "\n---\n" + kDaemonSet + "---\n",
      kDaemonSet +
          "---\nkind: Secret\napiVersion: v1\nmetadata:\n  name: cloud-config\n"
          "stringData:\n  cloud-config: x\n---\n" +
          kServiceAccount,
      "a: 1",
  };
  for (const auto& in : inputs) {
    const std::string once = Inject(in);
    EXPECT_EQ(Inject(once), once) << in;
  }
  // A new cloud-config replaces the old one rather than adding a document.
  const std::string once = Inject(kServiceAccount);
  auto again = InjectCloudConfig(once, "cloud-config", "cloud-config", "rotated");
  ASSERT_TRUE(again.ok());
  auto docs = Documents(*again);
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(DecodedData(docs[1], "cloud-config"), "rotated");
}

TEST(CloudConfigInjectTest, SeparatorsWithCommentsAndCommentOnlyDocumentsAreKept) {
  const std::string manifests =
      "# header comment only\n--- # first\n" + kServiceAccount + "---\n" + kDaemonSet;
  const std::string out = Inject(manifests);
  EXPECT_EQ(
      out.rfind("# header comment only\n---\n" + kServiceAccount + "---\n" + kDaemonSet + "---\n",
                0),
      0u)
      << out;
  EXPECT_EQ(Documents(out).size(), 3u);
}

TEST(CloudConfigInjectTest, RefusesInvalidYamlNamingTheDocument) {
  const std::string manifests = kServiceAccount + "---\nmetadata: {name: [unclosed\n";
  auto out = InjectCloudConfig(manifests, "cloud-config", "cloud-config", kCloudConfig);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), kube::StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("document 2"), std::string::npos) << out.status().message();

  auto bad_indent = InjectCloudConfig("a: 1\n b: 2\n", "cloud-config", "k", kCloudConfig);
  ASSERT_FALSE(bad_indent.ok());
  EXPECT_EQ(bad_indent.status().code(), kube::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace caphv::harvester
