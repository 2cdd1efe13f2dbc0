// caphv-manager as a process against the test bed's management apiserver:
// probes and metrics, leader election on a Lease, a clean exit on SIGTERM
// (lease released), no secret value in a -v=10 log, and flag errors.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "controllers/metrics.h"
#include "manager_process.h"
#include "support/testbed.h"

namespace caphv::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const kube::GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true};
const kube::GroupVersionResource kSecrets{"", "v1", "secrets", true};

std::string Manager() { return BuildPath("cmd/caphv-manager/caphv-manager"); }

class ManagerProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& bed = Testbed::Get();
    kubeconfig_ = bed.KubeconfigPath(kMgmt);
    client_ = bed.Client(kMgmt);
    ns_ = std::make_unique<ScopedNamespace>(client_, "caphv-manager");
    dir_ = fs::temp_directory_path() / UniqueName("caphv-manager-test");
    std::string out;
    ASSERT_TRUE(MakeServingCerts(dir_ / "certs", &out)) << out;
  }
  void TearDown() override {
    if (manager_) manager_->Kill();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  void Start(std::vector<std::string> extra) {
    metrics_port_ = FreePort();
    probe_port_ = FreePort();
    std::vector<std::string> args = {
        Manager(),
        "--kubeconfig=" + kubeconfig_,
        "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
        "--health-probe-bind-address",
        "127.0.0.1:" + std::to_string(probe_port_),
        "--enable-webhooks",
        "--webhook-port=" + std::to_string(FreePort()),
        "--webhook-cert-dir=" + (dir_ / "certs").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    manager_ = std::make_unique<ChildProcess>(args, dir_ / "manager.log");
    ASSERT_TRUE(manager_->started());
  }
  std::string Url(int port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
  }

  std::string kubeconfig_;
  std::shared_ptr<kube::Client> client_;
  std::unique_ptr<ScopedNamespace> ns_;
  fs::path dir_;
  int metrics_port_ = 0, probe_port_ = 0;
  std::unique_ptr<ChildProcess> manager_;
};

TEST_F(ManagerProcessTest, ServesProbesAndEveryMetricFamily) {
  Start({});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << manager_->Log();
  std::string body;
  EXPECT_EQ(HttpGet(Url(probe_port_, "/healthz"), &body), 200);
  EXPECT_EQ(body, "ok");
  EXPECT_EQ(HttpGet(Url(probe_port_, "/readyz?verbose"), &body), 200);
  EXPECT_NE(body.find("[+]webhook ok"), std::string::npos) << body;
  EXPECT_EQ(HttpGet(Url(probe_port_, "/readyz/webhook"), nullptr), 200);

  ASSERT_EQ(HttpGet(Url(metrics_port_, "/metrics"), &body), 200);
  for (const auto& name : controllers::metrics::FamilyNames()) {
    EXPECT_NE(body.find("# TYPE " + name + " "), std::string::npos) << name << " in\n" << body;
  }
  for (const char* name : {"process_resident_memory_bytes", "process_cpu_seconds_total",
                           "process_start_time_seconds", "process_open_fds"}) {
    EXPECT_NE(body.find("# TYPE " + std::string(name) + " "), std::string::npos) << name;
  }
  EXPECT_NE(body.find("caphv_machine_creation_duration_seconds_bucket{le=\"512"),
            std::string::npos);
  EXPECT_NE(body.find("caphv_node_init_duration_seconds_bucket{le=\"0.5"), std::string::npos);
}

TEST_F(ManagerProcessTest, LeadsAndExitsCleanlyOnSigtermWithoutLoggingSecrets) {
  // An identity Secret with a distinctive token in its kubeconfig.
  const std::string token = "caphv-test-token-" + UniqueName("s");
  const std::string kubeconfig =
      "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n"
      "    token: " +
      token + "\n";
  Json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "hv-identity"}, {"namespace", ns_->name()}}},
                 {"stringData", {{"kubeconfig", kubeconfig}}}};
  auto created = client_->Create(kSecrets, ns_->name(), secret);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  const std::string lease_name = UniqueName("caphv-lease");
  Start({"--leader-elect", "--leader-election-namespace", ns_->name(), "--leader-election-id",
         lease_name, "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
         "--leader-elect-retry-period=1s", "-v=10", "--log-format=json"});

  // It takes the lease.
  std::string holder;
  ASSERT_TRUE(Eventually(
      [&] {
        auto lease = client_->Get(kLeases, ns_->name(), lease_name);
        if (!lease.ok()) return false;
        holder = (*lease)["spec"].value("holderIdentity", "");
        return !holder.empty();
      },
      std::chrono::seconds(20)))
      << manager_->Log();
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(10)));
  // Read the secret the way an operator would while the manager runs, so the
  // run spans real API traffic around it.
  ASSERT_TRUE(client_->Get(kSecrets, ns_->name(), "hv-identity").ok());

  auto start = std::chrono::steady_clock::now();
  manager_->Signal(SIGTERM);
  auto code = manager_->Wait(std::chrono::seconds(10));
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(code.has_value()) << "still running 10 s after SIGTERM\n" << manager_->Log();
  EXPECT_EQ(*code, 0) << manager_->Log();
  EXPECT_LT(took, std::chrono::seconds(5));

  // The lease was released for the next leader.
  auto lease = client_->Get(kLeases, ns_->name(), lease_name);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"].value("holderIdentity", ""), "");

  std::string log = manager_->Log();
  EXPECT_NE(log.find("Manager started"), std::string::npos) << log;
  EXPECT_NE(log.find("Manager stopped"), std::string::npos) << log;
  EXPECT_NE(log.find(holder), std::string::npos);  // JSON lines mention the identity
  EXPECT_EQ(log.find(token), std::string::npos) << "the identity token leaked into the log";
  // Neither the admin token of the test bed's kubeconfig.
  auto config = Testbed::Get().Config(kMgmt);
  if (!config.token.empty()) {
    EXPECT_EQ(log.find(config.token), std::string::npos) << "the bearer token leaked";
  }
}

TEST_F(ManagerProcessTest, LosingTheLeaseExitsNonZero) {
  const std::string lease_name = UniqueName("caphv-lease");
  Start({"--leader-elect", "--leader-election-namespace=" + ns_->name(),
         "--leader-election-id=" + lease_name, "--leader-elect-lease-duration=4s",
         "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"});
  ASSERT_TRUE(Eventually(
      [&] {
        auto lease = client_->Get(kLeases, ns_->name(), lease_name);
        return lease.ok() && !(*lease)["spec"].value("holderIdentity", "").empty();
      },
      std::chrono::seconds(20)))
      << manager_->Log();
  // Another holder takes the lease over, for a long time.
  Json patch = {{"spec", {{"holderIdentity", "someone-else"}, {"leaseDurationSeconds", 3600}}}};
  ASSERT_TRUE(
      client_->Patch(kLeases, ns_->name(), lease_name, kube::PatchType::kMerge, patch).ok());
  auto code = manager_->Wait(std::chrono::seconds(15));
  ASSERT_TRUE(code.has_value()) << "still running after losing the lease\n" << manager_->Log();
  EXPECT_NE(*code, 0) << manager_->Log();
  EXPECT_NE(manager_->Log().find("leader election lost"), std::string::npos) << manager_->Log();
}

TEST_F(ManagerProcessTest, SigintStopsCleanly) {
  Start({});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)));
  manager_->Signal(SIGINT);
  auto code = manager_->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << manager_->Log();
}

TEST_F(ManagerProcessTest, BadFlagsExitNonZeroWithOneLine) {
  for (const std::string flags : {"--webhook-port=abc", "--no-such-flag",
                                  "--leader-elect-lease-duration=1s", "--log-format=xml"}) {
    std::string out;
    int rc = RunCommand("'" + Manager() + "' " + flags, &out);
    EXPECT_EQ(rc, 2) << flags << ": " << out;
    ASSERT_FALSE(out.empty()) << flags;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << flags << ": " << out;
    EXPECT_EQ(out.rfind("caphv-manager: ", 0), 0u) << out;
  }
  std::string out;
  EXPECT_EQ(RunCommand("'" + Manager() + "' --version", &out), 0);
  EXPECT_EQ(out.rfind("caphv-manager ", 0), 0u) << out;
  EXPECT_EQ(RunCommand("'" + Manager() + "' --help", &out), 0);
}

TEST_F(ManagerProcessTest, FailsToStartWithoutCertificates) {
  std::string out;
  int rc = RunCommand("'" + Manager() + "' --kubeconfig='" + kubeconfig_ +
                          "' --enable-webhooks --webhook-port=" + std::to_string(FreePort()) +
                          " --metrics-bind-address=0 --health-probe-bind-address=0"
                          " --webhook-cert-dir=" +
                          (dir_ / "missing").string(),
                      &out);
  EXPECT_EQ(rc, 1) << out;
}

}  // namespace
}  // namespace caphv::testing
