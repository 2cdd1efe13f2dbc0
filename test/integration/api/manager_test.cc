// caphv-manager as a process against the test bed's management apiserver:
// probes and metrics, leader election on a Lease, a clean exit on SIGTERM
// (lease released), no secret value in a -v=10 log, and flag errors; the
// start order (caches sync on every replica before leader election, so a
// standby is ready with warm caches), a lost lease exiting at once, and a
// cache that cannot sync (no RBAC to list one resource) failing readiness
// and the process.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "controllers/metrics.h"
#include "kube/base64.h"
#include "kube/heap.h"
#include "manager_process.h"
#include "support/testbed.h"

namespace caphv::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const kube::GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true};
const kube::GroupVersionResource kSecrets{"", "v1", "secrets", true};
const kube::GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true};
const kube::GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                               false};
const kube::GroupVersionResource kClusterRoleBindings{"rbac.authorization.k8s.io", "v1",
                                                      "clusterrolebindings", false};

// Position of `needle` in `log` (npos when absent), for ordering checks.
size_t At(const std::string& log, const std::string& needle) { return log.find(needle); }

size_t Count(const std::string& log, const std::string& needle) {
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::string Manager() { return BuildPath("cmd/caphv-manager/caphv-manager"); }

class ManagerProcessTest : public ::testing::Test {
 protected:
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
    dir_ = fs::temp_directory_path() / UniqueName("caphv-manager-test");
    std::string out;
    ASSERT_TRUE(MakeServingCerts(dir_ / "certs", &out)) << out;
  }
  void TearDown() override {
    if (manager_) manager_->Kill();
    std::error_code ec;
    fs::remove_all(dir_, ec);
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

// A process's environment as the kernel holds it, NUL-separated. glibc
// splits GLIBC_TUNABLES there at its ':'s while reading it, so a value shows
// as consecutive entries.
std::string EnvironOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(ManagerProcessTest, RunsWithoutGlibcThreadCachesUnlessTheOperatorSetsThem) {
  // Under AddressSanitizer (GCC's or clang's) the heap is the sanitizer's: no stats, no re-exec.
  if (caphv::kube::ReadHeapStats().resident_anon == 0)
    GTEST_SKIP() << "the heap is AddressSanitizer's";
  // Re-executed in place: the pid the test started serves, with the caches off.
  Replica r = Launch({}, "tcache-off", "", {{"GLIBC_TUNABLES", "glibc.malloc.arena_max=2"}});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(r.probe_port, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << r.Log();
  const std::string env = EnvironOf(r.process->pid());
  EXPECT_NE(env.find(std::string("GLIBC_TUNABLES=glibc.malloc.arena_max=2") + '\0' +
                     "glibc.malloc.tcache_count=0"),
            std::string::npos);
  // Named as its binary in ps and top, not after /proc/self/exe.
  std::ifstream comm("/proc/" + std::to_string(r.process->pid()) + "/comm");
  std::string name;
  std::getline(comm, name);
  EXPECT_EQ(name, "caphv-manager");
  std::string body;
  ASSERT_EQ(HttpGet(Url(r.metrics_port, "/metrics"), &body), 200);
  EXPECT_NE(body.find("\ncaphv_heap_in_use_bytes "), std::string::npos) << body;
  r.process->Kill();

  // An operator's own value stands.
  Replica own = Launch({}, "tcache-own", "", {{"GLIBC_TUNABLES", "glibc.malloc.tcache_count=7"}});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(own.probe_port, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << own.Log();
  const std::string own_env = EnvironOf(own.process->pid());
  EXPECT_NE(own_env.find("GLIBC_TUNABLES=glibc.malloc.tcache_count=7"), std::string::npos);
  EXPECT_EQ(own_env.find("tcache_count=0"), std::string::npos);
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
  // How long is printed, not asserted: timing is the benchmarks' business.
  std::cout << "graceful shutdown took "
            << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms\n";

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

TEST_F(ManagerProcessTest, LosingTheLeaseExitsNonZeroAtOnce) {
  const std::string lease_name = UniqueName("caphv-lease");
  Start(LeaderElectionFlags(lease_name));
  ASSERT_TRUE(Eventually([&] { return !Holder(lease_name).empty(); }, std::chrono::seconds(20)))
      << manager_->Log();
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(10)))
      << manager_->Log();
  // Another holder takes the lease over, for a long time.
  Json patch = {{"spec", {{"holderIdentity", "someone-else"}, {"leaseDurationSeconds", 3600}}}};
  const auto taken = std::chrono::steady_clock::now();
  ASSERT_TRUE(
      client_->Patch(kLeases, ns_->name(), lease_name, kube::PatchType::kMerge, patch).ok());
  auto code = manager_->Wait(std::chrono::seconds(15));
  const auto took = std::chrono::steady_clock::now() - taken;
  ASSERT_TRUE(code.has_value()) << "still running after losing the lease\n" << manager_->Log();
  EXPECT_EQ(*code, 1) << manager_->Log();
  // The renew deadline (3 s), one retry period and request latency; that no
  // graceful shutdown comes on top is asserted by the log below, the time
  // only printed.
  std::cout << "exited " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count()
            << " ms after the lease was taken over\n";
  const std::string log = manager_->Log();
  EXPECT_NE(log.find("leader election lost"), std::string::npos) << log;
  EXPECT_NE(log.find("Exiting at once without a graceful shutdown"), std::string::npos) << log;
  EXPECT_EQ(log.find("Manager stopped"), std::string::npos)
      << "a lost lease must not go through the graceful shutdown\n"
      << log;
  EXPECT_EQ(Holder(lease_name), "someone-else");
}

TEST_F(ManagerProcessTest, CachesSyncBeforeLeaderElectionSoAStandbyIsReadyAndWarm) {
  const std::string lease_name = UniqueName("caphv-lease");
  Replica leader = Launch(LeaderElectionFlags(lease_name), "leader");
  ASSERT_TRUE(Eventually([&] { return !Holder(lease_name).empty(); }, std::chrono::seconds(20)))
      << leader.Log();
  const std::string leader_identity = Holder(lease_name);

  Replica standby = Launch(LeaderElectionFlags(lease_name), "standby");
  // The standby does not lead, yet it becomes ready: its caches synced.
  ASSERT_TRUE(
      Eventually([&] { return HttpGet(Url(standby.probe_port, "/readyz"), nullptr) == 200; },
                 std::chrono::seconds(20)))
      << standby.Log();
  std::string body;
  EXPECT_EQ(HttpGet(Url(standby.probe_port, "/readyz?verbose"), &body), 200);
  EXPECT_NE(body.find("[+]runnables ok"), std::string::npos) << body;
  // Give it a few retry periods of trying to take the lease.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(Holder(lease_name), leader_identity);
  std::string log = standby.Log();
  ASSERT_NE(At(log, "Caches synced"), std::string::npos) << log;
  ASSERT_NE(At(log, "Attempting to acquire leader lease"), std::string::npos) << log;
  EXPECT_LT(At(log, "Caches synced"), At(log, "Attempting to acquire leader lease")) << log;
  EXPECT_EQ(At(log, "Successfully acquired lease"), std::string::npos) << log;
  EXPECT_EQ(At(log, "Starting workers"), std::string::npos) << "a standby reconciles nothing";
  // The leader too synced its caches before it tried to take the lease.
  const std::string leader_log = leader.Log();
  EXPECT_LT(At(leader_log, "Caches synced"), At(leader_log, "Attempting to acquire leader lease"))
      << leader_log;
  EXPECT_LT(At(leader_log, "Attempting to acquire leader lease"),
            At(leader_log, "Successfully acquired lease"))
      << leader_log;

  // The leader stops (releasing the lease): the standby takes over and starts
  // its workers on the caches it already has, without a second sync.
  leader.process->Signal(SIGTERM);
  auto code = leader.process->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << leader.Log();
  ASSERT_TRUE(Eventually(
      [&] {
        return standby.Log().find("Starting workers") != std::string::npos &&
               Holder(lease_name) != "" && Holder(lease_name) != leader_identity;
      },
      std::chrono::seconds(15)))
      << standby.Log();
  log = standby.Log();
  EXPECT_EQ(Count(log, "Caches synced"), 1u) << log;
  EXPECT_LT(At(log, "Caches synced"), At(log, "Successfully acquired lease")) << log;
  EXPECT_EQ(HttpGet(Url(standby.probe_port, "/readyz"), nullptr), 200);
  standby.process->Signal(SIGTERM);
  code = standby.process->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << standby.Log();
}

// A manager whose credentials cannot list HarvesterMachines: that cache never
// syncs. Readiness fails all along, and the process exits 1 once
// --cache-sync-timeout has passed, without ever leading.
TEST_F(ManagerProcessTest, CacheThatCannotSyncFailsReadinessAndExitsNonZero) {
  const std::string account = "caphv-limited";
  Json sa = {{"apiVersion", "v1"},
             {"kind", "ServiceAccount"},
             {"metadata", {{"name", account}, {"namespace", ns_->name()}}}};
  ASSERT_TRUE(client_->Create(kServiceAccounts, ns_->name(), sa).ok());
  const std::string role = UniqueName("caphv-limited");
  auto rule = [](const char* group, std::vector<std::string> resources,
                 std::vector<std::string> verbs) {
    return Json{{"apiGroups", {group}}, {"resources", resources}, {"verbs", verbs}};
  };
  // Everything the manager reads, except harvestermachines.
  Json cluster_role = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRole"},
      {"metadata", {{"name", role}}},
      {"rules",
       {rule("", {"namespaces"}, {"get"}), rule("", {"secrets"}, {"get", "list", "watch"}),
        rule("", {"events"}, {"create", "patch"}),
        rule("infrastructure.cluster.x-k8s.io", {"harvesterclusters"}, {"get", "list", "watch"}),
        rule("cluster.x-k8s.io", {"clusters", "machines"}, {"get", "list", "watch"}),
        rule("coordination.k8s.io", {"leases"}, {"get", "create", "update"})}}};
  Json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "ClusterRoleBinding"},
      {"metadata", {{"name", role}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", role}}},
      {"subjects", {{{"kind", "ServiceAccount"}, {"name", account}, {"namespace", ns_->name()}}}}};
  ASSERT_TRUE(client_->Create(kClusterRoles, "", cluster_role).ok());
  ASSERT_TRUE(client_->Create(kClusterRoleBindings, "", binding).ok());
  struct Cleanup {
    std::shared_ptr<kube::Client> client;
    std::string name;
    ~Cleanup() {
      client->Delete(kClusterRoleBindings, "", name).IgnoreError();
      client->Delete(kClusterRoles, "", name).IgnoreError();
    }
  } cleanup{client_, role};

  std::string token;
  ASSERT_EQ(RunCommand("kubectl --kubeconfig '" + kubeconfig_ + "' -n " + ns_->name() +
                           " create token " + account + " --duration=1h",
                       &token),
            0)
      << token;
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  const kube::RestConfig admin = Testbed::Get().Config(kMgmt);
  const fs::path limited = dir_ / "limited.kubeconfig";
  {
    std::ofstream out(limited);
    out << "apiVersion: v1\nkind: Config\nclusters:\n- name: mgmt\n  cluster:\n    server: "
        << admin.server << "\n"
        << (admin.ca_pem.empty()
                ? std::string("    insecure-skip-tls-verify: true\n")
                : "    certificate-authority-data: " + kube::Base64Encode(admin.ca_pem) + "\n")
        << "users:\n- name: limited\n  user:\n    token: " << token
        << "\ncontexts:\n- name: limited\n  context:\n    cluster: mgmt\n    user: limited\n"
           "current-context: limited\n";
  }
  // The identity works: it may read kube-system (the management cluster id).
  std::string out;
  ASSERT_EQ(
      RunCommand("kubectl --kubeconfig '" + limited.string() + "' get namespace kube-system", &out),
      0)
      << out;

  const std::string lease_name = UniqueName("caphv-lease");
  std::vector<std::string> flags = LeaderElectionFlags(lease_name);
  flags.push_back("--cache-sync-timeout=4s");
  Replica r = Launch(flags, "limited", limited.string());
  const auto started = std::chrono::steady_clock::now();
  int answered = 0, ready = 0;
  std::string verbose;
  std::optional<int> code;
  while (!(code = r.process->Wait(std::chrono::milliseconds(200))).has_value() &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(30)) {
    std::string body;
    const int status = HttpGet(Url(r.probe_port, "/readyz?verbose"), &body);
    if (status != 0) ++answered;
    if (status == 200) ++ready;
    if (status == 500) verbose = body;
  }
  ASSERT_TRUE(code.has_value()) << "still running 30 s after start\n" << r.Log();
  EXPECT_EQ(*code, 1) << r.Log();
  EXPECT_GT(answered, 0) << "the probe server never answered\n" << r.Log();
  EXPECT_EQ(ready, 0) << "ready although a cache never synced\n" << r.Log();
  EXPECT_NE(verbose.find("[-]runnables failed"), std::string::npos) << verbose;
  const std::string log = r.Log();
  EXPECT_NE(log.find("Cache did not sync"), std::string::npos) << log;
  EXPECT_NE(log.find("harvestermachines"), std::string::npos) << log;
  EXPECT_EQ(log.find("Attempting to acquire leader lease"), std::string::npos)
      << "leader election must wait for the caches\n"
      << log;
  EXPECT_TRUE(Holder(lease_name).empty());
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
  for (const std::string flags :
       {"--webhook-port=abc", "--no-such-flag", "--leader-elect-lease-duration=1s",
        "--log-format=xml", "--metrics-secure=false",
        "--metrics-secure=false --metrics-bind-address=0.0.0.0:8080"}) {
    std::string out;
    int rc = RunCommand("'" + Manager() + "' " + flags, &out);
    EXPECT_EQ(rc, 2) << flags << ": " << out;
    ASSERT_FALSE(out.empty()) << flags;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << flags << ": " << out;
    EXPECT_EQ(out.rfind("caphv-manager: ", 0), 0u) << out;
    if (flags.rfind("--metrics-secure=false", 0) == 0) {
      EXPECT_NE(out.find("--metrics-secure=false"), std::string::npos) << out;
      EXPECT_NE(out.find("--metrics-bind-address"), std::string::npos) << out;
    }
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
