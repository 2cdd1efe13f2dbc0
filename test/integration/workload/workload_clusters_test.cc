// File: test/integration/workload/workload_clusters_test.cc
//
// WorkloadClusters against the test bed: `<cluster>-kubeconfig` Secrets on
// the management apiserver, the bed's workload apiserver as the workload
// cluster. Covered: nothing is built before the Secret exists and the waiter
// is woken when it appears; the Node informer announces Nodes (with the
// cache compacted) and their deletion; a metadata-only change of the Secret
// keeps the cluster, a changed kubeconfig rebuilds it, a broken one fails
// with MalformedKubeconfig; a cluster behind a slow apiserver is handed out
// only once its Nodes are listed.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "kube/base64.h"
#include "kube/config.h"
#include "support/fault_proxy.h"
#include "support/testbed.h"
#include "workload/workload_cluster.h"

namespace caphv::workload {
namespace {

using caphv::testing::Eventually;
using caphv::testing::Testbed;
using kube::Object;
using std::chrono::seconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Recorded {
  std::mutex mu;
  std::vector<std::string> woken;
  std::vector<std::tuple<std::string, std::string, std::string>> nodes;

  WorkloadCallbacks Callbacks() {
    WorkloadCallbacks cb;
    cb.wake = [this](const kube::Request& r) {
      std::lock_guard lock(mu);
      woken.push_back(r.Key());
    };
    cb.node_event = [this](const std::string& ns, const std::string& cluster,
                           const std::string& node) {
      std::lock_guard lock(mu);
      nodes.emplace_back(ns, cluster, node);
    };
    return cb;
  }
  size_t Woken(const std::string& key) {
    std::lock_guard lock(mu);
    return std::count(woken.begin(), woken.end(), key);
  }
  size_t NodeEvents(const std::string& ns, const std::string& cluster, const std::string& node) {
    std::lock_guard lock(mu);
    return std::count(nodes.begin(), nodes.end(), std::make_tuple(ns, cluster, node));
  }
};

class WorkloadClustersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto& bed = Testbed::Get();
    mgmt_ = bed.Client(caphv::testing::kMgmt);
    workload_ = bed.Client(caphv::testing::kWorkload);
    ns_ = std::make_unique<caphv::testing::ScopedNamespace>(mgmt_, "wl");
    kubeconfig_ = ReadFile(bed.KubeconfigPath(caphv::testing::kWorkload));
    cluster_ = caphv::testing::UniqueName("wl");
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
    clusters_ = std::make_unique<WorkloadClusters>(mgmt_, secrets_, recorded_.Callbacks());
  }

  void TearDown() override {
    clusters_->Stop();
    clusters_.reset();
    secrets_->Stop();
    for (const auto& n : nodes_) workload_->Delete(kube::resources::kNodes, "", n).IgnoreError();
  }

  const std::string& ns() const { return ns_->name(); }

  void PutKubeconfig(const std::string& value, const Object& labels = Object::object()) {
    Object s = {
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"metadata", {{"name", cluster_ + "-kubeconfig"}, {"namespace", ns()}, {"labels", labels}}},
        {"type", "cluster.x-k8s.io/secret"},
        {"data", {{"value", kube::Base64Encode(value)}}}};
    auto r = mgmt_->Apply(kube::resources::kSecrets, ns(), s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  WorkloadLookup TimedGet(const kube::Request& waiter) {
    const auto start = std::chrono::steady_clock::now();
    auto l = clusters_->Get(ns(), cluster_, waiter);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500))
        << "Get blocked";
    return l;
  }

  std::shared_ptr<WorkloadCluster> WaitBuilt(const kube::Request& waiter) {
    std::shared_ptr<WorkloadCluster> wc;
    EXPECT_TRUE(Eventually(
        [&] {
          wc = TimedGet(waiter).value;
          return wc != nullptr;
        },
        seconds(60)));
    return wc;
  }

  std::string CreateNode() {
    const std::string name = caphv::testing::UniqueName("wl-node");
    Object node = {{"apiVersion", "v1"},
                   {"kind", "Node"},
                   {"metadata", {{"name", name}}},
                   {"spec", {{"providerID", "harvester://" + name}}}};
    auto r = workload_->Create(kube::resources::kNodes, "", node);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    nodes_.push_back(name);
    Object status = {
        {"status",
         {{"images",
           Object::array({{{"names", Object::array({"registry/big:1"})}, {"sizeBytes", 1000}}})},
          {"nodeInfo", {{"kubeletVersion", "v1.33.0"}}},
          {"addresses", Object::array({{{"type", "InternalIP"}, {"address", "10.9.9.9"}}})}}}};
    auto p = workload_->Patch(kube::resources::kNodes, "", name, kube::PatchType::kMerge, status,
                              {.subresource = "status"});
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    if (p.ok()) last_version_ = kube::ResourceVersionOf(*p);
    return name;
  }

  std::shared_ptr<kube::Client> mgmt_, workload_;
  std::unique_ptr<caphv::testing::ScopedNamespace> ns_;
  std::string kubeconfig_, cluster_;
  std::vector<std::string> nodes_;
  std::string last_version_;  // of the last Node CreateNode wrote
  std::shared_ptr<kube::Informer> secrets_;
  Recorded recorded_;
  std::unique_ptr<WorkloadClusters> clusters_;
};

TEST_F(WorkloadClustersTest, WaitsForTheSecretThenWatchesNodes) {
  const kube::Request m1{ns(), "m1"};
  auto none = TimedGet(m1);
  EXPECT_EQ(none.value, nullptr);
  EXPECT_EQ(none.reason, "KubeconfigSecretUnavailable");
  EXPECT_NE(none.message.find(ns() + "/" + cluster_ + "-kubeconfig"), std::string::npos)
      << none.message;

  PutKubeconfig(kubeconfig_);
  EXPECT_TRUE(Eventually([&] { return recorded_.Woken(m1.Key()) > 0; }, seconds(30)));
  auto wc = WaitBuilt(m1);
  ASSERT_NE(wc, nullptr);
  EXPECT_EQ(wc->server(), Testbed::Get().Config(caphv::testing::kWorkload).server);
  ASSERT_TRUE(wc->WaitForSync(std::chrono::seconds(30)));

  const std::string node = CreateNode();
  EXPECT_TRUE(
      Eventually([&] { return recorded_.NodeEvents(ns(), cluster_, node) > 0; }, seconds(30)));
  kube::ObjectPtr cached;
  EXPECT_TRUE(Eventually(
      [&] {
        cached = wc->nodes().Get("", node);
        // The status patch's version: the cache has seen both writes.
        return cached && kube::ResourceVersionOf(*cached) == last_version_;
      },
      seconds(30)));
  ASSERT_NE(cached, nullptr);
  // The cache keeps what CAPHV reads of a Node (NodeFields()), not its status.
  EXPECT_EQ((*cached)["spec"]["providerID"], "harvester://" + node);
  EXPECT_FALSE(cached->contains("status"));

  const size_t before = recorded_.NodeEvents(ns(), cluster_, node);
  ASSERT_TRUE(workload_->Delete(kube::resources::kNodes, "", node).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        return recorded_.NodeEvents(ns(), cluster_, node) > before && !wc->nodes().Get("", node);
      },
      seconds(30)));
}

TEST_F(WorkloadClustersTest, OnlyNewKubeconfigBytesRebuild) {
  const kube::Request m1{ns(), "m1"};
  PutKubeconfig(kubeconfig_);
  auto wc = WaitBuilt(m1);
  ASSERT_NE(wc, nullptr);

  // A label: same bytes, same cluster.
  PutKubeconfig(kubeconfig_, {{"touched", "yes"}});
  ASSERT_TRUE(Eventually(
      [&] {
        auto s = secrets_->store().Get(ns(), cluster_ + "-kubeconfig");
        return s && (*s)["metadata"].value("labels", Object::object()).contains("touched");
      },
      seconds(30)));
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(TimedGet(m1).value, wc);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  // New bytes (same server): a new cluster object.
  PutKubeconfig(kubeconfig_ + "\n# rotated\n");
  std::shared_ptr<WorkloadCluster> rebuilt;
  EXPECT_TRUE(Eventually(
      [&] {
        rebuilt = TimedGet(m1).value;
        return rebuilt && rebuilt != wc;
      },
      seconds(30)));

  // Broken bytes: the failure is reported (the old cluster is dropped).
  PutKubeconfig("not: [a kubeconfig");
  WorkloadLookup l;
  EXPECT_TRUE(Eventually(
      [&] {
        l = TimedGet(m1);
        return l.reason == "MalformedKubeconfig";
      },
      seconds(30)))
      << l.reason << ": " << l.message;
  EXPECT_EQ(l.value, nullptr);
  EXPECT_NE(l.message.find(cluster_ + "-kubeconfig"), std::string::npos) << l.message;
}

TEST_F(WorkloadClustersTest, ASlowApiserverIsAnsweredOnlyOnceItsNodesAreListed) {
  // Every request to the workload apiserver answered 2 s late: a cluster
  // handed out before its Node list arrived would read "no Node" for a
  // Node that exists.
  const std::string node = CreateNode();
  const kube::RestConfig config = Testbed::Get().Config(caphv::testing::kWorkload);
  caphv::testing::FaultProxy slow(config.server, config.ca_pem,
                                  {.slow = 1.0, .slow_delay = std::chrono::seconds(2)});
  ASSERT_TRUE(slow.Start().ok());
  PutKubeconfig(slow.Kubeconfig(config.token));

  const kube::Request m1{ns(), "m1"};
  std::shared_ptr<WorkloadCluster> wc;
  bool handed_out_unlisted = false;
  EXPECT_TRUE(Eventually(
      [&] {
        wc = TimedGet(m1).value;
        if (wc != nullptr && wc->nodes().Get("", node) == nullptr) handed_out_unlisted = true;
        return wc != nullptr;
      },
      seconds(60)));
  ASSERT_NE(wc, nullptr);
  EXPECT_EQ(wc->server(), slow.url());
  EXPECT_FALSE(handed_out_unlisted) << "a cluster was handed out before its Nodes were listed";
  EXPECT_GE(slow.counts().slow, 1U);
}

}  // namespace
}  // namespace caphv::workload
