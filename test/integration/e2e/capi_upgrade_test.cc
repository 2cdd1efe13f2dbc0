// End-to-end: the two ways a user's management cluster moves from Cluster
// API v1.10 (contract v1beta1, the RKE2 providers v0.21) to v1.14 (contract
// v1beta2, the RKE2 providers v0.25), each on a bed of its own that starts on
// 1.10 (ctest e2e_upgrade_caphv and e2e_upgrade_go; `hack/testbed
// upgrade-capi` does to the bed what `clusterctl upgrade apply` does to a
// management cluster: the new CRDs with their conversion webhook, the new
// webhooks, the new managers; the objects stay):
//   - CAPHV runs a cluster of class harvester-rke2 (one server, two agents)
//     and the core and the RKE2 providers are upgraded underneath it (the
//     class then moved to the RKE2 API v1beta2, as the operations guide
//     says): CAPHV restarts itself to read Cluster API at v1beta2, no
//     Machine, VM or address is replaced, and while the new controllers take
//     over no condition of CAPHV's objects or of the Machines is ever seen
//     False (the Cluster's own are reported); v1.14 sees the infrastructure
//     of the Cluster and of every Machine ready, and the deleted cluster
//     leaves nothing;
//   - the Go provider v0.2.9 runs a cluster when the core is upgraded (it
//     keeps it Running on v1.14), then CAPHV is installed over it: it takes
//     every VM over without replacing one, scales the workers and rolls them
//     to a new Kubernetes version, and deletes the cluster leaving nothing.
// Both skip unless CAPHV_UPGRADE_BED=1 says the bed may be upgraded, and
// unless the bed runs 1.10 and v1.14 is built.

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "go_provider_fixture.h"
#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

const GroupVersionResource kClustersV1beta2{"cluster.x-k8s.io", "v1beta2", "clusters", true};
const GroupVersionResource kMachinesV1beta2{"cluster.x-k8s.io", "v1beta2", "machines", true};

// Why the scenario cannot run on this bed, or "" when it can.
std::string WhyNoUpgradeBed() {
  const char* flag = std::getenv("CAPHV_UPGRADE_BED");
  if (flag == nullptr || std::string(flag) != "1") {
    return "runs on a bed of its own that it upgrades (ctest e2e_upgrade_*: "
           "CAPHV_UPGRADE_BED=1)";
  }
  if (CapiGeneration() != "1.10") return "the bed runs Cluster API " + CapiGeneration();
  const char* cache = std::getenv("CAPHV_CACHE_DIR");
  const char* home = std::getenv("HOME");
  const std::string dir = cache != nullptr && *cache != '\0'
                              ? std::string(cache)
                              : std::string(home != nullptr ? home : "") + "/.cache/caphv";
  for (const char* bin : {"cluster-api", "rke2-bootstrap", "rke2-controlplane"}) {
    if (!std::filesystem::exists(dir + "/bin/capi-1.14/" + bin)) {
      return std::string("Cluster API v1.14 is not built (") + dir + "/bin/capi-1.14/" + bin +
             "; hack/build-testbins.sh capi114 rke2-025)";
    }
  }
  return "";
}

// `hack/testbed upgrade-capi --to 1.14` on the bed; fails the test when it fails.
void UpgradeCapi() {
  const auto t0 = std::chrono::steady_clock::now();
  std::string out;
  ASSERT_EQ(caphv::testing::RunCommand("'" + caphv::testing::SourcePath("hack/testbed") +
                                           "' upgrade-capi --to 1.14 --dir '" +
                                           Testbed::Get().dir() + "' 2>&1",
                                       &out),
            0)
      << out;
  ASSERT_EQ(CapiGeneration(), "1.14");
  std::cout << "[ upgrade ] Cluster API 1.10 -> 1.14 in "
            << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                t0)
                   .count()
            << " s\n";
}

// Looks at a cluster's objects every 100 ms from a thread of its own while
// the core is upgraded underneath: each condition seen False (once per
// object and type, with its reason and when), each Machine or VM uid that
// changed or appeared. Reads Cluster API objects at v1beta1 (served by both
// generations; v1.14 converts its v1beta2 objects back, v1beta1 conditions
// included) and CAPHV's at v1alpha1.
class Recorder {
 public:
  Recorder(std::string ns, std::string cluster, std::string target_ns)
      : ns_(std::move(ns)), cluster_(std::move(cluster)), target_ns_(std::move(target_ns)) {
    mgmt_ = Testbed::Get().Client(caphv::testing::kMgmt);
    harvester_ = Testbed::Get().Client(caphv::testing::kHarvester);
    Look();  // the baseline, before the thread starts
    baseline_ = uids_;
    thread_ = std::jthread([this](const std::stop_token& stop) {
      while (!stop.stop_requested()) {
        Look();
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~Recorder() { Stop(); }
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void Stop() {
    thread_.request_stop();
    if (thread_.joinable()) thread_.join();
  }

  // What was seen False or replaced, a line each ("Kind/name ..."), of the
  // kinds `kinds` (all when empty); empty when nothing.
  std::string Findings(const std::set<std::string>& kinds = {}) const {
    std::lock_guard lock(mu_);
    std::string out;
    for (const auto& f : findings_) {
      if (kinds.empty() || kinds.contains(f.substr(0, f.find('/')))) out += "\n  " + f;
    }
    return out;
  }
  // Machines and VMs by name -> uid when the recorder started.
  const std::map<std::string, std::string>& Baseline() const { return baseline_; }
  int Looks() const { return looks_.load(); }
  int FailedReads() const { return failed_reads_.load(); }

 private:
  void Note(const std::string& what) {
    const double at = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    std::lock_guard lock(mu_);
    if (seen_.insert(what).second) {
      findings_.push_back(what + " (first seen at " + std::to_string(at).substr(0, 5) + " s)");
    }
  }

  void Conditions(const std::string& kind, const Object& o) {
    for (const auto& c : o.value("status", Object::object()).value("conditions", Object::array())) {
      if (c.value("status", "") == "False") {
        Note(kind + "/" + NameOf(o) + " " + c.value("type", "") + "=False reason " +
             c.value("reason", "") + ": " + c.value("message", "").substr(0, 160));
      }
    }
  }

  void Look() {
    ++looks_;
    kube::ListOptions of_cluster;
    of_cluster.label_selector = std::string(kClusterNameLabel) + "=" + cluster_;
    auto cluster = mgmt_->Get(kClusters, ns_, cluster_);
    auto machines = mgmt_->List(kMachines, ns_, of_cluster);
    auto hcs = mgmt_->List(kHarvesterClusters, ns_);
    auto hms = mgmt_->List(kHarvesterMachines, ns_);
    auto vms = harvester_->List(kVirtualMachines, target_ns_);
    if (!cluster.ok() || !machines.ok() || !hcs.ok() || !hms.ok() || !vms.ok()) {
      ++failed_reads_;  // an apiserver or a conversion webhook restarting: looked at again
      return;
    }
    Conditions("Cluster", *cluster);
    std::map<std::string, std::string> uids;
    for (const auto& m : machines->items) {
      Conditions("Machine", m);
      uids["Machine/" + NameOf(m)] = kube::UidOf(m);
      if (Str(m, "/status/phase") != "Running") {
        Note("Machine/" + NameOf(m) + " phase " + Str(m, "/status/phase"));
      }
    }
    for (const auto& o : hcs->items) Conditions("HarvesterCluster", o);
    for (const auto& o : hms->items) Conditions("HarvesterMachine", o);
    for (const auto& vm : vms->items) uids["VirtualMachine/" + NameOf(vm)] = kube::UidOf(vm);
    if (!baseline_.empty() && uids != baseline_) {
      for (const auto& [name, uid] : uids) {
        auto was = baseline_.find(name);
        if (was == baseline_.end()) {
          Note(name + " appeared");
        } else if (was->second != uid) {
          Note(name + " replaced (uid changed)");
        }
      }
      for (const auto& [name, uid] : baseline_) {
        if (!uids.contains(name)) Note(name + " went");
      }
    }
    uids_ = std::move(uids);
  }

  std::string ns_, cluster_, target_ns_;
  std::shared_ptr<kube::Client> mgmt_, harvester_;
  const std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::map<std::string, std::string> uids_, baseline_;  // uids_: the thread's alone after start
  std::atomic<int> looks_{0}, failed_reads_{0};
  mutable std::mutex mu_;
  std::set<std::string> seen_;         // guarded by mu_
  std::vector<std::string> findings_;  // guarded by mu_
  std::jthread thread_;
};

// Until Cluster API v1.14 has reconciled the Cluster and its Machines: the
// Cluster's condition `type` True (Available; InfrastructureReady for a
// cluster without a control-plane provider, whose Available v1.14 leaves
// Unknown) and every Machine's `machine_type`, read at v1beta2.
void WaitForV1beta2Healthy(kube::Client& mgmt, const std::string& ns, const std::string& cluster,
                           size_t machines, const std::string& type = "Available",
                           const std::string& machine_type = "Ready") {
  std::string why;
  EXPECT_TRUE(Eventually(
      [&] {
        auto c = mgmt.Get(kClustersV1beta2, ns, cluster);
        if (!c.ok() || !ConditionTrue(*c, type)) {
          why = "Cluster " + type +
                " not True: " + (c.ok() ? ConditionOf(*c, type).dump() : c.status().ToString());
          return false;
        }
        kube::ListOptions opts;
        opts.label_selector = std::string(kClusterNameLabel) + "=" + cluster;
        auto list = mgmt.List(kMachinesV1beta2, ns, opts);
        if (!list.ok() || list->items.size() != machines) {
          why = "Machines: " +
                (list.ok() ? std::to_string(list->items.size()) : list.status().ToString());
          return false;
        }
        for (const auto& m : list->items) {
          if (!ConditionTrue(m, machine_type)) {
            why = "Machine " + NameOf(m) + " " + machine_type +
                  " not True: " + ConditionOf(m, machine_type).dump();
            return false;
          }
        }
        return true;
      },
      kWait, kPoll))
      << why;
}

class CapiUpgradeTest : public TopologyFixture {
 protected:
  void SetUp() override {
    if (const std::string why = WhyNoUpgradeBed(); !why.empty()) GTEST_SKIP() << why;
    TopologyFixture::SetUp();
  }
};

TEST_F(CapiUpgradeTest, CoreUpgradedUnderRunningCaphvReplacesNothingAndNoConditionTurnsFalse) {
  Pool pool;
  std::vector<Object> before;
  ASSERT_NO_FATAL_FAILURE(ProvisionCluster(&pool, &before));
  const auto addresses = Allocated(pool.name);
  std::cout << "3 machines on Cluster API 1.10 after " << SecondsSinceStart() << " s\n";
  // The machines' last progress (their Nodes registered and initialised) is
  // published after CAPHV's status hold: the baseline is taken once every
  // condition of every HarvesterMachine is True.
  ASSERT_TRUE(Eventually(
      [&] {
        const auto machines = HarvesterMachines();
        if (machines.size() != 3) return false;
        for (const auto& m : machines) {
          for (const auto& c :
               m.value("status", Object::object()).value("conditions", Object::array())) {
            if (c.value("status", "") != "True") return false;
          }
        }
        return true;
      },
      kWait, kPoll))
      << MachinesSummary();

  Recorder recorder(ns(), cluster_, target_ns_);
  ASSERT_EQ(recorder.Baseline().size(), 6u);  // three Machines, three VMs
  ASSERT_NO_FATAL_FAILURE(UpgradeCapi());
  // The user's step right after it (docs/operations.md): the class's RKE2
  // templates referred to at v1beta2. Until then Cluster API v1.14 reads the
  // RKE2ControlPlane at the class's v1beta1, which the RKE2 providers v0.25
  // label contract v1beta2 (`cluster.x-k8s.io/v1beta2: v1beta1_v1beta2`), and
  // looks for the v1beta2 field spec.machineTemplate.spec.infrastructureRef
  // in it: the Cluster's TopologyReconciled is False meanwhile.
  ApplyClusterClass();
  // CAPHV, started on v1.10, sees v1beta2 served within a minute and exits
  // so that it restarts reading Clusters and Machines at it; started again
  // (as the Deployment's pod is), it says so.
  ASSERT_TRUE(manager_);
  const auto code = manager_->Wait(std::chrono::seconds(150));
  ASSERT_TRUE(code.has_value()) << "the manager did not restart for Cluster API's v1beta2";
  EXPECT_NE(*code, 0);
  EXPECT_NE(ManagerLog().find("Cluster API now serves cluster.x-k8s.io/v1beta2 (read at v1beta1 "
                              "since the start); exiting so that the restarted manager reads it"),
            std::string::npos)
      << LastLines(ManagerLog(), 20);
  manager_.reset();
  StartManager();
  EXPECT_NE(ManagerLog().find(R"("clusterAPIVersion": "v1beta2")"), std::string::npos)
      << LastLines(ManagerLog(), 20);
  WaitForV1beta2Healthy(*mgmt_, ns(), cluster_, 3, "InfrastructureReady", "InfrastructureReady");
  // The new controllers' first passes are over; a while more for the late ones
  // (resyncs, the RKE2 providers' requeues).
  std::this_thread::sleep_for(std::chrono::seconds(20));
  recorder.Stop();
  std::cout << "v1.14 reconciled everything after " << SecondsSinceStart() << " s; "
            << recorder.Looks() << " looks, " << recorder.FailedReads() << " failed reads\n"
            << "seen on the Cluster (Cluster API's own conditions):"
            << recorder.Findings({"Cluster"}) << "\n";
  EXPECT_EQ(
      recorder.Findings({"HarvesterCluster", "HarvesterMachine", "Machine", "VirtualMachine"}), "")
      << "while Cluster API was upgraded underneath CAPHV";
  // What CAPHV reports through Cluster API, True at both versions. (Cluster
  // API's own view of the control plane may lag: the RKE2 providers v0.25
  // set no v1beta2 condition on an RKE2Config whose converted status says its
  // data is there already, v0.25.0 bootstrap/internal/controllers/
  // rke2config_controller.go:184-224, so v1.14 may leave the control-plane
  // Machine's BootstrapConfigReady Unknown; see docs/operations.md.)
  auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_TRUE(ConditionTrue(*cluster, "InfrastructureReady")) << cluster->dump();
  EXPECT_EQ(Allocated(pool.name), addresses);
  for (const auto& [name, uid] : recorder.Baseline()) {
    if (name.rfind("Machine/", 0) != 0) continue;
    auto m = mgmt_->Get(kMachines, ns(), name.substr(8));
    EXPECT_TRUE(m.ok() && kube::UidOf(*m) == uid) << name << " was replaced";
  }
  DeleteClusterExpectingNothingLeft();
}

}  // namespace
}  // namespace caphv::e2e::topology

namespace caphv::e2e {
namespace {

inline constexpr char kRolledVersion[] = "v1.31.5";

class CapiUpgradeGoTest : public GoProviderTest {
 protected:
  void SetUp() override {
    if (const std::string why = topology::WhyNoUpgradeBed(); !why.empty()) GTEST_SKIP() << why;
    GoProviderTest::SetUp();
  }
};

TEST_F(CapiUpgradeGoTest, GoProviderClusterKeepsRunningThroughTheUpgradeThenCaphvScalesAndRollsIt) {
  const GoCluster go = ProvisionWithGo();
  ASSERT_FALSE(HasFailure());
  std::map<std::string, std::string> vm_uids;
  for (const auto& vm : OnHarvester(kVirtualMachines)) vm_uids[NameOf(vm)] = kube::UidOf(vm);
  ASSERT_EQ(vm_uids.size(), 3u);
  const auto addresses = Allocated(go.vm_pool.name);

  // The core upgraded while the Go provider runs it: Cluster API v1.14 keeps
  // a v1beta1-contract provider's machines.
  ASSERT_NO_FATAL_FAILURE(topology::UpgradeCapi());
  topology::WaitForV1beta2Healthy(*mgmt_, ns(), cluster_, 3, "InfrastructureReady");
  for (const auto& m : Machines()) EXPECT_EQ(Str(m, "/status/phase"), "Running") << NameOf(m);

  // CAPHV installed over the Go provider.
  MigrateToCaphv();
  ASSERT_FALSE(HasFailure());
  std::string why;
  ASSERT_TRUE(Eventually(
      [&] {
        why.clear();
        for (const auto& hm : HarvesterMachines()) {
          if (!ConditionTrue(hm, "Ready")) why += " " + NameOf(hm) + " not Ready";
        }
        return why.empty();
      },
      kWait, kPoll))
      << why << MachinesSummary();
  std::map<std::string, std::string> uids_now;
  for (const auto& vm : OnHarvester(kVirtualMachines)) uids_now[NameOf(vm)] = kube::UidOf(vm);
  EXPECT_EQ(uids_now, vm_uids) << "a VM was replaced by the takeover";
  EXPECT_EQ(Allocated(go.vm_pool.name), addresses);

  // Scaled: one new VM and address.
  ScaleMachineDeployment(cluster_ + "-md", 3);
  WaitForRunningMachines(4);
  EXPECT_EQ(OnHarvester(kVirtualMachines).size(), 4u);
  EXPECT_EQ(Allocated(go.vm_pool.name).size(), 4u);

  // Rolled to a new Kubernetes version: every worker replaced, one at a
  // time (maxSurge 1 fits the pool of 5), the old ones leave nothing.
  std::set<std::string> old_workers;
  for (const auto& m : Machines()) {
    if (NameOf(m) != go.control_plane) old_workers.insert(NameOf(m));
  }
  auto r = mgmt_->Patch(kMachineDeployments, ns(), cluster_ + "-md", kube::PatchType::kMerge,
                        {{"spec", {{"template", {{"spec", {{"version", kRolledVersion}}}}}}}});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(Eventually(
      [&] {
        const auto machines = Machines();
        size_t rolled = 0;
        for (const auto& m : machines) {
          if (old_workers.contains(NameOf(m))) return false;
          rolled +=
              Str(m, "/spec/version") == kRolledVersion && Str(m, "/status/phase") == "Running";
        }
        return machines.size() == 4 && rolled == 3;
      },
      kWait, kPoll))
      << MachinesSummary();
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).size() == 4 &&
               Allocated(go.vm_pool.name).size() == 4 && OnHarvester(kPvcs).size() == 8;
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcs)) << " entries "
      << ::testing::PrintToString(Allocated(go.vm_pool.name));
  auto cp = harvester_->Get(kVirtualMachines, target_ns_, go.control_plane);
  EXPECT_TRUE(cp.ok() && kube::UidOf(*cp) == vm_uids[go.control_plane])
      << "the control plane's VM was replaced";

  // Deleted: nothing of it left on Harvester.
  DeleteClusterAndWait();
  EXPECT_TRUE(Eventually(
      [&] {
        return OnHarvester(kVirtualMachines).empty() && OnHarvester(kPvcs).empty() &&
               OnHarvester(kLoadBalancers).empty() && Allocated(go.vm_pool.name).empty() &&
               Allocated(go.lb_pool.name).empty();
      },
      kWait, kPoll))
      << "VMs " << ::testing::PrintToString(NamesOnHarvester(kVirtualMachines)) << " PVCs "
      << ::testing::PrintToString(NamesOnHarvester(kPvcs));
}

}  // namespace
}  // namespace caphv::e2e
