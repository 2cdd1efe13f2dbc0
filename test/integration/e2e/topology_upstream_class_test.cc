// End-to-end drop-in check: the Go provider's own ClusterClass
// `harvester-rke2` (templates/clusterclass/rke2/clusterclass-harvester-rke2.yaml
// of its release archive, read from the archive at test time) works with
// CAPHV as it is, for both generations of its users:
// - v0.2.9's (HarvesterMachineTemplates at v1alpha1, the RKE2 providers at
//   v1beta1);
// - v0.10.1's (at v1beta1, the RKE2 providers at v1beta2, the cisProfile and
//   fipsRequired variables left at their defaults).
// The same topology Cluster as topology_test.cc (one control plane, two
// workers, the class's variables) provisions — Machines running, Nodes
// initialised by CAPHV, the Cluster's endpoint the load balancer's address —
// v0.10.1's then scales its workers to three, and deleting it leaves nothing
// on Harvester, in the pools or in the workload cluster. The class's RKE2
// refs are moved to the API the bed's RKE2 providers serve, as
// `caphv generate --rke2-api-version` does.
//
// Upstream's HarvesterClusterTemplate carries the placeholder endpoint
// 0.0.0.0:6443, which the Cluster API topology controller re-applies after
// CAPHV writes the load balancer's address. CAPHV runs with its webhooks, as
// installed: its mutating webhook keeps the address, so the Cluster can only
// ever copy the address and the HarvesterCluster's spec settles
// (docs/differences.md, "The control-plane endpoint").
//
// The archives: $CAPHV_GO_PROVIDER_SOURCE (v0.2.9's archive or its unpacked
// tree; v0.10.1's is looked for next to it), else $CAPHV_THIRD_PARTY/, else
// ../shared/third_party/ next to the checkout; without one the test is
// skipped, saying so.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

namespace fs = std::filesystem;

struct Release {
  const char* archive;
  const char* top_dir;
};
constexpr Release kV029{"cluster-api-provider-harvester-v0.2.9.tar.gz",
                        "cluster-api-provider-harvester-v0.2.9"};
constexpr Release kV0101{"cluster-api-provider-harvester-v0.10.1.tar.gz",
                         "cluster-api-provider-harvester-v0.10.1"};
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

  // Upstream's ClusterClass file of `release`, unpacked from the archive into
  // a work folder of the bed; nullopt (and `skip` says why) when absent.
  std::optional<std::string> UpstreamClassFile(const Release& release, std::string* skip) {
    fs::path where;
    const bool v029 = release.archive == kV029.archive;
    if (const char* env = std::getenv("CAPHV_GO_PROVIDER_SOURCE"); env && *env) {
      where = v029 ? fs::path(env) : fs::path(env).parent_path() / release.archive;
    } else if (const char* dir = std::getenv("CAPHV_THIRD_PARTY"); dir && *dir) {
      where = fs::path(dir) / release.archive;
    } else {
      where =
          fs::path(caphv::testing::SourcePath("..")) / "shared" / "third_party" / release.archive;
    }
    *skip = std::string("the Go provider's archive (") + release.archive + ") is not at " +
            where.string() + "; set CAPHV_GO_PROVIDER_SOURCE or CAPHV_THIRD_PARTY to run this test";
    if (fs::is_directory(where)) {
      for (const auto& root : {where / release.top_dir, where}) {
        if (fs::is_regular_file(root / kClassFile)) return (root / kClassFile).string();
      }
      return std::nullopt;
    }
    if (!fs::is_regular_file(where)) return std::nullopt;
    work_ = Testbed::Get().dir() + "/work-" + ns();
    fs::create_directories(work_);
    std::string out;
    const std::string member = std::string(release.top_dir) + "/" + kClassFile;
    if (caphv::testing::RunCommand(
            "tar -xzf '" + where.string() + "' -C '" + work_ + "' '" + member + "' 2>&1", &out) !=
        0) {
      ADD_FAILURE() << "cannot unpack " << member << " from " << where << ": " << out;
      return std::nullopt;
    }
    return work_ + "/" + member;
  }

  // Provisions the topology Cluster with `class_file`, checks it, scales its
  // workers to three when `scale`, deletes it.
  void ProvisionScaleAndDelete(const std::string& class_file, bool scale);

  std::string work_;
};

TEST_F(TopologyUpstreamClassTest, GoProvidersClusterClassProvisionsAndIsDeleted) {
  std::string skip;
  const auto class_file = UpstreamClassFile(kV029, &skip);
  if (!class_file) {
    if (!HasFailure()) GTEST_SKIP() << skip;
    return;
  }
  ProvisionScaleAndDelete(*class_file, false);
}

TEST_F(TopologyUpstreamClassTest, UpstreamV010ClusterClassProvisionsScalesAndIsDeleted) {
  std::string skip;
  const auto class_file = UpstreamClassFile(kV0101, &skip);
  if (!class_file) {
    if (!HasFailure()) GTEST_SKIP() << skip;
    return;
  }
  ProvisionScaleAndDelete(*class_file, true);
}

void TopologyUpstreamClassTest::ProvisionScaleAndDelete(const std::string& class_file, bool scale) {
  ASSERT_NO_FATAL_FAILURE(StartManagerWithWebhooks());
  ExpectCleanWorkload();
  const Pool pool = CreatePool(8);
  ApplyClusterClass(class_file, "harvester-rke2");
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

  size_t machine_count = 3;
  if (scale) {
    ScaleWorkers(3);
    machine_count = WaitForInitialisedNodes(4).size();
    ASSERT_EQ(machine_count, 4u);
    std::cout << "scaled to 3 workers after " << SecondsSinceStart() << " s\n";
  }

  // Deleting the Cluster leaves nothing.
  ASSERT_EQ(CloudInitSecrets(), machine_count);
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
}

}  // namespace
}  // namespace caphv::e2e::topology
