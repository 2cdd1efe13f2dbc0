// End-to-end: failure domains. The simulated Harvester has three hosts in
// zones zone-a, zone-b and zone-c (config/harvester-sim/env/default.yaml).
// - Under Cluster API v1.11+ (the v1beta2 contract) the HarvesterCluster
//   publishes the three zones and Cluster API copies them to the Cluster.
//   Under v1.10 nothing is published (it would read the list as its v1beta1
//   map and stop reconciling the Cluster); a machine is then pinned by host
//   name.
// - A machine in a domain whose only host is cordoned waits: its VM is
//   unschedulable on Harvester, and the HarvesterMachine says so with the
//   scheduler's words and a Warning. Uncordoned, the VM lands on that host,
//   the machine runs and reports its failure domain.
// Three control planes spread over the three zones by the RKE2 control-plane
// provider are checked by the topology scenarios (ProvisionThreeServers).

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

const GroupVersionResource kHarvesterNodes{"", "v1", "nodes", false};
constexpr char kZoneCHost[] = "harvester-node-3";

class FailureDomainTest : public E2ETest {
 protected:
  void Cordon(bool on) {
    auto r =
        harvester_->Patch(kHarvesterNodes, "", kZoneCHost, kube::PatchType::kMerge,
                          {{"spec", {{"unschedulable", on ? Object(true) : Object(nullptr)}}}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  void TearDown() override {
    Cordon(false);
    E2ETest::TearDown();
  }
};

std::vector<std::string> DomainNames(const Object& o) {
  std::vector<std::string> out;
  const auto p = Object::json_pointer("/status/failureDomains");
  if (!o.contains(p) || !o[p].is_array()) return out;
  for (const auto& d : o[p]) out.push_back(d.value("name", ""));
  return out;
}

TEST_F(FailureDomainTest, AMachineWaitsForTheHostOfItsDomainAndRunsThere) {
  CreateCluster(HarvesterClusterSpec());
  const bool v1beta2 = CapiGeneration() != "1.10";
  const std::vector<std::string> zones = {"zone-a", "zone-b", "zone-c"};
  std::string domain = kZoneCHost;
  if (v1beta2) {
    domain = "zone-c";
    ASSERT_TRUE(
        Eventually([&] { return DomainNames(HarvesterClusterObject()) == zones; }, kWait, kPoll))
        << HarvesterClusterObject()["status"].dump();
    for (const auto& d : HarvesterClusterObject()["status"]["failureDomains"]) {
      EXPECT_EQ(d.value("controlPlane", false), true) << d.dump();
      EXPECT_EQ(d["attributes"].value("topologyKey", ""), "topology.kubernetes.io/zone");
    }
    // Cluster API copies them to the Cluster (read at v1beta2: a list).
    const GroupVersionResource clusters{"cluster.x-k8s.io", "v1beta2", "clusters", true};
    ASSERT_TRUE(Eventually(
        [&] {
          auto c = mgmt_->Get(clusters, ns(), cluster_);
          return c.ok() && DomainNames(*c) == zones;
        },
        kWait, kPoll));
  } else {
    WaitForClusterReady();
    EXPECT_TRUE(DomainNames(HarvesterClusterObject()).empty())
        << HarvesterClusterObject()["status"].dump();
  }

  ASSERT_NO_FATAL_FAILURE(Cordon(true));
  const std::string name = cluster_ + "-cp-0";
  CreateMachine(name, true, MachineSpec(), domain);
  Object condition;
  ASSERT_TRUE(Eventually(
      [&] {
        auto hm = HarvesterMachine(name);
        condition = hm ? ConditionOf(*hm, "VMProvisioningReady") : Object::object();
        return condition.value("reason", "") == "VMUnschedulable";
      },
      kWait, kPoll))
      << condition.dump() << "\n"
      << MachinesSummary();
  EXPECT_EQ(condition.value("message", ""),
            "no Harvester host can run the VM " + target_ns_ + "/" + name + " in failure domain " +
                domain +
                ": 0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match "
                "Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 "
                "Preemption is not helpful for scheduling.");
  EXPECT_TRUE(HasWarning(name, "VMUnschedulable"));
  auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  EXPECT_EQ((*vm)["status"].value("printableStatus", ""), "ErrorUnschedulable");

  // Back from maintenance: the VM lands on the host, in its domain.
  ASSERT_NO_FATAL_FAILURE(Cordon(false));
  const auto machines = WaitForRunningMachines(1);
  ASSERT_EQ(machines.size(), 1u) << MachinesSummary();
  auto vmi = harvester_->Get(kVirtualMachineInstances, target_ns_, name);
  ASSERT_TRUE(vmi.ok()) << vmi.status().ToString();
  EXPECT_EQ((*vmi)["status"].value("nodeName", ""), kZoneCHost);
  auto hm = HarvesterMachine(name);
  ASSERT_TRUE(hm);
  EXPECT_EQ((*hm)["status"].value("failureDomain", ""), domain);
  if (v1beta2) {
    // Cluster API v1.13+ mirrors it on the Machine.
    const GroupVersionResource machines_v1beta2{"cluster.x-k8s.io", "v1beta2", "machines", true};
    auto m = mgmt_->Get(machines_v1beta2, ns(), name);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ(Str(*m, "/status/failureDomain"), domain) << (*m)["status"].dump();
  }

  DeleteClusterAndWait();
  EXPECT_TRUE(OnHarvester(kVirtualMachines).empty());
}

}  // namespace
}  // namespace caphv::e2e
