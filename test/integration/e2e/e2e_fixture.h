// File: test/integration/e2e/e2e_fixture.h
//
// Fixture of the end-to-end tests: the whole stack as a user runs it. The test
// bed's management apiserver with the Cluster API core manager, the simulated
// Harvester and the workload apiserver, plus one caphv-manager process per
// test (`--namespace <its management namespace>`, no leader election, no
// webhooks), log in $CAPHV_TESTBED/logs/e2e-<test>.log. A test that runs its
// own managers (leader election: LaunchManager + LeaderElectionFlags) clears
// `start_manager_` in its constructor and hands the one left running to
// `manager_` / `log_path_` for TearDown.
//
// Per test: a fresh management namespace holding the identity Secret (the
// bed's harvester.kubeconfig), the `<cluster>-kubeconfig` Secret a control
// plane provider would write (the bed's workload.kubeconfig) and two
// bootstrap data Secrets; a unique Cluster name and a unique Harvester target
// namespace (created by the HarvesterCluster). Helpers create the Cluster API
// objects the way a user does (Cluster without controlPlaneRef, control-plane
// Machines, MachineDeployments over a HarvesterMachineTemplate) and IPPools
// of their own in a /24 no other pool uses.
//
// TearDown deletes the Cluster and waits (bounded) until it is gone, stops
// the manager, then deletes the pools and the target namespace, so the bed
// is left clean; if the controllers do not let the Cluster go, it records a
// failure and strips the finalizers. On failure it prints the tail of the
// manager log and a summary of the machines.
//
// Header-only (the CMake glob builds only *_test.cc). Thread safety: test
// thread only.

#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/base64.h"
#include "kube/client.h"
#include "support/process.h"
#include "support/testbed.h"

extern char** environ;

namespace caphv::e2e {

using caphv::testing::Eventually;
using caphv::testing::Testbed;
using caphv::testing::UniqueName;
using kube::GroupVersionResource;
using kube::Object;

// The generous bound of every wait for the stack to converge.
inline constexpr std::chrono::seconds kWait{180};
inline constexpr std::chrono::milliseconds kPoll{500};

// Cluster API core (management cluster).
inline const GroupVersionResource kClusters{"cluster.x-k8s.io", "v1beta1", "clusters", true};
inline const GroupVersionResource kMachines{"cluster.x-k8s.io", "v1beta1", "machines", true};
inline const GroupVersionResource kMachineDeployments{"cluster.x-k8s.io", "v1beta1",
                                                      "machinedeployments", true};
// CAPHV (management cluster).
inline const GroupVersionResource kHarvesterClusters{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                                     "harvesterclusters", true};
inline const GroupVersionResource kHarvesterMachines{"infrastructure.cluster.x-k8s.io", "v1alpha1",
                                                     "harvestermachines", true};
inline const GroupVersionResource kHarvesterMachineTemplates{
    "infrastructure.cluster.x-k8s.io", "v1alpha1", "harvestermachinetemplates", true};
// Harvester.
inline const GroupVersionResource kVirtualMachines{"kubevirt.io", "v1", "virtualmachines", true};
inline const GroupVersionResource kVirtualMachineInstances{"kubevirt.io", "v1",
                                                           "virtualmachineinstances", true};
inline const GroupVersionResource kIPPools{"loadbalancer.harvesterhci.io", "v1beta1", "ippools",
                                           false};
inline const GroupVersionResource kLoadBalancers{"loadbalancer.harvesterhci.io", "v1beta1",
                                                 "loadbalancers", true};

inline constexpr char kClusterNameLabel[] = "cluster.x-k8s.io/cluster-name";
inline constexpr char kControlPlaneLabel[] = "cluster.x-k8s.io/control-plane";
inline constexpr char kClusterIdLabel[] = "harvester.infrastructure.cluster.x-k8s.io/cluster-id";

// ------------------------------------------------------------------ JSON helpers

// The string at a JSON pointer ("/status/phase"), or "".
inline std::string Str(const Object& o, const std::string& pointer) {
  auto p = Object::json_pointer(pointer);
  return o.contains(p) && o[p].is_string() ? o[p].get<std::string>() : "";
}

inline std::string NameOf(const Object& o) { return Str(o, "/metadata/name"); }

// A metav1.Condition (or CAPI condition) of `status.conditions` by type;
// an empty object when absent.
inline Object ConditionOf(const Object& o, const std::string& type) {
  const auto p = Object::json_pointer("/status/conditions");
  if (!o.contains(p) || !o[p].is_array()) return Object::object();
  for (const auto& c : o[p]) {
    if (c.value("type", "") == type) return c;
  }
  return Object::object();
}

inline bool ConditionTrue(const Object& o, const std::string& type) {
  return ConditionOf(o, type).value("status", "") == "True";
}

// status.allocated of an IPPool object: IP -> owner.
inline std::map<std::string, std::string> AllocatedOf(const Object& pool) {
  std::map<std::string, std::string> out;
  const Object allocated =
      pool.value("status", Object::object()).value("allocated", Object::object());
  for (const auto& [ip, owner] : allocated.items()) {
    out[ip] = owner.is_string() ? owner.get<std::string>() : owner.dump();
  }
  return out;
}

inline bool IsDeleting(const Object& o) { return o["metadata"].contains("deletionTimestamp"); }

// True for "harvester://<uid>" with a non-empty uid.
inline bool IsHarvesterProviderId(const std::string& id) {
  return id.rfind("harvester://", 0) == 0 && id.size() > std::string("harvester://").size();
}

inline bool IsLowerHex(const std::string& s, size_t length) {
  return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) &&
                  !std::isupper(static_cast<unsigned char>(c));
         });
}

// "a.b.c.d" -> its last octet as a number, -1 when not in `prefix`.
inline int LastOctetIn(const std::string& ip, const std::string& prefix) {
  if (ip.rfind(prefix, 0) != 0) return -1;
  try {
    return std::stoi(ip.substr(prefix.size()));
  } catch (...) {
    return -1;
  }
}

inline std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::string LastLines(const std::string& text, size_t n) {
  size_t pos = text.size();
  for (size_t i = 0; i < n && pos > 0; ++i) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos + 1);
}

using caphv::testing::FreePort;

// ------------------------------------------------------------------ the manager

// caphv-manager as a child process; stdout and stderr appended to one log
// file, so a restart keeps the lines of the run before it.
class ManagerProcess : public caphv::testing::ChildProcess {
 public:
  ManagerProcess(std::vector<std::string> args, const std::filesystem::path& log_path)
      : ChildProcess(std::move(args), log_path, /*append=*/true) {}
};

// ------------------------------------------------------------------ pools

// A Harvester IPPool of the test: addresses `prefix + first` .. `prefix + last`.
struct Pool {
  std::string name;
  std::string prefix;  // "172.20.7."
  int first = 0;
  int last = 0;
  bool Contains(const std::string& ip) const {
    const int o = LastOctetIn(ip, prefix);
    return o >= first && o <= last;
  }
};

// ------------------------------------------------------------------ the fixture

class E2ETest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The CAPHV CRDs (idempotent: other suites apply them too).
    auto& bed = Testbed::Get();
    std::string out;
    const std::string kubectl =
        "kubectl --kubeconfig '" + bed.KubeconfigPath(caphv::testing::kMgmt) + "' ";
    ASSERT_EQ(caphv::testing::RunCommand(kubectl + "apply --server-side --force-conflicts -f " +
                                             caphv::testing::SourcePath("config/crd/bases"),
                                         &out),
              0)
        << out;
    ASSERT_EQ(
        caphv::testing::RunCommand(kubectl + "wait --for condition=established --timeout=60s -f " +
                                       caphv::testing::SourcePath("config/crd/bases"),
                                   &out),
        0)
        << out;
  }

  void SetUp() override {
    auto& bed = Testbed::Get();
    mgmt_ = bed.Client(caphv::testing::kMgmt);
    harvester_ = bed.Client(caphv::testing::kHarvester);
    workload_ = bed.Client(caphv::testing::kWorkload);
    ns_ = std::make_unique<caphv::testing::ScopedNamespace>(mgmt_, "e2e");
    cluster_ = UniqueName("e2e");
    target_ns_ = UniqueName("e2e-hv");
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    log_path_ =
        std::filesystem::path(bed.dir()) / "logs" / ("e2e-" + std::string(info->name()) + ".log");
    std::filesystem::create_directories(log_path_.parent_path());
    std::filesystem::remove(log_path_);

    // The identity Secret: access to Harvester.
    const std::string harvester_kubeconfig =
        ReadWholeFile(bed.KubeconfigPath(caphv::testing::kHarvester));
    CreateSecret("hv-identity", {}, {{"kubeconfig", harvester_kubeconfig}}, "Opaque");
    // What a control plane provider writes: access to the workload cluster.
    CreateSecret(cluster_ + "-kubeconfig", {{kClusterNameLabel, cluster_}},
                 {{"value", ReadWholeFile(bed.KubeconfigPath(caphv::testing::kWorkload))}},
                 "cluster.x-k8s.io/secret");
    // Bootstrap data, as a bootstrap provider would leave it.
    for (const char* role : {"control-plane", "worker"}) {
      CreateSecret(BootstrapSecret(role), {{kClusterNameLabel, cluster_}},
                   {{"value", std::string("#cloud-config\nruncmd:\n- echo e2e ") + role + "\n"},
                    {"format", "cloud-config"}},
                   "cluster.x-k8s.io/secret");
    }
    if (start_manager_) StartManager();
  }

  void TearDown() override {
    if (HasFailure()) PrintDiagnostics();
    DeleteClusterAndWait();
    if (manager_) manager_->Stop(SIGTERM);
    manager_.reset();
    // Under ASan/UBSan (build-asan) a sanitizer report in the manager is a failure.
    const std::string log = ManagerLog();
    for (const char* report :
         {"runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"}) {
      const auto at = log.find(report);
      EXPECT_EQ(at, std::string::npos)
          << "caphv-manager: " << log.substr(at == std::string::npos ? 0 : at, 2000);
    }
    for (const auto& p : pools_) harvester_->Delete(kIPPools, "", p.name).IgnoreError();
    harvester_->Delete(kube::resources::kNamespaces, "", target_ns_).IgnoreError();
    ns_.reset();
  }

  // ---------------------------------------------------------------- manager

  // A caphv-manager started by LaunchManager.
  struct Launched {
    std::unique_ptr<ManagerProcess> process;
    int probe_port = 0;
    int metrics_port = 0;
  };

  // Starts caphv-manager for this test's namespace with `extra` flags, its
  // log appended to `log_path`, and waits until /readyz answers 200 (for a
  // replica that does not lead: its caches synced). Its management cluster
  // is `manager_kubeconfig_`, the bed's mgmt when empty.
  void LaunchManager(const std::vector<std::string>& extra, const std::filesystem::path& log_path,
                     Launched* out) {
    auto& bed = Testbed::Get();
    out->probe_port = FreePort();
    out->metrics_port = FreePort();
    std::vector<std::string> args = {caphv::testing::BuildPath("cmd/caphv-manager/caphv-manager"),
                                     "--kubeconfig",
                                     manager_kubeconfig_.empty()
                                         ? bed.KubeconfigPath(caphv::testing::kMgmt)
                                         : manager_kubeconfig_,
                                     "--namespace",
                                     ns(),
                                     "--metrics-bind-address",
                                     "127.0.0.1:" + std::to_string(out->metrics_port),
                                     "--health-probe-bind-address",
                                     "127.0.0.1:" + std::to_string(out->probe_port)};
    args.insert(args.end(), extra.begin(), extra.end());
    out->process = std::make_unique<ManagerProcess>(std::move(args), log_path);
    ASSERT_TRUE(out->process->started());
    std::string curl_out;
    ASSERT_TRUE(Eventually(
        [&] {
          return caphv::testing::RunCommand("curl -fs -m 2 http://127.0.0.1:" +
                                                std::to_string(out->probe_port) + "/readyz",
                                            &curl_out) == 0;
        },
        std::chrono::seconds(30), kPoll))
        << "caphv-manager not ready:\n"
        << LastLines(ReadWholeFile(log_path), 40);
  }

  // Leader election on Lease `lease` in this test's namespace, with short
  // timings: lease 6 s, renew deadline 4 s, retry period 1 s.
  std::vector<std::string> LeaderElectionFlags(const std::string& lease) const {
    return {"--leader-elect",
            "--leader-election-namespace",
            ns(),
            "--leader-election-id",
            lease,
            "--leader-elect-lease-duration=6s",
            "--leader-elect-renew-deadline=4s",
            "--leader-elect-retry-period=1s"};
  }

  void StartManager() {
    Launched launched;
    LaunchManager({}, log_path_, &launched);
    manager_ = std::move(launched.process);
    probe_port_ = launched.probe_port;
    metrics_port_ = launched.metrics_port;
  }

  // SIGKILL, as a node failure or an OOM kill would.
  void KillManager() {
    ASSERT_TRUE(manager_ && manager_->running()) << "the manager had already exited";
    manager_->Stop(SIGKILL);
    manager_.reset();
  }

  std::string ManagerLog() const { return ReadWholeFile(log_path_); }

  // The value of the sample `series` (name{labels} exactly as exposed) on
  // the manager's /metrics; nullopt when absent.
  std::optional<double> Metric(const std::string& series) const {
    std::string out;
    if (caphv::testing::RunCommand(
            "curl -fs -m 5 http://127.0.0.1:" + std::to_string(metrics_port_) + "/metrics", &out) !=
        0) {
      return std::nullopt;
    }
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return std::nullopt;
  }

  // ---------------------------------------------------------------- objects

  const std::string& ns() const { return ns_->name(); }
  std::string BootstrapSecret(const std::string& role) const {
    return cluster_ + "-bootstrap-" + role;
  }

  void CreateSecret(const std::string& name, const std::map<std::string, std::string>& labels,
                    const std::map<std::string, std::string>& data, const std::string& type) {
    Object secret = {{"apiVersion", "v1"},
                     {"kind", "Secret"},
                     {"metadata", {{"name", name}, {"namespace", ns()}}},
                     {"type", type},
                     {"data", Object::object()}};
    if (!labels.empty()) secret["metadata"]["labels"] = labels;
    for (const auto& [k, v] : data) secret["data"][k] = kube::Base64Encode(v);
    auto r = mgmt_->Create(kube::resources::kSecrets, ns(), secret);
    ASSERT_TRUE(r.ok()) << "Secret " << name << ": " << r.status().ToString();
  }

  // The HarvesterCluster spec every test starts from: DHCP load balancer.
  Object HarvesterClusterSpec() const {
    return {{"identitySecret", {{"namespace", ns()}, {"name", "hv-identity"}}},
            {"targetNamespace", target_ns_},
            {"loadBalancerConfig", {{"ipamType", "dhcp"}}}};
  }

  // vmNetworkConfig over `pools` (one: ipPoolRef; several: ipPoolRefs).
  static Object VmNetworkConfig(const std::vector<Pool>& pools) {
    Object c = {{"gateway", pools.front().prefix + "1"},
                {"subnetMask", "255.255.255.0"},
                {"dnsServers", Object::array({"10.0.10.2"})}};
    if (pools.size() == 1) {
      c["ipPoolRef"] = pools.front().name;
    } else {
      c["ipPoolRefs"] = Object::array();
      for (const auto& p : pools) c["ipPoolRefs"].push_back(p.name);
    }
    return c;
  }

  // The Cluster (no controlPlaneRef: machine-based control plane) and its
  // HarvesterCluster, both named `name` (default `cluster_`).
  void CreateCluster(const Object& harvester_cluster_spec, std::string name = {}) {
    if (name.empty()) name = cluster_;
    Object hc = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "HarvesterCluster"},
                 {"metadata", {{"name", name}, {"namespace", ns()}}},
                 {"spec", harvester_cluster_spec}};
    auto r = mgmt_->Create(kHarvesterClusters, ns(), hc);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Object cluster = {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                      {"kind", "Cluster"},
                      {"metadata", {{"name", name}, {"namespace", ns()}}},
                      {"spec",
                       {{"clusterNetwork",
                         {{"pods", {{"cidrBlocks", Object::array({"10.52.0.0/16"})}}},
                          {"services", {{"cidrBlocks", Object::array({"10.53.0.0/16"})}}}}},
                        {"infrastructureRef",
                         {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                          {"kind", "HarvesterCluster"},
                          {"name", name},
                          {"namespace", ns()}}}}}};
    r = mgmt_->Create(kClusters, ns(), cluster);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // A HarvesterMachine spec: 2 CPUs, 4Gi, the ubuntu image disk booting
  // first, one NIC on default/vlan100.
  static Object MachineSpec() {
    return {{"cpu", 2},
            {"memory", "4Gi"},
            {"sshUser", "ubuntu"},
            {"sshKeyPair", "default/demo-key"},
            {"volumes", Object::array({{{"volumeType", "image"},
                                        {"imageName", "default/image-ubuntu"},
                                        {"volumeSize", "40Gi"},
                                        {"bootOrder", 1}}})},
            {"networks", Object::array({"default/vlan100"})}};
  }

  // A standalone Machine and its HarvesterMachine, both named `name`.
  void CreateMachine(const std::string& name, bool control_plane,
                     const Object& spec = MachineSpec()) {
    Object labels = {{kClusterNameLabel, cluster_}};
    if (control_plane) labels[kControlPlaneLabel] = "";
    Object hm = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "HarvesterMachine"},
                 {"metadata", {{"name", name}, {"namespace", ns()}, {"labels", labels}}},
                 {"spec", spec}};
    auto r = mgmt_->Create(kHarvesterMachines, ns(), hm);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Object machine = {
        {"apiVersion", "cluster.x-k8s.io/v1beta1"},
        {"kind", "Machine"},
        {"metadata", {{"name", name}, {"namespace", ns()}, {"labels", labels}}},
        {"spec",
         {{"clusterName", cluster_},
          {"bootstrap",
           {{"dataSecretName", BootstrapSecret(control_plane ? "control-plane" : "worker")}}},
          {"infrastructureRef",
           {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "HarvesterMachine"},
            {"name", name},
            {"namespace", ns()}}}}}};
    r = mgmt_->Create(kMachines, ns(), machine);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // Workers: a HarvesterMachineTemplate and a MachineDeployment, both named
  // `name`.
  void CreateMachineDeployment(const std::string& name, int replicas,
                               const Object& spec = MachineSpec()) {
    Object tmpl = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                   {"kind", "HarvesterMachineTemplate"},
                   {"metadata", {{"name", name}, {"namespace", ns()}}},
                   {"spec", {{"template", {{"spec", spec}}}}}};
    auto r = mgmt_->Create(kHarvesterMachineTemplates, ns(), tmpl);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const Object selector = {{kClusterNameLabel, cluster_},
                             {"cluster.x-k8s.io/deployment-name", name}};
    Object md = {
        {"apiVersion", "cluster.x-k8s.io/v1beta1"},
        {"kind", "MachineDeployment"},
        {"metadata",
         {{"name", name}, {"namespace", ns()}, {"labels", {{kClusterNameLabel, cluster_}}}}},
        {"spec",
         {{"clusterName", cluster_},
          {"replicas", replicas},
          {"selector", {{"matchLabels", selector}}},
          {"template",
           {{"metadata", {{"labels", selector}}},
            {"spec",
             {{"clusterName", cluster_},
              {"bootstrap", {{"dataSecretName", BootstrapSecret("worker")}}},
              {"infrastructureRef",
               {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                {"kind", "HarvesterMachineTemplate"},
                {"name", name},
                {"namespace", ns()}}}}}}}}}};
    r = mgmt_->Create(kMachineDeployments, ns(), md);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  void ScaleMachineDeployment(const std::string& name, int replicas) {
    auto r = mgmt_->Patch(kMachineDeployments, ns(), name, kube::PatchType::kMerge,
                          {{"spec", {{"replicas", replicas}}}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // An IPPool of `size` addresses (.10 upwards) in a /24 of 172.20.x.0 that
  // no other pool uses, scoped to the target namespace, deleted at TearDown.
  Pool CreatePool(int size) { return CreatePools({size}).front(); }

  // Pools side by side in one fresh /24: the first at .10, the next at .30, ...
  std::vector<Pool> CreatePools(const std::vector<int>& sizes) {
    std::set<std::string> used_prefixes;
    std::set<int64_t> used_priorities;
    if (auto list = harvester_->List(kIPPools, ""); list.ok()) {
      for (const auto& p : list->items) {
        for (const auto& r : p["spec"].value("ranges", Object::array())) {
          const std::string subnet = r.value("subnet", "");
          used_prefixes.insert(subnet.substr(0, subnet.rfind('.') + 1));
        }
        used_priorities.insert(p["spec"].value("selector", Object::object()).value("priority", 0));
      }
    }
    static std::mt19937 rng{std::random_device{}()};
    std::string prefix;
    do {
      prefix = "172.20." + std::to_string(1 + rng() % 250) + ".";
    } while (used_prefixes.count(prefix) != 0);
    std::vector<Pool> out;
    int start = 10;
    for (int size : sizes) {
      int64_t priority = 0;
      do {
        priority = 5000 + rng() % 50000;
      } while (used_priorities.count(priority) != 0);
      used_priorities.insert(priority);
      Pool pool{UniqueName(cluster_ + "-pool"), prefix, start, start + size - 1};
      start += 20;
      Object obj = {
          {"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
          {"kind", "IPPool"},
          {"metadata", {{"name", pool.name}}},
          {"spec",
           {{"description", "e2e " + cluster_},
            {"ranges", Object::array({{{"subnet", prefix + "0/24"},
                                       {"rangeStart", prefix + std::to_string(pool.first)},
                                       {"rangeEnd", prefix + std::to_string(pool.last)},
                                       {"gateway", prefix + "1"}}})},
            {"selector",
             {{"priority", priority},
              {"network", "default/vlan100"},
              {"scope",
               Object::array(
                   {{{"project", "*"}, {"namespace", target_ns_}, {"guestCluster", "*"}}})}}}}}};
      auto r = harvester_->Create(kIPPools, "", obj);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      pools_.push_back(pool);
      out.push_back(pool);
    }
    return out;
  }

  // ---------------------------------------------------------------- reads

  // Objects of a management-namespace collection that belong to the Cluster.
  std::vector<Object> ClusterObjects(const GroupVersionResource& gvr) const {
    kube::ListOptions opts;
    opts.label_selector = std::string(kClusterNameLabel) + "=" + cluster_;
    auto list = mgmt_->List(gvr, ns(), opts);
    return list.ok() ? list->items : std::vector<Object>{};
  }
  std::vector<Object> Machines() const { return ClusterObjects(kMachines); }
  std::vector<Object> HarvesterMachines() const {
    auto list = mgmt_->List(kHarvesterMachines, ns());
    return list.ok() ? list->items : std::vector<Object>{};
  }
  std::optional<Object> HarvesterMachine(const std::string& name) const {
    auto got = mgmt_->Get(kHarvesterMachines, ns(), name);
    return got.ok() ? std::optional<Object>(*got) : std::nullopt;
  }
  // Events recorded about the object `name` of this test's namespace.
  std::vector<Object> EventsOf(const std::string& name) const {
    kube::ListOptions opts;
    opts.field_selector = "involvedObject.name=" + name;
    auto list = mgmt_->List(kube::resources::kEvents, ns(), opts);
    return list.ok() ? list->items : std::vector<Object>{};
  }

  // True once a Warning event with `reason` was recorded about `name`.
  bool HasWarning(const std::string& name, const std::string& reason) const {
    for (const auto& e : EventsOf(name)) {
      if (e.value("type", "") == "Warning" && e.value("reason", "") == reason) return true;
    }
    return false;
  }

  Object HarvesterClusterObject() const {
    auto got = mgmt_->Get(kHarvesterClusters, ns(), cluster_);
    return got.ok() ? *got : Object::object();
  }

  // Objects of a Harvester collection in the target namespace.
  std::vector<Object> OnHarvester(const GroupVersionResource& gvr,
                                  const std::string& label_selector = "") const {
    kube::ListOptions opts;
    opts.label_selector = label_selector;
    auto list = harvester_->List(gvr, gvr.namespaced ? target_ns_ : "", opts);
    return list.ok() ? list->items : std::vector<Object>{};
  }
  std::vector<std::string> NamesOnHarvester(const GroupVersionResource& gvr) const {
    std::vector<std::string> names;
    for (const auto& o : OnHarvester(gvr)) names.push_back(NameOf(o));
    return names;
  }

  // status.allocated of a pool: IP -> owner.
  std::map<std::string, std::string> Allocated(const std::string& pool) const {
    auto got = harvester_->Get(kIPPools, "", pool);
    return got.ok() ? AllocatedOf(*got) : std::map<std::string, std::string>{};
  }
  // The pool entries of HarvesterMachine `name` ("<ns>/<name>@<12 hex>").
  std::vector<std::string> EntriesOf(const std::string& pool, const std::string& machine) const {
    std::vector<std::string> ips;
    for (const auto& [ip, owner] : Allocated(pool)) {
      if (owner.rfind(ns() + "/" + machine + "@", 0) == 0) ips.push_back(ip);
    }
    return ips;
  }
  // Every entry of this test's management namespace in any pool of the bed.
  std::vector<std::string> EntriesOfThisTest() const {
    std::vector<std::string> out;
    auto list = harvester_->List(kIPPools, "");
    if (!list.ok()) return out;
    for (const auto& p : list->items) {
      for (const auto& [ip, owner] : AllocatedOf(p)) {
        if (owner.rfind(ns() + "/", 0) == 0) out.push_back(NameOf(p) + " " + ip + ": " + owner);
      }
    }
    return out;
  }

  // Waits until the Cluster has exactly `count` Machines, all Running with a
  // nodeRef and with a ready HarvesterMachine; returns them.
  std::vector<Object> WaitForRunningMachines(size_t count) {
    std::vector<Object> machines;
    const bool ok = Eventually(
        [&] {
          machines = Machines();
          if (machines.size() != count) return false;
          for (const auto& m : machines) {
            if (Str(m, "/status/phase") != "Running" || Str(m, "/status/nodeRef/name").empty()) {
              return false;
            }
          }
          return true;
        },
        kWait, kPoll);
    EXPECT_TRUE(ok) << "Machines not all Running: " << MachinesSummary();
    return ok ? machines : std::vector<Object>{};
  }

  // Waits until the HarvesterCluster is ready with an endpoint; returns it.
  Object WaitForClusterReady() {
    Object hc;
    EXPECT_TRUE(Eventually(
        [&] {
          hc = HarvesterClusterObject();
          return hc.value("status", Object::object()).value("ready", false) &&
                 !Str(hc, "/spec/controlPlaneEndpoint/host").empty();
        },
        kWait, kPoll))
        << hc.dump(2);
    return hc;
  }

  std::string MachinesSummary() const {
    std::ostringstream out;
    for (const auto& m : Machines()) {
      out << "\n  Machine " << NameOf(m) << " phase=" << Str(m, "/status/phase")
          << " providerID=" << Str(m, "/spec/providerID")
          << " nodeRef=" << Str(m, "/status/nodeRef/name") << (IsDeleting(m) ? " (deleting)" : "");
    }
    for (const auto& hm : HarvesterMachines()) {
      const Object st = hm.value("status", Object::object());
      out << "\n  HarvesterMachine " << NameOf(hm) << " ready=" << st.value("ready", false)
          << " ip=" << st.value("allocatedIPAddress", "")
          << " pool=" << st.value("allocatedPoolRef", "")
          << " providerID=" << Str(hm, "/spec/providerID")
          << " conditions=" << st.value("conditions", Object::array()).dump()
          << (IsDeleting(hm) ? " (deleting)" : "");
    }
    return out.str();
  }

  void PrintDiagnostics() const {
    std::cout << "---- cluster " << cluster_ << " in " << ns() << ", Harvester namespace "
              << target_ns_ << MachinesSummary() << "\n  HarvesterCluster "
              << HarvesterClusterObject().value("status", Object::object()).dump() << "\n  VMs:";
    for (const auto& n : NamesOnHarvester(kVirtualMachines)) std::cout << " " << n;
    std::cout << "\n---- last lines of " << log_path_.string() << ":\n"
              << LastLines(ManagerLog(), 80) << "----\n";
  }

  // Deletes the Cluster and waits until it, its HarvesterCluster and its
  // machines are gone. Bounded: when they stay, records a failure and
  // removes the finalizers so the bed is clean for the next test.
  void DeleteClusterAndWait() {
    if (!mgmt_->Get(kClusters, ns(), cluster_).ok() &&
        !mgmt_->Get(kHarvesterClusters, ns(), cluster_).ok() && HarvesterMachines().empty()) {
      return;
    }
    if (!manager_) StartManager();
    mgmt_->Delete(kClusters, ns(), cluster_).IgnoreError();
    const bool gone = Eventually(
        [&] {
          return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
                 mgmt_->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound() &&
                 HarvesterMachines().empty();
        },
        kWait, std::chrono::seconds(1));
    if (gone) return;
    ADD_FAILURE() << "Cluster " << cluster_ << " not deleted within " << kWait.count() << " s"
                  << MachinesSummary() << "\n"
                  << LastLines(ManagerLog(), 60);
    const Object no_finalizers = {{"metadata", {{"finalizers", nullptr}}}};
    for (const auto* gvr : {&kHarvesterMachines, &kMachines, &kHarvesterClusters, &kClusters}) {
      if (auto list = mgmt_->List(*gvr, ns()); list.ok()) {
        for (const auto& o : list->items) {
          mgmt_->Patch(*gvr, ns(), NameOf(o), kube::PatchType::kMerge, no_finalizers)
              .status()
              .IgnoreError();
        }
      }
    }
  }

  std::shared_ptr<kube::Client> mgmt_, harvester_, workload_;
  std::unique_ptr<caphv::testing::ScopedNamespace> ns_;
  std::string cluster_, target_ns_;
  std::filesystem::path log_path_;
  bool start_manager_ = true;       // SetUp starts `manager_`
  std::string manager_kubeconfig_;  // LaunchManager's --kubeconfig; "" = the bed's mgmt
  std::unique_ptr<ManagerProcess> manager_;
  int metrics_port_ = 0;
  int probe_port_ = 0;
  std::vector<Pool> pools_;
};

}  // namespace caphv::e2e
