// End-to-end: the cluster flow of the user guides. The user applies the
// ClusterClass `harvester-rke2` (templates/clusterclass-harvester-rke2.yaml)
// in a namespace and a Cluster with `spec.topology` (class harvester-rke2, one
// control plane, a MachineDeployment of two workers, the class's variables);
// the Cluster API topology controller, the real RKE2 bootstrap and
// control-plane providers, caphv-manager and the simulated Harvester (which
// plays RKE2 on each VM) provision it. Then the workers are scaled through
// the topology 2 -> 4 -> 2 and the Cluster is deleted: nothing is left on
// Harvester nor in the pools.
//
// The workload API: the control-plane endpoint is an address the simulated
// kube-vip hands out, not reachable here, so the test brings its own
// `<cluster>-kubeconfig` (the bed's workload apiserver, written by the
// fixture before the Cluster exists), as users who bring their own
// kubeconfig do. The RKE2 control-plane provider then generates no
// kubeconfig and leaves this one alone (it is not controlled by the
// RKE2ControlPlane); Cluster API and the provider reach the workload cluster
// through it. docs/testbed.md ("The RKE2 providers and the workload API").

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using TopologyTest = TopologyFixture;

TEST_F(TopologyTest, ClusterOfClassHarvesterRke2ProvisionsScalesAndIsDeleted) {
  const auto start = std::chrono::steady_clock::now();
  auto seconds_since_start = [&] {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                            start)
        .count();
  };
  // The bed's workload apiserver stands for the new cluster's: no RKE2 of an
  // earlier guest cluster left in it (its rke2-serving goes with its last
  // server Node), or the control plane would count as initialised at once.
  EXPECT_TRUE(Eventually([&] { return !ServingSecretExists(); }, kWait, kPoll))
      << "kube-system/rke2-serving of an earlier cluster is still in the workload cluster";
  const Pool pool = CreatePool(8);
  ApplyClusterClass();
  CreateAddonConfigMap();
  // The Cluster webhook checks the variables against the reconciled class.
  const Object cluster = TopologyCluster(pool);
  std::string refused;
  ASSERT_TRUE(Eventually(
      [&] {
        auto r = mgmt_->Create(kClusters, ns(), cluster);
        if (!r.ok()) refused = r.status().ToString();
        return r.ok();
      },
      std::chrono::seconds(30), kPoll))
      << refused;

  // Provisioned: one server and two agents, each Node initialised.
  auto machines = WaitForInitialisedNodes(3);
  ASSERT_EQ(machines.size(), 3u);
  std::cout << "3 machines running, Nodes initialised after " << seconds_since_start() << " s\n";
  int control_planes = 0;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      ++control_planes;
      EXPECT_EQ(Str(m, "/spec/bootstrap/configRef/kind"), "RKE2Config");
    }
    EXPECT_EQ(Str(m, "/spec/version"), kVersion);
    EXPECT_EQ(Str(m, "/spec/infrastructureRef/kind"), "HarvesterMachine");
  }
  EXPECT_EQ(control_planes, 1);

  // The Cluster: control plane initialised (the RKE2 provider saw
  // rke2-serving), its endpoint the load balancer's address.
  Object c;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = mgmt_->Get(kClusters, ns(), cluster_);
        if (got.ok()) c = *got;
        return got.ok() && ConditionTrue(c, "ControlPlaneInitialized") &&
               !Str(c, "/spec/controlPlaneEndpoint/host").empty();
      },
      kWait, kPoll))
      << c.dump(2);
  const std::string hc_name = InfraClusterName();
  ASSERT_FALSE(hc_name.empty());
  auto hc = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
  ASSERT_TRUE(hc.ok()) << hc.status().ToString();
  EXPECT_TRUE((*hc)["status"].value("ready", false)) << hc->dump();
  const auto lbs = OnHarvester(kLoadBalancers);
  ASSERT_EQ(lbs.size(), 1u);
  const std::string address = Str(lbs[0], "/status/address");
  EXPECT_FALSE(address.empty()) << lbs[0].dump();
  EXPECT_EQ(Str(*hc, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_EQ(Str(c, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_EQ(c["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  // ... and stays so: nobody writes another endpoint into the
  // HarvesterCluster's spec (its generation does not move).
  const int64_t generation = (*hc)["metadata"].value("generation", int64_t{0});
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto now = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
    ASSERT_TRUE(now.ok());
    ASSERT_EQ(Str(*now, "/spec/controlPlaneEndpoint/host"), address)
        << "after " << i * 250 << " ms";
    ASSERT_EQ((*now)["metadata"].value("generation", int64_t{0}), generation)
        << "the HarvesterCluster's spec was written again: " << (*now)["spec"].dump();
  }
  auto rcp = mgmt_->Get(kControlPlanes, ns(), Str(c, "/spec/controlPlaneRef/name"));
  ASSERT_TRUE(rcp.ok()) << rcp.status().ToString();
  EXPECT_TRUE((*rcp)["status"].value("initialized", false)) << (*rcp)["status"].dump();

  // The workload API: the kubeconfig the test brought is still the one in
  // use, not replaced nor adopted by the control-plane provider.
  auto kubeconfig = mgmt_->Get(kSecrets, ns(), cluster_ + "-kubeconfig");
  ASSERT_TRUE(kubeconfig.ok());
  EXPECT_FALSE(kubeconfig->at("metadata").contains("ownerReferences"))
      << kubeconfig->at("metadata").dump();
  EXPECT_EQ(kube::Base64Decode(Str(*kubeconfig, "/data/value")).value_or(""),
            ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kWorkload)));
  // The provider's own CA and join token exist: RKE2 on the servers uses them.
  EXPECT_TRUE(mgmt_->Get(kSecrets, ns(), cluster_ + "-ca").ok());
  EXPECT_TRUE(mgmt_->Get(kSecrets, ns(), cluster_ + "-token").ok());

  // Every VM address from the pool.
  for (const auto& hm : HarvesterMachines()) {
    EXPECT_TRUE(pool.Contains(hm["status"].value("allocatedIPAddress", ""))) << NameOf(hm);
  }
  EXPECT_EQ(EntriesOfThisTest().size(), 3u);

  // CAPHV wrote the Harvester credentials into the addon ConfigMap.
  EXPECT_TRUE(Eventually([&] {
    auto cm = mgmt_->Get(kube::resources::kConfigMaps, ns(), "cloud-config-addon-" + cluster_);
    return cm.ok() && (*cm)["data"].value(kAddonKey, "").find("cloud-config") != std::string::npos;
  })) << "no cloud-config in the addon ConfigMap";

  // Workers through the topology: 2 -> 4.
  ScaleWorkers(4);
  machines = WaitForInitialisedNodes(5);
  ASSERT_EQ(machines.size(), 5u);
  EXPECT_EQ(EntriesOfThisTest().size(), 5u);
  std::cout << "scaled to 4 workers after " << seconds_since_start() << " s\n";

  // 4 -> 2: the removed machines leave nothing behind.
  ScaleWorkers(2);
  std::set<std::string> kept_nodes;
  ASSERT_TRUE(Eventually(
      [&] {
        return Machines().size() == 3 && HarvesterMachines().size() == 3 &&
               NamesOnHarvester(kVirtualMachines).size() == 3 &&
               NamesOnHarvester(kPvcs).size() == 3 && CloudInitSecrets() == 3 &&
               EntriesOfThisTest().size() == 3;
      },
      kWait, kPoll))
      << MachinesSummary();
  machines = WaitForInitialisedNodes(3);
  ASSERT_EQ(machines.size(), 3u);
  for (const auto& m : machines) kept_nodes.insert(Str(m, "/status/nodeRef/name"));
  std::string extra_nodes;
  EXPECT_TRUE(Eventually(
      [&] {
        extra_nodes.clear();
        auto nodes = workload_->List(kNodes, "");
        if (!nodes.ok()) return false;
        for (const auto& n : nodes->items) {
          // A Node of this cluster's VMs (named after them) no Machine keeps.
          const std::string name = NameOf(n);
          if (name.rfind(cluster_ + "-", 0) == 0 && kept_nodes.count(name) == 0) {
            extra_nodes += " " + name;
          }
        }
        return extra_nodes.empty();
      },
      kWait, kPoll))
      << "Nodes of removed machines left:" << extra_nodes;
  std::cout << "scaled back to 2 workers after " << seconds_since_start() << " s\n";

  // Deleting the Cluster leaves nothing on Harvester nor in the pools; all
  // of it existed, so "gone" below means deleted.
  ASSERT_EQ(OnHarvester(kLoadBalancers).size(), 1u);
  ASSERT_FALSE(OnHarvester(kServiceAccounts, ClusterSelector()).empty());
  ASSERT_FALSE(OnHarvester(kSecrets, ClusterSelector()).empty());
  ASSERT_EQ(CloudInitSecrets(), 3u);
  ASSERT_TRUE(ServingSecretExists());
  ASSERT_TRUE(mgmt_->Delete(kClusters, ns(), cluster_).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
               mgmt_->Get(kHarvesterClusters, ns(), hc_name).status().IsNotFound() &&
               HarvesterMachines().empty() && Machines().empty();
      },
      kWait, kPoll))
      << MachinesSummary();
  std::string left;
  EXPECT_TRUE(Eventually(
      [&] {
        left = LeftOnHarvester();
        return left.empty();
      },
      kWait, kPoll))
      << "left on Harvester:" << left;
  // Nor in the workload cluster: its Nodes, and RKE2's state with them.
  EXPECT_TRUE(Eventually(
      [&] {
        auto nodes = workload_->List(kNodes, "");
        if (!nodes.ok()) return false;
        for (const auto& n : nodes->items) {
          if (NameOf(n).rfind(cluster_ + "-", 0) == 0) return false;
        }
        return !ServingSecretExists();
      },
      kWait, kPoll))
      << "Nodes of the cluster or kube-system/rke2-serving left in the workload cluster";
  std::cout << "deleted, nothing left, after " << seconds_since_start() << " s\n";
}

}  // namespace
}  // namespace caphv::e2e::topology
