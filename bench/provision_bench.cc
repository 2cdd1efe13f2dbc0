// File: bench/provision_bench.cc
//
// End-to-end provisioning and deletion throughput of caphv-manager against
// the test bed's management apiserver (with the Cluster API core manager)
// and the simulated Harvester. One run per argument N (10 and 50):
//
//   setup (not measured)  a fresh management namespace with the identity
//                         Secret, the `<cluster>-kubeconfig` Secret and one
//                         bootstrap data Secret; a caphv-manager child process
//                         (`--namespace <it>`, log in
//                         $CAPHV_TESTBED/logs/provision-bench-<N>.log) that
//                         answers /readyz.
//   provision             the Cluster, its HarvesterCluster (DHCP load
//                         balancer, a fresh Harvester target namespace, DHCP
//                         VMs) and N Machine + HarvesterMachine pairs, all
//                         created at once; time until every HarvesterMachine
//                         reports status.ready == true.
//   delete                delete the Cluster; time until no HarvesterMachine
//                         is left and no VirtualMachine with the cluster's
//                         label remains on Harvester.
//   cleanup               stop the manager (SIGTERM), delete both namespaces
//                         and wait (bounded, 2 min) until they are gone.
//
// Counters (one iteration each; the reported time is the provisioning time):
//   provision_s, machines_per_s, delete_s,
//   mgr_cpu_provision_s, mgr_cpu_delete_s  CPU seconds (user + system) the
//                         manager used in each phase, from /proc/<pid>/stat,
//   rss_peak_MiB          peak VmRSS of the manager, sampled every 200 ms
//                         from /proc/<pid>/status during provision + delete,
//   rss_ready_MiB         VmRSS when the last machine became ready,
//   reconciles_per_machine controller_runtime_reconcile_total of controller
//                         "harvestermachine" (all results) from the
//                         manager's /metrics when all are ready, divided by N
//                         (-1: /metrics unreachable),
//   reconcile_errors_per_machine  the share of those with result="error"
//                         (optimistic-concurrency conflicts among them),
//   <cluster>_writes_per_machine, <cluster>_reads_per_machine  for mgmt,
//                         harvester and workload: the manager's create +
//                         update + patch + delete, and get + list requests
//                         while provisioning, counted by the apiservers'
//                         audit logs (bed started with CAPHV_TESTBED_AUDIT=1;
//                         -1 without), divided by N; writes_per_machine their
//                         sum over the three apiservers.
//
// Run (needs a bed: hack/testbed up --dir DIR --with-capi --with-harvester):
//   CAPHV_TESTBED=DIR CAPHV_BUILD_DIR=BUILD CAPHV_SOURCE_DIR=SRC BUILD/bench/provision_bench
//
// The simulated vlan100 DHCP range has 100 addresses (10.0.10.100-199),
// shared with everything else on the bed (the load balancer takes one), so N
// stays at most 80.
//
// The manager process, /proc readings and the run itself are in
// manager_run.h (shared with memory_cycle_bench).
//
// Thread safety: single-threaded driver; one sampler thread reads /proc.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "audit_counts.h"
#include "manager_run.h"

namespace caphv::bench {
namespace {

constexpr auto kProvisionBound = std::chrono::minutes(10);
constexpr auto kDeleteBound = std::chrono::minutes(10);

void BM_ProvisionAndDelete(benchmark::State& state) {
  if (!std::getenv("CAPHV_TESTBED") || !std::getenv("CAPHV_BUILD_DIR")) {
    state.SkipWithError(
        "set CAPHV_TESTBED and CAPHV_BUILD_DIR (bed with --with-capi --with-harvester)");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ProvisionRun run("provision-bench-" + std::to_string(n));
    std::string setup_error = run.SetUp();
    if (setup_error.empty()) setup_error = run.PrepareCluster({.machines = n});
    if (std::string error = setup_error; !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    std::optional<ResidentSampler> sampler;
    sampler.emplace(run.manager_pid());

    std::map<std::string, AuditWindow> audit;
    for (const char* cluster : {"mgmt", "harvester", "workload"}) {
      audit.emplace(cluster, AuditWindow(std::filesystem::path(std::getenv("CAPHV_TESTBED")) /
                                         "logs" / ("audit-" + std::string(cluster) + ".log")));
    }
    const double cpu_before_s = CpuSeconds(run.manager_pid());
    const auto start = BenchClock::now();
    if (std::string error = run.CreateAll(); !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    int ready = 0;
    const bool all_ready = testing::Eventually(
        [&] { return (ready = run.ReadyMachines()) == n; },
        std::chrono::duration_cast<std::chrono::milliseconds>(kProvisionBound), kPoll);
    const double provision_s = SecondsSince(start);
    const int64_t rss_ready_kib = ResidentKiB(run.manager_pid());
    const double cpu_ready_s = CpuSeconds(run.manager_pid()) - cpu_before_s;
    const auto reconciles = ReconcilesByResult(run.metrics_port(), "harvestermachine");
    double writes_total = 0;
    for (const auto& [cluster, window] : audit) {
      double writes = -1, reads = -1;
      if (window.available()) {
        writes = reads = 0;
        for (const auto& [verb, count] : window.Count("caphv-manager")) {
          (verb == "get" || verb == "list" ? reads : writes) += count;
        }
        writes_total += writes;
      }
      state.counters[cluster + "_writes_per_machine"] = writes < 0 ? -1 : writes / n;
      state.counters[cluster + "_reads_per_machine"] = reads < 0 ? -1 : reads / n;
    }
    state.counters["writes_per_machine"] = writes_total / n;
    if (!all_ready) {
      const std::string error = std::to_string(ready) + "/" + std::to_string(n) +
                                " machines ready after the bound, see " + run.log_path();
      state.SkipWithError(error.c_str());
      return;
    }

    const auto delete_start = BenchClock::now();
    if (std::string error = run.DeleteCluster(); !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    const bool gone = testing::Eventually(
        [&] { return run.AllGone(); },
        std::chrono::duration_cast<std::chrono::milliseconds>(kDeleteBound), kPoll);
    const double delete_s = SecondsSince(delete_start);
    const double cpu_total_s = CpuSeconds(run.manager_pid()) - cpu_before_s;
    const int64_t rss_peak_kib = sampler->peak_kib();
    sampler.reset();
    if (!gone) {
      const std::string error = "machines or VMs left after the bound, see " + run.log_path();
      state.SkipWithError(error.c_str());
      return;
    }

    state.SetIterationTime(provision_s);
    state.counters["machines"] = n;
    state.counters["provision_s"] = provision_s;
    state.counters["machines_per_s"] = n / provision_s;
    state.counters["delete_s"] = delete_s;
    state.counters["mgr_cpu_provision_s"] = cpu_ready_s;
    state.counters["mgr_cpu_delete_s"] = cpu_total_s - cpu_ready_s;
    state.counters["rss_peak_MiB"] = MiB(rss_peak_kib);
    state.counters["rss_ready_MiB"] = MiB(rss_ready_kib);
    double total = -1, errors = -1;
    if (reconciles) {
      total = errors = 0;
      for (const auto& [result, count] : *reconciles) total += count;
      if (auto e = reconciles->find("error"); e != reconciles->end()) errors = e->second;
    }
    state.counters["reconciles_per_machine"] = total < 0 ? -1 : total / n;
    state.counters["reconcile_errors_per_machine"] = errors < 0 ? -1 : errors / n;
  }
}
BENCHMARK(BM_ProvisionAndDelete)
    ->Arg(10)
    ->Arg(50)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace caphv::bench

BENCHMARK_MAIN();
