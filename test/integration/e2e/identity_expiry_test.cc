// End-to-end: an identity whose credentials expire is seen before it bites.
// The identity Secret of a cluster holds a kubeconfig whose token expires:
//   - a ServiceAccount token of the Harvester apiserver from the TokenRequest
//     API, valid 3 days (a JWT with `exp`): the HarvesterCluster reports
//     IdentityTokenValid=False/IdentityTokenExpiringSoon, a Warning event is
//     recorded and caphv_identity_token_expiry_timestamp_seconds carries the
//     token's `exp`, while the cluster stays Ready;
//   - renewed with a 30-day token: the condition turns True and the metric
//     follows;
//   - then a Rancher API token ("kubeconfig-user-<id>:<key>", the bed's
//     RANCHER_TOKEN) whose token object on Harvester
//     (tokens.management.cattle.io) gives 5 days of ttl: ExpiringSoon again,
//     with the token object's expiry;
//   - deleting the cluster removes the metric's series.
// docs/operations.md, "Identity expiry".

#include "api/conditions.h"
#include "e2e_fixture.h"
#include "kube/credential_expiry.h"

namespace caphv::e2e {
namespace {

using Clock = std::chrono::system_clock;

const GroupVersionResource kRancherTokens{"management.cattle.io", "v3", "tokens", false};
const GroupVersionResource kClusterRoleBindings = kube::resources::kClusterRoleBindings;
const GroupVersionResource kServiceAccounts = kube::resources::kServiceAccounts;

class IdentityExpiryTest : public E2ETest {
 protected:
  void TearDown() override {
    if (!account_.empty()) {
      (void)harvester_->Delete(kClusterRoleBindings, "", account_);
      (void)harvester_->Delete(kServiceAccounts, "default", account_);
    }
    if (!rancher_token_.empty()) (void)harvester_->Delete(kRancherTokens, "", rancher_token_);
    E2ETest::TearDown();
  }

  // A ServiceAccount of the Harvester apiserver bound to cluster-admin.
  void CreateAccount() {
    account_ = "caphv-" + ns();
    Object sa = {{"apiVersion", "v1"},
                 {"kind", "ServiceAccount"},
                 {"metadata", {{"name", account_}, {"namespace", "default"}}}};
    auto r = harvester_->Create(kServiceAccounts, "default", sa);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Object binding = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "ClusterRoleBinding"},
        {"metadata", {{"name", account_}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"},
          {"kind", "ClusterRole"},
          {"name", "cluster-admin"}}},
        {"subjects",
         Object::array(
             {{{"kind", "ServiceAccount"}, {"name", account_}, {"namespace", "default"}}})}};
    r = harvester_->Create(kClusterRoleBindings, "", binding);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // A token of the account valid for `seconds`, from the TokenRequest API.
  std::string RequestToken(int64_t seconds) {
    const GroupVersionResource token{"", "v1", "serviceaccounts/" + account_ + "/token", true};
    Object request = {{"apiVersion", "authentication.k8s.io/v1"},
                      {"kind", "TokenRequest"},
                      {"spec", {{"expirationSeconds", seconds}}}};
    auto answer = harvester_->Create(token, "default", request);
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? (*answer)["status"].value("token", "") : "";
  }

  // The identity Secret's kubeconfig: the bed's Harvester kubeconfig with
  // `token` for the admin token.
  void PutIdentityToken(const std::string& token) {
    std::string kubeconfig =
        ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester));
    const std::string admin = Testbed::Get().EnvValue("ADMIN_TOKEN");
    const size_t at = kubeconfig.find(admin);
    ASSERT_NE(at, std::string::npos) << "no admin token in the bed's harvester.kubeconfig";
    kubeconfig.replace(at, admin.size(), token);
    auto r = mgmt_->Patch(kube::resources::kSecrets, ns(), "hv-identity", kube::PatchType::kMerge,
                          {{"data", {{"kubeconfig", kube::Base64Encode(kubeconfig)}}}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Waits for IdentityTokenValid with `reason`; returns the condition.
  Object WaitForIdentityCondition(const std::string& reason) {
    Object hc, c;
    const bool ok = Eventually(
        [&] {
          hc = HarvesterClusterObject();
          c = ConditionOf(hc, "IdentityTokenValid");
          return c.value("reason", "") == reason;
        },
        kWait, kPoll);
    EXPECT_TRUE(ok) << "IdentityTokenValid is not " << reason << ": " << hc["status"].dump(2);
    return c;
  }

  std::string Series() const {
    return "caphv_identity_token_expiry_timestamp_seconds{cluster=\"" + ns() + "/" + cluster_ +
           "\"}";
  }

  std::string account_;
  std::string rancher_token_;
};

int64_t Seconds(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
}

TEST_F(IdentityExpiryTest, AnExpiringTokenIsReportedBeforeItBites) {
  ASSERT_NO_FATAL_FAILURE(CreateAccount());
  const std::string short_token = RequestToken(3 * 24 * 3600);
  ASSERT_FALSE(short_token.empty());
  const auto short_exp = kube::JwtExpiry(short_token);
  ASSERT_TRUE(short_exp);
  ASSERT_NO_FATAL_FAILURE(PutIdentityToken(short_token));
  CreateCluster(HarvesterClusterSpec());

  // Ready (the token works) and warned.
  Object c = WaitForIdentityCondition("IdentityTokenExpiringSoon");
  EXPECT_EQ(c.value("status", ""), "False");
  const std::string message = c.value("message", "");
  EXPECT_NE(message.find("token of the identity kubeconfig expires at"), std::string::npos)
      << message;
  EXPECT_NE(message.find("identity Secret " + ns() + "/hv-identity"), std::string::npos) << message;
  EXPECT_TRUE(
      Eventually([&] { return ConditionTrue(HarvesterClusterObject(), "Ready"); }, kWait, kPoll))
      << HarvesterClusterObject()["status"].dump(2);
  EXPECT_TRUE(Eventually([&] { return HasWarning(cluster_, "IdentityTokenExpiringSoon"); }))
      << "no Warning event IdentityTokenExpiringSoon";
  EXPECT_TRUE(Eventually([&] { return Metric(Series()) == double(Seconds(*short_exp)); }))
      << Series() << " = " << Metric(Series()).value_or(-1) << ", the token's exp "
      << Seconds(*short_exp);

  // Renewed with a 30-day token: valid, and the metric follows.
  const std::string long_token = RequestToken(30 * 24 * 3600);
  const auto long_exp = kube::JwtExpiry(long_token);
  ASSERT_TRUE(long_exp);
  ASSERT_NO_FATAL_FAILURE(PutIdentityToken(long_token));
  c = WaitForIdentityCondition("IdentityTokenValid");
  EXPECT_EQ(c.value("status", ""), "True");
  EXPECT_TRUE(Eventually([&] { return Metric(Series()) == double(Seconds(*long_exp)); }))
      << Series() << " = " << Metric(Series()).value_or(-1);

  // A Rancher API token, its expiry kept on Harvester: 5 days of ttl.
  const std::string rancher = Testbed::Get().EnvValue("RANCHER_TOKEN");
  ASSERT_FALSE(rancher.empty()) << "the bed has no RANCHER_TOKEN (hack/testbed up)";
  rancher_token_ = kube::RancherTokenName(rancher);
  ASSERT_FALSE(rancher_token_.empty()) << rancher;
  Object token = {{"apiVersion", "management.cattle.io/v3"},
                  {"kind", "Token"},
                  {"metadata", {{"name", rancher_token_}}},
                  {"userId", "user-" + Testbed::Get().EnvValue("BED_ID")},
                  {"authProvider", "local"},
                  {"ttl", int64_t{5} * 24 * 3600 * 1000},
                  {"expiresAt", ""}};
  (void)harvester_->Delete(kRancherTokens, "", rancher_token_);  // of an earlier run
  auto created = harvester_->Create(kRancherTokens, "", token);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const auto rancher_created =
      api::ParseTime(Str(*created, "/metadata/creationTimestamp")).value_or(Clock::time_point{});
  ASSERT_NO_FATAL_FAILURE(PutIdentityToken(rancher));
  c = WaitForIdentityCondition("IdentityTokenExpiringSoon");
  EXPECT_NE(c.value("message", "").find("Rancher token " + rancher_token_), std::string::npos)
      << c.dump();
  const int64_t rancher_exp = Seconds(rancher_created) + 5 * 24 * 3600;
  EXPECT_TRUE(Eventually([&] { return Metric(Series()) == double(rancher_exp); }))
      << Series() << " = " << Metric(Series()).value_or(-1) << ", expected " << rancher_exp;

  // Deleted: the series goes with the cluster.
  ASSERT_TRUE(mgmt_->Delete(kClusters, ns(), cluster_).ok());
  EXPECT_TRUE(Eventually(
      [&] { return mgmt_->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound(); }, kWait,
      kPoll));
  EXPECT_TRUE(Eventually([&] { return !Metric(Series()).has_value(); }))
      << Series() << " is still served";
}

}  // namespace
}  // namespace caphv::e2e
