// File: bench/memory_cycle_bench.cc
//
// Does caphv-manager give memory back after work? One run per argument N
// (200), with one manager (`--namespace` of the run, log in
// $CAPHV_TESTBED/logs/memory-cycle-<N>.log) serving one management
// namespace:
//
//   warm-up    a cluster of kWarmUpMachines machines provisioned until ready
//              and deleted until gone (connections, thread pools, metric
//              families and caches exist afterwards), then the same quiet
//              time as after the cycle;
//   before     VmRSS (median of kSamples readings 1 s apart);
//   cycle      a cluster of N machines: all created at once, every
//              HarvesterMachine ready, the Cluster deleted, every
//              HarvesterMachine and VM gone (as provision_bench does);
//   after      kSettleSeconds (75 s) of quiet, longer than the manager's
//              60 s sweep of unused Harvester and workload connections
//              ($CAPHV_BENCH_SETTLE_S overrides it, e.g. to attach heap
//              tools), then VmRSS as above.
//
// Machines have static addresses (spec.networkConfig) in 198.18.0.0/24, a
// benchmarking range no test uses, so N is not bounded by the bed's DHCP
// range (100 addresses shared by everything on the bed): the cycle takes
// .10 .. .10+N-1 (N <= 200), the warm-up .230 and up.
//
// Counters (one iteration; the reported time is the cycle's wall time):
//   rss_before_MiB, rss_peak_MiB (sampled every 200 ms during the cycle),
//   rss_ready_MiB (all N ready), rss_after_MiB, and
//   rss_retained_MiB = after - before;
//   anon_before_MiB / anon_after_MiB   Anonymous of /proc/<pid>/smaps_rollup
//                                      (heap and thread stacks; RSS minus
//                                      the mapped binary and libraries);
//   threads_before / threads_after     the manager's thread count;
//   provision_s, delete_s              as in provision_bench.
//
// Run (needs a bed: hack/testbed up --dir DIR --with-capi --with-harvester):
//   CAPHV_TESTBED=DIR CAPHV_BUILD_DIR=BUILD CAPHV_SOURCE_DIR=SRC BUILD/bench/memory_cycle_bench
//
// Thread safety: single-threaded driver; one sampler thread reads /proc.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "manager_run.h"

namespace caphv::bench {
namespace {

constexpr int kWarmUpMachines = 20;
constexpr char kStaticPrefix[] = "198.18.0.";
constexpr int kCycleFirstHost = 10;
constexpr int kWarmUpFirstHost = 230;
constexpr int kSettleSeconds = 75;
constexpr int kSamples = 5;
constexpr auto kProvisionBound = std::chrono::minutes(15);
constexpr auto kDeleteBound = std::chrono::minutes(15);

// kSettleSeconds, or $CAPHV_BENCH_SETTLE_S (to attach heap tools meanwhile).
std::chrono::seconds Settle() {
  return std::chrono::seconds(EnvInt("CAPHV_BENCH_SETTLE_S", kSettleSeconds));
}

struct Footprint {
  int64_t rss_kib = 0;
  int64_t anon_kib = 0;
  int64_t threads = 0;
};

// Median of kSamples readings, 1 s apart.
Footprint Measure(pid_t pid) {
  std::vector<Footprint> samples;
  for (int i = 0; i < kSamples; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::seconds(1));
    samples.push_back({ResidentKiB(pid), ProcKiB(pid, "smaps_rollup", "Anonymous"),
                       ProcKiB(pid, "status", "Threads")});
  }
  auto median = [&](auto field) {
    std::vector<int64_t> v;
    for (const auto& s : samples) v.push_back(s.*field);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  return {median(&Footprint::rss_kib), median(&Footprint::anon_kib), median(&Footprint::threads)};
}

struct CycleTimes {
  double provision_s = 0;
  double delete_s = 0;
  int64_t rss_ready_kib = 0;
};

// Provisions a cluster of `spec.machines` until all are ready, deletes it
// until all are gone; an error message or "".
std::string Cycle(ProvisionRun& run, const ClusterSpec& spec, CycleTimes* times) {
  if (std::string error = run.PrepareCluster(spec); !error.empty()) return error;
  const auto start = BenchClock::now();
  if (std::string error = run.CreateAll(); !error.empty()) return error;
  int ready = 0;
  if (!testing::Eventually([&] { return (ready = run.ReadyMachines()) == spec.machines; },
                           std::chrono::duration_cast<std::chrono::milliseconds>(kProvisionBound),
                           kPoll)) {
    return std::to_string(ready) + "/" + std::to_string(spec.machines) +
           " machines ready after the bound, see " + run.log_path();
  }
  times->provision_s = SecondsSince(start);
  times->rss_ready_kib = ResidentKiB(run.manager_pid());
  const auto delete_start = BenchClock::now();
  if (std::string error = run.DeleteCluster(); !error.empty()) return error;
  if (!testing::Eventually([&] { return run.AllGone(); },
                           std::chrono::duration_cast<std::chrono::milliseconds>(kDeleteBound),
                           kPoll)) {
    return "machines or VMs left after the bound, see " + run.log_path();
  }
  times->delete_s = SecondsSince(delete_start);
  return "";
}

void BM_MemoryCycle(benchmark::State& state) {
  if (!std::getenv("CAPHV_TESTBED") || !std::getenv("CAPHV_BUILD_DIR")) {
    state.SkipWithError(
        "set CAPHV_TESTBED and CAPHV_BUILD_DIR (bed with --with-capi --with-harvester)");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ProvisionRun run("memory-cycle-" + std::to_string(n));
    if (std::string error = run.SetUp(); !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    CycleTimes warm_up;
    if (std::string error = Cycle(run,
                                  {.machines = kWarmUpMachines,
                                   .static_prefix = kStaticPrefix,
                                   .first_host = kWarmUpFirstHost},
                                  &warm_up);
        !error.empty()) {
      state.SkipWithError(("warm-up: " + error).c_str());
      return;
    }
    std::this_thread::sleep_for(Settle());
    const Footprint before = Measure(run.manager_pid());

    std::optional<ResidentSampler> sampler;
    sampler.emplace(run.manager_pid());
    const auto start = BenchClock::now();
    CycleTimes cycle;
    if (std::string error = Cycle(
            run, {.machines = n, .static_prefix = kStaticPrefix, .first_host = kCycleFirstHost},
            &cycle);
        !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    const double cycle_s = SecondsSince(start);
    const int64_t peak_kib = sampler->peak_kib();
    sampler.reset();
    std::this_thread::sleep_for(Settle());
    const Footprint after = Measure(run.manager_pid());

    state.SetIterationTime(cycle_s);
    state.counters["machines"] = n;
    state.counters["provision_s"] = cycle.provision_s;
    state.counters["delete_s"] = cycle.delete_s;
    state.counters["rss_before_MiB"] = MiB(before.rss_kib);
    state.counters["rss_peak_MiB"] = MiB(peak_kib);
    state.counters["rss_ready_MiB"] = MiB(cycle.rss_ready_kib);
    state.counters["rss_after_MiB"] = MiB(after.rss_kib);
    state.counters["rss_retained_MiB"] = MiB(after.rss_kib - before.rss_kib);
    state.counters["anon_before_MiB"] = MiB(before.anon_kib);
    state.counters["anon_after_MiB"] = MiB(after.anon_kib);
    state.counters["threads_before"] = static_cast<double>(before.threads);
    state.counters["threads_after"] = static_cast<double>(after.threads);
  }
}
BENCHMARK(BM_MemoryCycle)->Arg(200)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace caphv::bench

BENCHMARK_MAIN();
