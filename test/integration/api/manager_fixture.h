// File: test/integration/api/manager_fixture.h
//
// The fixture of the caphv-manager process tests (manager_test.cc,
// manager_leader_test.cc): the CAPHV CRDs on the test bed's management
// apiserver, a namespace and serving certificates per test, and Launch(),
// which starts a replica with its own ports and log.
//
// Thread safety: test-thread only.

#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "manager_process.h"
#include "support/testbed.h"

namespace caphv::testing {

class ManagerProcessTest : public ::testing::Test {
 protected:
  static inline const kube::GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases",
                                                         true};
  static inline const kube::GroupVersionResource kSecrets{"", "v1", "secrets", true};
  static inline const kube::GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts",
                                                                  true};
  static inline const kube::GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1",
                                                               "clusterroles", false};
  static inline const kube::GroupVersionResource kClusterRoleBindings{
      "rbac.authorization.k8s.io", "v1", "clusterrolebindings", false};

  static std::string Manager() { return BuildPath("cmd/caphv-manager/caphv-manager"); }
  // Position of `needle` in `log` (npos when absent), for ordering checks.
  static size_t At(const std::string& log, const std::string& needle) { return log.find(needle); }
  static size_t Count(const std::string& log, const std::string& needle) {
    size_t n = 0;
    for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

  // The CAPHV CRDs: a manager is ready only once its caches synced, which
  // needs them (idempotent: other suites apply them too).
  static void SetUpTestSuite() {
    std::string out;
    ASSERT_EQ(ApplyCrds(Testbed::Get().KubeconfigPath(kMgmt), &out), 0) << out;
  }

  void SetUp() override {
    auto& bed = Testbed::Get();
    kubeconfig_ = bed.KubeconfigPath(kMgmt);
    client_ = bed.Client(kMgmt);
    ns_ = std::make_unique<ScopedNamespace>(client_, "caphv-manager");
    dir_ = std::filesystem::temp_directory_path() / UniqueName("caphv-manager-test");
    std::string out;
    ASSERT_TRUE(MakeServingCerts(dir_ / "certs", &out)) << out;
  }
  void TearDown() override {
    if (manager_) manager_->Kill();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // One caphv-manager process with its own ports and log.
  struct Replica {
    std::unique_ptr<ChildProcess> process;
    int metrics_port = 0;
    int probe_port = 0;
    std::string Log() const { return process->Log(); }
  };

  // Starts a replica: `extra` flags after the common ones; `kubeconfig`
  // empty = the bed's admin kubeconfig.
  Replica Launch(const std::vector<std::string>& extra, const std::string& log_name,
                 const std::string& kubeconfig = "",
                 const std::map<std::string, std::string>& env = {}) {
    Replica r;
    r.metrics_port = FreePort();
    r.probe_port = FreePort();
    std::vector<std::string> args = {
        Manager(),
        "--kubeconfig=" + (kubeconfig.empty() ? kubeconfig_ : kubeconfig),
        "--metrics-bind-address=127.0.0.1:" + std::to_string(r.metrics_port),
        "--metrics-secure=false",
        "--health-probe-bind-address",
        "127.0.0.1:" + std::to_string(r.probe_port),
        "--enable-webhooks",
        "--webhook-port=" + std::to_string(FreePort()),
        "--webhook-cert-dir=" + (dir_ / "certs").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    r.process = std::make_unique<ChildProcess>(args, dir_ / (log_name + ".log"), false, env);
    EXPECT_TRUE(r.process->started());
    return r;
  }

  void Start(std::vector<std::string> extra) {
    Replica r = Launch(extra, "manager");
    manager_ = std::move(r.process);
    metrics_port_ = r.metrics_port;
    probe_port_ = r.probe_port;
    ASSERT_TRUE(manager_->started());
  }
  std::vector<std::string> LeaderElectionFlags(const std::string& lease_name) {
    return {"--leader-elect",
            "--leader-election-namespace=" + ns_->name(),
            "--leader-election-id=" + lease_name,
            "--leader-elect-lease-duration=4s",
            "--leader-elect-renew-deadline=3s",
            "--leader-elect-retry-period=1s",
            "--namespace=" + ns_->name()};
  }
  std::string Holder(const std::string& lease_name) {
    auto lease = client_->Get(kLeases, ns_->name(), lease_name);
    return lease.ok() ? (*lease)["spec"].value("holderIdentity", "") : "";
  }
  std::string Url(int port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }

  std::string kubeconfig_;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<ScopedNamespace> ns_;
  std::filesystem::path dir_;
  int metrics_port_ = 0, probe_port_ = 0;
  std::unique_ptr<ChildProcess> manager_;
};

}  // namespace caphv::testing
