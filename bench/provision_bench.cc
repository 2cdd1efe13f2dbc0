// File: bench/provision_bench.cc
//
// End-to-end provisioning, restart and deletion through caphv-manager (or,
// with --go, the Go provider v0.2.9 it replaces) against the test bed's
// management apiserver (with the Cluster API core manager) and the simulated
// Harvester. One run per N: $CAPHV_BENCH_N (a comma-separated list, e.g.
// 10,50,200,1000), else 10 and 50:
//
//   setup (not measured)  a fresh management namespace with the identity
//                         Secret, the `<cluster>-kubeconfig` Secret and one
//                         bootstrap data Secret; a caphv-manager child process
//                         (`--namespace <it>`, log in
//                         $CAPHV_TESTBED/logs/provision-bench-<N>.log) that
//                         answers /readyz.
//   provision             the Cluster, its HarvesterCluster (DHCP load
//                         balancer, a fresh Harvester target namespace, DHCP
//                         VMs on default/vlan300 when the simulated Harvester
//                         has it, else default/vlan100, which bounds N to 80)
//                         and N Machine + HarvesterMachine pairs, all created
//                         at once; time until every HarvesterMachine reports
//                         status.ready == true, then until the manager is
//                         quiet (no reconcile for 5 s, at most 60 s).
//   restart               SIGKILL the manager and start it again over the N
//                         ready machines; time until it has reconciled N
//                         HarvesterMachines, then until it is quiet;
//                         $CAPHV_BENCH_RESTARTS times (default 1).
//   delete                delete the Cluster; time until no HarvesterMachine
//                         is left and no VirtualMachine with the cluster's
//                         label remains on Harvester; then
//                         $CAPHV_BENCH_SETTLE_S (default 120: past the 60 s sweep of
//                         unused connections and the 90 s idle-connection
//                         timeout) seconds of quiet.
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
//                         while provisioning (until quiet), counted by the
//                         apiservers' audit logs (bed started with
//                         CAPHV_TESTBED_AUDIT=1; -1 without), divided by N;
//                         writes_per_machine their sum over the three
//                         apiservers,
//   restart_s, restart_writes, restart_reads, rss_restart_peak_MiB,
//   rss_restart_MiB       the restart: time to N reconciled, requests it
//                         caused (totals, not per machine), peak RSS during
//                         it (the higher of the 200 ms samples and the
//                         restarted process's VmHWM; the highest over the
//                         restarts) and VmRSS 15 s after it is quiet (the
//                         last restart; past the heap releaser's 10 s tick),
//   delete_requests_per_machine  every request but watches while deleting,
//   rss_start_MiB         VmRSS of the manager as started, ready and idle 5 s,
//                         before anything is created,
//   rss_deleted_MiB       VmRSS after deletion and the settle time,
//   anon_start_MiB, anon_deleted_MiB  RssAnon (heap and stacks, without the
//                         binary's and libraries' pages) at those two times,
//   threads_start, threads_deleted  the manager's threads at those two times,
//   heap_start_MiB, heap_deleted_MiB  caphv_heap_in_use_bytes (malloc's bytes
//                         in use) at those two times: what the manager still
//                         holds, against RssAnon's freed pages kept and
//                         stacks (-1 for the Go provider).
// Printed after each run (lines starting with '#'): every request of the
// manager per machine by apiserver, verb and resource, for provisioning,
// restart and deletion; and the CPU each bed process used in each phase
// (its share of one core), which says whether a phase was bound by the bed.
//
// Run (needs a bed: hack/testbed up --dir DIR --with-capi --with-harvester):
//   CAPHV_TESTBED=DIR CAPHV_BUILD_DIR=BUILD CAPHV_SOURCE_DIR=SRC BUILD/bench/provision_bench [--go]
//
// The manager process, /proc readings and the run itself are in
// manager_run.h (shared with memory_cycle_bench).
//
// Thread safety: single-threaded driver; one sampler thread reads /proc.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "audit_counts.h"
#include "manager_run.h"

namespace caphv::bench {
namespace {

constexpr auto kProvisionBound = std::chrono::minutes(30);
constexpr auto kDeleteBound = std::chrono::minutes(30);
constexpr auto kQuietFor = std::chrono::seconds(5);
constexpr auto kQuietBound = std::chrono::seconds(60);
// After a restart is quiet, before its steady-state RSS is read.
constexpr auto kAfterQuiet = std::chrono::seconds(15);
constexpr const char* kClustersByName[] = {"mgmt", "harvester", "workload"};
constexpr char kBulkNetwork[] = "default/vlan300";
constexpr int kVlan100Bound = 80;

Provider& ProviderFlag() {
  static Provider p = Provider::kCaphv;
  return p;
}

// The three apiservers' audit logs from the moment of construction.
class Audit {
 public:
  Audit() {
    for (const char* cluster : kClustersByName) {
      windows_.emplace(cluster, AuditWindow(std::filesystem::path(testing::Testbed::Get().dir()) /
                                            "logs" / ("audit-" + std::string(cluster) + ".log")));
    }
  }
  bool available() const {
    for (const auto& [cluster, window] : windows_) {
      if (!window.available()) return false;
    }
    return true;
  }

  struct Totals {
    double writes = 0, reads = 0;
  };
  // The provider's writes and reads by apiserver.
  std::map<std::string, Totals> ByCluster() const {
    std::map<std::string, Totals> out;
    for (const auto& [cluster, window] : windows_) {
      Totals& t = out[cluster];
      for (const auto& [verb, count] : window.Count(UserAgentOf(ProviderFlag()))) {
        (verb == "get" || verb == "list" ? t.reads : t.writes) += count;
      }
    }
    return out;
  }
  Totals Sum() const {
    Totals sum;
    for (const auto& [cluster, t] : ByCluster()) sum.writes += t.writes, sum.reads += t.reads;
    return sum;
  }
  // "# <phase> <cluster> <verb resource> <count / divisor>" for every request.
  void Print(const std::string& phase, double divisor) const {
    for (const auto& [cluster, window] : windows_) {
      for (const auto& [what, count] : window.CountByRequest(UserAgentOf(ProviderFlag()))) {
        std::printf("# %-9s %-9s %-52s %8.2f\n", phase.c_str(), cluster.c_str(), what.c_str(),
                    count / divisor);
      }
    }
  }

 private:
  std::map<std::string, AuditWindow> windows_;
};

// CPU each bed process used since construction, as a share of one core.
class BedCpu {
 public:
  BedCpu() : before_(BedCpuSeconds()), start_(BenchClock::now()) {}
  void Print(const std::string& phase) const {
    const double wall = SecondsSince(start_);
    double total = 0;
    std::ostringstream line;
    for (const auto& [name, seconds] : BedCpuSeconds()) {
      auto it = before_.find(name);
      const double used = seconds - (it == before_.end() ? 0 : it->second);
      total += used;
      char cell[96];
      std::snprintf(cell, sizeof cell, " %s=%.2f", name.c_str(), used / wall);
      line << cell;
    }
    std::printf("# %-9s bed CPU (cores over %.1f s): total=%.2f%s\n", phase.c_str(), wall,
                total / wall, line.str().c_str());
  }

 private:
  std::map<std::string, double> before_;
  BenchClock::time_point start_;
};

constexpr const char* kHeapInUse = "caphv_heap_in_use_bytes";

double ReconcileTotal(int metrics_port) {
  auto by_result = ReconcilesByResult(metrics_port, "harvestermachine");
  if (!by_result) return -1;
  double total = 0;
  for (const auto& [result, count] : *by_result) total += count;
  return total;
}

// Waits until the manager's HarvesterMachine reconcile count stays the same
// for kQuietFor (at most kQuietBound).
void WaitQuiet(int metrics_port) {
  const auto deadline = BenchClock::now() + kQuietBound;
  double last = ReconcileTotal(metrics_port);
  auto since = BenchClock::now();
  while (BenchClock::now() < deadline && BenchClock::now() - since < kQuietFor) {
    std::this_thread::sleep_for(kPoll);
    const double now = ReconcileTotal(metrics_port);
    if (now != last) last = now, since = BenchClock::now();
  }
}

void BM_ProvisionAndDelete(benchmark::State& state) {
  if (!std::getenv("CAPHV_TESTBED") || !std::getenv("CAPHV_BUILD_DIR")) {
    state.SkipWithError(
        "set CAPHV_TESTBED and CAPHV_BUILD_DIR (bed with --with-capi --with-harvester)");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  const bool go = ProviderFlag() == Provider::kGo;
  const std::string label = std::string(go ? "go" : "caphv") + " N=" + std::to_string(n);
  for (auto _ : state) {
    ProvisionRun run(
        std::string(go ? "provision-bench-go-" : "provision-bench-") + std::to_string(n),
        ProviderFlag());
    ClusterSpec spec{.machines = n};
    auto hv = testing::Testbed::Get().Client(testing::kHarvester);
    if (hv->Get({"k8s.cni.cncf.io", "v1", "network-attachment-definitions", true}, "default",
                "vlan300")
            .ok()) {
      spec.network = kBulkNetwork;
    } else if (n > kVlan100Bound) {
      state.SkipWithError(
          "N > 80 needs default/vlan300 on the simulated Harvester (a bed "
          "started with the default simulator environment)");
      return;
    }
    std::string setup_error = run.SetUp();
    if (setup_error.empty()) setup_error = run.PrepareCluster(spec);
    if (std::string error = setup_error; !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    // The manager as started, over nothing: what the memory after the
    // deletion is compared with.
    std::this_thread::sleep_for(std::chrono::seconds(5));
    const int64_t rss_start_kib = ResidentKiB(run.manager_pid());
    const int64_t anon_start_kib = ProcKiB(run.manager_pid(), "status", "RssAnon");
    const int64_t threads_start = ProcKiB(run.manager_pid(), "status", "Threads");
    const double heap_start = UnlabelledMetric(run.metrics_port(), kHeapInUse);
    std::optional<ResidentSampler> sampler;
    sampler.emplace(run.manager_pid());

    // Provision.
    std::optional<Audit> audit(std::in_place);
    std::optional<BedCpu> bed_cpu(std::in_place);
    double cpu_before_s = CpuSeconds(run.manager_pid());
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
    const auto reconciles = ReconcilesByResult(run.metrics_port(), "harvestermachine");
    if (!all_ready) {
      const std::string error = std::to_string(ready) + "/" + std::to_string(n) +
                                " machines ready after the bound, see " + run.log_path();
      state.SkipWithError(error.c_str());
      return;
    }
    WaitQuiet(run.metrics_port());
    const double cpu_ready_s = CpuSeconds(run.manager_pid()) - cpu_before_s;
    bed_cpu->Print(label + " provision");
    double writes_total = 0;
    for (const auto& [cluster, t] : audit->ByCluster()) {
      state.counters[cluster + "_writes_per_machine"] = audit->available() ? t.writes / n : -1;
      state.counters[cluster + "_reads_per_machine"] = audit->available() ? t.reads / n : -1;
      writes_total += t.writes;
    }
    state.counters["writes_per_machine"] = audit->available() ? writes_total / n : -1;
    audit->Print(label + " provision", n);

    // Restart over N ready machines, $CAPHV_BENCH_RESTARTS times (default
    // 1): the peak is the highest, the other figures are the last restart's.
    const int64_t rss_before_restart_kib = ResidentKiB(run.manager_pid());
    const int restarts = std::max(1, EnvInt("CAPHV_BENCH_RESTARTS", 1));
    double restart_s = 0;
    int64_t rss_restart_kib = 0;
    int64_t rss_restart_peak_kib = 0;
    Audit::Totals restart_requests;
    for (int i = 0; i < restarts; ++i) {
      audit.emplace();
      bed_cpu.emplace();
      sampler.reset();
      const auto restart_start = BenchClock::now();
      if (std::string error = run.RestartManager(); !error.empty()) {
        state.SkipWithError(error.c_str());
        return;
      }
      sampler.emplace(run.manager_pid(), 150);  // 30 s of readings
      testing::Eventually([&] { return ReconcileTotal(run.metrics_port()) >= n; },
                          std::chrono::duration_cast<std::chrono::milliseconds>(kProvisionBound),
                          kPoll);
      restart_s = SecondsSince(restart_start);
      WaitQuiet(run.metrics_port());
      // The steady state: after the heap releaser's next tick (every 10 s)
      // has given back what the burst of reconciles freed.
      std::this_thread::sleep_for(kAfterQuiet);
      rss_restart_kib = ResidentKiB(run.manager_pid());
      // The fresh process's high-water mark is its exact peak; the sampler
      // only sees every 200 ms.
      const int64_t peak_kib = std::max(sampler->peak_kib(), PeakResidentKiB(run.manager_pid()));
      rss_restart_peak_kib = std::max(rss_restart_peak_kib, peak_kib);
      std::printf("# %s restart %d: %.2f s, RSS peak %.1f MiB, once quiet %.1f MiB\n",
                  label.c_str(), i + 1, restart_s, MiB(peak_kib), MiB(rss_restart_kib));
      std::printf("# %s restart %d: RSS (s:MiB) %s\n", label.c_str(), i + 1,
                  sampler->Timeline().c_str());
      bed_cpu->Print(label + " restart");
      restart_requests = audit->Sum();
      audit->Print(label + " restart", 1);
    }

    // Delete.
    audit.emplace();
    bed_cpu.emplace();
    cpu_before_s = CpuSeconds(run.manager_pid());
    const auto delete_start = BenchClock::now();
    if (std::string error = run.DeleteCluster(); !error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    const bool gone = testing::Eventually(
        [&] { return run.AllGone(); },
        std::chrono::duration_cast<std::chrono::milliseconds>(kDeleteBound), kPoll);
    const double delete_s = SecondsSince(delete_start);
    const double cpu_delete_s = CpuSeconds(run.manager_pid()) - cpu_before_s;
    const int64_t rss_peak_kib = std::max(rss_restart_peak_kib, sampler->peak_kib());
    sampler.reset();
    if (!gone) {
      const std::string error = "machines or VMs left after the bound, see " + run.log_path();
      state.SkipWithError(error.c_str());
      return;
    }
    bed_cpu->Print(label + " delete");
    const Audit::Totals delete_requests = audit->Sum();
    audit->Print(label + " delete", n);
    std::this_thread::sleep_for(std::chrono::seconds(EnvInt("CAPHV_BENCH_SETTLE_S", 120)));
    const int64_t rss_deleted_kib = ResidentKiB(run.manager_pid());
    const int64_t anon_deleted_kib = ProcKiB(run.manager_pid(), "status", "RssAnon");
    const int64_t threads_deleted = ProcKiB(run.manager_pid(), "status", "Threads");
    const double heap_deleted = UnlabelledMetric(run.metrics_port(), kHeapInUse);

    state.SetIterationTime(provision_s);
    state.counters["machines"] = n;
    state.counters["provision_s"] = provision_s;
    state.counters["machines_per_s"] = n / provision_s;
    state.counters["delete_s"] = delete_s;
    state.counters["mgr_cpu_provision_s"] = cpu_ready_s;
    state.counters["mgr_cpu_delete_s"] = cpu_delete_s;
    state.counters["rss_peak_MiB"] = MiB(rss_peak_kib);
    state.counters["rss_ready_MiB"] = MiB(rss_ready_kib);
    state.counters["rss_deleted_MiB"] = MiB(rss_deleted_kib);
    state.counters["rss_start_MiB"] = MiB(rss_start_kib);
    state.counters["anon_start_MiB"] = MiB(anon_start_kib);
    state.counters["anon_deleted_MiB"] = MiB(anon_deleted_kib);
    state.counters["threads_start"] = static_cast<double>(threads_start);
    state.counters["threads_deleted"] = static_cast<double>(threads_deleted);
    state.counters["heap_start_MiB"] = heap_start < 0 ? -1 : heap_start / (1 << 20);
    state.counters["heap_deleted_MiB"] = heap_deleted < 0 ? -1 : heap_deleted / (1 << 20);
    state.counters["restart_s"] = restart_s;
    state.counters["restart_writes"] = audit->available() ? restart_requests.writes : -1;
    state.counters["restart_reads"] = audit->available() ? restart_requests.reads : -1;
    state.counters["rss_before_restart_MiB"] = MiB(rss_before_restart_kib);
    state.counters["rss_restart_peak_MiB"] = MiB(rss_restart_peak_kib);
    state.counters["rss_restart_MiB"] = MiB(rss_restart_kib);
    state.counters["delete_requests_per_machine"] =
        audit->available() ? (delete_requests.writes + delete_requests.reads) / n : -1;
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

// The machine counts of $CAPHV_BENCH_N, else 10 and 50.
std::vector<int64_t> MachineCounts() {
  std::vector<int64_t> out;
  const char* env = std::getenv("CAPHV_BENCH_N");
  std::istringstream list(env && *env ? env : "10,50");
  for (std::string item; std::getline(list, item, ',');) {
    if (const int v = std::atoi(item.c_str()); v > 0) out.push_back(v);
  }
  return out;
}

}  // namespace
}  // namespace caphv::bench

int main(int argc, char** argv) {
  using caphv::bench::Provider;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--go") == 0) {
      caphv::bench::ProviderFlag() = Provider::kGo;
    } else {
      args.push_back(argv[i]);
    }
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  auto* b =
      benchmark::RegisterBenchmark("BM_ProvisionAndDelete", caphv::bench::BM_ProvisionAndDelete);
  for (int64_t n : caphv::bench::MachineCounts()) b->Arg(n);
  b->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  // The Go provider's CRDs replaced CAPHV's: put them back for whatever
  // runs on the bed next.
  if (caphv::bench::ProviderFlag() == Provider::kGo && std::getenv("CAPHV_TESTBED")) {
    caphv::bench::InstallCrds(Provider::kCaphv);
  }
  return 0;
}
