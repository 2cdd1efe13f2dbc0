// End-to-end: the life of a cluster as a user sees it. A highly available
// cluster (3 control-plane Machines, a MachineDeployment of 2 workers) with
// VM addresses from an IP pool, the load balancer on a pool and the cloud
// provider configuration; workers scaled up and down; the whole Cluster
// deleted, leaving nothing behind on Harvester.

#include <regex>

#include "api/yaml.h"
#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

const GroupVersionResource kServiceAccounts = kube::resources::kServiceAccounts;
const GroupVersionResource kRoleBindings = kube::resources::kRoleBindings;
const GroupVersionResource kClusterRoleBindings = kube::resources::kClusterRoleBindings;
const GroupVersionResource kSecrets = kube::resources::kSecrets;
const GroupVersionResource kPvcs = kube::resources::kPersistentVolumeClaims;

constexpr char kAddonKey[] = "cloud-config.yaml";
constexpr char kCredentialsSecret[] = "cloud-config";
constexpr char kCredentialsKey[] = "cloud-config";

// The manifests a user keeps in the addon ConfigMap before CAPHV adds the
// credentials Secret to them.
constexpr char kAddonManifests[] = R"(apiVersion: v1
kind: ServiceAccount
metadata:
  name: harvester-cloud-provider
  namespace: kube-system
)";

class LifecycleTest : public E2ETest {
 protected:
  std::string AddonConfigMap() const { return "cloud-config-addon-" + cluster_; }

  void CreateAddonConfigMap() {
    Object cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", AddonConfigMap()}, {"namespace", ns()}}},
                 {"data", {{kAddonKey, kAddonManifests}}}};
    auto r = mgmt_->Create(kube::resources::kConfigMaps, ns(), cm);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  Object UpdateCloudProviderConfig() const {
    return {{"manifestsConfigMapNamespace", ns()},
            {"manifestsConfigMapName", AddonConfigMap()},
            {"manifestsConfigMapKey", kAddonKey},
            {"cloudConfigCredentialsSecretName", kCredentialsSecret},
            {"cloudConfigCredentialsSecretKey", kCredentialsKey}};
  }

  std::string ClusterSelector() const { return std::string(kClusterNameLabel) + "=" + cluster_; }

  // Every Machine's infrastructure, checked from both sides: the
  // HarvesterMachine, its VM and VMI, its pool entry and its workload Node.
  void ExpectMachineInfrastructure(const Object& machine, const Pool& pool,
                                   const std::string& cluster_id, std::set<std::string>* ips) {
    const std::string name = Str(machine, "/spec/infrastructureRef/name");
    SCOPED_TRACE("Machine " + NameOf(machine) + ", HarvesterMachine " + name);
    EXPECT_EQ(Str(machine, "/spec/infrastructureRef/kind"), "HarvesterMachine");
    auto hm = HarvesterMachine(name);
    ASSERT_TRUE(hm.has_value());
    const Object& st = (*hm)["status"];

    auto vm = harvester_->Get(kVirtualMachines, target_ns_, name);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    const std::string provider_id = "harvester://" + kube::UidOf(*vm);
    EXPECT_EQ(Str(*hm, "/spec/providerID"), provider_id);
    EXPECT_EQ(Str(machine, "/spec/providerID"), provider_id);
    EXPECT_TRUE(st.value("ready", false));
    EXPECT_TRUE(st.value("initialization", Object::object()).value("provisioned", false));
    for (const char* type : {"Ready", "VMProvisioningReady", "VMIPAllocated"}) {
      EXPECT_TRUE(ConditionTrue(*hm, type)) << type << ": " << ConditionOf(*hm, type).dump();
    }
    const Object vm_labels = (*vm)["metadata"].value("labels", Object::object());
    EXPECT_EQ(vm_labels.value(kClusterNameLabel, ""), cluster_);
    EXPECT_EQ(vm_labels.value(kClusterIdLabel, ""), cluster_id);

    // The address: from the pool, recorded in the pool and on the machine.
    const std::string ip = st.value("allocatedIPAddress", "");
    EXPECT_TRUE(pool.Contains(ip)) << ip;
    EXPECT_EQ(st.value("allocatedPoolRef", ""), pool.name);
    ips->insert(ip);
    const auto allocated = Allocated(pool.name);
    const auto owner = allocated.find(ip);
    ASSERT_NE(owner, allocated.end()) << "pool " << pool.name << " has no entry for " << ip;
    static const std::regex kOwner("^(.+)/(.+)@([0-9a-f]{12})$");
    std::smatch m;
    ASSERT_TRUE(std::regex_match(owner->second, m, kOwner)) << owner->second;
    EXPECT_EQ(m[1].str(), ns());
    EXPECT_EQ(m[2].str(), name);
    bool external_ip = false;
    for (const auto& addr : st.value("addresses", Object::array())) {
      if (addr.value("type", "") == "ExternalIP" && addr.value("address", "") == ip)
        external_ip = true;
    }
    EXPECT_TRUE(external_ip) << st.value("addresses", Object::array()).dump();
    auto vmi = harvester_->Get(kVirtualMachineInstances, target_ns_, name);
    ASSERT_TRUE(vmi.ok());
    EXPECT_EQ(Str(*vmi, "/status/interfaces/0/ipAddress"), ip);

    // The workload Node Cluster API linked.
    EXPECT_EQ(Str(machine, "/status/nodeRef/name"), name);
    auto node = workload_->Get(kube::resources::kNodes, "", name);
    ASSERT_TRUE(node.ok());
    EXPECT_EQ(Str(*node, "/spec/providerID"), provider_id);
  }

  // When each part of a machine's infrastructure was first seen gone from
  // Harvester, in observation rounds (-1: not yet).
  struct Teardown {
    int vm = -1, pvcs = -1, secret = -1, ip = -1;
    bool Done() const { return vm >= 0 && pvcs >= 0 && secret >= 0 && ip >= 0; }
  };

  // One observation round over the machines of `ip_of` (name -> address).
  void ObserveTeardowns(const Pool& pool, const std::map<std::string, std::string>& ip_of,
                        std::map<std::string, Teardown>* teardowns) {
    // Read in the reverse of the expected deletion order: a round is not an
    // atomic snapshot, and reading the VMs first could see a VM that is
    // gone a moment later, next to a pool read after the release. In this
    // order, a step seen done implies every earlier step is seen done too.
    const auto allocated = Allocated(pool.name);
    const auto secrets = NamesOnHarvester(kSecrets);
    const auto pvcs = NamesOnHarvester(kPvcs);
    const auto vms = NamesOnHarvester(kVirtualMachines);
    ++rounds_;
    for (const auto& [name, ip] : ip_of) {
      Teardown& t = (*teardowns)[name];
      auto mark = [&](int* at, bool gone) {
        if (gone && *at < 0) *at = rounds_;
      };
      mark(&t.vm, std::find(vms.begin(), vms.end(), name) == vms.end());
      mark(&t.pvcs, std::none_of(pvcs.begin(), pvcs.end(), [&](const std::string& p) {
        return p.rfind(name + "-disk-", 0) == 0;
      }));
      mark(&t.secret,
           std::find(secrets.begin(), secrets.end(), name + "-cloud-init") == secrets.end());
      const auto entry = allocated.find(ip);
      mark(&t.ip, entry == allocated.end() || entry->second.rfind(ns() + "/" + name + "@", 0) != 0);
    }
  }
  int rounds_ = 0;

  // What is left on Harvester for HarvesterMachine `name`, "" when nothing.
  std::string LeftoversOf(const std::string& name) const {
    std::string out;
    if (harvester_->Get(kVirtualMachines, target_ns_, name).ok()) out += " VM";
    if (harvester_->Get(kVirtualMachineInstances, target_ns_, name).ok()) out += " VMI";
    if (harvester_->Get(kSecrets, target_ns_, name + "-cloud-init").ok()) {
      out += " Secret " + name + "-cloud-init";
    }
    for (const auto& pvc : NamesOnHarvester(kPvcs)) {
      if (pvc.rfind(name + "-disk-", 0) == 0) out += " PVC " + pvc;
    }
    return out;
  }
};

TEST_F(LifecycleTest, HighlyAvailableClusterWithPoolsAndCloudProvider) {
  const Pool pool = CreatePool(8);
  CreateAddonConfigMap();
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", "capi-pool"}};
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  spec["updateCloudProviderConfig"] = UpdateCloudProviderConfig();
  CreateCluster(spec);
  for (int i = 0; i < 3; ++i) CreateMachine(cluster_ + "-cp-" + std::to_string(i), true);
  CreateMachineDeployment(cluster_ + "-md", 2);

  const auto machines = WaitForRunningMachines(5);
  ASSERT_EQ(machines.size(), 5u);
  int control_planes = 0;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      ++control_planes;
    }
  }
  EXPECT_EQ(control_planes, 3);

  // The HarvesterCluster: ready, endpoint = the load balancer's address on
  // capi-pool (192.168.100.50-99), port 6443.
  const Object hc = WaitForClusterReady();
  const std::string lb_name = ns() + "-" + cluster_ + "-lb";
  auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << "LoadBalancer " << target_ns_ << "/" << lb_name << ": "
                       << lb.status().ToString();
  const std::string address = Str(*lb, "/status/address");
  EXPECT_EQ(Str(hc, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_EQ(hc["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  const int octet = LastOctetIn(address, "192.168.100.");
  EXPECT_TRUE(octet >= 50 && octet <= 99) << address;
  EXPECT_EQ(Str(*lb, "/spec/ipam"), "pool");
  EXPECT_EQ(Str(*lb, "/spec/ipPool"), "capi-pool");
  EXPECT_TRUE(hc["status"].value("ready", false));
  EXPECT_TRUE(hc["status"].value("initialization", Object::object()).value("provisioned", false));
  for (const char* type :
       {"Ready", "HarvesterConnectionReady", "LoadBalancerReady", "CloudProviderConfigReady"}) {
    EXPECT_TRUE(ConditionTrue(hc, type)) << type << ": " << ConditionOf(hc, type).dump();
  }
  const Object lb_labels = (*lb)["metadata"].value("labels", Object::object());
  EXPECT_EQ(lb_labels.value(kClusterNameLabel, ""), cluster_);
  const std::string cluster_id = lb_labels.value(kClusterIdLabel, "");
  EXPECT_TRUE(IsLowerHex(cluster_id, 20)) << lb_labels.dump();

  // Cluster API took the endpoint and sees the control plane initialized.
  auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster.ok());
  EXPECT_EQ(Str(*cluster, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_TRUE((*cluster)["status"].value("infrastructureReady", false));
  EXPECT_TRUE(Eventually([&] {
    auto c = mgmt_->Get(kClusters, ns(), cluster_);
    return c.ok() && ConditionTrue(*c, "ControlPlaneInitialized");
  }));

  std::set<std::string> ips;
  for (const auto& m : machines) ExpectMachineInfrastructure(m, pool, cluster_id, &ips);
  EXPECT_EQ(ips.size(), 5u);

  // The caphv_* metrics counted it, once per machine.
  EXPECT_EQ(Metric("caphv_machine_create_total"), 5.0);
  EXPECT_EQ(Metric("caphv_ippool_allocations_total"), 5.0);
  EXPECT_EQ(Metric("caphv_machine_creation_duration_seconds_count"), 5.0);
  EXPECT_EQ(Metric("caphv_cluster_ready{cluster=\"" + ns() + "/" + cluster_ + "\"}"), 1.0);
  for (const auto& m : machines) {
    const std::string infra = Str(m, "/spec/infrastructureRef/name");
    EXPECT_EQ(Metric("caphv_machine_status{cluster=\"" + ns() + "/" + cluster_ + "\",machine=\"" +
                     ns() + "/" + infra + "\"}"),
              1.0)
        << infra;
  }

  // The cloud provider configuration landed in the addon ConfigMap: the
  // user's manifests kept, plus Secret kube-system/cloud-config holding a
  // kubeconfig for Harvester scoped to the target namespace.
  auto cm = mgmt_->Get(kube::resources::kConfigMaps, ns(), AddonConfigMap());
  ASSERT_TRUE(cm.ok());
  auto docs = api::ParseYaml((*cm)["data"].value(kAddonKey, ""));
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  bool kept_service_account = false;
  std::optional<Object> credentials;
  for (const auto& d : *docs) {
    if (d.value("kind", "") == "ServiceAccount" &&
        Str(d, "/metadata/name") == "harvester-cloud-provider") {
      kept_service_account = true;
    }
    if (d.value("kind", "") == "Secret" && Str(d, "/metadata/name") == kCredentialsSecret &&
        Str(d, "/metadata/namespace") == "kube-system") {
      credentials = d;
    }
  }
  EXPECT_TRUE(kept_service_account) << (*cm)["data"].dump();
  ASSERT_TRUE(credentials.has_value()) << (*cm)["data"].dump();
  auto kubeconfig_text =
      kube::Base64Decode(Str(*credentials, std::string("/data/") + kCredentialsKey));
  ASSERT_TRUE(kubeconfig_text.has_value()) << credentials->dump();
  auto kubeconfig = api::ParseYaml(*kubeconfig_text);
  ASSERT_TRUE(kubeconfig.ok() && kubeconfig->size() == 1) << *kubeconfig_text;
  const Object& kc = kubeconfig->front();
  const std::string harvester_server = Testbed::Get().Config(caphv::testing::kHarvester).server;
  ASSERT_FALSE(kc.value("clusters", Object::array()).empty()) << kc.dump();
  EXPECT_EQ(Str(kc["clusters"][0], "/cluster/server"), harvester_server);
  ASSERT_FALSE(kc.value("users", Object::array()).empty()) << kc.dump();
  const std::string token = Str(kc["users"][0], "/user/token");
  EXPECT_FALSE(token.empty()) << kc.dump();
  ASSERT_FALSE(kc.value("contexts", Object::array()).empty()) << kc.dump();
  EXPECT_EQ(Str(kc["contexts"][0], "/context/namespace"), target_ns_);

  // On Harvester: the account behind that token, labelled for the cluster.
  const auto service_accounts = OnHarvester(kServiceAccounts, ClusterSelector());
  EXPECT_EQ(service_accounts.size(), 1u);
  EXPECT_FALSE(OnHarvester(kRoleBindings, ClusterSelector()).empty());
  EXPECT_FALSE(OnHarvester(kClusterRoleBindings, ClusterSelector()).empty());
  bool token_secret_matches = false;
  for (const auto& s : OnHarvester(kSecrets, ClusterSelector())) {
    if (Str(s, "/type") != "kubernetes.io/service-account-token") continue;
    EXPECT_EQ(s["metadata"]["labels"].value(kClusterIdLabel, ""), cluster_id);
    token_secret_matches = kube::Base64Decode(Str(s, "/data/token")).value_or("") == token;
  }
  EXPECT_TRUE(token_secret_matches)
      << "no service-account-token Secret holds the kubeconfig's token";
}

TEST_F(LifecycleTest, ScaleWorkersUpAndDown) {
  const Pool pool = CreatePool(8);
  Object spec = HarvesterClusterSpec();
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  const std::string md = cluster_ + "-md";
  CreateMachineDeployment(md, 2);
  ASSERT_EQ(WaitForRunningMachines(3).size(), 3u);

  ScaleMachineDeployment(md, 4);
  ASSERT_EQ(WaitForRunningMachines(5).size(), 5u);
  std::map<std::string, std::string> ip_of;  // HarvesterMachine -> its address
  for (const auto& hm : HarvesterMachines()) {
    const std::string ip = hm["status"].value("allocatedIPAddress", "");
    EXPECT_TRUE(pool.Contains(ip)) << NameOf(hm) << ": " << ip;
    ip_of[NameOf(hm)] = ip;
  }
  EXPECT_EQ(Allocated(pool.name).size(), 5u);

  // Scale down, following each machine's teardown on Harvester as it happens.
  ScaleMachineDeployment(md, 1);
  std::map<std::string, Teardown> teardowns;
  const bool three_removed = Eventually(
      [&] {
        ObserveTeardowns(pool, ip_of, &teardowns);
        return std::count_if(teardowns.begin(), teardowns.end(),
                             [](const auto& t) { return t.second.Done(); }) == 3;
      },
      kWait, std::chrono::milliseconds(100));
  EXPECT_TRUE(three_removed) << MachinesSummary();
  ASSERT_EQ(WaitForRunningMachines(2).size(), 2u);
  std::set<std::string> remaining;
  ASSERT_TRUE(Eventually(
      [&] {
        remaining.clear();
        for (const auto& hm : HarvesterMachines()) remaining.insert(NameOf(hm));
        return remaining.size() == 2;
      },
      kWait, kPoll))
      << MachinesSummary();

  for (const auto& [name, ip] : ip_of) {
    if (remaining.count(name) != 0) {
      // Survivors keep their address.
      EXPECT_EQ(EntriesOf(pool.name, name), std::vector<std::string>{ip}) << name;
      continue;
    }
    SCOPED_TRACE("removed HarvesterMachine " + name + " (" + ip + ")");
    EXPECT_EQ(LeftoversOf(name), "");
    EXPECT_EQ(Allocated(pool.name).count(ip), 0u)
        << "still allocated to " << Allocated(pool.name)[ip];
    // The order of the teardown: the cloud-init Secret only once the VM and
    // its disks are gone, the address last (never while the VM may use it).
    const Teardown& t = teardowns[name];
    ASSERT_TRUE(t.Done()) << "VM " << t.vm << ", PVCs " << t.pvcs << ", Secret " << t.secret
                          << ", IP " << t.ip;
    std::cout << "teardown of " << name << " (100 ms rounds): VM gone at " << t.vm << ", PVCs "
              << t.pvcs << ", cloud-init Secret " << t.secret << ", address released " << t.ip
              << "\n";
    EXPECT_LE(t.vm, t.secret) << "cloud-init Secret deleted before the VM was gone";
    EXPECT_LE(t.pvcs, t.secret) << "cloud-init Secret deleted before the PVCs were gone";
    EXPECT_LE(t.secret, t.ip) << "address released before the cloud-init Secret was gone";
    EXPECT_LE(t.vm, t.ip) << "address released while the VM still existed";
    EXPECT_TRUE(Eventually(
        [&] { return workload_->Get(kube::resources::kNodes, "", name).status().IsNotFound(); },
        kWait, kPoll))
        << "Node " << name << " still in the workload cluster";
  }
  EXPECT_EQ(Allocated(pool.name).size(), 2u);
  EXPECT_EQ(NamesOnHarvester(kVirtualMachines).size(), 2u);
}

TEST_F(LifecycleTest, DeletingTheClusterLeavesNothingOnHarvester) {
  const Pool pool = CreatePool(4);
  CreateAddonConfigMap();
  Object spec = HarvesterClusterSpec();
  spec["loadBalancerConfig"] = {{"ipamType", "pool"}, {"ipPoolRef", "capi-pool"}};
  spec["vmNetworkConfig"] = VmNetworkConfig({pool});
  spec["updateCloudProviderConfig"] = UpdateCloudProviderConfig();
  CreateCluster(spec);
  CreateMachine(cluster_ + "-cp-0", true);
  CreateMachineDeployment(cluster_ + "-md", 1);
  const auto machines = WaitForRunningMachines(2);
  ASSERT_EQ(machines.size(), 2u);
  WaitForClusterReady();
  // Everything exists before the deletion, so "gone" below means deleted.
  ASSERT_FALSE(OnHarvester(kLoadBalancers).empty());
  ASSERT_FALSE(OnHarvester(kServiceAccounts, ClusterSelector()).empty());
  ASSERT_FALSE(OnHarvester(kClusterRoleBindings, ClusterSelector()).empty());
  ASSERT_EQ(EntriesOfThisTest().size(), 2u);
  std::vector<std::string> nodes;
  for (const auto& m : machines) nodes.push_back(Str(m, "/status/nodeRef/name"));

  ASSERT_TRUE(mgmt_->Delete(kClusters, ns(), cluster_).ok());
  EXPECT_TRUE(Eventually(
      [&] {
        return mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound() &&
               mgmt_->Get(kHarvesterClusters, ns(), cluster_).status().IsNotFound() &&
               HarvesterMachines().empty() && Machines().empty();
      },
      kWait, kPoll))
      << MachinesSummary();

  // Nothing of the cluster is left on Harvester.
  const std::string selector = ClusterSelector();
  std::string left;
  EXPECT_TRUE(Eventually(
      [&] {
        left.clear();
        for (const auto* gvr :
             {&kVirtualMachines, &kVirtualMachineInstances, &kPvcs, &kSecrets, &kLoadBalancers,
              &kServiceAccounts, &kRoleBindings, &kClusterRoleBindings}) {
          for (const auto& o : OnHarvester(*gvr, selector)) {
            left += " " + gvr->resource + "/" + NameOf(o);
          }
        }
        // Whatever the labels say: no VM, disk or load balancer in the namespace.
        for (const auto* gvr : {&kVirtualMachines, &kPvcs, &kLoadBalancers}) {
          for (const auto& o : OnHarvester(*gvr)) left += " " + gvr->resource + "/" + NameOf(o);
        }
        return left.empty();
      },
      kWait, kPoll))
      << "left on Harvester:" << left;

  // No pool entry of this test: neither the VMs' nor the load balancer's.
  std::vector<std::string> entries;
  EXPECT_TRUE(Eventually(
      [&] {
        entries = EntriesOfThisTest();
        auto list = harvester_->List(kIPPools, "");
        if (list.ok()) {
          for (const auto& p : list->items) {
            for (const auto& [ip, owner] : AllocatedOf(p)) {
              if (owner.rfind(target_ns_ + "/", 0) == 0) {
                entries.push_back(NameOf(p) + " " + ip + ": " + owner);
              }
            }
          }
        }
        return entries.empty();
      },
      kWait, kPoll))
      << ::testing::PrintToString(entries);

  // And the simulated guests left the workload cluster.
  for (const auto& node : nodes) {
    EXPECT_TRUE(Eventually(
        [&] { return workload_->Get(kube::resources::kNodes, "", node).status().IsNotFound(); },
        kWait, kPoll))
        << "Node " << node;
  }
}

}  // namespace
}  // namespace caphv::e2e
