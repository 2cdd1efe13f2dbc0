// File: test/integration/e2e/topology_fixture.h
//
// Fixture of the topology scenarios (topology_*_test.cc): the ClusterClass
// `harvester-rke2` applied as the guides say, a Cluster with `spec.topology`,
// waits for Machines whose Nodes CAPHV initialised, and what a deleted
// cluster may not leave on Harvester. Skips when the bed runs without the
// RKE2 providers. The addons' helpers are in topology_addons.h, the view of
// the servers' etcd in topology_etcd.h.
//
// Header-only. Thread safety: test thread only.

#pragma once

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/yaml.h"
#include "e2e_fixture.h"
#include "generate/generate.h"
#include "support/webhook_configs.h"
#include "topology_addons.h"
#include "topology_etcd.h"

namespace caphv::e2e::topology {

class TopologyFixture : public AddonsFixture {
 protected:
  std::string webhook_configs_;  // the name of both configurations, when registered

  void SetUp() override {
    started_ = std::chrono::steady_clock::now();
    if (Testbed::Get().EnvValue("WITH_RKE2") != "1") {
      GTEST_SKIP() << "the test bed runs without the RKE2 providers (hack/testbed up --with-rke2; "
                      "hack/build-testbins.sh rke2 builds them from the third-party tarball)";
    }
    E2ETest::SetUp();
  }
  void TearDown() override {
    if (ns_) E2ETest::TearDown();
    for (const auto& gvr : {kube::resources::kValidatingWebhookConfigurations,
                            kube::resources::kMutatingWebhookConfigurations}) {
      if (!webhook_configs_.empty()) (void)mgmt_->Delete(gvr, "", webhook_configs_);
    }
  }

  // CAPHV with its webhooks, serving with the bed's certificate for
  // 127.0.0.1, registered (scoped to this test's namespace) as its validating
  // and mutating configurations, as `clusterctl init` registers them. At
  // -v=2, the manager logs each admission it patches.
  void StartManagerWithWebhooks() {
    const std::string bed = Testbed::Get().dir();
    const int port = caphv::testing::FreePort();
    Launched launched;
    LaunchManager({"--enable-webhooks", "--webhook-port", std::to_string(port),
                   "--webhook-cert-dir", bed + "/rke2/certs", "-v=2"},
                  log_path_, &launched);
    manager_ = std::move(launched.process);
    ASSERT_TRUE(manager_);
    webhook_configs_ = "caphv-" + ns();
    for (const auto& config : caphv::testing::WebhookConfigurations(
             webhook_configs_, port, ReadWholeFile(bed + "/pki/ca.crt"), ns(), 5)) {
      auto r = mgmt_->Create(config.resource, "", config.object);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
  }

  // kubectl apply -n <ns> -f <file>, as the guides say: by default CAPHV's
  // ClusterClass of the repository. Waits until Cluster API reconciled the
  // class `name` (its variables).
  void ApplyClusterClass(const std::string& file = caphv::testing::SourcePath(
                             "templates/clusterclass-harvester-rke2.yaml"),
                         const std::string& name = "harvester-rke2") {
    const std::string kubectl =
        "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
    std::string applied = file;
    auto docs = api::ParseYaml(ReadWholeFile(file));
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    std::set<std::string> versions;
    for (const auto& d : *docs) versions.merge(generate::Rke2ApiVersionsIn(d));
    if (versions != std::set<std::string>{Rke2ApiVersion()}) {
      // What `caphv generate --rke2-api-version` makes of the class: the API
      // the bed's RKE2 providers serve (a user of the RKE2 providers v0.22+
      // moves any class so: Cluster API v1.11+ reads the templates at the
      // refs' apiVersion; upstream v0.10's class, at v1beta2, runs on v0.21
      // at v1beta1).
      generate::UseRke2ApiVersion(*docs, Rke2ApiVersion());
      applied = Testbed::Get().dir() + "/clusterclass-" + ns() + ".yaml";
      std::ofstream(applied) << generate::ToYamlStream(*docs);
    }
    std::string out;
    ASSERT_EQ(caphv::testing::RunCommand(
                  kubectl + "apply -n " + ns() + " -f '" + applied + "' 2>&1", &out),
              0)
        << out;
    Object cc;
    ASSERT_TRUE(Eventually(
        [&] {
          auto got = mgmt_->Get(kClusterClasses, ns(), name);
          if (!got.ok()) return false;
          cc = *got;
          // No status until Cluster API has reconciled the class once (slow
          // right after an apiserver restart: `null` has no value()).
          return cc.value("status", Object::object()).value("observedGeneration", 0) ==
                     cc.value("metadata", Object::object()).value("generation", -1) &&
                 ConditionTrue(cc, "VariablesReconciled");
        },
        kWait, kPoll))
        << cc.dump(2);
  }

  // The Cluster of the guides: ~30 lines of topology.
  Object TopologyCluster(const Pool& pool) const {
    return {
        {"apiVersion", "cluster.x-k8s.io/v1beta1"},
        {"kind", "Cluster"},
        {"metadata", {{"name", cluster_}, {"namespace", ns()}}},
        {"spec",
         {{"clusterNetwork",
           {{"pods", {{"cidrBlocks", Object::array({"10.52.0.0/16"})}}},
            {"services", {{"cidrBlocks", Object::array({"10.53.0.0/16"})}}}}},
          {"topology",
           {{"class", "harvester-rke2"},
            {"version", kVersion},
            {"controlPlane", {{"replicas", 1}}},
            {"workers",
             {{"machineDeployments",
               Object::array({{{"class", "default-worker"}, {"name", "md-0"}, {"replicas", 2}}})}}},
            {"variables",
             Object::array({
                 {{"name", "identitySecretName"}, {"value", "hv-identity"}},
                 {{"name", "targetNamespace"}, {"value", target_ns_}},
                 {{"name", "vmNetworks"}, {"value", Object::array({"default/vlan100"})}},
                 {{"name", "volumes"},
                  {"value", Object::array({{{"volumeType", "image"},
                                            {"imageName", "default/image-ubuntu"},
                                            {"volumeSize", "40Gi"},
                                            {"bootOrder", 1}}})}},
                 {{"name", "sshKeyPair"}, {"value", "default/demo-key"}},
                 {{"name", "sshUser"}, {"value", "ubuntu"}},
                 {{"name", "gateway"}, {"value", pool.prefix + "1"}},
                 {{"name", "subnetMask"}, {"value", "255.255.255.0"}},
                 {{"name", "ipPoolRef"}, {"value", pool.name}},
                 {{"name", "dnsServers"}, {"value", Object::array({"10.0.10.2"})}},
             })}}}}}};
  }

  void ScaleWorkers(int replicas) {
    const Object patch =
        Object::array({{{"op", "replace"},
                        {"path", "/spec/topology/workers/machineDeployments/0/replicas"},
                        {"value", replicas}}});
    auto r = mgmt_->Patch(kClusters, ns(), cluster_, kube::PatchType::kJson, patch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  std::string InfraClusterName() const {
    auto c = mgmt_->Get(kClusters, ns(), cluster_);
    return c.ok() ? Str(*c, "/spec/infrastructureRef/name") : "";
  }

  // Every Machine Running with a nodeRef, and its Node initialised: the
  // Machine's providerID (harvester://<VM uid>) and no uninitialized taint.
  // Returns the Machines, or nothing on timeout.
  std::vector<Object> WaitForInitialisedNodes(size_t count) {
    std::vector<Object> machines = WaitForRunningMachines(count);
    if (machines.empty()) return machines;
    std::string why;
    const bool ok = Eventually(
        [&] {
          for (const auto& m : machines) {
            const std::string node_name = Str(m, "/status/nodeRef/name");
            auto node = workload_->Get(kNodes, "", node_name);
            if (!node.ok()) {
              why = "Node " + node_name + ": " + node.status().ToString();
              return false;
            }
            const std::string provider_id = Str(*node, "/spec/providerID");
            if (!IsHarvesterProviderId(provider_id) || provider_id != Str(m, "/spec/providerID")) {
              why = "Node " + node_name + " providerID " + provider_id;
              return false;
            }
            for (const auto& t : (*node)["spec"].value("taints", Object::array())) {
              if (t.value("key", "") == kUninitializedTaint) {
                why = "Node " + node_name + " still tainted uninitialized";
                return false;
              }
            }
          }
          return true;
        },
        kWait, kPoll);
    EXPECT_TRUE(ok) << why << MachinesSummary();
    return ok ? machines : std::vector<Object>{};
  }

  bool ServingSecretExists() const {
    return !workload_->Get(kSecrets, "kube-system", "rke2-serving").status().IsNotFound();
  }

  // What of the cluster is left on Harvester (target namespace) and in the
  // pools; "" when nothing.
  std::string LeftOnHarvester() const {
    std::string left;
    for (const auto* gvr :
         {&kVirtualMachines, &kVirtualMachineInstances, &kPvcs, &kLoadBalancers}) {
      for (const auto& n : NamesOnHarvester(*gvr)) left += " " + gvr->resource + "/" + n;
    }
    for (const auto& s : OnHarvester(kServices)) {
      if (Str(s, "/spec/type") == "LoadBalancer") left += " services/" + NameOf(s);
    }
    for (const auto& s : OnHarvester(kSecrets)) {
      if (s["metadata"].value("labels", Object::object()).contains(kClusterNameLabel) ||
          NameOf(s).find("-cloud-init") != std::string::npos) {
        left += " secrets/" + NameOf(s);
      }
    }
    for (const auto& a : OnHarvester(kServiceAccounts, ClusterSelector())) {
      left += " serviceaccounts/" + NameOf(a);
    }
    for (const auto& e : EntriesOfThisTest()) left += " pool entry " + e;
    return left;
  }

  size_t CloudInitSecrets() const {
    size_t n = 0;
    for (const auto& name : NamesOnHarvester(kSecrets)) {
      n += name.find("-cloud-init") != std::string::npos ? 1 : 0;
    }
    return n;
  }

  // The start of the lifecycle scenarios: CAPHV's class, a pool of 8
  // addresses, the addon ConfigMap and the topology Cluster (one server, two
  // agents), until its three Nodes are initialised (their Machines in
  // `machines`). Wrap in ASSERT_NO_FATAL_FAILURE.
  void ProvisionCluster(Pool* pool, std::vector<Object>* machines) {
    ExpectCleanWorkload();
    *pool = CreatePool(8);
    ApplyClusterClass();
    CreateAddonConfigMap();
    CreateCluster(TopologyCluster(*pool));
    *machines = WaitForInitialisedNodes(3);
    ASSERT_EQ(machines->size(), 3u);
  }

  // ProvisionCluster, then three servers: the control plane scaled to 3, the
  // five Nodes initialised (their Machines in `machines`), etcd three healthy
  // voters. Wrap in ASSERT_NO_FATAL_FAILURE.
  void ProvisionThreeServers(Pool* pool, std::vector<Object>* machines) {
    ASSERT_NO_FATAL_FAILURE(ProvisionCluster(pool, machines));
    ScaleControlPlane(3);
    *machines = WaitForInitialisedNodes(5);
    ASSERT_EQ(machines->size(), 5u);
    EtcdView etcd;
    ASSERT_TRUE(Eventually(
        [&] {
          etcd = Etcd();
          return etcd.voters == 3 && etcd.healthy_voters == 3 && etcd.members.size() == 3;
        },
        kWait, kPoll))
        << etcd.Describe();
    ExpectServersSpreadOverZones(*machines);
  }

  // Under Cluster API v1.11+ the three servers are in three failure domains
  // (the zones of the simulated Harvester's hosts), each VM on a host of its
  // machine's zone and each HarvesterMachine reporting it; under v1.10 none
  // is published and none is used.
  void ExpectServersSpreadOverZones(const std::vector<Object>& machines) {
    std::map<std::string, std::string> zone_of_host;
    auto hosts = harvester_->List({"", "v1", "nodes", false}, "");
    ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
    for (const auto& h : hosts->items) {
      zone_of_host[NameOf(h)] = Str(h, "/metadata/labels/topology.kubernetes.io~1zone");
    }
    std::set<std::string> domains;
    for (const auto& m : machines) {
      if (!m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) continue;
      const std::string name = Str(m, "/spec/infrastructureRef/name");
      SCOPED_TRACE(name);
      const std::string domain = Str(m, "/spec/failureDomain");
      auto hm = HarvesterMachine(name);
      ASSERT_TRUE(hm);
      EXPECT_EQ(Str(*hm, "/status/failureDomain"), domain);
      auto vmi = harvester_->Get(kVirtualMachineInstances, target_ns_, name);
      ASSERT_TRUE(vmi.ok()) << vmi.status().ToString();
      const std::string host = Str(*vmi, "/status/nodeName");
      if (CapiGeneration() == "1.10") {
        EXPECT_TRUE(domain.empty()) << domain;
      } else {
        EXPECT_EQ(zone_of_host[host], domain) << "VMI on " << host;
        domains.insert(domain);
      }
    }
    if (CapiGeneration() != "1.10") {
      EXPECT_EQ(domains, (std::set<std::string>{"zone-a", "zone-b", "zone-c"}))
          << MachinesSummary();
    }
  }

  // `clusterctl describe cluster` of the bed's Cluster API release (its
  // CLUSTERCTL_BIN): the Cluster, its HarvesterCluster and `machines`
  // Machines each on a summary line whose status is True, none False or
  // Unknown. v1.14 prints STATUS (Available/Ready), v1.10 READY.
  void ExpectDescribedHealthy(size_t machines) {
    const std::string clusterctl = Testbed::Get().EnvValue("CLUSTERCTL_BIN");
    ASSERT_FALSE(clusterctl.empty()) << "the bed's env has no CLUSTERCTL_BIN";
    std::string out;
    ASSERT_EQ(caphv::testing::RunCommand("env CLUSTERCTL_DISABLE_VERSIONCHECK=true NO_COLOR=1 '" +
                                             clusterctl + "' describe cluster " + cluster_ +
                                             " -n " + ns() + " --grouping=false --kubeconfig '" +
                                             Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) +
                                             "' 2>&1",
                                         &out),
              0)
        << out;
    std::cout << out;
    size_t described_machines = 0;
    bool cluster = false;
    bool infra = false;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      std::vector<std::string> tokens;
      for (std::string w; words >> w;) tokens.push_back(w);
      const auto has = [&](std::string_view t) {
        return std::find(tokens.begin(), tokens.end(), t) != tokens.end();
      };
      // v1.14 names objects "Kind ns/name", v1.10 "Kind/name".
      const auto names = [&](const std::string& kind) {
        return line.find(kind + " " + ns() + "/") != std::string::npos ||
               line.find(kind + "/") != std::string::npos;
      };
      const bool is_machine =
          names("Machine") && line.find("HarvesterMachine") == std::string::npos;
      const bool is_cluster = line.rfind("Cluster ", 0) == 0 || line.rfind("Cluster/", 0) == 0;
      const bool is_infra = names("HarvesterCluster");
      if (!is_machine && !is_cluster && !is_infra) continue;
      EXPECT_TRUE(has("True") && !has("False") && !has("Unknown")) << line << "\n" << out;
      described_machines += is_machine ? 1 : 0;
      cluster = cluster || is_cluster;
      infra = infra || is_infra;
    }
    EXPECT_TRUE(cluster && infra) << out;
    EXPECT_EQ(described_machines, machines) << out;
  }

  void ScaleControlPlane(int replicas) {
    const Object patch = Object::array({{{"op", "replace"},
                                         {"path", "/spec/topology/controlPlane/replicas"},
                                         {"value", replicas}}});
    auto r = mgmt_->Patch(kClusters, ns(), cluster_, kube::PatchType::kJson, patch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  // The etcd of this cluster's servers (topology_etcd.h).
  EtcdView Etcd() const { return ReadEtcd(*workload_, cluster_); }

  // Seconds since the fixture's clock started (SetUp), for progress lines.
  long SecondsSinceStart() const {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                            started_)
        .count();
  }

  // The bed's workload apiserver stands for the new cluster's: no RKE2 of an
  // earlier guest cluster left in it (its rke2-serving goes with its last
  // server Node), or the control plane would count as initialised at once.
  void ExpectCleanWorkload() {
    EXPECT_TRUE(Eventually([&] { return !ServingSecretExists(); }, kWait, kPoll))
        << "kube-system/rke2-serving of an earlier cluster is still in the workload cluster";
  }

  // Creates `cluster`; the Cluster webhook checks its variables against the
  // class as soon as Cluster API reconciled it, so a refusal is retried.
  void CreateCluster(const Object& cluster) {
    std::string refused;
    ASSERT_TRUE(Eventually(
        [&] {
          auto r = mgmt_->Create(kClusters, ns(), cluster);
          if (!r.ok()) refused = r.status().ToString();
          return r.ok();
        },
        std::chrono::seconds(30), kPoll))
        << refused;
  }

  // Deletes the Cluster and expects nothing of it left: its Cluster API and
  // CAPHV objects, anything on Harvester or in the pools (LeftOnHarvester),
  // its Nodes and RKE2's state in the workload cluster.
  void DeleteClusterExpectingNothingLeft() {
    const std::string hc_name = InfraClusterName();
    ASSERT_TRUE(mgmt_->Delete(kClusters, ns(), cluster_).ok());
    EXPECT_TRUE(Eventually(
        [&] {
          return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
                 mgmt_->Get(kHarvesterClusters, ns(), hc_name).status().IsNotFound() &&
                 HarvesterMachines().empty() && Machines().empty();
        },
        kWait, kPoll))
        << MachinesSummary();
    std::string left;
    EXPECT_TRUE(Eventually(
        [&] {
          left = LeftOnHarvester();
          return left.empty();
        },
        kWait, kPoll))
        << "left on Harvester:" << left;
    EXPECT_TRUE(Eventually(
        [&] {
          auto nodes = workload_->List(kNodes, "");
          if (!nodes.ok()) return false;
          for (const auto& n : nodes->items) {
            if (NameOf(n).rfind(cluster_ + "-", 0) == 0) return false;
          }
          return !ServingSecretExists();
        },
        kWait, kPoll))
        << "Nodes of the cluster or kube-system/rke2-serving left in the workload cluster";
  }

  static std::string DumpOf(const kube::StatusOr<Object>& o) {
    return o.ok() ? o->dump() : o.status().ToString();
  }

  static size_t ControlPlanes(const std::vector<Object>& machines) {
    return std::count_if(machines.begin(), machines.end(), [](const Object& m) {
      return m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel);
    });
  }

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace caphv::e2e::topology
