// End-to-end drop-in check: the Go provider v0.2.9's own ClusterClass
// `harvester-rke2` (templates/clusterclass/rke2/clusterclass-harvester-rke2.yaml
// of its release archive, read from the archive at test time) works with
// CAPHV as it is: the same topology Cluster as topology_test.cc (one control
// plane, two workers, the class's variables) provisions — Machines running,
// Nodes initialised by CAPHV, the Cluster's endpoint the load balancer's
// address — and deleting it leaves nothing on Harvester, in the pools or in
// the workload cluster.
//
// Upstream's HarvesterClusterTemplate carries the placeholder endpoint
// 0.0.0.0:6443, which the Cluster API topology controller re-applies after
// CAPHV writes the load balancer's address. CAPHV runs with its webhooks, as
// installed: its mutating webhook keeps the address, so the Cluster can only
// ever copy the address and the HarvesterCluster's spec settles
// (docs/differences.md, "The control-plane endpoint").
//
// The archive: $CAPHV_GO_PROVIDER_SOURCE (the archive or its unpacked tree),
// else $CAPHV_THIRD_PARTY/, else ../shared/third_party/ next to the checkout;
// without it the test is skipped, saying so.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

namespace fs = std::filesystem;

constexpr char kArchive[] = "cluster-api-provider-harvester-v0.2.9.tar.gz";
constexpr char kTopDir[] = "cluster-api-provider-harvester-v0.2.9";
constexpr char kClassFile[] = "templates/clusterclass/rke2/clusterclass-harvester-rke2.yaml";
const GroupVersionResource kHarvesterClusterTemplates{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                                      "harvesterclustertemplates", true};

class TopologyUpstreamClassTest : public TopologyFixture {
 protected:
  TopologyUpstreamClassTest() { start_manager_ = false; }

  void TearDown() override {
    TopologyFixture::TearDown();
    if (!work_.empty()) fs::remove_all(work_);
  }

  // Upstream's ClusterClass file, unpacked from the archive into a work
  // folder of the bed; nullopt (and `looked_at` says where) when absent.
  std::optional<std::string> UpstreamClassFile(std::string* looked_at) {
    fs::path where;
    if (const char* env = std::getenv("CAPHV_GO_PROVIDER_SOURCE"); env && *env) {
      where = env;
    } else if (const char* dir = std::getenv("CAPHV_THIRD_PARTY"); dir && *dir) {
      where = fs::path(dir) / kArchive;
    } else {
      where = fs::path(caphv::testing::SourcePath("..")) / "shared" / "third_party" / kArchive;
    }
    *looked_at = where.string();
    if (fs::is_directory(where)) {
      for (const auto& root : {where / kTopDir, where}) {
        if (fs::is_regular_file(root / kClassFile)) return (root / kClassFile).string();
      }
      return std::nullopt;
    }
    if (!fs::is_regular_file(where)) return std::nullopt;
    work_ = Testbed::Get().dir() + "/work-" + ns();
    fs::create_directories(work_);
    std::string out;
    const std::string member = std::string(kTopDir) + "/" + kClassFile;
    if (caphv::testing::RunCommand(
            "tar -xzf '" + where.string() + "' -C '" + work_ + "' '" + member + "' 2>&1", &out) !=
        0) {
      ADD_FAILURE() << "cannot unpack " << member << " from " << where << ": " << out;
      return std::nullopt;
    }
    return work_ + "/" + member;
  }

  std::string work_;
};

TEST_F(TopologyUpstreamClassTest, GoProvidersClusterClassProvisionsAndIsDeleted) {
  std::string looked_at;
  const auto class_file = UpstreamClassFile(&looked_at);
  if (!class_file) {
    if (HasFailure()) return;
    GTEST_SKIP() << "the Go provider's archive (" << kArchive << ") is not at " << looked_at
                 << "; set CAPHV_GO_PROVIDER_SOURCE or CAPHV_THIRD_PARTY to run this test";
  }
  ASSERT_NO_FATAL_FAILURE(StartManagerWithWebhooks());
  ExpectCleanWorkload();
  const Pool pool = CreatePool(8);
  ApplyClusterClass(*class_file, "harvester-rke2");
  // It is upstream's class: its cluster template has the placeholder endpoint.
  auto hct = mgmt_->Get(kHarvesterClusterTemplates, ns(), "harvester-rke2-cluster");
  ASSERT_TRUE(hct.ok()) << hct.status().ToString();
  ASSERT_EQ(Str(*hct, "/spec/template/spec/controlPlaneEndpoint/host"), "0.0.0.0");
  CreateAddonConfigMap();
  CreateCluster(TopologyCluster(pool));

  // Provisioned: one server and two agents, each Node initialised.
  auto machines = WaitForInitialisedNodes(3);
  ASSERT_EQ(machines.size(), 3u);
  std::cout << "3 machines running, Nodes initialised after " << SecondsSinceStart() << " s\n";
  int control_planes = 0;
  for (const auto& m : machines) {
    control_planes += m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel);
    EXPECT_EQ(Str(m, "/spec/version"), kVersion);
  }
  EXPECT_EQ(control_planes, 1);

  // The endpoint: the load balancer's address on the Cluster, not the placeholder.
  const auto lbs = OnHarvester(kLoadBalancers);
  ASSERT_EQ(lbs.size(), 1u);
  const std::string address = Str(lbs[0], "/status/address");
  ASSERT_FALSE(address.empty()) << lbs[0].dump();
  Object c;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = mgmt_->Get(kClusters, ns(), cluster_);
        if (got.ok()) c = *got;
        return got.ok() && ConditionTrue(c, "ControlPlaneInitialized") &&
               Str(c, "/spec/controlPlaneEndpoint/host") == address;
      },
      kWait, kPoll))
      << "load balancer " << address << "; Cluster " << c.dump(2);
  EXPECT_EQ(c["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  const std::string hc_name = InfraClusterName();
  auto hc = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
  ASSERT_TRUE(hc.ok()) << hc.status().ToString();
  EXPECT_TRUE((*hc)["status"].value("ready", false)) << hc->dump();
  // The HarvesterCluster's spec keeps the address (the topology controller's
  // placeholder does not replace it) and settles.
  int64_t generation = -1;
  std::string spec_now;
  const bool settled = Eventually(
      [&] {
        auto before = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
        std::this_thread::sleep_for(std::chrono::seconds(3));
        auto after = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
        if (!before.ok() || !after.ok()) return false;
        generation = (*after)["metadata"].value("generation", int64_t{0});
        spec_now = (*after)["spec"].dump();
        return (*before)["metadata"].value("generation", int64_t{0}) == generation;
      },
      std::chrono::seconds(20), kPoll);
  EXPECT_TRUE(settled) << "the HarvesterCluster's spec is still rewritten (generation "
                       << generation << "): " << spec_now;
  // The topology controller did re-apply the placeholder, and the mutating
  // webhook kept the address.
  std::string patched;
  std::istringstream log(ManagerLog());
  for (std::string line; patched.empty() && std::getline(log, line);) {
    if (line.find("Admission patched") != std::string::npos) patched = line;
  }
  EXPECT_NE(patched.find("object=\"" + ns() + "/" + hc_name + "\""), std::string::npos)
      << (patched.empty() ? LastLines(ManagerLog(), 40) : patched);
  hc = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
  ASSERT_TRUE(hc.ok());
  EXPECT_EQ(Str(*hc, "/spec/controlPlaneEndpoint/host"), address) << hc->dump();
  EXPECT_TRUE((*hc)["status"].value("ready", false)) << hc->dump();
  EXPECT_TRUE(ConditionTrue(*hc, "LoadBalancerReady")) << hc->dump();
  // Every VM address from the pool; the class's ClusterClass patches reached CAPHV.
  for (const auto& hm : HarvesterMachines()) {
    EXPECT_TRUE(pool.Contains(hm["status"].value("allocatedIPAddress", ""))) << NameOf(hm);
  }
  EXPECT_EQ(EntriesOfThisTest().size(), 3u);
  EXPECT_EQ(Str(*hc, "/spec/targetNamespace"), target_ns_);
  EXPECT_TRUE(Eventually([&] {
    auto cm = mgmt_->Get(kube::resources::kConfigMaps, ns(), "cloud-config-addon-" + cluster_);
    return cm.ok() && (*cm)["data"].value(kAddonKey, "").find("cloud-config") != std::string::npos;
  })) << "no cloud-config in the addon ConfigMap";

  // Deleting the Cluster leaves nothing.
  ASSERT_EQ(CloudInitSecrets(), 3u);
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
}

}  // namespace
}  // namespace caphv::e2e::topology
