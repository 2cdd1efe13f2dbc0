// File: test/unit/harvester/cloud_provider_test.cc

#include "harvester/cloud_provider.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "golden.h"
#include "kube/base64.h"

namespace caphv::harvester {
namespace {

using caphv::testing::MatchesGolden;
using kube::Object;

const ClusterIdentity kCluster{"mgmt-uid-1", "capi-demo", "demo"};

TEST(CloudProviderTest, NamesAreUniquePerClusterIdentity) {
  auto a = CloudProviderNamesFor(kCluster, "default");
  EXPECT_EQ(a.service_account.rfind("caphv-demo-", 0), 0u);
  EXPECT_EQ(a.token_secret, a.service_account + "-token");
  EXPECT_EQ(a.role_binding, "default-" + a.service_account);
  EXPECT_EQ(a.cluster_role_binding, "default-" + a.service_account);
  // Same cluster name in another namespace or management cluster: other names.
  EXPECT_NE(a.cluster_role_binding,
            CloudProviderNamesFor({"mgmt-uid-1", "other", "demo"}, "default").cluster_role_binding);
  EXPECT_NE(a.service_account,
            CloudProviderNamesFor({"mgmt-uid-2", "capi-demo", "demo"}, "default").service_account);
  auto long_names = CloudProviderNamesFor({"m", "n", std::string(90, 'x')}, "default");
  EXPECT_LE(long_names.token_secret.size(), 63u);
  EXPECT_EQ(a.service_account, CloudProviderNamesFor(kCluster, "default").service_account);
}

TEST(CloudProviderTest, ObjectsGolden) {
  CloudProviderInputs in{kCluster, "default", true, "sa-uid-1"};
  auto objects = BuildCloudProviderObjects(in);
  ASSERT_EQ(objects.size(), 4u);
  EXPECT_TRUE(MatchesGolden("cloud_provider_objects.json", Object(objects).dump(2) + "\n"));
  EXPECT_EQ(objects[0]["kind"], "ServiceAccount");
  EXPECT_EQ(objects[1]["kind"], "RoleBinding");
  EXPECT_EQ(objects[1]["metadata"]["namespace"], "default");
  EXPECT_EQ(objects[1]["roleRef"]["name"], "harvesterhci.io:cloudprovider");
  EXPECT_EQ(objects[2]["kind"], "ClusterRoleBinding");
  EXPECT_FALSE(objects[2]["metadata"].contains("namespace"));
  EXPECT_EQ(objects[2]["roleRef"]["name"], "harvesterhci.io:csi-driver");
  EXPECT_EQ(objects[3]["type"], "kubernetes.io/service-account-token");
  EXPECT_EQ(objects[3]["metadata"]["annotations"]["kubernetes.io/service-account.name"],
            objects[0]["metadata"]["name"]);
  for (const auto& o : objects) {
    EXPECT_EQ(o["metadata"]["labels"][std::string(kLabelClusterId)], ClusterId(kCluster));
  }
  EXPECT_EQ(BuildCloudProviderObjects({kCluster, "default", false, ""}).size(), 3u);
}

TEST(CloudProviderTest, KubeconfigGolden) {
  auto kc = BuildCloudConfigKubeconfig("tok-123",
                                       "-----BEGIN CERTIFICATE-----\nMIIB\n-----END "
                                       "CERTIFICATE-----\n",
                                       "https://192.168.0.131:6443", "default");
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  EXPECT_TRUE(MatchesGolden("cloud_config_kubeconfig.yaml", *kc));
  YAML::Node y = YAML::Load(*kc);
  EXPECT_EQ(y["current-context"].as<std::string>(), "default");
  EXPECT_EQ(y["contexts"][0]["context"]["namespace"].as<std::string>(), "default");
  EXPECT_EQ(y["users"][0]["user"]["token"].as<std::string>(), "tok-123");
  EXPECT_EQ(*kube::Base64Decode(
                y["clusters"][0]["cluster"]["certificate-authority-data"].as<std::string>()),
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
}

TEST(CloudProviderTest, KubeconfigValidation) {
  EXPECT_FALSE(BuildCloudConfigKubeconfig("", "ca", "https://h:6443", "ns").ok());
  EXPECT_FALSE(BuildCloudConfigKubeconfig("t", "", "https://h:6443", "ns").ok());
  EXPECT_FALSE(BuildCloudConfigKubeconfig("t", "ca", "http://h:6443", "ns").ok());
  EXPECT_FALSE(BuildCloudConfigKubeconfig("t", "ca", "https://h:6443", "").ok());
}

TEST(CloudProviderTest, FromTokenSecretWaitsForTheTokenController) {
  Object empty = {{"data", Object::object()}};
  auto pending = CloudConfigFromTokenSecret(empty, "https://h:6443", "ns");
  ASSERT_FALSE(pending.ok());
  EXPECT_EQ(pending.status().code(), kube::StatusCode::kUnavailable);
  EXPECT_FALSE(CloudConfigFromTokenSecret(Object::object(), "https://h:6443", "ns").ok());

  Object filled = {{"data",
                    {{"token", kube::Base64Encode("tok")},
                     {"ca.crt", kube::Base64Encode("CA")},
                     {"namespace", kube::Base64Encode("ns")}}}};
  auto kc = CloudConfigFromTokenSecret(filled, "https://h:6443", "ns");
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  EXPECT_EQ(YAML::Load(*kc)["users"][0]["user"]["token"].as<std::string>(), "tok");
}

}  // namespace
}  // namespace caphv::harvester
