// End-to-end: remediation of a dead worker by Cluster API's MachineHealthCheck,
// as the operations guide sets it up. A Cluster of class harvester-rke2 (one
// control plane, two workers) runs; the user applies
// templates/machinehealthcheck-harvester-rke2.yaml rendered by `clusterctl
// generate yaml` (the unhealthy timeout shortened to 10 s). One worker's VM
// dies (the simulator's power cut, `sim.caphv.io/dead`): its kubelet stops,
// and the real node lifecycle controller, which this test runs against the
// workload apiserver (the bed runs none), marks its Node Ready=Unknown.
//
// With the guide's maxUnhealthy of 34 %, two workers allow no remediation
// (34 % of 2 rounds down to 0): the check says TooManyUnhealthy and the
// Machine stays. With MHC_MAX_UNHEALTHY=1 the MachineHealthCheck marks the
// Machine, its MachineSet deletes it, CAPHV deletes its VM, disks and
// cloud-init Secret and releases its address, and a new Machine runs with an
// initialised Node. Nothing is left over, neither then nor after the Cluster
// is deleted.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

const GroupVersionResource kMachineHealthChecks{"cluster.x-k8s.io", "v1beta1",
                                                "machinehealthchecks", true};

class TopologyRemediationTest : public TopologyFixture {
 protected:
  void TearDown() override {
    if (node_lifecycle_) node_lifecycle_->Stop(SIGTERM);
    node_lifecycle_.reset();
    TopologyFixture::TearDown();
    if (!work_.empty()) std::filesystem::remove_all(work_);
  }

  // The real node lifecycle controller against the workload apiserver: a
  // Node whose Lease is not renewed for 20 s turns Ready=Unknown.
  void StartNodeLifecycleController() {
    auto& bed = Testbed::Get();
    const std::string kcm = bed.EnvValue("KCM_BIN");
    ASSERT_FALSE(kcm.empty()) << "no KCM_BIN in " << bed.dir() << "/env";
    node_lifecycle_ = std::make_unique<caphv::testing::ChildProcess>(
        std::vector<std::string>{kcm,
                                 "--kubeconfig=" + bed.KubeconfigPath(caphv::testing::kWorkload),
                                 "--controllers=node-lifecycle-controller", "--leader-elect=false",
                                 "--bind-address=127.0.0.1", "--secure-port=0",
                                 "--node-monitor-period=1s", "--node-monitor-grace-period=20s"},
        bed.dir() + "/logs/kcm-node-lifecycle-" + ns() + ".log");
    ASSERT_TRUE(node_lifecycle_->started());
  }

  // templates/machinehealthcheck-harvester-rke2.yaml rendered by the bed's
  // clusterctl (`generate yaml`, with `vars` besides NAMESPACE and
  // CLUSTER_NAME), then `kubectl apply`.
  void ApplyHealthChecks(const std::map<std::string, std::string>& vars) {
    if (work_.empty()) {
      work_ = Testbed::Get().dir() + "/work-" + ns();
      std::filesystem::create_directories(work_);
      std::ofstream(work_ + "/clusterctl.yaml") << "{}\n";
    }
    std::string env =
        "CLUSTERCTL_DISABLE_VERSIONCHECK=true NAMESPACE=" + ns() + " CLUSTER_NAME=" + cluster_;
    for (const auto& [k, v] : vars) env += " " + k + "='" + v + "'";
    const std::string rendered = work_ + "/mhc.yaml";
    std::string out;
    ASSERT_EQ(
        caphv::testing::RunCommand(
            "env " + env + " clusterctl --config " + work_ +
                "/clusterctl.yaml generate yaml --from " +
                caphv::testing::SourcePath("templates/machinehealthcheck-harvester-rke2.yaml") +
                " > " + rendered + " 2>" + work_ + "/clusterctl.err || { cat " + work_ +
                "/clusterctl.err; exit 1; }",
            &out),
        0)
        << out;
    ASSERT_EQ(caphv::testing::RunCommand("kubectl --kubeconfig '" +
                                             Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) +
                                             "' apply -f " + rendered + " 2>&1",
                                         &out),
              0)
        << out;
  }

  Object HealthCheck(const std::string& suffix) const {
    auto got = mgmt_->Get(kMachineHealthChecks, ns(), cluster_ + "-" + suffix);
    return got.ok() ? *got : Object::object();
  }

  // "expected/healthy" of a MachineHealthCheck's status.
  static std::string Counts(const Object& mhc) {
    const Object status = mhc.value("status", Object::object());
    return std::to_string(status.value("expectedMachines", -1)) + "/" +
           std::to_string(status.value("currentHealthy", -1));
  }

  std::optional<Object> MachineNamed(const std::string& name) const {
    auto got = mgmt_->Get(kMachines, ns(), name);
    return got.ok() ? std::optional<Object>(*got) : std::nullopt;
  }

  std::string work_;
  std::unique_ptr<caphv::testing::ChildProcess> node_lifecycle_;
};

TEST_F(TopologyRemediationTest, DeadWorkerIsReplacedAndLeavesNothing) {
  Pool pool;
  std::vector<Object> machines;
  ASSERT_NO_FATAL_FAILURE(ProvisionCluster(&pool, &machines));
  std::cout << "3 machines running, Nodes initialised after " << SecondsSinceStart() << " s\n";

  StartNodeLifecycleController();
  ApplyHealthChecks({{"MHC_UNHEALTHY_TIMEOUT", "10s"}});
  // The guide's settings, and each check watches its own machines.
  Object workers_mhc, cp_mhc;
  ASSERT_TRUE(Eventually(
      [&] {
        workers_mhc = HealthCheck("workers");
        cp_mhc = HealthCheck("control-plane");
        return Counts(workers_mhc) == "2/2" && Counts(cp_mhc) == "1/1";
      },
      kWait, kPoll))
      << workers_mhc.dump(2) << "\n"
      << cp_mhc.dump(2);
  EXPECT_EQ(workers_mhc["spec"].value("maxUnhealthy", Object()), "34%");
  EXPECT_EQ(workers_mhc["spec"].value("nodeStartupTimeout", ""), "20m0s");
  std::set<std::string> worker_names, cp_names;
  for (const auto& m : machines) {
    (m["metadata"]["labels"].contains(kControlPlaneLabel) ? cp_names : worker_names)
        .insert(NameOf(m));
  }
  auto targets = [](const Object& mhc) {
    std::set<std::string> t;
    for (const auto& n : mhc["status"].value("targets", Object::array())) t.insert(n);
    return t;
  };
  EXPECT_EQ(targets(workers_mhc), worker_names);
  EXPECT_EQ(targets(cp_mhc), cp_names);

  // The victim: a worker, its VM, the VM's disks and cloud-init Secret, its address.
  const Object victim = *std::find_if(machines.begin(), machines.end(), [&](const Object& m) {
    return worker_names.count(NameOf(m)) > 0;
  });
  const std::string victim_name = NameOf(victim);
  const std::string hm_name = Str(victim, "/spec/infrastructureRef/name");
  const std::string node_name = Str(victim, "/status/nodeRef/name");
  auto vm = harvester_->Get(kVirtualMachines, target_ns_, hm_name);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  ASSERT_EQ(Str(victim, "/spec/providerID"), "harvester://" + kube::UidOf(*vm));
  std::vector<std::string> pvcs, secrets;
  for (const auto& v : (*vm)["spec"]["template"]["spec"].value("volumes", Object::array())) {
    if (const std::string c = Str(v, "/persistentVolumeClaim/claimName"); !c.empty()) {
      pvcs.push_back(c);
    }
    for (const char* ref :
         {"/cloudInitNoCloud/secretRef/name", "/cloudInitNoCloud/networkDataSecretRef/name"}) {
      if (const std::string s = Str(v, ref); !s.empty()) secrets.push_back(s);
    }
  }
  ASSERT_FALSE(pvcs.empty()) << vm->dump();
  ASSERT_FALSE(secrets.empty()) << vm->dump();
  for (const auto& p : pvcs) ASSERT_TRUE(harvester_->Get(kPvcs, target_ns_, p).ok()) << p;
  ASSERT_EQ(EntriesOf(pool.name, hm_name).size(), 1u);

  // The power cut.
  auto p = harvester_->Patch(kVirtualMachines, target_ns_, hm_name, kube::PatchType::kMerge,
                             {{"metadata", {{"annotations", {{"sim.caphv.io/dead", "true"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  const auto killed_at = std::chrono::steady_clock::now();
  Object node;
  ASSERT_TRUE(Eventually(
      [&] {
        auto got = workload_->Get(kNodes, "", node_name);
        if (!got.ok()) return false;
        node = *got;
        return ConditionOf(node, "Ready").value("status", "") == "Unknown";
      },
      std::chrono::seconds(90), kPoll))
      << node.dump(2);
  std::cout << "Node " << node_name << " Unknown "
            << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                killed_at)
                   .count()
            << " s after the power cut\n";

  // 34 % of two workers is no machine: unhealthy, but not remediated.
  ASSERT_TRUE(Eventually(
      [&] {
        workers_mhc = HealthCheck("workers");
        const Object allowed = ConditionOf(workers_mhc, "RemediationAllowed");
        return Counts(workers_mhc) == "2/1" && allowed.value("status", "") == "False" &&
               allowed.value("reason", "") == "TooManyUnhealthy";
      },
      std::chrono::seconds(60), kPoll))
      << workers_mhc.dump(2);
  EXPECT_EQ(workers_mhc["status"].value("remediationsAllowed", 0), 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  auto held = MachineNamed(victim_name);
  ASSERT_TRUE(held.has_value()) << "the Machine was deleted although remediation is not allowed";
  EXPECT_FALSE(IsDeleting(*held));
  EXPECT_TRUE(ConditionOf(*held, "OwnerRemediated").empty()) << held->dump();
  EXPECT_TRUE(harvester_->Get(kVirtualMachines, target_ns_, hm_name).ok());

  // One remediation at a time is allowed: the Machine is marked, deleted and replaced.
  ApplyHealthChecks({{"MHC_UNHEALTHY_TIMEOUT", "10s"}, {"MHC_MAX_UNHEALTHY", "1"}});
  const auto allowed_at = std::chrono::steady_clock::now();
  Object marked;
  ASSERT_TRUE(Eventually(
      [&] {
        auto m = MachineNamed(victim_name);
        if (m && !ConditionOf(*m, "OwnerRemediated").empty()) marked = *m;
        return !marked.empty() || !m;
      },
      std::chrono::seconds(60), std::chrono::milliseconds(100)))
      << MachinesSummary();
  EXPECT_FALSE(marked.empty()) << "the Machine went without being seen marked OwnerRemediated";
  if (!marked.empty()) {
    EXPECT_EQ(ConditionOf(marked, "HealthCheckSucceeded").value("status", ""), "False")
        << marked["status"].dump();
    EXPECT_EQ(ConditionOf(marked, "HealthCheckSucceeded").value("reason", ""), "UnhealthyNode");
    // False as the check marks it; the MachineSet may have set it True
    // (remediating) within the same poll interval.
    const std::string owner = ConditionOf(marked, "OwnerRemediated").value("status", "");
    EXPECT_TRUE(owner == "False" || owner == "True") << marked["status"].dump();
  }
  std::string reasons;
  EXPECT_TRUE(Eventually(
      [&] {
        reasons.clear();
        for (const auto& e : EventsOf(victim_name)) reasons += " " + e.value("reason", "");
        return reasons.find("MachineMarkedUnhealthy") != std::string::npos;
      },
      std::chrono::seconds(20), kPoll))
      << "events about " << victim_name << ":" << reasons;

  // CAPI deletes the Machine, CAPHV its VM, disks, cloud-init Secret and address;
  // Cluster API its Node.
  std::string left;
  ASSERT_TRUE(Eventually(
      [&] {
        left.clear();
        if (MachineNamed(victim_name)) left += " machine";
        if (HarvesterMachine(hm_name)) left += " harvestermachine";
        if (!harvester_->Get(kVirtualMachines, target_ns_, hm_name).status().IsNotFound()) {
          left += " vm";
        }
        for (const auto& pvc : pvcs) {
          if (!harvester_->Get(kPvcs, target_ns_, pvc).status().IsNotFound()) left += " pvc " + pvc;
        }
        for (const auto& s : secrets) {
          if (!harvester_->Get(kSecrets, target_ns_, s).status().IsNotFound()) {
            left += " secret " + s;
          }
        }
        if (!EntriesOf(pool.name, hm_name).empty()) left += " pool entry";
        if (!workload_->Get(kNodes, "", node_name).status().IsNotFound()) left += " node";
        return left.empty();
      },
      kWait, kPoll))
      << "of the remediated machine, still there:" << left << "\n"
      << MachinesSummary();
  std::cout << "remediated machine gone "
            << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                allowed_at)
                   .count()
            << " s after remediation was allowed\n";

  // The replacement runs with an initialised Node; the checks are back to full.
  const auto after = WaitForInitialisedNodes(3);
  ASSERT_EQ(after.size(), 3u);
  std::set<std::string> new_workers;
  for (const auto& m : after) {
    if (!m["metadata"]["labels"].contains(kControlPlaneLabel)) new_workers.insert(NameOf(m));
    EXPECT_NE(NameOf(m), victim_name);
  }
  std::set<std::string> expected_workers = worker_names;
  expected_workers.erase(victim_name);
  std::set<std::string> replacement;
  std::set_difference(new_workers.begin(), new_workers.end(), expected_workers.begin(),
                      expected_workers.end(), std::inserter(replacement, replacement.end()));
  EXPECT_EQ(new_workers.size(), 2u);
  EXPECT_EQ(replacement.size(), 1u);
  ASSERT_TRUE(Eventually(
      [&] {
        workers_mhc = HealthCheck("workers");
        cp_mhc = HealthCheck("control-plane");
        return Counts(workers_mhc) == "2/2" && Counts(cp_mhc) == "1/1" &&
               ConditionTrue(workers_mhc, "RemediationAllowed") &&
               targets(workers_mhc) == new_workers;
      },
      kWait, kPoll))
      << workers_mhc.dump(2) << "\n"
      << cp_mhc.dump(2);
  std::cout << "replaced, checks back to 2/2 and 1/1, after " << SecondsSinceStart() << " s\n";

  // Nothing leaked: one VM, disk, cloud-init Secret and pool entry per Machine.
  EXPECT_TRUE(Eventually(
      [&] {
        return HarvesterMachines().size() == 3 && NamesOnHarvester(kVirtualMachines).size() == 3 &&
               NamesOnHarvester(kPvcs).size() == 3 * pvcs.size() && CloudInitSecrets() == 3 &&
               EntriesOfThisTest().size() == 3;
      },
      kWait, kPoll))
      << "HarvesterMachines " << HarvesterMachines().size() << ", VMs "
      << NamesOnHarvester(kVirtualMachines).size() << ", PVCs " << NamesOnHarvester(kPvcs).size()
      << ", cloud-init Secrets " << CloudInitSecrets() << ", pool entries "
      << EntriesOfThisTest().size();

  // Deleting the Cluster leaves nothing.
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
}

// A dead server: three control-plane machines, one VM's power cut (its etcd
// member dies with it: two of three answer). The control-plane check
// (maxUnhealthy 34 % of 3 = 1) marks the Machine; the RKE2 control-plane
// provider remediates it (etcd keeps quorum without the member), its
// pre-terminate hook has RKE2 remove the member through the simulator's
// live members, CAPHV deletes the VM and lets the Node go, and a
// replacement server joins as a new member. etcd answers with a quorum of
// healthy voters at every look; in the end three members, none of the dead
// server, and nothing of it left on Harvester.
TEST_F(TopologyRemediationTest, DeadServerIsReplacedKeepingEtcdQuorum) {
  Pool pool;
  std::vector<Object> machines;
  ASSERT_NO_FATAL_FAILURE(ProvisionThreeServers(&pool, &machines));
  EtcdView etcd;
  std::cout << "3 servers, 3 etcd members after " << SecondsSinceStart() << " s\n";

  StartNodeLifecycleController();
  ApplyHealthChecks({{"MHC_UNHEALTHY_TIMEOUT", "10s"}});
  Object cp_mhc;
  ASSERT_TRUE(Eventually(
      [&] {
        cp_mhc = HealthCheck("control-plane");
        return Counts(cp_mhc) == "3/3";
      },
      kWait, kPoll))
      << cp_mhc.dump(2);

  // The victim: the oldest server (the cluster's first, which started etcd).
  std::vector<Object> servers;
  for (const auto& m : machines) {
    if (m["metadata"]["labels"].contains(kControlPlaneLabel)) servers.push_back(m);
  }
  ASSERT_EQ(servers.size(), 3u);
  std::sort(servers.begin(), servers.end(), [](const Object& a, const Object& b) {
    return Str(a, "/metadata/creationTimestamp") < Str(b, "/metadata/creationTimestamp");
  });
  const std::string victim_name = NameOf(servers.front());
  const std::string hm_name = Str(servers.front(), "/spec/infrastructureRef/name");
  const std::string node_name = Str(servers.front(), "/status/nodeRef/name");
  auto p = harvester_->Patch(kVirtualMachines, target_ns_, hm_name, kube::PatchType::kMerge,
                             {{"metadata", {{"annotations", {{"sim.caphv.io/dead", "true"}}}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::cout << "server " << node_name << " powered off after " << SecondsSinceStart() << " s\n";

  // Remediated and replaced; quorum at every look.
  int looks = 0;
  std::string lost;
  std::string left;
  ASSERT_TRUE(Eventually(
      [&] {
        etcd = Etcd();
        ++looks;
        if (!etcd.Quorum() && lost.empty()) lost = etcd.Describe();
        left.clear();
        if (MachineNamed(victim_name)) left += " machine";
        if (HarvesterMachine(hm_name)) left += " harvestermachine";
        if (!harvester_->Get(kVirtualMachines, target_ns_, hm_name).status().IsNotFound()) {
          left += " vm";
        }
        if (!EntriesOf(pool.name, hm_name).empty()) left += " pool entry";
        if (!workload_->Get(kNodes, "", node_name).status().IsNotFound()) left += " node";
        for (const auto& [member, learner] : etcd.members) {
          if (member.rfind(node_name + "-", 0) == 0) left += " etcd member " + member;
        }
        return left.empty() && etcd.voters == 3 && etcd.healthy_voters == 3 &&
               etcd.members.size() == 3;
      },
      std::chrono::seconds(300), kPoll))
      << "of the dead server, still there:" << left << "; etcd " << etcd.Describe() << "\n"
      << MachinesSummary();
  EXPECT_TRUE(lost.empty()) << "etcd lost quorum during the remediation: " << lost;
  std::cout << "dead server replaced after " << SecondsSinceStart() << " s (" << looks
            << " looks at etcd, quorum kept)\n";
  const auto after = WaitForInitialisedNodes(5);
  ASSERT_EQ(after.size(), 5u);
  EXPECT_EQ(ControlPlanes(after), 3u);
  EXPECT_TRUE(Eventually(
      [&] {
        return HarvesterMachines().size() == 5 && NamesOnHarvester(kVirtualMachines).size() == 5 &&
               CloudInitSecrets() == 5 && EntriesOfThisTest().size() == 5;
      },
      kWait, kPoll))
      << MachinesSummary();

  // Deleting the Cluster leaves nothing.
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
}

}  // namespace
}  // namespace caphv::e2e::topology
