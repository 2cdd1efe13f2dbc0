// End-to-end: the Go provider CAPHV replaces (cluster-api-provider-harvester
// v0.2.9, `caphv-go`, built by hack/build-testbins.sh caphv-go) provisions a
// cluster on the simulated Harvester, with caphv-manager not running at all:
// pool mode (VM addresses from an IPPool, the load balancer's address from
// another), one control-plane Machine and a MachineDeployment of two
// workers, each VM with an image disk and an extra empty disk.
//
// What a user of the Go provider sees: every Machine Running with its Node,
// every HarvesterMachine ready with providerID harvester://<VM uid>, three
// VMs with two disks each, three VM pool entries owned "<ns>/<name>" (the Go
// provider's format), the placeholder Service of type LoadBalancer that
// kube-vip gave the pool address, and the LoadBalancer serving the control
// plane at that same address, which is the HarvesterCluster's endpoint.
//
// The Go provider runs through `hack/testbed start-go-provider` (its CRDs
// replace CAPHV's while it runs); TearDown deletes the Cluster while it still
// runs, stops it and puts CAPHV's CRDs back. Skipped only when the Go
// provider's sources (../shared/third_party next to the checkout, or
// $CAPHV_THIRD_PARTY) are absent.

#include <cstdlib>

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

using caphv::testing::RunCommand;
using caphv::testing::SourcePath;

// The Go provider requeues after 30 s to 1 min between steps.
constexpr std::chrono::minutes kGoWait{10};

const GroupVersionResource kPvcs{"", "v1", "persistentvolumeclaims", true};
const GroupVersionResource kServices{"", "v1", "services", true};

constexpr char kGoTarball[] = "cluster-api-provider-harvester-v0.2.9.tar.gz";

std::string ThirdPartyDir() {
  const char* env = std::getenv("CAPHV_THIRD_PARTY");
  return env && *env ? std::string(env) : SourcePath("../shared/third_party");
}

class GoProviderTest : public E2ETest {
 protected:
  GoProviderTest() { start_manager_ = false; }

  void SetUp() override {
    E2ETest::SetUp();
    if (HasFatalFailure()) return;
    const std::filesystem::path tarball = std::filesystem::path(ThirdPartyDir()) / kGoTarball;
    if (!std::filesystem::exists(tarball)) {
      GTEST_SKIP() << "the Go provider's sources are absent (" << tarball.string()
                   << "; set CAPHV_THIRD_PARTY): scenario skipped";
    }
    auto& bed = Testbed::Get();
    log_path_ = std::filesystem::path(bed.dir()) / "logs" / "caphv-go.log";
    std::string out;
    const int rc =
        RunCommand(TestbedScript() + " start-go-provider --dir '" + bed.dir() + "'", &out);
    go_started_ = true;  // stop it at TearDown even when the start failed half-way
    ASSERT_EQ(rc, 0) << "hack/testbed start-go-provider:\n" << out;
  }

  void TearDown() override {
    if (go_started_) {
      if (HasFailure()) PrintGoDiagnostics();
      // The Go provider deletes what it made while it still runs.
      mgmt_->Delete(kClusters, ns(), cluster_).IgnoreError();
      const bool gone = Eventually(
          [&] {
            return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
                   mgmt_->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound() &&
                   HarvesterMachines().empty();
          },
          kWait, std::chrono::seconds(1));
      EXPECT_TRUE(gone) << "the Go provider did not delete cluster " << cluster_
                        << MachinesSummary();
      std::string out;
      EXPECT_EQ(
          RunCommand(TestbedScript() + " stop-go-provider --dir '" + Testbed::Get().dir() + "'",
                     &out),
          0)
          << out;
      // CAPHV's CRDs back, for the scenarios after this one.
      const std::string kubectl =
          "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
      EXPECT_EQ(RunCommand(kubectl + "apply --server-side --force-conflicts -f " +
                               SourcePath("config/crd/bases") + " && " + kubectl +
                               "wait --for condition=established --timeout=60s -f " +
                               SourcePath("config/crd/bases"),
                           &out),
                0)
          << out;
    }
    E2ETest::TearDown();
  }

  static std::string TestbedScript() { return "'" + SourcePath("hack/testbed") + "'"; }

  void PrintGoDiagnostics() const {
    std::cout << "---- Harvester namespace " << target_ns_ << ":";
    for (const auto* gvr : {&kLoadBalancers, &kServices, &kPvcs}) {
      for (const auto& o : OnHarvester(*gvr)) {
        std::cout << "\n  " << gvr->resource << "/" << NameOf(o) << " "
                  << o.value("status", Object::object()).dump();
      }
    }
    std::cout << "\n---- last lines of " << log_path_.string() << " (cut at 600 characters):\n";
    std::istringstream lines(LastLines(ManagerLog(), 40));
    for (std::string line; std::getline(lines, line);) std::cout << line.substr(0, 600) << "\n";
    std::cout << "----\n";
  }

  // The Go provider's spec for every machine: the fixture's (image disk,
  // one NIC on default/vlan100) plus an empty 10Gi disk.
  static Object GoMachineSpec() {
    Object spec = MachineSpec();
    spec["volumes"].push_back({{"volumeType", "storageClass"},
                               {"storageClass", "harvester-longhorn"},
                               {"volumeSize", "10Gi"}});
    return spec;
  }

  bool go_started_ = false;
};

TEST_F(GoProviderTest, ProvisionsAPoolModeClusterOnTheSimulator) {
  const auto pools = CreatePools({5, 3});
  const Pool& vm_pool = pools[0];
  const Pool& lb_pool = pools[1];
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", lb_pool.name}};
  spec["vmNetworkConfig"] = VmNetworkConfig({vm_pool});
  CreateCluster(spec);
  const std::string cp = cluster_ + "-cp-0";
  CreateMachine(cp, true, GoMachineSpec());
  CreateMachineDeployment(cluster_ + "-md", 2, GoMachineSpec());

  // Every Machine Running with its Node and its infrastructure provisioned.
  std::vector<Object> machines;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually(
      [&] {
        machines = Machines();
        if (machines.size() != 3) return false;
        for (const auto& m : machines) {
          if (Str(m, "/status/phase") != "Running" || Str(m, "/status/nodeRef/name").empty() ||
              !m.value("status", Object::object()).value("infrastructureReady", false)) {
            return false;
          }
        }
        return true;
      },
      kGoWait, std::chrono::seconds(1)))
      << "Machines not all Running:" << MachinesSummary();
  std::cout << "[ go-provider ] 3 Machines Running after "
            << std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                                t0)
                   .count()
            << " s\n";

  // The control plane's load balancer: LoadBalancerReady on the HarvesterCluster.
  Object hc;
  ASSERT_TRUE(Eventually(
      [&] {
        hc = HarvesterClusterObject();
        return ConditionTrue(hc, "LoadBalancerReady");
      },
      kGoWait, std::chrono::seconds(1)))
      << hc.dump(2);
  EXPECT_TRUE(hc.value("status", Object::object()).value("ready", false));
  const std::string endpoint = Str(hc, "/spec/controlPlaneEndpoint/host");
  EXPECT_EQ(hc["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  EXPECT_TRUE(lb_pool.Contains(endpoint)) << endpoint;
  auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_TRUE(cluster->value("status", Object::object()).value("infrastructureReady", false));
  EXPECT_EQ(Str(*cluster, "/spec/controlPlaneEndpoint/host"), endpoint);

  // Three VMs, each of its HarvesterMachine, with two disks (image + extra).
  std::map<std::string, Object> vms;
  for (const auto& vm : OnHarvester(kVirtualMachines)) vms[NameOf(vm)] = vm;
  ASSERT_EQ(vms.size(), 3u);
  std::map<std::string, std::string> vm_ip;  // VM name -> its VMI's address
  for (const auto& vmi : OnHarvester(kVirtualMachineInstances)) {
    EXPECT_EQ(Str(vmi, "/status/phase"), "Running") << NameOf(vmi);
    vm_ip[NameOf(vmi)] = Str(vmi, "/status/interfaces/0/ipAddress");
  }
  std::map<std::string, int> claims_of;  // VM name -> Bound PVCs
  for (const auto& pvc : OnHarvester(kPvcs)) {
    const std::string name = NameOf(pvc);
    EXPECT_EQ(Str(pvc, "/status/phase"), "Bound") << name;
    const auto at = name.find("-disk-");
    if (at != std::string::npos) ++claims_of[name.substr(0, at)];
  }
  const auto harvester_machines = HarvesterMachines();
  ASSERT_EQ(harvester_machines.size(), 3u);
  const auto allocated = Allocated(vm_pool.name);
  EXPECT_EQ(allocated.size(), 3u) << ::testing::PrintToString(allocated);
  for (const auto& hm : harvester_machines) {
    const std::string name = NameOf(hm);
    SCOPED_TRACE(name);
    ASSERT_TRUE(vms.contains(name));
    const Object& vm = vms[name];
    const Object status = hm.value("status", Object::object());
    EXPECT_TRUE(status.value("ready", false));
    EXPECT_TRUE(ConditionTrue(hm, "MachineCreated"));
    EXPECT_TRUE(ConditionTrue(hm, "VMProvisioningReady"));
    EXPECT_EQ(Str(hm, "/spec/providerID"), "harvester://" + Str(vm, "/metadata/uid"));
    EXPECT_EQ(Str(vm, "/status/printableStatus"), "Running");
    EXPECT_TRUE(vm.value("status", Object::object()).value("ready", false));
    EXPECT_EQ(Str(vm, "/metadata/labels/harvesterhci.io~1creator"), "harvester");
    const Object templates = Object::parse(
        Str(vm, "/metadata/annotations/harvesterhci.io~1volumeClaimTemplates"), nullptr, false);
    ASSERT_TRUE(templates.is_array() && templates.size() == 2) << templates.dump();
    EXPECT_EQ(Str(templates[0], "/spec/storageClassName"), "longhorn-image-ubuntu");
    EXPECT_EQ(Str(templates[1], "/spec/storageClassName"), "harvester-longhorn");
    EXPECT_EQ(Str(templates[1], "/spec/resources/requests/storage"), "10Gi");
    EXPECT_EQ(claims_of[name], 2);
    // Its address: from the VM pool, owned "<ns>/<name>", on the VMI.
    const std::string ip = status.value("allocatedIPAddress", "");
    EXPECT_TRUE(vm_pool.Contains(ip)) << ip;
    EXPECT_EQ(status.value("allocatedPoolRef", ""), vm_pool.name);
    EXPECT_EQ(allocated.contains(ip) ? allocated.at(ip) : "", ns() + "/" + name);
    EXPECT_EQ(vm_ip[name], ip);
  }
  for (const auto& m : machines) {
    EXPECT_TRUE(IsHarvesterProviderId(Str(m, "/spec/providerID"))) << NameOf(m);
  }

  // The placeholder Service the Go provider made, announced by kube-vip at
  // the address the Go provider took from the LB pool, and the LB itself,
  // which took over the Service and reports that address.
  const std::string lb_name = ns() + "-" + cluster_ + "-lb";
  const auto lb_entries = Allocated(lb_pool.name);
  EXPECT_EQ(lb_entries.size(), 1u) << ::testing::PrintToString(lb_entries);
  EXPECT_EQ(lb_entries.contains(endpoint) ? lb_entries.at(endpoint) : "",
            target_ns_ + "/" + lb_name);
  auto svc = harvester_->Get(kServices, target_ns_, lb_name);
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  EXPECT_EQ(Str(*svc, "/spec/type"), "LoadBalancer");
  EXPECT_EQ(Str(*svc, "/spec/loadBalancerIP"), endpoint);
  EXPECT_EQ(Str(*svc, "/status/loadBalancer/ingress/0/ip"), endpoint);
  auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_EQ(Str(*lb, "/spec/ipam"), "pool");
  EXPECT_EQ(Str(*lb, "/spec/ipPool"), lb_pool.name);
  EXPECT_EQ(Str(*lb, "/status/address"), endpoint);
  EXPECT_EQ(Str(*lb, "/status/allocatedAddress/ip"), endpoint);
  EXPECT_TRUE(ConditionTrue(*lb, "Ready")) << lb->dump();
  EXPECT_EQ(lb->value("status", Object::object()).value("backendServers", Object::array()),
            Object::array({vm_ip[cp]}));
}

}  // namespace
}  // namespace caphv::e2e
