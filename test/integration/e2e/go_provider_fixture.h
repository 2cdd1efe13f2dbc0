// File: test/integration/e2e/go_provider_fixture.h
//
// Fixture of the scenarios with the Go provider CAPHV replaces
// (cluster-api-provider-harvester v0.2.9, `caphv-go`, built by
// hack/build-testbins.sh caphv-go): it runs through `hack/testbed
// start-go-provider` (its CRDs replace CAPHV's while it runs), with no
// caphv-manager. ProvisionWithGo() has it provision a pool-mode cluster (VM
// addresses from one IPPool, the load balancer's from another; one
// control-plane Machine and a MachineDeployment of two workers, each VM with
// an image disk and an extra empty disk) and waits until every Machine runs
// and the load balancer is ready. MigrateToCaphv() does what a user taking
// over does: the Go provider stopped, CAPHV's CRDs applied over its own, and
// caphv-manager started.
//
// TearDown: while the Go provider still runs, it deletes the Cluster itself;
// it is then stopped and CAPHV's CRDs put back. After a migration the
// E2ETest TearDown (caphv-manager deletes the Cluster) does it all. Skipped
// only when the Go provider's sources (../shared/third_party next to the
// checkout, or $CAPHV_THIRD_PARTY) are absent.
//
// Header-only. Thread safety: test thread only.

#pragma once

#include <cstdlib>

#include "e2e_fixture.h"

namespace caphv::e2e {

using caphv::testing::RunCommand;
using caphv::testing::SourcePath;

// The Go provider requeues after 30 s to 1 min between steps.
inline constexpr std::chrono::minutes kGoWait{10};

inline const GroupVersionResource kPvcs{"", "v1", "persistentvolumeclaims", true};
inline const GroupVersionResource kServices{"", "v1", "services", true};
inline const GroupVersionResource kSecretsGvr{"", "v1", "secrets", true};

inline constexpr char kGoTarball[] = "cluster-api-provider-harvester-v0.2.9.tar.gz";

inline std::string ThirdPartyDir() {
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
    caphv_log_path_ = log_path_;
    log_path_ = std::filesystem::path(bed.dir()) / "logs" / "caphv-go.log";
    std::string out;
    const int rc =
        RunCommand(TestbedScript() + " start-go-provider --dir '" + bed.dir() + "'", &out);
    go_started_ = true;  // stop it at TearDown even when the start failed half-way
    ASSERT_EQ(rc, 0) << "hack/testbed start-go-provider:\n" << out;
  }

  void TearDown() override {
    if (go_started_ && !migrated_) {
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
      ApplyCaphvCrds();
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

  // The Go provider's cluster, once ProvisionWithGo() returned.
  struct GoCluster {
    Pool vm_pool, lb_pool;
    std::string control_plane;  // its control-plane machine
    std::vector<Object> machines;
  };

  // `extra`: more of the HarvesterCluster spec (merged over the pool-mode one).
  GoCluster ProvisionWithGo(const Object& extra = Object::object()) {
    GoCluster c;
    const auto pools = CreatePools({5, 3});
    c.vm_pool = pools[0];
    c.lb_pool = pools[1];
    Object spec = HarvesterClusterSpec();
    spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", c.lb_pool.name}};
    spec["vmNetworkConfig"] = VmNetworkConfig({c.vm_pool});
    spec.merge_patch(extra);
    CreateCluster(spec);
    c.control_plane = cluster_ + "-cp-0";
    CreateMachine(c.control_plane, true, GoMachineSpec());
    CreateMachineDeployment(cluster_ + "-md", 2, GoMachineSpec());

    // Every Machine Running with its Node and its infrastructure provisioned.
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(Eventually(
        [&] {
          c.machines = Machines();
          if (c.machines.size() != 3) return false;
          for (const auto& m : c.machines) {
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
    EXPECT_TRUE(Eventually(
        [&] {
          hc = HarvesterClusterObject();
          return ConditionTrue(hc, "LoadBalancerReady");
        },
        kGoWait, std::chrono::seconds(1)))
        << hc.dump(2);
    return c;
  }

  // The user's takeover: the Go provider stopped, CAPHV's CRDs applied over
  // its own, caphv-manager started (its log: e2e-<test>.log).
  void MigrateToCaphv() {
    std::string out;
    ASSERT_EQ(RunCommand(TestbedScript() + " stop-go-provider --dir '" + Testbed::Get().dir() + "'",
                         &out),
              0)
        << out;
    ApplyCaphvCrds();
    migrated_ = true;
    log_path_ = caphv_log_path_;
    StartManager();
  }

  void ApplyCaphvCrds() {
    std::string out;
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

  bool go_started_ = false;
  bool migrated_ = false;
  std::filesystem::path caphv_log_path_;  // e2e-<test>.log
};

}  // namespace caphv::e2e
