// End-to-end: `caphv doctor` (docs/cli.md) against the bed. A healthy setup
// first -- the simulated Harvester, the ClusterClass applied, cert-manager's
// CRDs, CAPHV running with its validating webhooks (this test's manager,
// registered for its namespace) next to Cluster API and the RKE2 providers --
// is all ✓ and exit 0. Then each failure injected in turn, each reported on
// its line with its fix and the exit code the number of ✗: a missing image,
// an image not Active, an unknown key pair, an exhausted pool, an identity
// token expiring in 3 days (a warning, exit 0), Harvester unreachable (a
// closed port; a server that never answers, within --timeout), CAPHV no
// longer running (its webhook does not answer). -o json parses.

#include <gmock/gmock.h>

#include <ctime>
#include <string>

#include "kube/credential_expiry.h"
#include "support/silent_server.h"
#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using caphv::testing::BuildPath;
using caphv::testing::RunCommand;
using ::testing::HasSubstr;

const GroupVersionResource kImages{"harvesterhci.io", "v1beta1", "virtualmachineimages", true};
const GroupVersionResource kStorageClasses{"storage.k8s.io", "v1", "storageclasses", false};
const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};

struct Report {
  int rc = -1;
  std::string out;
  int failures = 0;  // lines starting with ✗
};

class DoctorTest : public TopologyFixture {
 protected:
  DoctorTest() { start_manager_ = false; }

  void TearDown() override {
    if (!image_.empty()) {
      (void)harvester_->Delete(kImages, "default", image_);
      (void)harvester_->Delete(kStorageClasses, "", "longhorn-" + image_);
    }
    if (!account_.empty()) {
      (void)harvester_->Delete(kube::resources::kClusterRoleBindings, "", account_);
      (void)harvester_->Delete(kube::resources::kServiceAccounts, "default", account_);
    }
    // The CRDs it applied, gone before the next test looks for them.
    for (const auto& crd : applied_crds_) (void)mgmt_->Delete(kCrds, "", crd);
    EXPECT_TRUE(Eventually(
        [&] {
          for (const auto& crd : applied_crds_) {
            if (!mgmt_->Get(kCrds, "", crd).status().IsNotFound()) return false;
          }
          return true;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(100)));
    TopologyFixture::TearDown();
  }

  std::string Kubectl() const {
    return "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
  }

  // cert-manager's CRDs (the bed runs no cert-manager), unless the bed has them.
  void ApplyCertManagerCrds() {
    const char* cache_env = std::getenv("CAPHV_CACHE_DIR");
    const std::string cache = cache_env != nullptr && *cache_env != '\0'
                                  ? std::string(cache_env)
                                  : std::string(std::getenv("HOME")) + "/.cache/caphv";
    const std::string dir = cache + "/bin/current/cert-manager-crds";
    for (const auto& [crd, file] : {std::pair{"certificates.cert-manager.io", "crd-certificates"},
                                    std::pair{"issuers.cert-manager.io", "crd-issuers"}}) {
      if (mgmt_->Get(kCrds, "", crd).ok()) continue;
      std::string out;
      ASSERT_EQ(RunCommand(Kubectl() + "apply -f '" + dir + "/" + file + ".yaml' 2>&1", &out), 0)
          << out << "(hack/build-testbins.sh cert-manager puts cert-manager's CRDs there)";
      applied_crds_.push_back(crd);
    }
    for (const auto& crd : applied_crds_) {
      std::string out;
      ASSERT_EQ(RunCommand(Kubectl() + "wait --for condition=established --timeout=60s crd/" + crd +
                               " 2>&1",
                           &out),
                0)
          << out;
    }
  }

  // `caphv doctor` with the flags of a healthy setup, `more` after them.
  Report Doctor(const std::string& more) const {
    Report r;
    const std::string command =
        BuildPath("cmd/caphv/caphv") + " doctor --kubeconfig '" +
        Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' --namespace " + ns() +
        " --harvester-kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kHarvester) +
        "' --image default/image-ubuntu --ssh-keypair default/demo-key --network default/vlan100"
        " --ip-pool " +
        pool_.name + " --replicas 3 " + more + " 2>&1";
    r.rc = RunCommand(command, &r.out);
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      r.failures += line.rfind("✗", 0) == 0 ? 1 : 0;
    }
    return r;
  }

  // A kubeconfig of the bed's Harvester with `token` for the admin token.
  std::string HarvesterKubeconfigWithToken(const std::string& token) const {
    std::string kubeconfig =
        ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester));
    const std::string admin = Testbed::Get().EnvValue("ADMIN_TOKEN");
    const size_t at = kubeconfig.find(admin);
    EXPECT_NE(at, std::string::npos) << "no admin token in the bed's harvester.kubeconfig";
    if (at != std::string::npos) kubeconfig.replace(at, admin.size(), token);
    return kubeconfig;
  }

  // A token of a cluster-admin ServiceAccount of Harvester, valid `seconds`
  // (the TokenRequest API: a JWT with `exp`).
  std::string ExpiringToken(int64_t seconds) {
    account_ = "caphv-doctor-" + ns();
    auto sa = harvester_->Create(kube::resources::kServiceAccounts, "default",
                                 {{"apiVersion", "v1"},
                                  {"kind", "ServiceAccount"},
                                  {"metadata", {{"name", account_}, {"namespace", "default"}}}});
    EXPECT_TRUE(sa.ok()) << sa.status().ToString();
    auto binding = harvester_->Create(
        kube::resources::kClusterRoleBindings, "",
        {{"apiVersion", "rbac.authorization.k8s.io/v1"},
         {"kind", "ClusterRoleBinding"},
         {"metadata", {{"name", account_}}},
         {"roleRef",
          {{"apiGroup", "rbac.authorization.k8s.io"},
           {"kind", "ClusterRole"},
           {"name", "cluster-admin"}}},
         {"subjects",
          Object::array(
              {{{"kind", "ServiceAccount"}, {"name", account_}, {"namespace", "default"}}})}});
    EXPECT_TRUE(binding.ok()) << binding.status().ToString();
    const GroupVersionResource token{"", "v1", "serviceaccounts/" + account_ + "/token", true};
    auto answer = harvester_->Create(token, "default",
                                     {{"apiVersion", "authentication.k8s.io/v1"},
                                      {"kind", "TokenRequest"},
                                      {"spec", {{"expirationSeconds", seconds}}}});
    EXPECT_TRUE(answer.ok()) << answer.status().ToString();
    return answer.ok() ? (*answer)["status"].value("token", "") : "";
  }

  std::string WriteFile(const std::string& name, const std::string& text) const {
    const std::string path = log_path_.parent_path().string() + "/doctor-" + ns() + "-" + name;
    std::ofstream(path) << text;
    return path;
  }

  Pool pool_;
  std::string image_, account_;
  std::vector<std::string> applied_crds_;
};

TEST_F(DoctorTest, HealthyThenEachFailureInTurnWithItsFix) {
  // ------------------------------------------------------------ healthy
  pool_ = CreatePool(4);
  ASSERT_NO_FATAL_FAILURE(ApplyClusterClass());
  ASSERT_NO_FATAL_FAILURE(ApplyCertManagerCrds());
  ASSERT_NO_FATAL_FAILURE(StartManagerWithWebhooks());
  Report r;
  // The apiserver takes the webhook configuration up by itself, soon.
  ASSERT_TRUE(Eventually(
      [&] {
        r = Doctor("");
        return r.out.find("✓ CAPHV running: ") != std::string::npos;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(200)))
      << r.out;
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.failures, 0) << r.out;
  for (const std::string line :
       {"✓ harvester reachable: ", "✓ image: default/image-ubuntu is Active, StorageClass ",
        "✓ key pair: default/demo-key exists\n", "✓ network: default/vlan100 exists\n",
        "✓ cloud-provider ClusterRole: ", "✓ identity expiry: the credentials carry no expiry\n",
        "✓ Cluster API: clusters.cluster.x-k8s.io installed\n",
        "✓ Cluster API running: a dry-run Cluster passes its ",
        "✓ RKE2 control-plane provider running: a dry-run RKE2ControlPlane passes its ",
        "✓ RKE2 bootstrap provider running: a dry-run RKE2Config passes its ",
        "✓ cert-manager: certificates.cert-manager.io installed\n",
        "✓ CAPHV running: a dry-run HarvesterClusterTemplate passes its webhook "
        "vharvesterclustertemplate.kb.io\n"}) {
    EXPECT_THAT(r.out, HasSubstr(line));
  }
  EXPECT_THAT(r.out, HasSubstr("✓ ip pool " + pool_.name + ": 4 free addresses\n"));
  EXPECT_THAT(r.out, HasSubstr("✓ ip pools hold the machines: 4 free addresses for 3 machines\n"));
  EXPECT_THAT(r.out, HasSubstr("✓ ClusterClass: " + ns() + "/harvester-rke2 exists\n"));
  // The bed runs no cert-manager: said, as a warning.
  EXPECT_THAT(r.out, HasSubstr("! cert-manager running: cannot be seen from the API: no webhook "
                               "for issuers and no Deployment labelled "
                               "app.kubernetes.io/instance=cert-manager; fix: make sure its "
                               "controller runs\n"));

  // ------------------------------------------------------------ missing image
  r = Doctor("--image default/no-such-image");
  EXPECT_THAT(r.out, HasSubstr("✗ image: default/no-such-image not found; fix: upload the image "
                               "in Harvester (Images) or give --image the namespace/name of an "
                               "Active one\n"));
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;
  // As JSON: the same checks.
  {
    Report j = Doctor("--image default/no-such-image -o json");
    auto checks = Object::parse(j.out, nullptr, false);
    ASSERT_TRUE(checks.is_array()) << j.out;
    int failed = 0;
    for (const auto& c : checks) {
      if (c.value("ok", true)) continue;
      ++failed;
      EXPECT_EQ(c.value("name", ""), "image");
      EXPECT_EQ(c.value("detail", ""), "default/no-such-image not found");
      EXPECT_THAT(c.value("fix", ""), HasSubstr("upload the image in Harvester"));
    }
    EXPECT_EQ(failed, 1);
    EXPECT_EQ(j.rc, 1);
  }

  // ------------------------------------------------------------ image not Active
  // An image the simulator imported, then set back to importing (40%).
  image_ = UniqueName("doctor-image");
  auto created = harvester_->Create(kImages, "default",
                                    {{"apiVersion", "harvesterhci.io/v1beta1"},
                                     {"kind", "VirtualMachineImage"},
                                     {"metadata", {{"name", image_}, {"namespace", "default"}}},
                                     {"spec",
                                      {{"displayName", "doctor"},
                                       {"sourceType", "download"},
                                       {"url", "https://images.example.test/doctor.qcow2"}}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = harvester_->Get(kImages, "default", image_);
        return got.ok() && !Str(*got, "/status/storageClassName").empty();
      },
      kWait, std::chrono::milliseconds(100)));
  const Object importing = {
      {"status",
       {{"progress", 40},
        {"conditions", Object::array({{{"type", "Imported"}, {"status", "Unknown"}}})}}}};
  auto patched = harvester_->Patch(kImages, "default", image_, kube::PatchType::kMerge, importing,
                                   {.subresource = "status"});
  if (patched.status().IsNotFound()) {
    patched = harvester_->Patch(kImages, "default", image_, kube::PatchType::kMerge, importing);
  }
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  r = Doctor("--image default/" + image_);
  EXPECT_THAT(r.out, HasSubstr("✗ image: default/" + image_ +
                               " is not Active (Importing 40%); fix: wait for the import to "
                               "finish, or upload the image again\n"));
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;

  // ------------------------------------------------------------ unknown key pair
  r = Doctor("--ssh-keypair default/no-such-key");
  EXPECT_THAT(r.out, HasSubstr("✗ key pair: default/no-such-key not found; fix: create the "
                               "KeyPair in Harvester (Advanced > SSH Keys)\n"));
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;

  // ------------------------------------------------------------ exhausted pool
  Object taken = Object::object();
  for (int i = pool_.first; i <= pool_.last; ++i) {
    taken[pool_.prefix + std::to_string(i)] = "elsewhere/vm-" + std::to_string(i);
  }
  auto filled = harvester_->Patch(kIPPools, "", pool_.name, kube::PatchType::kMerge,
                                  {{"status", {{"allocated", taken}}}});
  ASSERT_TRUE(filled.ok()) << filled.status().ToString();
  r = Doctor("");
  EXPECT_THAT(r.out, HasSubstr("! ip pool " + pool_.name +
                               ": 0 free addresses: all 4 allocated; fix: release addresses "
                               "(kubectl get ippool " +
                               pool_.name + " -o yaml shows who holds them) or add a range\n"));
  EXPECT_THAT(r.out, HasSubstr("✗ ip pools hold the machines: 0 free addresses for 3 machines; "
                               "fix: add a range or a pool (--ip-pool-refs), or ask fewer "
                               "replicas\n"));
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;
  auto freed = harvester_->Patch(kIPPools, "", pool_.name, kube::PatchType::kMerge,
                                 {{"status", {{"allocated", nullptr}}}});
  ASSERT_TRUE(freed.ok()) << freed.status().ToString();

  // ------------------------------------------------------------ identity expiring in 3 days
  const std::string token = ExpiringToken(3 * 24 * 3600);
  ASSERT_FALSE(token.empty());
  const auto exp = kube::JwtExpiry(token);
  ASSERT_TRUE(exp.has_value());
  const std::time_t exp_t = std::chrono::system_clock::to_time_t(*exp);
  std::tm exp_tm{};
  gmtime_r(&exp_t, &exp_tm);
  char exp_text[32];
  std::strftime(exp_text, sizeof exp_text, "%Y-%m-%dT%H:%M:%SZ", &exp_tm);
  const std::string expiring =
      WriteFile("expiring.kubeconfig", HarvesterKubeconfigWithToken(token));
  r = Doctor("--harvester-kubeconfig '" + expiring + "'");
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         std::string("\n! identity expiry: the token of the identity kubeconfig "
                                     "expires at ") +
                         exp_text +
                         " \\(in [^)]+\\); fix: download a new kubeconfig from Harvester and "
                         "update the identity Secret\n"));
  EXPECT_EQ(r.failures, 0) << r.out;
  EXPECT_EQ(r.rc, 0) << r.out;  // a warning, not a failure

  // ------------------------------------------------------------ Harvester unreachable
  const std::string real = ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kHarvester));
  const int closed = caphv::testing::FreePort();  // nothing listens there
  const std::string unreachable =
      WriteFile("closed.kubeconfig",
                caphv::testing::WithServer(real, "https://127.0.0.1:" + std::to_string(closed)));
  r = Doctor("--harvester-kubeconfig '" + unreachable + "'");
  EXPECT_THAT(r.out,
              ::testing::StartsWith("✗ harvester reachable: cannot reach https://127.0.0.1:" +
                                    std::to_string(closed) + ": "));
  EXPECT_THAT(r.out, HasSubstr("; fix: check the server address of the kubeconfig and that "
                               "Harvester is up\n"));
  EXPECT_THAT(r.out, HasSubstr("✓ CAPHV running: "));  // the management cluster's checks go on
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;
  // A Harvester that accepts the connection and never answers: one line
  // within --timeout, no hang.
  caphv::testing::SilentServer silent;
  ASSERT_GT(silent.port(), 0);
  const std::string silent_config =
      WriteFile("silent.kubeconfig", caphv::testing::WithServer(real, silent.url()));
  r = Doctor("--harvester-kubeconfig '" + silent_config + "' --timeout 1s");
  EXPECT_THAT(r.out,
              ::testing::StartsWith("✗ harvester reachable: cannot reach " + silent.url() + ": "));
  // It gave up on a timeout, under the --timeout given (the default is 5 s).
  EXPECT_THAT(r.out, HasSubstr(" (timed out; --timeout 1s); fix: check the server address"))
      << r.out;
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;

  // ------------------------------------------------------------ CAPHV not running
  manager_->Stop(SIGTERM);
  manager_.reset();
  r = Doctor("");
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "\n✗ CAPHV running: its webhook does not answer: [^\n]*; fix: check the "
                         "CAPHV controller \\(kubectl -n caphv-system get pods; its logs\\)\n"));
  EXPECT_EQ(r.failures, 1) << r.out;
  EXPECT_EQ(r.rc, 1) << r.out;
}

}  // namespace
}  // namespace caphv::e2e::topology
