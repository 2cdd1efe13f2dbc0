// End-to-end: a rolling Kubernetes upgrade of a Cluster of class
// harvester-rke2 (three servers, two workers), as the operations guide does
// it: `spec.topology.version` bumped. The topology controller upgrades the
// control plane first: one server at a time, the RKE2 control-plane
// provider adds a server of the new version (it joins etcd as a learner,
// then votes), moves etcd leadership off the old one and has RKE2 remove its
// member before the old VM goes; only then the MachineDeployment replaces
// the workers. The test looks at every step: never more than one extra
// server, no worker of the new version while a server of the old one is
// there, and etcd answers with a quorum of its voters. In the end every Node
// runs the new kubelet, etcd has three members (the new servers'), and
// nothing of the old machines is left on Harvester, in the pools or in the
// workload cluster.

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

inline constexpr char kNewVersion[] = "v1.31.5+rke2r1";

using TopologyUpgradeTest = TopologyFixture;

TEST_F(TopologyUpgradeTest, VersionBumpReplacesServersOneAtATimeThenWorkersKeepingQuorum) {
  Pool pool;
  std::vector<Object> before;
  ASSERT_NO_FATAL_FAILURE(ProvisionThreeServers(&pool, &before));
  EtcdView etcd;
  std::set<std::string> old_machines, old_vms, old_nodes;
  for (const auto& m : before) {
    old_machines.insert(NameOf(m));
    old_vms.insert(Str(m, "/spec/infrastructureRef/name"));
    old_nodes.insert(Str(m, "/status/nodeRef/name"));
  }
  std::cout << "5 machines at " << kVersion << " after " << SecondsSinceStart() << " s\n";

  // The upgrade.
  const Object patch = Object::array(
      {{{"op", "replace"}, {"path", "/spec/topology/version"}, {"value", kNewVersion}}});
  auto r = mgmt_->Patch(kClusters, ns(), cluster_, kube::PatchType::kJson, patch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();

  int looks = 0;
  size_t most_servers = 0;
  std::string lost, early_worker, done_why;
  ASSERT_TRUE(Eventually(
      [&] {
        ++looks;
        etcd = Etcd();
        if (!etcd.Quorum() && lost.empty()) lost = etcd.Describe();
        const auto machines = Machines();
        size_t servers = 0, new_version = 0;
        bool old_server = false, new_worker = false;
        for (const auto& m : machines) {
          const bool cp =
              m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel);
          const bool is_new = Str(m, "/spec/version") == kNewVersion;
          servers += cp;
          new_version += is_new;
          old_server |= cp && !is_new;
          new_worker |= !cp && is_new;
        }
        most_servers = std::max(most_servers, servers);
        if (old_server && new_worker && early_worker.empty()) early_worker = MachinesSummary();
        done_why = std::to_string(machines.size()) + " machines, " + std::to_string(new_version) +
                   " at " + kNewVersion + "; etcd " + etcd.Describe();
        for (const auto& m : machines) {
          if (old_machines.contains(NameOf(m))) return false;
        }
        return machines.size() == 5 && new_version == 5 && etcd.members.size() == 3 &&
               etcd.healthy_voters == 3;
      },
      std::chrono::seconds(420), kPoll))
      << done_why << "\n"
      << MachinesSummary();
  EXPECT_TRUE(lost.empty()) << "etcd lost quorum during the upgrade: " << lost;
  EXPECT_LE(most_servers, 4u) << "more than one extra server at a time";
  EXPECT_TRUE(early_worker.empty()) << "a worker of the new version while an old server ran:\n"
                                    << early_worker;
  std::cout << "upgraded to " << kNewVersion << " after " << SecondsSinceStart() << " s (" << looks
            << " looks, quorum kept)\n";

  // Every Node at the new version; etcd's members are the new servers'.
  const auto after = WaitForInitialisedNodes(5);
  ASSERT_EQ(after.size(), 5u);
  std::set<std::string> servers;
  for (const auto& m : after) {
    auto node = workload_->Get(kNodes, "", Str(m, "/status/nodeRef/name"));
    ASSERT_TRUE(node.ok()) << NameOf(m);
    EXPECT_EQ(Str(*node, "/status/nodeInfo/kubeletVersion"), kNewVersion) << NameOf(*node);
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      servers.insert(NameOf(*node));
    }
  }
  ASSERT_EQ(servers.size(), 3u);
  for (const auto& [member, learner] : etcd.members) {
    EXPECT_TRUE(servers.contains(member.substr(0, member.rfind('-'))))
        << member << " is no new server's: " << etcd.Describe();
  }
  // Nothing of the old machines: VMs, Nodes, disks, cloud-init Secrets, addresses.
  std::string left;
  EXPECT_TRUE(Eventually(
      [&] {
        left.clear();
        for (const auto& vm : old_vms) {
          if (!harvester_->Get(kVirtualMachines, target_ns_, vm).status().IsNotFound()) {
            left += " vm " + vm;
          }
          if (!EntriesOf(pool.name, vm).empty()) left += " pool entry of " + vm;
        }
        for (const auto& n : old_nodes) {
          if (!workload_->Get(kNodes, "", n).status().IsNotFound()) left += " node " + n;
        }
        if (NamesOnHarvester(kVirtualMachines).size() != 5) left += " VMs != 5";
        if (NamesOnHarvester(kPvcs).size() != 5) left += " PVCs != 5";
        if (CloudInitSecrets() != 5) left += " cloud-init Secrets != 5";
        if (EntriesOfThisTest().size() != 5) left += " pool entries != 5";
        return left.empty();
      },
      kWait, kPoll))
      << "left of the old machines:" << left;

  // Deleting the Cluster leaves nothing.
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
}

}  // namespace
}  // namespace caphv::e2e::topology
