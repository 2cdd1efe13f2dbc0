// File: test/integration/controllers/harvester_connections_test.cc
//
// HarvesterConnections against the test bed: the management apiserver holds
// the identity Secrets, the bed's Harvester apiserver (with the simulator's
// harvester-system/harvester Deployment) is the Harvester. Covered: a
// connection is built in the background and its waiter woken; an identity
// pointing at an endpoint that accepts TCP connections and never answers
// fails with HarvesterConnectionFailed naming the endpoint while another
// identity connects meanwhile, and recovers on its own once its Secret is
// fixed; the Connection's PVC, Secret and deletion-wait paths; a deleted
// identity Secret keeps the connection; Sweep closes it.

#include "controllers/harvester_connections.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "kube/base64.h"
#include "support/silent_server.h"
#include "support/testbed.h"

namespace caphv::controllers {
namespace {

using caphv::testing::Eventually;
using caphv::testing::Testbed;
using kube::Object;
using std::chrono::seconds;

constexpr char kManagedBy[] = "app.kubernetes.io/managed-by";
constexpr char kOwner[] = "harvester.infrastructure.cluster.x-k8s.io/owner";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Records the requests the callbacks receive.
struct Events {
  std::mutex mu;
  std::vector<std::string> machine, cluster;
  ConnectionCallbacks Callbacks() {
    ConnectionCallbacks cb;
    cb.machine_event = [this](const kube::Request& r) {
      std::lock_guard lock(mu);
      machine.push_back(r.Key());
    };
    cb.cluster_event = [this](const kube::Request& r) {
      std::lock_guard lock(mu);
      cluster.push_back(r.Key());
    };
    return cb;
  }
  bool Machine(const std::string& key) {
    std::lock_guard lock(mu);
    return std::find(machine.begin(), machine.end(), key) != machine.end();
  }
  bool Cluster(const std::string& key) {
    std::lock_guard lock(mu);
    return std::find(cluster.begin(), cluster.end(), key) != cluster.end();
  }
  size_t ClusterCount(const std::string& key) {
    std::lock_guard lock(mu);
    return std::count(cluster.begin(), cluster.end(), key);
  }
};

class HarvesterConnectionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& bed = Testbed::Get();
    mgmt_ = bed.Client(caphv::testing::kMgmt);
    harvester_ = bed.Client(caphv::testing::kHarvester);
    ns_ = std::make_unique<caphv::testing::ScopedNamespace>(mgmt_, "conn");
    harvester_kubeconfig_ = ReadFile(bed.KubeconfigPath(caphv::testing::kHarvester));
    kube::InformerOptions o;
    o.gvr = kube::resources::kSecrets;
    o.ns = ns();
    o.transform = [](Object& s) {
      s.erase("data");
      s.erase("stringData");
    };
    secrets_ = std::make_shared<kube::Informer>(mgmt_, std::move(o));
    secrets_->Start();
    ASSERT_TRUE(secrets_->WaitForSync(std::chrono::seconds(30)));
    connections_ = std::make_unique<HarvesterConnections>(mgmt_, secrets_, events_.Callbacks());
  }

  void TearDown() override {
    connections_->Stop();
    connections_.reset();
    secrets_->Stop();
    if (!hv_ns_.empty()) {
      harvester_->Delete(kube::resources::kNamespaces, "", hv_ns_).IgnoreError();
    }
  }

  const std::string& ns() const { return ns_->name(); }

  void PutIdentity(const std::string& name, const std::string& kubeconfig) {
    Object s = {{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", name}, {"namespace", ns()}}},
                {"type", "Opaque"},
                {"data", {{"kubeconfig", kube::Base64Encode(kubeconfig)}}}};
    auto r = mgmt_->Apply(kube::resources::kSecrets, ns(), s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  Waiter ClusterWaiter(const std::string& name) {
    return {Waiter::Kind::kCluster, kube::Request{ns(), name}};
  }

  // Get, timed: it must never wait on the network.
  ConnectionLookup TimedGet(const std::string& identity, const Waiter& w) {
    const auto start = std::chrono::steady_clock::now();
    auto l = connections_->Get(ns(), identity, w);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500))
        << "Get blocked";
    return l;
  }

  std::shared_ptr<Connection> WaitReady(const std::string& identity, const Waiter& w) {
    std::shared_ptr<Connection> conn;
    EXPECT_TRUE(Eventually(
        [&] {
          conn = TimedGet(identity, w).value;
          return conn != nullptr;
        },
        seconds(60), std::chrono::milliseconds(100)))
        << TimedGet(identity, w).message;
    return conn;
  }

  // A fresh namespace on Harvester, deleted at TearDown.
  std::string HarvesterNamespace() {
    hv_ns_ = caphv::testing::UniqueName("conn-hv");
    Object n = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", hv_ns_}}}};
    auto r = harvester_->Create(kube::resources::kNamespaces, "", n);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return hv_ns_;
  }

  std::shared_ptr<kube::Client> mgmt_, harvester_;
  std::unique_ptr<caphv::testing::ScopedNamespace> ns_;
  std::string harvester_kubeconfig_;
  std::string hv_ns_;
  std::shared_ptr<kube::Informer> secrets_;
  Events events_;
  std::unique_ptr<HarvesterConnections> connections_;
};

TEST_F(HarvesterConnectionsTest, ConnectsInTheBackgroundAndWakesTheWaiter) {
  PutIdentity("hv-identity", harvester_kubeconfig_);
  auto first = TimedGet("hv-identity", ClusterWaiter("c1"));
  if (!first.value) {
    EXPECT_EQ(first.reason, "Connecting");
    EXPECT_NE(first.message.find(ns() + "/hv-identity"), std::string::npos) << first.message;
    EXPECT_EQ(first.retry_after, std::chrono::milliseconds(0));
    EXPECT_TRUE(Eventually([&] { return events_.Cluster(ns() + "/c1"); }, seconds(60)));
  }
  auto conn = WaitReady("hv-identity", ClusterWaiter("c1"));
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(conn->server(), Testbed::Get().Config(caphv::testing::kHarvester).server);
  EXPECT_EQ(conn->client().config().connect_timeout, kHarvesterConnectTimeout);
  EXPECT_EQ(conn->client().config().request_timeout, kHarvesterRequestTimeout);
  // Served from the cache from now on.
  EXPECT_EQ(TimedGet("hv-identity", ClusterWaiter("c1")).value, conn);
}

TEST_F(HarvesterConnectionsTest, SilentHarvesterFailsWithoutStallingOthersAndRecoversWhenFixed) {
  caphv::testing::SilentServer silent;
  ASSERT_GT(silent.port(), 0);
  PutIdentity("hv-silent", caphv::testing::WithServer(harvester_kubeconfig_, silent.url()));
  PutIdentity("hv-identity", harvester_kubeconfig_);

  auto a = TimedGet("hv-silent", ClusterWaiter("a"));
  EXPECT_EQ(a.value, nullptr);
  EXPECT_TRUE(Eventually([&] { return silent.connections() > 0; }, seconds(10)));
  // While A's attempt hangs, B connects.
  auto b = WaitReady("hv-identity", ClusterWaiter("b"));
  ASSERT_NE(b, nullptr);

  // A fails (connect timeout) with a reason and a message naming the
  // endpoint and the identity; its waiter is woken.
  ConnectionLookup failed;
  EXPECT_TRUE(Eventually(
      [&] {
        failed = TimedGet("hv-silent", ClusterWaiter("a"));
        return failed.reason == "HarvesterConnectionFailed" &&
               failed.retry_after > std::chrono::milliseconds(0);
      },
      seconds(60), std::chrono::milliseconds(100)))
      << failed.reason << ": " << failed.message;
  EXPECT_EQ(failed.value, nullptr);
  EXPECT_NE(failed.message.find(silent.url()), std::string::npos) << failed.message;
  EXPECT_NE(failed.message.find(ns() + "/hv-silent"), std::string::npos) << failed.message;
  // Within the pool's backoff (2 s doubling to 2 min; the schedule itself is
  // unit-tested on a virtual clock): a loaded machine may poll only after a
  // second failure.
  EXPECT_LE(failed.retry_after, std::chrono::minutes(2));
  EXPECT_TRUE(events_.Cluster(ns() + "/a"));

  // The user fixes the Secret: the Secret event starts a new attempt at
  // once and the waiter hears of its success.
  const size_t before = events_.ClusterCount(ns() + "/a");
  TimedGet("hv-silent", ClusterWaiter("a"));  // registers the waiter
  PutIdentity("hv-silent", harvester_kubeconfig_);
  EXPECT_TRUE(Eventually([&] { return events_.ClusterCount(ns() + "/a") > before; }, seconds(60)));
  auto fixed = WaitReady("hv-silent", ClusterWaiter("a"));
  ASSERT_NE(fixed, nullptr);
  EXPECT_NE(fixed, b);  // one connection per identity
}

TEST_F(HarvesterConnectionsTest, WrongKubeconfigReasons) {
  Object bad = {{"apiVersion", "v1"},
                {"kind", "Secret"},
                {"metadata", {{"name", "hv-empty"}, {"namespace", ns()}}},
                {"data", {{"other", kube::Base64Encode("x")}}}};
  ASSERT_TRUE(mgmt_->Create(kube::resources::kSecrets, ns(), bad).ok());
  ConnectionLookup l;
  EXPECT_TRUE(Eventually(
      [&] {
        l = TimedGet("hv-empty", ClusterWaiter("c"));
        return l.reason == "MalformedIdentitySecret";
      },
      seconds(30)))
      << l.reason;
  EXPECT_NE(l.message.find(ns() + "/hv-empty"), std::string::npos) << l.message;

  EXPECT_TRUE(Eventually(
      [&] {
        l = TimedGet("hv-missing", ClusterWaiter("c"));
        return l.reason == "IdentitySecretUnavailable";
      },
      seconds(30)))
      << l.reason;
  EXPECT_NE(l.message.find(ns() + "/hv-missing"), std::string::npos) << l.message;

  // A working kubeconfig of a cluster that is not Harvester.
  PutIdentity("hv-workload", ReadFile(Testbed::Get().KubeconfigPath(caphv::testing::kWorkload)));
  EXPECT_TRUE(Eventually(
      [&] {
        l = TimedGet("hv-workload", ClusterWaiter("c"));
        return l.reason == "NotHarvester";
      },
      seconds(30)))
      << l.reason;
}

TEST_F(HarvesterConnectionsTest, PvcDeletionWakesTheWaitingMachine) {
  PutIdentity("hv-identity", harvester_kubeconfig_);
  auto conn = WaitReady("hv-identity", ClusterWaiter("c"));
  ASSERT_NE(conn, nullptr);
  const std::string hv = HarvesterNamespace();
  Object pvc = {{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", "vm-disk-0-abc"}, {"namespace", hv}}},
                {"spec",
                 {{"accessModes", Object::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  auto created = harvester_->Create(kube::resources::kPersistentVolumeClaims, hv, pvc);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string key = hv + "/vm-disk-0-abc";
  ASSERT_TRUE(Eventually([&] { return conn->pvcs().Get(key) != nullptr; }, seconds(30)));
  auto cached = conn->pvcs().Get(key);
  EXPECT_FALSE(cached->contains("spec"));
  EXPECT_EQ(kube::UidOf(*cached), kube::UidOf(*created));

  conn->WaitForDeletion(key, {ns(), "m1"});
  EXPECT_FALSE(events_.Machine(ns() + "/m1"));
  ASSERT_TRUE(
      harvester_->Delete(kube::resources::kPersistentVolumeClaims, hv, "vm-disk-0-abc").ok());
  EXPECT_TRUE(Eventually([&] { return events_.Machine(ns() + "/m1"); }, seconds(60)));

  // Already gone: woken at once.
  conn->WaitForDeletion(key, {ns(), "m2"});
  EXPECT_TRUE(events_.Machine(ns() + "/m2"));
}

TEST_F(HarvesterConnectionsTest, ManagedSecretsMapToTheirOwners) {
  PutIdentity("hv-identity", harvester_kubeconfig_);
  auto conn = WaitReady("hv-identity", ClusterWaiter("c"));
  ASSERT_NE(conn, nullptr);
  const std::string hv = HarvesterNamespace();

  Object cloud_init = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata",
                        {{"name", "m3-cloud-init"},
                         {"namespace", hv},
                         {"labels", {{kManagedBy, "caphv"}}},
                         {"annotations", {{kOwner, ns() + "/m3"}}}}},
                       {"type", "Opaque"},
                       {"data", {{"userdata", kube::Base64Encode("#cloud-config\n")}}}};
  ASSERT_TRUE(harvester_->Create(kube::resources::kSecrets, hv, cloud_init).ok());
  EXPECT_TRUE(Eventually([&] { return events_.Machine(ns() + "/m3"); }, seconds(30)));
  auto cached = conn->secrets().Get(hv, "m3-cloud-init");
  ASSERT_NE(cached, nullptr);
  EXPECT_FALSE(cached->contains("data"));

  Object sa = {{"apiVersion", "v1"},
               {"kind", "ServiceAccount"},
               {"metadata", {{"name", "cloud-provider"}, {"namespace", hv}}}};
  ASSERT_TRUE(harvester_->Create(kube::resources::kServiceAccounts, hv, sa).ok());
  Object token = {
      {"apiVersion", "v1"},
      {"kind", "Secret"},
      {"metadata",
       {{"name", "cloud-provider-token"},
        {"namespace", hv},
        {"labels", {{kManagedBy, "caphv"}}},
        {"annotations",
         {{kOwner, ns() + "/c3"}, {"kubernetes.io/service-account.name", "cloud-provider"}}}}},
      {"type", "kubernetes.io/service-account-token"}};
  ASSERT_TRUE(harvester_->Create(kube::resources::kSecrets, hv, token).ok());
  EXPECT_TRUE(Eventually([&] { return events_.Cluster(ns() + "/c3"); }, seconds(30)));
  EXPECT_FALSE(events_.Machine(ns() + "/c3"));
  // The token controller fills the token in; the cache keeps it.
  EXPECT_TRUE(Eventually(
      [&] {
        auto t = conn->token_secrets().Get(hv, "cloud-provider-token");
        return t && t->contains("data") && (*t)["data"].contains("token");
      },
      seconds(60)));
}

// At a restart every machine asks for its connection and is woken once when
// it is ready (the pool's waiters); the objects its first lists find wake
// nobody more (they would bring each machine back once per VM, VMI and
// Secret), while later changes do. The connection is asked for by a cluster
// here, so that the machine's wakes can only come from the lists and the
// watch, not from the pool (which may wake a waiter more than once while a
// build and a rebuild for the identity Secret's arrival end).
TEST_F(HarvesterConnectionsTest, AFirstConnectionsListsWakeOnlyItsWaiters) {
  const std::string hv = HarvesterNamespace();
  Object cloud_init = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata",
                        {{"name", "m5-cloud-init"},
                         {"namespace", hv},
                         {"labels", {{kManagedBy, "caphv"}}},
                         {"annotations", {{kOwner, ns() + "/m5"}}}}},
                       {"type", "Opaque"},
                       {"data", {{"userdata", kube::Base64Encode("#cloud-config\n")}}}};
  ASSERT_TRUE(harvester_->Create(kube::resources::kSecrets, hv, cloud_init).ok());
  PutIdentity("hv-identity", harvester_kubeconfig_);
  auto first = connections_->Get(ns(), "hv-identity", ClusterWaiter("c5"));
  ASSERT_EQ(first.value, nullptr) << "a fresh connection is built in the background";
  EXPECT_TRUE(Eventually([&] { return events_.Cluster(ns() + "/c5"); }, seconds(60)))
      << "the waiter is woken when the connection is ready";
  auto conn = WaitReady("hv-identity", ClusterWaiter("c5"));
  ASSERT_NE(conn, nullptr);
  ASSERT_NE(conn->secrets().Get(hv, "m5-cloud-init"), nullptr) << "the first list cached it";
  const auto count = [&] {
    std::lock_guard lock(events_.mu);
    return std::count(events_.machine.begin(), events_.machine.end(), ns() + "/m5");
  };
  EXPECT_EQ(count(), 0) << "its Secret in the first list woke its machine";

  Object changed = {{"metadata", {{"labels", {{"changed", "yes"}}}}}};
  ASSERT_TRUE(
      harvester_
          ->Patch(kube::resources::kSecrets, hv, "m5-cloud-init", kube::PatchType::kMerge, changed)
          .ok());
  EXPECT_TRUE(Eventually([&] { return count() >= 1; }, seconds(30)))
      << "a change after the lists wakes its machine";
}

TEST_F(HarvesterConnectionsTest, DeletedIdentityKeepsTheConnectionAndSweepClosesIt) {
  PutIdentity("hv-identity", harvester_kubeconfig_);
  auto conn = WaitReady("hv-identity", ClusterWaiter("c"));
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(mgmt_->Delete(kube::resources::kSecrets, ns(), "hv-identity").ok());
  ASSERT_TRUE(Eventually([&] { return !secrets_->store().Get(ns(), "hv-identity"); }, seconds(30)));
  // Whatever the rebuild for the deleted Secret answers, the connection
  // stays (served while it runs, kept afterwards).
  for (int i = 0; i < 20; ++i) {
    auto l = TimedGet("hv-identity", ClusterWaiter("c"));
    ASSERT_EQ(l.value, conn) << l.reason << ": " << l.message;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  std::weak_ptr<Connection> weak = conn;
  conn.reset();
  connections_->Sweep([](const std::string&) { return false; });
  EXPECT_TRUE(Eventually([&] { return weak.expired(); }, seconds(30)));
  auto after = TimedGet("hv-identity", ClusterWaiter("c"));
  EXPECT_EQ(after.value, nullptr);  // built afresh, and the Secret is gone
}

}  // namespace
}  // namespace caphv::controllers
