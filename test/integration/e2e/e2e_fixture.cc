// File: test/integration/e2e/e2e_fixture.cc
//
// The longer members of E2ETest (e2e_fixture.h, which describes the
// fixture): suite and test set-up and tear-down, starting caphv-manager and
// reading its metrics, creating the Cluster API objects and the IPPools of a
// test, the reads that wait for the stack to converge, and the diagnostics
// printed on failure. Thread safety: test thread only.

#include "e2e_fixture.h"

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kube/base64.h"
#include "kube/client.h"
#include "support/process.h"
#include "support/testbed.h"

namespace caphv::e2e {

void E2ETest::SetUpTestSuite() {
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

void E2ETest::SetUp() {
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

void E2ETest::TearDown() {
  if (HasFailure()) PrintDiagnostics();
  DeleteClusterAndWait();
  if (manager_) manager_->Stop(SIGTERM);
  manager_.reset();
  // Under ASan/UBSan (build-asan) a sanitizer report in the manager is a failure.
  const std::string log = ManagerLog();
  for (const char* report : {"runtime error:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer"}) {
    const auto at = log.find(report);
    EXPECT_EQ(at, std::string::npos)
        << "caphv-manager: " << log.substr(at == std::string::npos ? 0 : at, 2000);
  }
  for (const auto& p : pools_) harvester_->Delete(kIPPools, "", p.name).IgnoreError();
  harvester_->Delete(kube::resources::kNamespaces, "", target_ns_).IgnoreError();
  ns_.reset();
}

void E2ETest::LaunchManager(const std::vector<std::string>& extra,
                            const std::filesystem::path& log_path, Launched* out) {
  auto& bed = Testbed::Get();
  out->probe_port = FreePort();
  out->metrics_port = FreePort();
  std::vector<std::string> args = {
      caphv::testing::BuildPath("cmd/caphv-manager/caphv-manager"),
      "--kubeconfig",
      manager_kubeconfig_.empty() ? bed.KubeconfigPath(caphv::testing::kMgmt) : manager_kubeconfig_,
      "--namespace",
      ns(),
      "--metrics-bind-address",
      "127.0.0.1:" + std::to_string(out->metrics_port),
      "--metrics-secure=false",
      "--health-probe-bind-address",
      "127.0.0.1:" + std::to_string(out->probe_port)};
  args.insert(args.end(), extra.begin(), extra.end());
  out->process = std::make_unique<ManagerProcess>(std::move(args), log_path);
  ASSERT_TRUE(out->process->started());
  std::string curl_out;
  ASSERT_TRUE(Eventually(
      [&] {
        return caphv::testing::RunCommand(
                   "curl -fs -m 2 http://127.0.0.1:" + std::to_string(out->probe_port) + "/readyz",
                   &curl_out) == 0;
      },
      // Ready within a few hundred milliseconds: a short poll, once per start.
      std::chrono::seconds(30), std::chrono::milliseconds(100)))
      << "caphv-manager not ready:\n"
      << LastLines(ReadWholeFile(log_path), 40);
}

std::optional<double> E2ETest::Metric(const std::string& series) const {
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

void E2ETest::CreateSecret(const std::string& name,
                           const std::map<std::string, std::string>& labels,
                           const std::map<std::string, std::string>& data,
                           const std::string& type) {
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

Object E2ETest::VmNetworkConfig(const std::vector<Pool>& pools) {
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

void E2ETest::CreateCluster(const Object& harvester_cluster_spec, std::string name) {
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

Object E2ETest::MachineSpec() {
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

void E2ETest::CreateMachine(const std::string& name, bool control_plane, const Object& spec,
                            const std::string& failure_domain) {
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
  if (!failure_domain.empty()) machine["spec"]["failureDomain"] = failure_domain;
  r = mgmt_->Create(kMachines, ns(), machine);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
}

void E2ETest::CreateMachineDeployment(const std::string& name, int replicas, const Object& spec) {
  Object tmpl = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                 {"kind", "HarvesterMachineTemplate"},
                 {"metadata", {{"name", name}, {"namespace", ns()}}},
                 {"spec", {{"template", {{"spec", spec}}}}}};
  auto r = mgmt_->Create(kHarvesterMachineTemplates, ns(), tmpl);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const Object selector = {{kClusterNameLabel, cluster_},
                           {"cluster.x-k8s.io/deployment-name", name}};
  Object md = {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
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

std::vector<Pool> E2ETest::CreatePools(const std::vector<int>& sizes, const std::string& network) {
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
            {"network", network},
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

std::vector<Object> E2ETest::OnHarvester(const GroupVersionResource& gvr,
                                         const std::string& label_selector) const {
  kube::ListOptions opts;
  opts.label_selector = label_selector;
  auto list = harvester_->List(gvr, gvr.namespaced ? target_ns_ : "", opts);
  return list.ok() ? list->items : std::vector<Object>{};
}

std::vector<std::string> E2ETest::EntriesOfThisTest() const {
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

std::vector<Object> E2ETest::WaitForRunningMachines(size_t count, std::chrono::seconds within) {
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
      within, kPoll);
  EXPECT_TRUE(ok) << "Machines not all Running: " << MachinesSummary();
  return ok ? machines : std::vector<Object>{};
}

Object E2ETest::WaitForClusterReady() {
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

std::string E2ETest::MachinesSummary() const {
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

void E2ETest::PrintDiagnostics() const {
  std::cout << "---- cluster " << cluster_ << " in " << ns() << ", Harvester namespace "
            << target_ns_ << MachinesSummary() << "\n  HarvesterCluster "
            << HarvesterClusterObject().value("status", Object::object()).dump() << "\n  VMs:";
  for (const auto& n : NamesOnHarvester(kVirtualMachines)) std::cout << " " << n;
  std::cout << "\n---- last lines of " << log_path_.string() << ":\n"
            << LastLines(ManagerLog(), 80) << "----\n";
}

void E2ETest::DeleteClusterAndWait() {
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
      kWait, kPoll);
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

}  // namespace caphv::e2e
