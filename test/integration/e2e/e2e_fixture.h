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
// This header declares the fixture and holds the shared constants, the JSON
// helpers and the small members; the longer member bodies (set-up and
// tear-down, starting the manager, creating objects, waits, diagnostics) are
// in e2e_fixture.cc. Thread safety: test thread only.

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

// The generous bound of every wait for the stack to converge, and how often
// a wait looks (a GET or a LIST each time): a wait ends on average half a
// poll after its condition holds, and a scenario waits a few dozen times in
// a row.
inline constexpr std::chrono::seconds kWait{180};
inline constexpr std::chrono::milliseconds kPoll{250};

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

// The Cluster API generation of the bed (hack/testbed: CAPHV_CAPI, kept as
// CAPI_GENERATION in DIR/env): "1.10" (RKE2 providers v0.21, API v1beta1)
// or "1.14" (RKE2 providers v0.25, v1beta2).
inline std::string CapiGeneration() {
  const std::string g = Testbed::Get().EnvValue("CAPI_GENERATION");
  return g.empty() ? "1.10" : g;
}
inline std::string Rke2ApiVersion() { return CapiGeneration() == "1.10" ? "v1beta1" : "v1beta2"; }

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
// file, so a restart keeps the lines of the run before it; `env` added to
// this process's environment.
class ManagerProcess : public caphv::testing::ChildProcess {
 public:
  ManagerProcess(std::vector<std::string> args, const std::filesystem::path& log_path,
                 const std::map<std::string, std::string>& env = {})
      : ChildProcess(std::move(args), log_path, /*append=*/true, env) {}
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
  // Applies the CAPHV CRDs and waits until they are established.
  static void SetUpTestSuite();
  // The namespace, names, Secrets and log path of the test; starts the
  // manager unless `start_manager_` was cleared.
  void SetUp() override;
  // Deletes the Cluster (DeleteClusterAndWait), stops the manager, fails on
  // a sanitizer report in its log, deletes the pools and the target
  // namespace.
  void TearDown() override;

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
                     Launched* out);

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
  std::optional<double> Metric(const std::string& series) const;

  // ---------------------------------------------------------------- objects

  const std::string& ns() const { return ns_->name(); }
  std::string BootstrapSecret(const std::string& role) const {
    return cluster_ + "-bootstrap-" + role;
  }

  // A Secret of this test's namespace; `data` is base64-encoded here.
  void CreateSecret(const std::string& name, const std::map<std::string, std::string>& labels,
                    const std::map<std::string, std::string>& data, const std::string& type);

  // The HarvesterCluster spec every test starts from: DHCP load balancer.
  Object HarvesterClusterSpec() const {
    return {{"identitySecret", {{"namespace", ns()}, {"name", "hv-identity"}}},
            {"targetNamespace", target_ns_},
            {"loadBalancerConfig", {{"ipamType", "dhcp"}}}};
  }

  // vmNetworkConfig over `pools` (one: ipPoolRef; several: ipPoolRefs).
  static Object VmNetworkConfig(const std::vector<Pool>& pools);

  // The Cluster (no controlPlaneRef: machine-based control plane) and its
  // HarvesterCluster, both named `name` (default `cluster_`).
  void CreateCluster(const Object& harvester_cluster_spec, std::string name = {});

  // A HarvesterMachine spec: 2 CPUs, 4Gi, the ubuntu image disk booting
  // first, one NIC on default/vlan100.
  static Object MachineSpec();

  // A standalone Machine and its HarvesterMachine, both named `name`.
  void CreateMachine(const std::string& name, bool control_plane,
                     const Object& spec = MachineSpec(), const std::string& failure_domain = "");

  // Workers: a HarvesterMachineTemplate and a MachineDeployment, both named
  // `name`.
  void CreateMachineDeployment(const std::string& name, int replicas,
                               const Object& spec = MachineSpec());

  void ScaleMachineDeployment(const std::string& name, int replicas) {
    auto r = mgmt_->Patch(kMachineDeployments, ns(), name, kube::PatchType::kMerge,
                          {{"spec", {{"replicas", replicas}}}});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // An IPPool of `size` addresses (.10 upwards) in a /24 of 172.20.x.0 that
  // no other pool uses, scoped to the target namespace, deleted at TearDown.
  Pool CreatePool(int size) { return CreatePools({size}).front(); }

  // Pools side by side in one fresh /24: the first at .10, the next at .30, ...
  std::vector<Pool> CreatePools(const std::vector<int>& sizes,
                                const std::string& network = "default/vlan100");

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
                                  const std::string& label_selector = "") const;
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
  std::vector<std::string> EntriesOfThisTest() const;

  // Waits (at most `within`) until the Cluster has exactly `count` Machines,
  // all Running with a nodeRef and with a ready HarvesterMachine; returns them.
  std::vector<Object> WaitForRunningMachines(size_t count, std::chrono::seconds within = kWait);

  // Waits until the HarvesterCluster is ready with an endpoint; returns it.
  Object WaitForClusterReady();

  // One line per Machine and HarvesterMachine of this test, for messages.
  std::string MachinesSummary() const;

  // The Cluster, its machines, the VMs and the tail of the manager log.
  void PrintDiagnostics() const;

  // Deletes the Cluster and waits until it, its HarvesterCluster and its
  // machines are gone. Bounded: when they stay, records a failure and
  // removes the finalizers so the bed is clean for the next test.
  void DeleteClusterAndWait();

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
