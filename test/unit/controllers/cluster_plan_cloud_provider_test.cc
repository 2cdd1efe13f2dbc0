// File: test/unit/controllers/cluster_plan_cloud_provider_test.cc
//
// The HarvesterCluster planner and the cloud provider's objects in Harvester
// and the workload cluster: the service account first, then its bindings and
// token Secret, the token into the manifests ConfigMap once, and a missing
// ConfigMap reported.

#include <gtest/gtest.h>

#include "api/codec.h"
#include "api/conditions.h"
#include "cluster_plan_fixtures.h"
#include "controllers/cluster/cluster_plan.h"
#include "harvester/cloud_provider.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using kube::Object;
using std::chrono::seconds;
using K = ClusterActionKind;
using CPO = CloudProviderObject;

// --- cloud provider ----------------------------------------------------------------------

ClusterObservation ReadyWithCloudProvider() {
  auto o = WithCloudProvider();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  o.hc.status.ready = true;
  o.lb = ReadyLb();
  return o;
}

TEST(ClusterPlanTest, CloudProviderObjectsServiceAccountFirstThenBindingsThenTheTokenSecret) {
  auto o = ReadyWithCloudProvider();
  const auto names = harvester::CloudProviderNamesFor(ClusterIdentityOf(o), "guests");
  std::vector<std::pair<CPO, std::string>> seen;
  for (int i = 0; i < 5; ++i) {
    auto p = PlanCluster(o);
    EXPECT_TRUE(p.status.ready.value_or(false));  // credentials never hold readiness
    if (!p.action || p.action->kind != K::kApplyCloudProviderObject) break;
    seen.emplace_back(p.action->object, p.action->name);
    EXPECT_EQ(p.action->body["metadata"]["annotations"]
                            ["harvester.infrastructure.cluster.x-k8s.io/owner"],
              "team/c1");
    o.cloud_provider.applied.insert(p.action->object);
    if (p.action->object == CPO::kServiceAccount) o.cloud_provider.service_account_uid = "sa-uid";
    if (p.action->object == CPO::kTokenSecret) {
      EXPECT_EQ(p.action->body["metadata"]["ownerReferences"][0]["uid"], "sa-uid");
      o.cloud_provider.token_secret = ViewOfTokenSecret(p.action->body, o);
    }
  }
  EXPECT_EQ(seen, (std::vector<std::pair<CPO, std::string>>{
                      {CPO::kServiceAccount, names.service_account},
                      {CPO::kRoleBinding, names.role_binding},
                      {CPO::kClusterRoleBinding, names.cluster_role_binding},
                      {CPO::kTokenSecret, names.token_secret}}));
  ASSERT_TRUE(o.cloud_provider.token_secret);
  EXPECT_TRUE(o.cloud_provider.token_secret->pending);
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "WaitingForToken");
  EXPECT_EQ(p.wait.kind, Wait::Kind::kEvent);
}

TEST(ClusterPlanTest, AnIssuedTokenGoesIntoTheManifestsConfigMapOnce) {
  auto o = ReadyWithCloudProvider();
  harvester::CloudProviderInputs in{ClusterIdentityOf(o), "guests", true, "sa-uid"};
  o.cloud_provider.token_secret =
      ViewOfTokenSecret(Filled(harvester::BuildCloudProviderObjects(in).back()), o);
  ASSERT_FALSE(o.cloud_provider.token_secret->cloud_config.empty());
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kReadManifestsConfigMap);  // nothing applied: the token exists

  o.cloud_provider.manifests = ManifestsRead{"", ConfigMap("apiVersion: v1\nkind: Namespace\n")};
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kUpdateManifestsConfigMap);
  EXPECT_EQ(p.action->body["metadata"]["resourceVersion"], "1");
  EXPECT_NE(p.action->body["data"]["manifests"].get<std::string>().find("cloud-config"),
            std::string::npos);
  EXPECT_EQ(ActionEvent(p), "CloudProviderConfigured");

  o.cloud_provider.manifests->object = p.action->body;
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "CloudProviderConfigReady");
}

TEST(ClusterPlanTest, AMissingManifestsConfigMapIsReportedAndLookedAtAgain) {
  auto o = ReadyWithCloudProvider();
  o.cloud_provider.token_secret = TokenSecretView{"kubeconfig", false, ""};
  o.cloud_provider.manifests = ManifestsRead{"configmaps \"cpi\" not found", {}};
  auto p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_EQ(Reason(p, kCloudProviderConfigReady), "ManifestsConfigMapUnavailable");
  EXPECT_EQ(p.wait, Wait::After(seconds(30), p.wait.why));
  EXPECT_TRUE(HasEvent(p, "ManifestsConfigMapUnavailable", true));
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, api::kReadyCondition), "Ready");

  o.cloud_provider.token_secret = TokenSecretView{"", false, "cloud-config: server is bad"};
  EXPECT_EQ(Reason(PlanCluster(o), kCloudProviderConfigReady), "CloudProviderConfigFailed");
}

}  // namespace
}  // namespace caphv::controllers
