// End-to-end: caphv-manager restarted over ready machines writes nothing.
// A cluster of three running machines (a control plane by DHCP, two workers
// from a pool) is left to settle; the manager is
// killed and started again; once it has reconciled every object, nothing it
// owns has changed: not the HarvesterCluster, not a HarvesterMachine (their
// statuses would be rewritten unchanged otherwise), not a VM, cloud-init
// Secret or load balancer on Harvester, not a pool's allocations.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

using RestartTest = E2ETest;

// resourceVersion of each object CAPHV writes, by "<kind> <name>".
std::map<std::string, std::string> Versions(const std::vector<Object>& objects,
                                            const std::string& kind) {
  std::map<std::string, std::string> out;
  for (const auto& o : objects) {
    out[kind + " " + NameOf(o)] = o["metadata"].value("resourceVersion", "");
  }
  return out;
}

TEST_F(RestartTest, ARestartOverReadyMachinesWritesNothing) {
  // The control plane by DHCP, the workers from a pool of their own.
  const Pool pool = CreatePool(8);
  CreateCluster(HarvesterClusterSpec());
  CreateMachine(cluster_ + "-cp-0", true);
  Object worker = MachineSpec();
  worker["vmNetworkConfig"] = VmNetworkConfig({pool});
  CreateMachineDeployment(cluster_ + "-md", 2, worker);
  ASSERT_EQ(WaitForRunningMachines(3).size(), 3u) << MachinesSummary();

  std::map<std::string, Object> objects;
  auto snapshot = [&] {
    std::map<std::string, std::string> v;
    objects.clear();
    auto add = [&](const std::vector<Object>& list, const std::string& kind) {
      for (const auto& o : list) objects[kind + " " + NameOf(o)] = o;
      v.merge(Versions(list, kind));
    };
    add({HarvesterClusterObject()}, "HarvesterCluster");
    add(HarvesterMachines(), "HarvesterMachine");
    add(OnHarvester(kVirtualMachines), "VirtualMachine");
    add(OnHarvester(kube::resources::kSecrets), "Secret");
    add(OnHarvester(kLoadBalancers), "LoadBalancer");
    auto p = harvester_->Get(kIPPools, "", pool.name);
    if (p.ok()) v["IPPool allocated"] = (*p)["status"].value("allocated", Object::object()).dump();
    return v;
  };
  // Settled: nothing changes for 5 s (node initialisation, Cluster API's
  // copies, the simulator's status).
  std::map<std::string, std::string> before;
  ASSERT_TRUE(Eventually(
      [&] {
        before = snapshot();
        std::this_thread::sleep_for(std::chrono::seconds(5));
        return snapshot() == before;
      },
      kWait, kPoll))
      << "the cluster does not settle";
  const std::map<std::string, Object> objects_before = objects;

  KillManager();
  StartManager();
  // Every object reconciled at least once by the new manager.
  const std::string hm_total =
      "controller_runtime_reconcile_total{controller=\"harvestermachine\",result=\"success\"}";
  const std::string hc_total =
      "controller_runtime_reconcile_total{controller=\"harvestercluster\",result=\"success\"}";
  ASSERT_TRUE(Eventually([&] {
    return Metric(hm_total).value_or(0) >= 3 && Metric(hc_total).value_or(0) >= 1;
  })) << hm_total
      << " = " << Metric(hm_total).value_or(-1);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const auto after = snapshot();
  for (const auto& [key, version] : before) {
    const auto it = after.find(key);
    ASSERT_NE(it, after.end()) << key << " is gone";
    const auto was = objects_before.find(key);
    EXPECT_EQ(it->second, version)
        << key << " was written after the restart:\nbefore "
        << (was == objects_before.end() ? version : was->second.dump()) << "\nafter "
        << (objects.contains(key) ? objects[key].dump() : it->second);
  }
  EXPECT_EQ(after.size(), before.size());
}

}  // namespace
}  // namespace caphv::e2e
