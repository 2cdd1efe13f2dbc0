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
// Thread safety: single-threaded driver; one sampler thread reads /proc.

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_counts.h"
#include "kube/base64.h"
#include "kube/client.h"
#include "support/testbed.h"

extern char** environ;

namespace caphv::bench {
namespace {

using kube::GroupVersionResource;
using kube::Object;
using testing::Testbed;
using Clock = std::chrono::steady_clock;

const GroupVersionResource kClusters{"cluster.x-k8s.io", "v1beta1", "clusters", true};
const GroupVersionResource kMachines{"cluster.x-k8s.io", "v1beta1", "machines", true};
const GroupVersionResource kHarvesterClusters{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                              "harvesterclusters", true};
const GroupVersionResource kHarvesterMachines{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                              "harvestermachines", true};
const GroupVersionResource kVirtualMachines{"kubevirt.io", "v1", "virtualmachines", true};

constexpr char kClusterNameLabel[] = "cluster.x-k8s.io/cluster-name";
constexpr char kIdentitySecret[] = "hv-identity";
constexpr auto kProvisionBound = std::chrono::minutes(10);
constexpr auto kDeleteBound = std::chrono::minutes(10);
constexpr auto kPoll = std::chrono::milliseconds(250);

std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using caphv::testing::FreePort;

// VmRSS of `pid` in KiB, 0 when unreadable.
int64_t ResidentKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return 0;
}

// User + system CPU seconds `pid` has used so far, 0 when unreadable.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the parenthesised command name; utime and stime are the
  // 14th and 15th fields of the whole line, the 12th and 13th after it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 1; i <= 13 && fields >> field; ++i) {
    if (i >= 12) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// caphv-manager as a child process, stdout and stderr into one log file;
// SIGKILLed when destroyed while still running.
class ManagerProcess {
 public:
  ManagerProcess(std::vector<std::string> args, const std::filesystem::path& log_path) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ManagerProcess() { Stop(SIGKILL); }
  ManagerProcess(const ManagerProcess&) = delete;
  ManagerProcess& operator=(const ManagerProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Sends `sig`, waits up to 15 s, then SIGKILLs.
  void Stop(int sig) {
    if (pid_ <= 0 || exited_) return;
    ::kill(pid_, sig);
    if (!WaitForExit(std::chrono::seconds(15))) {
      ::kill(pid_, SIGKILL);
      WaitForExit(std::chrono::seconds(5));
    }
  }

 private:
  bool WaitForExit(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!exited_) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
      } else if (Clock::now() >= deadline) {
        return false;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  bool exited_ = false;
};

// Samples the VmRSS of a process every 200 ms on its own thread, keeping the
// peak.
class ResidentSampler {
 public:
  explicit ResidentSampler(pid_t pid)
      : thread_([this, pid](std::stop_token stop) {
          while (!stop.stop_requested()) {
            const int64_t kib = ResidentKiB(pid);
            int64_t seen = peak_kib_.load();
            while (kib > seen && !peak_kib_.compare_exchange_weak(seen, kib)) {
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
          }
        }) {}

  int64_t peak_kib() const { return peak_kib_.load(); }

 private:
  std::atomic<int64_t> peak_kib_{0};
  std::jthread thread_;
};

// controller_runtime_reconcile_total{controller="<controller>",result=...}
// from the manager's Prometheus text, by result ("success", "error",
// "requeue", "requeue_after"); nullopt when /metrics is unreachable.
std::optional<std::map<std::string, double>> ReconcilesByResult(int metrics_port,
                                                                const std::string& controller) {
  std::string text;
  if (testing::RunCommand(
          "curl -fs -m 5 http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", &text) !=
      0) {
    return std::nullopt;
  }
  const std::string series = "controller_runtime_reconcile_total{";
  const std::string controller_label = "controller=\"" + controller + "\"";
  const std::string result_label = "result=\"";
  std::map<std::string, double> totals;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series, 0) != 0) continue;
    const auto close = line.find('}');
    if (close == std::string::npos) continue;
    const std::string labels = line.substr(series.size(), close - series.size());
    if (labels.find(controller_label) == std::string::npos) continue;
    const auto r = labels.find(result_label);
    if (r == std::string::npos) continue;
    const auto value_start = r + result_label.size();
    const std::string result =
        labels.substr(value_start, labels.find('"', value_start) - value_start);
    totals[result] += std::atof(line.c_str() + close + 1);
  }
  return totals;
}

// The CAPHV CRDs on the management cluster (idempotent), once per process.
bool InstallCrds() {
  static const bool installed = [] {
    const std::string kubectl =
        "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(testing::kMgmt) + "' ";
    const std::string crds = testing::SourcePath("config/crd/bases");
    return testing::RunCommand(kubectl + "apply --server-side --force-conflicts -f " + crds) == 0 &&
           testing::RunCommand(kubectl + "wait --for condition=established --timeout=60s -f " +
                               crds) == 0;
  }();
  return installed;
}

// One provisioning run: the objects of one Cluster in one management
// namespace, and the manager that serves them.
class ProvisionRun {
 public:
  explicit ProvisionRun(int machines)
      : machines_(machines),
        mgmt_(Testbed::Get().Client(testing::kMgmt)),
        harvester_(Testbed::Get().Client(testing::kHarvester)),
        ns_(testing::UniqueName("provision-bench")),
        cluster_(testing::UniqueName("bench")),
        target_ns_(testing::UniqueName("bench-hv")) {}

  ~ProvisionRun() { CleanUp(); }
  ProvisionRun(const ProvisionRun&) = delete;
  ProvisionRun& operator=(const ProvisionRun&) = delete;

  // Namespace, Secrets and a ready manager; an error message or "".
  std::string SetUp() {
    if (!InstallCrds()) return "cannot install the CAPHV CRDs";
    auto& bed = Testbed::Get();
    Object ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}};
    if (auto r = mgmt_->Create(kube::resources::kNamespaces, "", ns); !r.ok()) {
      return "namespace: " + r.status().ToString();
    }
    namespace_created_ = true;
    std::string error = CreateSecret(
        kIdentitySecret, {},
        {{"kubeconfig", ReadWholeFile(bed.KubeconfigPath(testing::kHarvester))}}, "Opaque");
    if (error.empty()) {
      error = CreateSecret(cluster_ + "-kubeconfig", {{kClusterNameLabel, cluster_}},
                           {{"value", ReadWholeFile(bed.KubeconfigPath(testing::kWorkload))}},
                           "cluster.x-k8s.io/secret");
    }
    if (error.empty()) {
      error = CreateSecret(BootstrapSecret(), {{kClusterNameLabel, cluster_}},
                           {{"value", "#cloud-config\nruncmd:\n- echo provision-bench\n"},
                            {"format", "cloud-config"}},
                           "cluster.x-k8s.io/secret");
    }
    if (!error.empty()) return error;

    log_path_ = std::filesystem::path(bed.dir()) / "logs" /
                ("provision-bench-" + std::to_string(machines_) + ".log");
    std::filesystem::create_directories(log_path_.parent_path());
    metrics_port_ = FreePort();
    const int probe_port = FreePort();
    manager_ = std::make_unique<ManagerProcess>(
        std::vector<std::string>{
            testing::BuildPath("cmd/caphv-manager/caphv-manager"), "--kubeconfig",
            bed.KubeconfigPath(testing::kMgmt), "--namespace", ns_, "--metrics-bind-address",
            "127.0.0.1:" + std::to_string(metrics_port_), "--health-probe-bind-address",
            "127.0.0.1:" + std::to_string(probe_port)},
        log_path_);
    if (!manager_->started()) return "cannot start caphv-manager";
    const bool ready = testing::Eventually(
        [&] {
          return testing::RunCommand("curl -fs -m 2 http://127.0.0.1:" +
                                     std::to_string(probe_port) + "/readyz") == 0;
        },
        std::chrono::seconds(60), kPoll);
    if (!ready) return "caphv-manager not ready, see " + log_path_.string();
    return "";
  }

  pid_t manager_pid() const { return manager_->pid(); }
  int metrics_port() const { return metrics_port_; }
  const std::string& log_path() const { return log_path_.native(); }

  // Creates the Cluster, the HarvesterCluster and all machines; an error
  // message or "".
  std::string CreateAll() {
    Object hc = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "HarvesterCluster"},
                 {"metadata", {{"name", cluster_}, {"namespace", ns_}}},
                 {"spec",
                  {{"identitySecret", {{"namespace", ns_}, {"name", kIdentitySecret}}},
                   {"targetNamespace", target_ns_},
                   {"loadBalancerConfig", {{"ipamType", "dhcp"}}}}}};
    if (auto r = mgmt_->Create(kHarvesterClusters, ns_, hc); !r.ok()) {
      return "HarvesterCluster: " + r.status().ToString();
    }
    Object cluster = {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                      {"kind", "Cluster"},
                      {"metadata", {{"name", cluster_}, {"namespace", ns_}}},
                      {"spec",
                       {{"clusterNetwork",
                         {{"pods", {{"cidrBlocks", Object::array({"10.52.0.0/16"})}}},
                          {"services", {{"cidrBlocks", Object::array({"10.53.0.0/16"})}}}}},
                        {"infrastructureRef",
                         {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                          {"kind", "HarvesterCluster"},
                          {"name", cluster_},
                          {"namespace", ns_}}}}}};
    if (auto r = mgmt_->Create(kClusters, ns_, cluster); !r.ok()) {
      return "Cluster: " + r.status().ToString();
    }
    for (int i = 0; i < machines_; ++i) {
      if (std::string error = CreateMachine(MachineName(i)); !error.empty()) return error;
    }
    return "";
  }

  // Number of HarvesterMachines with status.ready == true; -1 on error.
  int ReadyMachines() const {
    auto list = mgmt_->List(kHarvesterMachines, ns_);
    if (!list.ok()) return -1;
    return static_cast<int>(std::count_if(
        list->items.begin(), list->items.end(),
        [](const auto& m) { return m.value("status", Object::object()).value("ready", false); }));
  }

  std::string DeleteCluster() {
    auto s = mgmt_->Delete(kClusters, ns_, cluster_);
    return s.ok() ? "" : "delete Cluster: " + s.ToString();
  }

  // True once no HarvesterMachine is left and no VM of the cluster remains.
  bool AllGone() const {
    auto machines = mgmt_->List(kHarvesterMachines, ns_);
    if (!machines.ok() || !machines->items.empty()) return false;
    kube::ListOptions opts;
    opts.label_selector = std::string(kClusterNameLabel) + "=" + cluster_;
    auto vms = harvester_->List(kVirtualMachines, target_ns_, opts);
    return vms.ok() && vms->items.empty();
  }

  // Stops the manager and deletes both namespaces; strips finalizers left
  // behind so nothing of the run stays on the bed.
  void CleanUp() {
    if (manager_) manager_->Stop(SIGTERM);
    manager_.reset();
    if (namespace_created_) {
      const Object no_finalizers = {{"metadata", {{"finalizers", nullptr}}}};
      for (const auto* gvr : {&kHarvesterMachines, &kMachines, &kHarvesterClusters, &kClusters}) {
        if (auto list = mgmt_->List(*gvr, ns_); list.ok()) {
          for (const auto& o : list->items) {
            mgmt_->Delete(*gvr, ns_, kube::NameOf(o)).IgnoreError();
            mgmt_->Patch(*gvr, ns_, kube::NameOf(o), kube::PatchType::kMerge, no_finalizers)
                .status()
                .IgnoreError();
          }
        }
      }
      mgmt_->Delete(kube::resources::kNamespaces, "", ns_).IgnoreError();
      namespace_created_ = false;
    }
    harvester_->Delete(kube::resources::kNamespaces, "", target_ns_).IgnoreError();
    testing::Eventually(
        [&] {
          return mgmt_->Get(kube::resources::kNamespaces, "", ns_).status().IsNotFound() &&
                 harvester_->Get(kube::resources::kNamespaces, "", target_ns_)
                     .status()
                     .IsNotFound();
        },
        std::chrono::seconds(120), std::chrono::seconds(1));
  }

 private:
  std::string BootstrapSecret() const { return cluster_ + "-bootstrap"; }
  std::string MachineName(int i) const { return cluster_ + "-m-" + std::to_string(i); }

  std::string CreateSecret(const std::string& name,
                           const std::map<std::string, std::string>& labels,
                           const std::map<std::string, std::string>& data,
                           const std::string& type) {
    Object secret = {{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", name}, {"namespace", ns_}}},
                     {"type", type},
                     {"data", Object::object()}};
    if (!labels.empty()) secret["metadata"]["labels"] = labels;
    for (const auto& [k, v] : data) secret["data"][k] = kube::Base64Encode(v);
    auto r = mgmt_->Create(kube::resources::kSecrets, ns_, secret);
    return r.ok() ? "" : "Secret " + name + ": " + r.status().ToString();
  }

  // A Machine and its HarvesterMachine, both named `name`.
  std::string CreateMachine(const std::string& name) {
    const Object labels = {{kClusterNameLabel, cluster_}};
    Object hm = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "HarvesterMachine"},
                 {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", labels}}},
                 {"spec",
                  {{"cpu", 2},
                   {"memory", "4Gi"},
                   {"sshUser", "ubuntu"},
                   {"sshKeyPair", "default/demo-key"},
                   {"volumes", Object::array({{{"volumeType", "image"},
                                               {"imageName", "default/image-ubuntu"},
                                               {"volumeSize", "10Gi"},
                                               {"bootOrder", 1}}})},
                   {"networks", Object::array({"default/vlan100"})}}}};
    if (auto r = mgmt_->Create(kHarvesterMachines, ns_, hm); !r.ok()) {
      return "HarvesterMachine " + name + ": " + r.status().ToString();
    }
    Object machine = {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                      {"kind", "Machine"},
                      {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", labels}}},
                      {"spec",
                       {{"clusterName", cluster_},
                        {"bootstrap", {{"dataSecretName", BootstrapSecret()}}},
                        {"infrastructureRef",
                         {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                          {"kind", "HarvesterMachine"},
                          {"name", name},
                          {"namespace", ns_}}}}}};
    if (auto r = mgmt_->Create(kMachines, ns_, machine); !r.ok()) {
      return "Machine " + name + ": " + r.status().ToString();
    }
    return "";
  }

  int machines_;
  std::shared_ptr<kube::Client> mgmt_, harvester_;
  std::string ns_, cluster_, target_ns_;
  bool namespace_created_ = false;
  std::filesystem::path log_path_;
  std::unique_ptr<ManagerProcess> manager_;
  int metrics_port_ = 0;
};

void BM_ProvisionAndDelete(benchmark::State& state) {
  if (!std::getenv("CAPHV_TESTBED") || !std::getenv("CAPHV_BUILD_DIR")) {
    state.SkipWithError(
        "set CAPHV_TESTBED and CAPHV_BUILD_DIR (bed with --with-capi --with-harvester)");
    return;
  }
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    ProvisionRun run(n);
    if (std::string error = run.SetUp(); !error.empty()) {
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
    const auto start = Clock::now();
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

    const auto delete_start = Clock::now();
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
    state.counters["rss_peak_MiB"] = static_cast<double>(rss_peak_kib) / 1024.0;
    state.counters["rss_ready_MiB"] = static_cast<double>(rss_ready_kib) / 1024.0;
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
