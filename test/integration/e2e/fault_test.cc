// End-to-end: a Harvester API that misbehaves. Every request CAPHV sends to
// Harvester goes through the test bed's fault proxy (support/fault_proxy.h),
// which answers about one request in ten with a fault: 500 InternalError,
// 429 with Retry-After, a connection reset, a 1.5 s delay; a quarter of the
// watches is cut after 3 s. Thirty machines (one control plane, a
// MachineDeployment of 29) provision and are deleted under those faults:
// every machine becomes Running, each has exactly one VM, one disk, one
// cloud-init Secret and one pool address; after the deletion nothing is
// left on Harvester (no VM, PVC, Secret, load balancer or pool entry).
//
// And the management apiserver restarted mid-provisioning (as soon as the
// first VM exists): the manager keeps running, its watches resume, every
// machine becomes Running with exactly one of everything.
//
// CAPHV_FAULT_SEED picks another sequence of faults (default 20261126);
// CAPHV_FAULT_SCALE multiplies the shares (default 1; 3 = about 30 %).

#include <cstdlib>

#include "e2e_fixture.h"
#include "kube/config.h"
#include "support/fault_proxy.h"

namespace caphv::e2e {
namespace {

using caphv::testing::FaultProxy;
using caphv::testing::FaultRates;

uint64_t Seed() {
  const char* env = std::getenv("CAPHV_FAULT_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : 20261126;
}

double Scale() {
  const char* env = std::getenv("CAPHV_FAULT_SCALE");
  return env != nullptr ? std::strtod(env, nullptr) : 1.0;
}

class FaultInjectionTest : public E2ETest {
 protected:
  void TearDown() override {
    // Whatever happened, the clean-up runs without faults.
    if (proxy_) proxy_->set_rates({});
    E2ETest::TearDown();
  }

  // Points the identity Secret at a fault proxy in front of Harvester.
  void RouteHarvesterThroughProxy(const FaultRates& rates) {
    const auto& bed = Testbed::Get();
    auto config = kube::LoadKubeconfigFile(bed.KubeconfigPath(caphv::testing::kHarvester));
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    proxy_ = std::make_unique<FaultProxy>(config->server, config->ca_pem, rates);
    ASSERT_TRUE(proxy_->Start().ok());
    mgmt_->Delete(kube::resources::kSecrets, ns(), "hv-identity").IgnoreError();
    CreateSecret("hv-identity", {}, {{"kubeconfig", proxy_->Kubeconfig(config->token)}}, "Opaque");
  }

  size_t CountOnHarvester(const GroupVersionResource& gvr, const std::string& suffix) const {
    size_t n = 0;
    for (const auto& name : NamesOnHarvester(gvr)) {
      if (name.size() >= suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
        ++n;
      }
    }
    return n;
  }

  static bool OwnedByMachine(const Object& hm) {
    for (const auto& ref : hm["metadata"].value("ownerReferences", Object::array())) {
      if (ref.value("kind", "") == "Machine") return true;
    }
    return false;
  }

  // Exactly one VM, disk, cloud-init Secret and pool address per
  // HarvesterMachine of a Machine, `count` of them; and still so 5 s later.
  // A HarvesterMachine without a Machine (Cluster API's MachineSet made it
  // from the template and then could not make the Machine, its apiserver
  // gone) gets nothing on Harvester.
  void ExpectOneOfEverything(const Pool& pool, size_t count) {
    for (int round = 0; round < 2; ++round) {
      SCOPED_TRACE(round == 0 ? "right away" : "5 s later");
      if (round == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
      std::set<std::string> names;
      for (const auto& hm : HarvesterMachines()) {
        const std::string name = NameOf(hm);
        if (!OwnedByMachine(hm)) {
          std::cout << "HarvesterMachine " << name << " has no Machine\n";
          EXPECT_TRUE(EntriesOf(pool.name, name).empty()) << name;
          continue;
        }
        names.insert(name);
        EXPECT_EQ(EntriesOf(pool.name, name).size(), 1u) << name;
      }
      ASSERT_EQ(names.size(), count);
      const auto vms = NamesOnHarvester(kVirtualMachines);
      EXPECT_EQ(std::set<std::string>(vms.begin(), vms.end()), names);
      EXPECT_EQ(vms.size(), count);
      EXPECT_EQ(OnHarvester(kube::resources::kPersistentVolumeClaims).size(), count);
      EXPECT_EQ(CountOnHarvester(kube::resources::kSecrets, "-cloud-init"), count);
      EXPECT_EQ(Allocated(pool.name).size(), count);
    }
  }

  std::unique_ptr<FaultProxy> proxy_;
};

TEST_F(FaultInjectionTest, ThirtyMachinesProvisionAndDeleteUnderTenPercentFaults) {
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  constexpr size_t kMachines = 30;
  const double scale = Scale();
  const FaultRates rates{.error500 = 0.03 * scale,
                         .throttle = 0.03 * scale,
                         .reset = 0.02 * scale,
                         .slow = 0.02 * scale,
                         .cut_watch = 0.25,
                         .slow_delay = std::chrono::milliseconds(1500),
                         .cut_after = std::chrono::milliseconds(3000),
                         .seed = Seed(),
                         .cut_first_watch = true};
  RouteHarvesterThroughProxy(rates);
  ASSERT_FALSE(HasFailure());

  const Pool pool = CreatePool(static_cast<int>(kMachines) + 2);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  const auto start = std::chrono::steady_clock::now();
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", static_cast<int>(kMachines) - 1);

  const auto machines = WaitForRunningMachines(kMachines, seconds(600));
  ASSERT_EQ(machines.size(), kMachines);
  const auto provisioned = std::chrono::steady_clock::now();

  ExpectOneOfEverything(pool, kMachines);
  const auto at_ready = proxy_->counts();

  // Deleted under the same faults: nothing is left behind.
  mgmt_->Delete(kClusters, ns(), cluster_).IgnoreError();
  const bool gone = Eventually(
      [&] {
        return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
               mgmt_->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound();
      },
      seconds(600), seconds(1));
  EXPECT_TRUE(gone) << MachinesSummary();
  const auto deleted = std::chrono::steady_clock::now();
  EXPECT_TRUE(OnHarvester(kVirtualMachines).empty());
  EXPECT_TRUE(OnHarvester(kube::resources::kPersistentVolumeClaims).empty());
  EXPECT_EQ(CountOnHarvester(kube::resources::kSecrets, "-cloud-init"), 0u);
  EXPECT_TRUE(OnHarvester(kLoadBalancers).empty());
  EXPECT_TRUE(Allocated(pool.name).empty()) << ::testing::PrintToString(Allocated(pool.name));

  const auto total = proxy_->counts();
  std::cout << "faults while provisioning: " << FaultProxy::Describe(at_ready) << "\n"
            << "faults in all: " << FaultProxy::Describe(total) << "\n"
            << kMachines << " machines Running after "
            << duration_cast<seconds>(provisioned - start).count() << " s, deleted after "
            << duration_cast<seconds>(deleted - provisioned).count() << " s\n";
  // The faults happened: each kind at least once.
  EXPECT_GT(total.error500, 0u);
  EXPECT_GT(total.throttle, 0u);
  EXPECT_GT(total.reset, 0u);
  EXPECT_GT(total.slow, 0u);
  EXPECT_GT(total.cut_watch, 0u);
}

TEST_F(FaultInjectionTest, ManagementApiserverRestartedMidProvisioning) {
  using std::chrono::duration_cast;
  using std::chrono::seconds;
  const Pool pool = CreatePool(8);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 4);
  ASSERT_TRUE(Eventually([&] { return !OnHarvester(kVirtualMachines).empty(); }, kWait,
                         std::chrono::milliseconds(50)))
      << "no VM was created" << MachinesSummary();

  const auto& bed = Testbed::Get();
  const std::string cmd = caphv::testing::SourcePath("hack/testbed") +
                          " restart --cluster mgmt --dir " + bed.dir() + " 2>&1";
  std::string out;
  const auto restart = std::chrono::steady_clock::now();
  ASSERT_EQ(caphv::testing::RunCommand(cmd, &out), 0) << cmd << "\n" << out;
  const auto restarted = std::chrono::steady_clock::now();

  const auto machines = WaitForRunningMachines(5, seconds(300));
  ASSERT_EQ(machines.size(), 5u);
  std::cout << "management apiserver restarted in "
            << duration_cast<seconds>(restarted - restart).count() << " s; 5 machines Running "
            << duration_cast<seconds>(std::chrono::steady_clock::now() - restarted).count()
            << " s after it was back\n";
  ASSERT_TRUE(manager_ && manager_->running()) << "caphv-manager exited";
  ExpectOneOfEverything(pool, 5);
}

}  // namespace
}  // namespace caphv::e2e
