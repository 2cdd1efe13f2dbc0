// caphv-manager replicas and leader election on a Lease: a clean exit on
// SIGTERM (lease released), no secret value in a -v=10 log, a lost lease
// exiting at once, the start order (caches sync on every replica before
// leader election, so a standby is ready with warm caches), and a cache that
// cannot sync (no RBAC to list one resource) failing readiness and the
// process.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>

#include "kube/base64.h"
#include "manager_fixture.h"

namespace caphv::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

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

}  // namespace
}  // namespace caphv::testing
