// File: bench/manager_run.h
//
// What the end-to-end benchmarks (provision_bench, memory_cycle_bench) share:
// the provider's manager and CRDs, and ProvisionRun, one management namespace served by that
// manager in which clusters of N machines are created and deleted one after the other.
//
//   ProvisionRun run("provision-bench-50");   // log: $CAPHV_TESTBED/logs/<it>.log
//   run.SetUp();                              // namespace, identity, manager
//   run.PrepareCluster({.machines = 50});     // its kubeconfig and bootstrap Secrets
//   run.CreateAll();                          // Cluster + HarvesterCluster + N pairs
//   ... run.ReadyMachines() == 50 ...
//   run.DeleteCluster(); ... run.AllGone() ...
//
// Each cluster has fresh names and its own `<cluster>-kubeconfig` and
// bootstrap Secrets; all clusters of a run share one fresh Harvester target
// namespace and the identity Secret. Machines are 2 CPUs, 4Gi, the
// `default/image-ubuntu` disk of 10Gi and a NIC on ClusterSpec::network
// (`default/vlan100` unless set: its simulated DHCP range has 100 addresses
// shared by the whole bed; `default/vlan300` has 3,800); their address is a
// DHCP lease unless ClusterSpec::static_prefix gives each machine
// spec.networkConfig `<prefix><first_host + i>/24`. The destructor stops the
// manager and deletes both namespaces.
//
// The manager is caphv-manager (`--namespace` of the run) or, with
// Provider::kGo, the Go provider v0.2.9 it replaces (`caphv-go`, built by
// hack/build-testbins.sh caphv-go; it serves every namespace and runs with its
// own CRDs, which InstallCrds applies over CAPHV's). caphv-manager serves its
// webhooks on the bed's serving certificate, and its mutating webhook
// mharvestermachine.kb.io is registered for the run's namespace, as a
// clusterctl or Helm install registers it (HarvesterMachines are created with
// the finalizer); the validating webhooks, which write nothing, are not (the
// Go provider runs without its own). CAPHV_BENCH_WEBHOOKS=0 leaves it out.
//
// The child process and its /proc and /metrics readings are in
// process_readings.h. Header-only (bench binaries are single files). Thread
// safety: one driver thread.

#pragma once

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kube/base64.h"
#include "kube/client.h"
#include "process_readings.h"
#include "support/testbed.h"
#include "support/webhook_configs.h"

namespace caphv::bench {

inline const kube::GroupVersionResource kClusters{"cluster.x-k8s.io", "v1beta1", "clusters", true};
inline const kube::GroupVersionResource kMachines{"cluster.x-k8s.io", "v1beta1", "machines", true};
inline const kube::GroupVersionResource kHarvesterClusters{"infrastructure.cluster.x-k8s.io",
                                                           "v1alpha1", "harvesterclusters", true};
inline const kube::GroupVersionResource kHarvesterMachines{"infrastructure.cluster.x-k8s.io",
                                                           "v1alpha1", "harvestermachines", true};
inline const kube::GroupVersionResource kVirtualMachines{"kubevirt.io", "v1", "virtualmachines",
                                                         true};

inline constexpr char kClusterNameLabel[] = "cluster.x-k8s.io/cluster-name";
inline constexpr auto kPoll = std::chrono::milliseconds(250);

enum class Provider { kCaphv, kGo };

// The Go provider's binary: $CAPHV_GO_PROVIDER, else caphv-go in the cache
// of Go-built tools ($CAPHV_CACHE_DIR, default ~/.cache/caphv).
inline std::string GoProviderBinary() {
  if (const char* env = std::getenv("CAPHV_GO_PROVIDER"); env && *env) return env;
  const char* cache = std::getenv("CAPHV_CACHE_DIR");
  const std::string dir =
      cache && *cache
          ? std::string(cache)
          : std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + "/.cache/caphv";
  return dir + "/bin/current/caphv-go";
}

// The user agent prefix of the provider's requests in the audit logs (the
// Go client's default names the binary).
inline std::string UserAgentOf(Provider p) {
  return p == Provider::kGo ? "caphv-go" : "caphv-manager";
}

// The provider's CRDs on the management cluster (idempotent: `kubectl apply
// --server-side` with the field manager every other apply of them uses), once
// per process and provider.
inline bool InstallCrds(Provider p = Provider::kCaphv) {
  static std::map<Provider, bool> installed;
  if (auto it = installed.find(p); it != installed.end()) return it->second;
  const std::string kubectl =
      "kubectl --kubeconfig '" + testing::Testbed::Get().KubeconfigPath(testing::kMgmt) + "' ";
  const std::string crds =
      p == Provider::kGo
          ? (std::filesystem::path(GoProviderBinary()).parent_path() / "caphv-go-config/crds.yaml")
                .string()
          : testing::SourcePath("config/crd/bases");
  const bool ok =
      testing::RunCommand(kubectl + "apply --server-side --force-conflicts -f " + crds) == 0 &&
      testing::RunCommand(kubectl + "wait --for condition=established --timeout=60s -f " + crds) ==
          0;
  installed.clear();  // the other provider's must be applied again
  installed[p] = ok;
  return ok;
}

// CPU seconds used so far by each process of the bed ($CAPHV_TESTBED/run/<name>.pid:
// apiserver-mgmt, apiserver-harvester, apiserver-workload, etcd, capi,
// caphv-sim, kwok, controller managers), by name.
inline std::map<std::string, double> BedCpuSeconds() {
  std::map<std::string, double> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(
           std::filesystem::path(testing::Testbed::Get().dir()) / "run", ec)) {
    if (e.path().extension() != ".pid") continue;
    const pid_t pid = std::atoi(ReadWholeFile(e.path()).c_str());
    if (pid > 0) out[e.path().stem().string()] = CpuSeconds(pid);
  }
  return out;
}

struct ClusterSpec {
  int machines = 0;
  // "a.b.c.": machine i gets the static address a.b.c.<first_host + i>/24
  // (gateway a.b.c.1); "" for DHCP.
  std::string static_prefix;
  int first_host = 10;
  std::string network = "default/vlan100";
};

// One management namespace, the manager that serves it, and the cluster
// being provisioned or deleted in it.
class ProvisionRun {
 public:
  explicit ProvisionRun(std::string log_name, Provider provider = Provider::kCaphv)
      : log_name_(std::move(log_name)),
        provider_(provider),
        mgmt_(testing::Testbed::Get().Client(testing::kMgmt)),
        harvester_(testing::Testbed::Get().Client(testing::kHarvester)),
        ns_(testing::UniqueName("provision-bench")),
        target_ns_(testing::UniqueName("bench-hv")) {}

  ~ProvisionRun() { CleanUp(); }
  ProvisionRun(const ProvisionRun&) = delete;
  ProvisionRun& operator=(const ProvisionRun&) = delete;

  // Namespace, identity Secret and a ready manager; an error message or "".
  std::string SetUp() {
    if (!InstallCrds(provider_)) return "cannot install the provider's CRDs";
    auto& bed = testing::Testbed::Get();
    kube::Object ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}};
    if (auto r = mgmt_->Create(kube::resources::kNamespaces, "", ns); !r.ok()) {
      return "namespace: " + r.status().ToString();
    }
    namespace_created_ = true;
    if (std::string error = CreateSecret(
            kIdentitySecret, {},
            {{"kubeconfig", ReadWholeFile(bed.KubeconfigPath(testing::kHarvester))}}, "Opaque");
        !error.empty()) {
      return error;
    }
    log_path_ = std::filesystem::path(bed.dir()) / "logs" / (log_name_ + ".log");
    std::filesystem::create_directories(log_path_.parent_path());
    const char* webhooks = std::getenv("CAPHV_BENCH_WEBHOOKS");
    if (provider_ == Provider::kCaphv && !(webhooks && std::string(webhooks) == "0")) {
      webhook_port_ = testing::FreePort();
    }
    if (std::string error = StartManager(); !error.empty()) return error;
    return webhook_port_ ? RegisterMachineWebhook() : "";
  }

  // Kills the manager (SIGKILL: nothing it held is written back) and starts
  // a new one, ready; an error message or "". The log is appended to.
  std::string RestartManager() {
    manager_->Stop(SIGKILL);
    manager_.reset();
    return StartManager();
  }

  pid_t manager_pid() const { return manager_->pid(); }
  int metrics_port() const { return metrics_port_; }
  const std::string& log_path() const { return log_path_.native(); }

  // Names a new cluster and creates its kubeconfig and bootstrap Secrets;
  // an error message or "".
  std::string PrepareCluster(const ClusterSpec& spec) {
    cluster_ = testing::UniqueName("bench");
    spec_ = spec;
    auto& bed = testing::Testbed::Get();
    std::string error =
        CreateSecret(cluster_ + "-kubeconfig", {{kClusterNameLabel, cluster_}},
                     {{"value", ReadWholeFile(bed.KubeconfigPath(testing::kWorkload))}},
                     "cluster.x-k8s.io/secret");
    if (error.empty()) {
      error = CreateSecret(BootstrapSecret(), {{kClusterNameLabel, cluster_}},
                           {{"value", "#cloud-config\nruncmd:\n- echo provision-bench\n"},
                            {"format", "cloud-config"}},
                           "cluster.x-k8s.io/secret");
    }
    return error;
  }

  // The prepared cluster: the Cluster, its HarvesterCluster (DHCP load
  // balancer) and spec.machines machines, all created at once; an error
  // message or "".
  std::string CreateAll() {
    const ClusterSpec& spec = spec_;
    kube::Object hc = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                       {"kind", "HarvesterCluster"},
                       {"metadata", {{"name", cluster_}, {"namespace", ns_}}},
                       {"spec",
                        {{"identitySecret", {{"namespace", ns_}, {"name", kIdentitySecret}}},
                         {"targetNamespace", target_ns_},
                         {"loadBalancerConfig", {{"ipamType", "dhcp"}}}}}};
    if (auto r = mgmt_->Create(kHarvesterClusters, ns_, hc); !r.ok()) {
      return "HarvesterCluster: " + r.status().ToString();
    }
    kube::Object cluster = {
        {"apiVersion", "cluster.x-k8s.io/v1beta1"},
        {"kind", "Cluster"},
        {"metadata", {{"name", cluster_}, {"namespace", ns_}}},
        {"spec",
         {{"clusterNetwork",
           {{"pods", {{"cidrBlocks", kube::Object::array({"10.52.0.0/16"})}}},
            {"services", {{"cidrBlocks", kube::Object::array({"10.53.0.0/16"})}}}}},
          {"infrastructureRef",
           {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "HarvesterCluster"},
            {"name", cluster_},
            {"namespace", ns_}}}}}};
    if (auto r = mgmt_->Create(kClusters, ns_, cluster); !r.ok()) {
      return "Cluster: " + r.status().ToString();
    }
    for (int i = 0; i < spec.machines; ++i) {
      if (std::string e = CreateMachine(i); !e.empty()) return e;
    }
    return "";
  }

  // Number of HarvesterMachines with status.ready == true; -1 on error.
  int ReadyMachines() const {
    auto list = mgmt_->List(kHarvesterMachines, ns_);
    if (!list.ok()) return -1;
    return static_cast<int>(
        std::count_if(list->items.begin(), list->items.end(), [](const auto& m) {
          return m.value("status", kube::Object::object()).value("ready", false);
        }));
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
    if (webhook_registered_) {
      mgmt_->Delete(kube::resources::kMutatingWebhookConfigurations, "", ns_).IgnoreError();
      webhook_registered_ = false;
    }
    if (manager_) manager_->Stop(SIGTERM);
    manager_.reset();
    if (namespace_created_) {
      const kube::Object no_finalizers = {{"metadata", {{"finalizers", nullptr}}}};
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
  static constexpr char kIdentitySecret[] = "hv-identity";

  // Starts the provider's manager and waits until it answers /readyz.
  std::string StartManager() {
    auto& bed = testing::Testbed::Get();
    metrics_port_ = testing::FreePort();
    const int probe_port = testing::FreePort();
    const std::string metrics = "127.0.0.1:" + std::to_string(metrics_port_);
    const std::string probe = "127.0.0.1:" + std::to_string(probe_port);
    std::vector<std::string> args;
    if (provider_ == Provider::kGo) {
      args = {GoProviderBinary(),
              "--kubeconfig=" + bed.KubeconfigPath(testing::kMgmt),
              "--leader-elect=false",
              "--metrics-bind-address=" + metrics,
              "--health-probe-bind-address=" + probe,
              "--zap-devel=false"};
    } else {
      args = {
          testing::BuildPath("cmd/caphv-manager/caphv-manager"), "--kubeconfig",
          bed.KubeconfigPath(testing::kMgmt), "--namespace", ns_, "--metrics-bind-address", metrics,
          "--metrics-secure=false", "--health-probe-bind-address", probe,
          // klog at 0 unless $CAPHV_BENCH_V says otherwise, as the
          // figures were measured (no flag means the Go manager's
          // development-mode debug logging).
          "-v=" + std::string(std::getenv("CAPHV_BENCH_V") ? std::getenv("CAPHV_BENCH_V") : "0")};
      if (webhook_port_ != 0) {
        const auto certs = std::filesystem::path(bed.dir()) / "bench-webhook-certs";
        std::filesystem::create_directories(certs);
        const auto pki = std::filesystem::path(bed.dir()) / "pki";
        const auto overwrite = std::filesystem::copy_options::overwrite_existing;
        std::filesystem::copy_file(pki / "serving.crt", certs / "tls.crt", overwrite);
        std::filesystem::copy_file(pki / "serving.key", certs / "tls.key", overwrite);
        args.insert(args.end(), {"--enable-webhooks", "--webhook-port",
                                 std::to_string(webhook_port_), "--webhook-cert-dir", certs});
      }
    }
    manager_ = std::make_unique<testing::ChildProcess>(args, log_path_, /*append=*/restarts_++ > 0);
    if (!manager_->started()) return "cannot start " + args.front();
    const bool ready = testing::Eventually(
        [&] { return testing::RunCommand("curl -fs -m 2 http://" + probe + "/readyz") == 0; },
        std::chrono::seconds(60), kPoll);
    if (!ready) return "the manager is not ready, see " + log_path_.string();
    return "";
  }

  // The mutating webhook configuration of HarvesterMachines, named after and
  // scoped to the run's namespace; returns once the apiserver calls it (a
  // dry-run create comes back with the finalizer). An error message or "".
  std::string RegisterMachineWebhook() {
    const std::string ca =
        ReadWholeFile(std::filesystem::path(testing::Testbed::Get().dir()) / "pki" / "ca.crt");
    for (auto& config : testing::WebhookConfigurations(ns_, webhook_port_, ca, ns_)) {
      if (config.resource != kube::resources::kMutatingWebhookConfigurations) continue;
      auto& hooks = config.object["webhooks"];
      hooks.erase(std::remove_if(hooks.begin(), hooks.end(),
                                 [](const kube::Object& h) {
                                   return h.value("name", "") != "mharvestermachine.kb.io";
                                 }),
                  hooks.end());
      if (auto r = mgmt_->Create(config.resource, "", config.object); !r.ok()) {
        return "MutatingWebhookConfiguration: " + r.status().ToString();
      }
      webhook_registered_ = true;
    }
    const kube::Object probe = HarvesterMachineObject("webhook-probe", kube::Object::object());
    const bool called = testing::Eventually(
        [&] {
          auto r = mgmt_->Create(kHarvesterMachines, ns_, probe, {.dry_run = true});
          return r.ok() && (*r)["metadata"].contains("finalizers");
        },
        std::chrono::seconds(30), kPoll);
    return called ? "" : "the apiserver does not call the HarvesterMachine webhook";
  }

  std::string BootstrapSecret() const { return cluster_ + "-bootstrap"; }

  std::string CreateSecret(const std::string& name,
                           const std::map<std::string, std::string>& labels,
                           const std::map<std::string, std::string>& data,
                           const std::string& type) {
    kube::Object secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", name}, {"namespace", ns_}}},
                           {"type", type},
                           {"data", kube::Object::object()}};
    if (!labels.empty()) secret["metadata"]["labels"] = labels;
    for (const auto& [k, v] : data) secret["data"][k] = kube::Base64Encode(v);
    auto r = mgmt_->Create(kube::resources::kSecrets, ns_, secret);
    return r.ok() ? "" : "Secret " + name + ": " + r.status().ToString();
  }

  // The run's HarvesterMachine `name`: the spec every machine of the run
  // has (and the webhook probe, so that it passes the validating webhook too).
  kube::Object HarvesterMachineObject(const std::string& name, const kube::Object& labels) const {
    kube::Object hm = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                       {"kind", "HarvesterMachine"},
                       {"metadata", {{"name", name}, {"namespace", ns_}}},
                       {"spec",
                        {{"cpu", 2},
                         {"memory", "4Gi"},
                         {"sshUser", "ubuntu"},
                         {"sshKeyPair", "default/demo-key"},
                         {"volumes", kube::Object::array({{{"volumeType", "image"},
                                                           {"imageName", "default/image-ubuntu"},
                                                           {"volumeSize", "10Gi"},
                                                           {"bootOrder", 1}}})},
                         {"networks", kube::Object::array({spec_.network})}}}};
    if (!labels.empty()) hm["metadata"]["labels"] = labels;
    return hm;
  }

  // Machine i of the current cluster: a Machine and its HarvesterMachine,
  // both named `<cluster>-m-<i>`.
  std::string CreateMachine(int i) {
    const std::string name = cluster_ + "-m-" + std::to_string(i);
    const kube::Object labels = {{kClusterNameLabel, cluster_}};
    kube::Object hm = HarvesterMachineObject(name, labels);
    if (!spec_.static_prefix.empty()) {
      hm["spec"]["networkConfig"] = {
          {"address", spec_.static_prefix + std::to_string(spec_.first_host + i)},
          {"subnetMask", "255.255.255.0"},
          {"gateway", spec_.static_prefix + "1"},
          {"dnsServers", kube::Object::array({spec_.static_prefix + "1"})}};
    }
    if (auto r = mgmt_->Create(kHarvesterMachines, ns_, hm); !r.ok()) {
      return "HarvesterMachine " + name + ": " + r.status().ToString();
    }
    kube::Object machine = {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
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

  std::string log_name_;
  Provider provider_;
  int restarts_ = 0;
  std::shared_ptr<kube::Client> mgmt_, harvester_;
  std::string ns_, target_ns_, cluster_;
  ClusterSpec spec_;
  bool namespace_created_ = false;
  int webhook_port_ = 0;  // 0: no webhooks
  bool webhook_registered_ = false;
  std::filesystem::path log_path_;
  std::unique_ptr<testing::ChildProcess> manager_;
  int metrics_port_ = 0;
};

}  // namespace caphv::bench
