// File: test/integration/api/go_install_support.cc
//
// GoInstallTest's set-up and tear-down, its kubectl helpers and the steps
// that install the Go provider and CAPHV (go_install_support.h).
//
// Thread safety: test-thread only.

#include "go_install_support.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "api/yaml.h"
#include "manager_process.h"
#include "support/testbed.h"
#include "upstream_sources.h"

namespace caphv::testing::go_install {
namespace {

fs::path CertManagerCrdDir() {
  if (const char* env = std::getenv("CAPHV_CERT_MANAGER_CRDS"); env && *env) return env;
  std::string cache;
  if (const char* c = std::getenv("CAPHV_CACHE_DIR"); c && *c) {
    cache = c;
  } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
    cache = std::string(x) + "/caphv";
  } else {
    cache = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/caphv";
  }
  return fs::path(cache) / "bin" / "current" / "cert-manager-crds";
}

}  // namespace

void GoInstallTest::SetUpTestSuite() {
  kubeconfig_ = Testbed::Get().KubeconfigPath(kMgmt);
  dir_ = fs::temp_directory_path() / UniqueName("caphv-go-install");
  fs::create_directories(dir_);
  std::string looked_at;
  auto tree = upstream::SourceTree(dir_ / "upstream", &looked_at);
  looked_at_ = looked_at;
  if (!tree) return;
  go_file_ = *tree / "infrastructure-components.yaml";
  ASSERT_TRUE(fs::is_regular_file(go_file_)) << go_file_;
  auto go = api::ParseYaml(ReadWholeFile(go_file_));
  ASSERT_TRUE(go.ok()) << go.status().ToString();
  for (auto& d : *go) {
    if (d.is_object() && d.contains("kind")) go_docs_.push_back(std::move(d));
  }

  // CAPHV's install, rendered as the operations guide renders it.
  std::string out;
  ASSERT_EQ(RunCommand("kubectl kustomize " + SourcePath("config/default") + " > " +
                           (dir_ / "caphv.yaml").string(),
                       &out),
            0)
      << out;
  auto ours = api::ParseYaml(ReadWholeFile(dir_ / "caphv.yaml"));
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  for (auto& d : *ours) {
    if (d.is_object() && d.contains("kind")) our_docs_.push_back(std::move(d));
  }

  // cert-manager's CRDs, unless the bed has them.
  const fs::path crds = CertManagerCrdDir();
  for (const auto& [name, file] : kCertManagerCrds) {
    if (Kubectl("get crd " + name, nullptr) == 0) continue;
    ASSERT_TRUE(fs::is_regular_file(crds / file))
        << "cert-manager's CRDs are not at " << crds
        << ": run hack/build-testbins.sh cert-manager (make setup does), or set "
           "CAPHV_CERT_MANAGER_CRDS";
    ASSERT_EQ(Kubectl("apply -f " + (crds / file).string(), &out), 0) << out;
    installed_cert_manager_crds_.push_back(name);
  }
  // The ServiceMonitor's CRD (config/default has one), unless the bed has it.
  const std::string monitors = "servicemonitors.monitoring.coreos.com";
  if (Kubectl("get crd " + monitors, nullptr) != 0) {
    const fs::path file = crds.parent_path() / "prometheus-operator-crds" /
                          "monitoring.coreos.com_servicemonitors.yaml";
    ASSERT_TRUE(fs::is_regular_file(file))
        << file << " is missing: run hack/build-testbins.sh prometheus-operator (make setup does)";
    ASSERT_EQ(Kubectl("apply --server-side -f " + file.string(), &out), 0) << out;
    installed_cert_manager_crds_.push_back(monitors);
  }
  for (const auto& name : installed_cert_manager_crds_) {
    ASSERT_EQ(Kubectl("wait --for condition=established --timeout=60s crd/" + name, &out), 0)
        << out;
  }
  ready_ = true;
}

void GoInstallTest::TearDownTestSuite() {
  ready_ = false;
  for (const auto& name : installed_cert_manager_crds_) {
    Kubectl("delete crd " + name + " --ignore-not-found --timeout=60s", nullptr);
  }
  installed_cert_manager_crds_.clear();
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void GoInstallTest::SetUp() {
  if (go_docs_.empty()) {
    GTEST_SKIP() << "the Go provider's source (" << upstream::kArchive << ") is not at "
                 << looked_at_ << "; set CAPHV_GO_PROVIDER_SOURCE to run this test";
  }
  ASSERT_TRUE(ready_) << "the suite's set-up failed (see above)";
  crds_before_.clear();
  for (const auto& crd : kCaphvCrds) {
    if (Kubectl("get crd " + crd, nullptr) == 0) crds_before_.insert(crd);
  }
  RemoveInstall();  // what an interrupted run may have left
}

void GoInstallTest::TearDown() {
  if (!ready_) return;
  RemoveInstall();
  // CRDs that were there go back to config/crd/bases exactly (a merge over
  // the Go provider's may have kept its labels), applied server-side as the
  // other tests apply them; the others go.
  std::string out;
  if (!crds_before_.empty()) {
    EXPECT_EQ(Kubectl("replace -f " + SourcePath("config/crd/bases"), &out), 0) << out;
    EXPECT_EQ(
        Kubectl("apply --server-side --force-conflicts -f " + SourcePath("config/crd/bases"), &out),
        0)
        << out;
  }
  for (const auto& crd : kCaphvCrds) {
    if (!crds_before_.contains(crd)) {
      Kubectl("delete crd " + crd + " --ignore-not-found --timeout=60s", nullptr);
    }
  }
}

int GoInstallTest::Kubectl(const std::string& args, std::string* out) {
  return RunCommand("kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                        (dir_ / "kubectl-cache").string() + "' " + args,
                    out);
}

Json GoInstallTest::Get(const std::string& what) {
  std::string out;
  // Warnings on stderr would spoil the JSON.
  if (RunCommand("( kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                     (dir_ / "kubectl-cache").string() + "' get " + what + " -o json 2>/dev/null )",
                 &out) != 0) {
    return nullptr;
  }
  auto parsed = Json::parse(out, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? Json(nullptr) : parsed;
}

void GoInstallTest::RemoveInstall() {
  Kubectl(std::string("delete validatingwebhookconfiguration ") + kWebhookConfig +
              " --ignore-not-found",
          nullptr);
  Kubectl(std::string("delete mutatingwebhookconfiguration ") + kMutatingWebhookConfig +
              " --ignore-not-found",
          nullptr);
  Kubectl(
      "delete clusterrolebinding caphv-manager-rolebinding caphv-proxy-rolebinding "
      "--ignore-not-found",
      nullptr);
  Kubectl(
      "delete clusterrole caphv-manager-role caphv-metrics-reader caphv-proxy-role "
      "--ignore-not-found",
      nullptr);
  std::string out;
  EXPECT_EQ(Kubectl(std::string("delete namespace ") + kNamespace +
                        " --ignore-not-found --wait --timeout=120s",
                    &out),
            0)
      << out;
}

fs::path GoInstallTest::WriteJson(const std::vector<Json>& docs, const std::string& stem) {
  Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", docs}};
  fs::path p = dir_ / (stem + ".json");
  std::ofstream(p) << list.dump();
  return p;
}

void GoInstallTest::CreateGoInstallWithoutAnnotation() {
  std::vector<Json> crds, rest;
  for (const auto& d : go_docs_) {
    if (d["kind"] == "CustomResourceDefinition") {
      crds.push_back(d);
    } else {
      rest.push_back(d);
    }
  }
  std::string out;
  for (const auto& crd : crds) {
    const std::string verb = Kubectl("get crd " + crd["metadata"].value("name", ""), nullptr) == 0
                                 ? "replace"
                                 : "create";
    ASSERT_EQ(Kubectl(verb + " -f " + WriteJson({crd}, "go-crd").string(), &out), 0) << out;
  }
  ASSERT_EQ(Kubectl("create -f " + WriteJson(rest, "go-rest").string(), &out), 0) << out;
  for (const auto& crd : kCaphvCrds) {
    Json live = Get("crd " + crd);
    ASSERT_TRUE(live.is_object()) << crd;
    const Json::json_pointer last(
        "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration");
    EXPECT_FALSE(live.contains(last)) << crd;
  }
}

void GoInstallTest::ApplyCaphv() {
  std::string out;
  const int rc = RunCommand("kubectl kustomize " + SourcePath("config/default") +
                                " | kubectl --kubeconfig '" + kubeconfig_ + "' --cache-dir '" +
                                (dir_ / "kubectl-cache").string() + "' apply -f -",
                            &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("immutable"), std::string::npos) << out;
  EXPECT_EQ(out.find("is invalid"), std::string::npos) << out;
  EXPECT_EQ(out.find("Error"), std::string::npos) << out;
}

std::string GoInstallTest::GoDeploymentUid() {
  Json deploy = Get(std::string("deployment ") + kDeployment + " -n " + kNamespace);
  EXPECT_TRUE(deploy.is_object());
  if (!deploy.is_object()) return "";
  // It is the Go provider's: its selector, its image.
  EXPECT_EQ(Labels(deploy, "/spec/selector/matchLabels"), kGoSelector);
  return deploy["metadata"].value("uid", "");
}

}  // namespace caphv::testing::go_install
