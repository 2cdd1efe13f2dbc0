// End-to-end: the cluster flow of the user guides. The user applies the
// ClusterClass `harvester-rke2` (templates/clusterclass-harvester-rke2.yaml)
// in a namespace and a Cluster with `spec.topology` (class harvester-rke2, one
// control plane, a MachineDeployment of two workers, the class's variables);
// the Cluster API topology controller, the real RKE2 bootstrap and
// control-plane providers, caphv-manager and the simulated Harvester (which
// plays RKE2 on each VM) provision it. The addons of the class, rendered by
// clusterctl from templates/clusterresourceset-*.yaml, are applied before
// the Cluster (labelled for their ClusterResourceSets): Cluster API's
// ClusterResourceSets install the Harvester cloud provider, with the
// credentials CAPHV writes into cloud-config-addon-<cluster>, and the CSI
// driver into the workload cluster. Then the control plane is scaled through
// the topology 1 -> 3 (the joining servers use the first one's address and
// token: the simulated RKE2 refuses anything else), the workers 2 -> 4 -> 2,
// and the Cluster is deleted: nothing is left on Harvester nor in the pools.
//
// The workload API: the control-plane endpoint is an address the simulated
// kube-vip hands out, not reachable here, so the test brings its own
// `<cluster>-kubeconfig` (the bed's workload apiserver, written by the
// fixture before the Cluster exists), as users who bring their own
// kubeconfig do. The RKE2 control-plane provider then generates no
// kubeconfig and leaves this one alone (it is not controlled by the
// RKE2ControlPlane); Cluster API and the provider reach the workload cluster
// through it. docs/testbed.md ("The RKE2 providers and the workload API").

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using TopologyTest = TopologyFixture;

TEST_F(TopologyTest, ClusterOfClassHarvesterRke2ProvisionsScalesAndIsDeleted) {
  ExpectCleanWorkload();
  DeleteAddonObjectsFromWorkload();
  const Pool pool = CreatePool(8);
  ApplyClusterClass();
  ApplyAddons();
  Object cluster = TopologyCluster(pool);
  cluster["metadata"]["labels"] = AddonLabels();
  CreateCluster(cluster);

  // Provisioned: one server and two agents, each Node initialised.
  auto machines = WaitForInitialisedNodes(3);
  ASSERT_EQ(machines.size(), 3u);
  std::cout << "3 machines running, Nodes initialised after " << SecondsSinceStart() << " s\n";
  int control_planes = 0;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      ++control_planes;
      EXPECT_EQ(Str(m, "/spec/bootstrap/configRef/kind"), "RKE2Config");
    }
    EXPECT_EQ(Str(m, "/spec/version"), kVersion);
    EXPECT_EQ(Str(m, "/spec/infrastructureRef/kind"), "HarvesterMachine");
  }
  EXPECT_EQ(control_planes, 1);

  // The Cluster: control plane initialised (the RKE2 provider saw
  // rke2-serving), its endpoint the load balancer's address.
  Object c;
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = mgmt_->Get(kClusters, ns(), cluster_);
        if (got.ok()) c = *got;
        return got.ok() && ConditionTrue(c, "ControlPlaneInitialized") &&
               !Str(c, "/spec/controlPlaneEndpoint/host").empty();
      },
      kWait, kPoll))
      << c.dump(2);
  const std::string hc_name = InfraClusterName();
  ASSERT_FALSE(hc_name.empty());
  auto hc = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
  ASSERT_TRUE(hc.ok()) << hc.status().ToString();
  EXPECT_TRUE((*hc)["status"].value("ready", false)) << hc->dump();
  const auto lbs = OnHarvester(kLoadBalancers);
  ASSERT_EQ(lbs.size(), 1u);
  const std::string address = Str(lbs[0], "/status/address");
  EXPECT_FALSE(address.empty()) << lbs[0].dump();
  EXPECT_EQ(Str(*hc, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_EQ(Str(c, "/spec/controlPlaneEndpoint/host"), address);
  EXPECT_EQ(c["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  // ... and stays so: nobody writes another endpoint into the
  // HarvesterCluster's spec (its generation does not move).
  const int64_t generation = (*hc)["metadata"].value("generation", int64_t{0});
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto now = mgmt_->Get(kHarvesterClusters, ns(), hc_name);
    ASSERT_TRUE(now.ok());
    ASSERT_EQ(Str(*now, "/spec/controlPlaneEndpoint/host"), address)
        << "after " << i * 250 << " ms";
    ASSERT_EQ((*now)["metadata"].value("generation", int64_t{0}), generation)
        << "the HarvesterCluster's spec was written again: " << (*now)["spec"].dump();
  }
  auto rcp = mgmt_->Get(kControlPlanes, ns(), Str(c, "/spec/controlPlaneRef/name"));
  ASSERT_TRUE(rcp.ok()) << rcp.status().ToString();
  EXPECT_TRUE((*rcp)["status"].value("initialized", false)) << (*rcp)["status"].dump();

  // The workload API: the kubeconfig the test brought is still the one in
  // use, not replaced nor adopted by the control-plane provider.
  auto kubeconfig = mgmt_->Get(kSecrets, ns(), cluster_ + "-kubeconfig");
  ASSERT_TRUE(kubeconfig.ok());
  EXPECT_FALSE(kubeconfig->at("metadata").contains("ownerReferences"))
      << kubeconfig->at("metadata").dump();
  EXPECT_EQ(kube::Base64Decode(Str(*kubeconfig, "/data/value")).value_or(""),
            ReadWholeFile(Testbed::Get().KubeconfigPath(caphv::testing::kWorkload)));
  // The provider's own CA and join token exist: RKE2 on the servers uses them.
  EXPECT_TRUE(mgmt_->Get(kSecrets, ns(), cluster_ + "-ca").ok());
  EXPECT_TRUE(mgmt_->Get(kSecrets, ns(), cluster_ + "-token").ok());

  // Every VM address from the pool.
  for (const auto& hm : HarvesterMachines()) {
    EXPECT_TRUE(pool.Contains(hm["status"].value("allocatedIPAddress", ""))) << NameOf(hm);
  }
  EXPECT_EQ(EntriesOfThisTest().size(), 3u);

  // CAPHV wrote the Harvester credentials into the addon ConfigMap: a
  // kubeconfig with the token Harvester issued to the cluster's
  // cloud-provider ServiceAccount.
  std::string cloud_config;
  EXPECT_TRUE(Eventually(
      [&] {
        cloud_config = SecretValueInAddonConfigMap("cloud-config", "cloud-config");
        return !cloud_config.empty();
      },
      kWait, kPoll))
      << "no cloud-config in the addon ConfigMap";
  const std::string token = CloudProviderTokenOnHarvester();
  ASSERT_FALSE(token.empty()) << "no token of the cloud provider's ServiceAccount on Harvester";
  EXPECT_NE(cloud_config.find(token), std::string::npos) << cloud_config;
  EXPECT_NE(cloud_config.find(Testbed::Get().EnvValue("HARVESTER_SERVER")), std::string::npos)
      << cloud_config;

  // The ClusterResourceSets applied the addons to the workload cluster: the
  // cloud-config Secret as CAPHV wrote it (the ConfigMap's later version)...
  std::string in_workload;
  EXPECT_TRUE(Eventually(
      [&] {
        auto secret = workload_->Get(kSecrets, "kube-system", "cloud-config");
        in_workload =
            secret.ok() ? kube::Base64Decode(Str(*secret, "/data/cloud-config")).value_or("") : "";
        return in_workload == cloud_config;
      },
      kWait, kPoll))
      << "kube-system/cloud-config in the workload cluster: " << in_workload;
  // ... the cloud provider on the host network, tolerating new and
  // control-plane nodes, reading that Secret, with its RBAC ...
  auto ccm =
      workload_->Get(kube::resources::kDeployments, "kube-system", "harvester-cloud-provider");
  ASSERT_TRUE(ccm.ok()) << ccm.status().ToString();
  const Object& pod = (*ccm)["spec"]["template"]["spec"];
  EXPECT_TRUE(pod.value("hostNetwork", false)) << pod.dump();
  std::set<std::string> tolerated;
  for (const auto& t : pod.value("tolerations", Object::array())) {
    tolerated.insert(t.value("key", "") + ":" + t.value("effect", ""));
  }
  for (const char* taint : {"node-role.kubernetes.io/control-plane:NoSchedule",
                            "node-role.kubernetes.io/etcd:NoExecute",
                            "node.cloudprovider.kubernetes.io/uninitialized:NoSchedule",
                            "node.kubernetes.io/not-ready:NoSchedule"}) {
    EXPECT_TRUE(tolerated.contains(taint)) << taint << " not tolerated: " << pod.dump();
  }
  EXPECT_EQ(Str(pod, "/volumes/0/secret/secretName"), "cloud-config") << pod.dump();
  EXPECT_EQ(Str(pod, "/containers/0/args/0"), "--cloud-config=/etc/kubernetes/cloud-config");
  EXPECT_EQ(Str(pod, "/serviceAccountName"), "harvester-cloud-controller-manager");
  for (const auto& o : CloudProviderObjects()) {
    EXPECT_TRUE(workload_->Get(o.gvr, o.ns, o.name).ok()) << o.Describe() << " not applied";
  }
  auto crb = workload_->Get(kube::resources::kClusterRoleBindings, "",
                            "harvester-cloud-controller-manager");
  ASSERT_TRUE(crb.ok());
  EXPECT_EQ(Str(*crb, "/subjects/0/name"), "harvester-cloud-controller-manager");
  auto role = workload_->Get(kube::resources::kClusterRoles, "", Str(*crb, "/roleRef/name"));
  ASSERT_TRUE(role.ok());
  EXPECT_NE(role->at("rules").dump().find("\"nodes/status\""), std::string::npos)
      << role->at("rules").dump();
  // ... and the CSI driver, which reads the same Secret.
  for (const auto& o : CsiDriverObjects()) {
    EXPECT_TRUE(workload_->Get(o.gvr, o.ns, o.name).ok()) << o.Describe() << " not applied";
  }
  auto csi = workload_->Get(kDaemonSets, "kube-system", "harvester-csi-plugin");
  ASSERT_TRUE(csi.ok());
  std::string csi_secret;
  for (const auto& v : csi->at("spec")["template"]["spec"].value("volumes", Object::array())) {
    if (v.value("name", "") == "cloud-config") csi_secret = Str(v, "/secret/secretName");
  }
  EXPECT_EQ(csi_secret, "cloud-config") << csi->at("spec").dump();
  // The Cluster's ClusterResourceSetBinding records both as applied.
  const std::map<std::string, std::map<std::string, bool>> applied = {
      {cluster_ + "-harvester-cloud-provider",
       {{"ConfigMap/cloud-config-addon-" + cluster_, true}}},
      {"harvester-csi-driver", {{"ConfigMap/harvester-csi-driver", true}}}};
  EXPECT_TRUE(Eventually([&] { return ResourceSetBindings() == applied; }, kWait, kPoll))
      << "ClusterResourceSetBinding " << ns() << "/" << cluster_ << ": "
      << DumpOf(mgmt_->Get(kResourceSetBindings, ns(), cluster_));
  std::cout << "addons applied after " << SecondsSinceStart() << " s\n";

  // `clusterctl describe cluster` (the bed's Cluster API release) shows the
  // Cluster, the HarvesterCluster and every Machine healthy: no condition of
  // theirs False or Unknown on the summary lines.
  ExpectDescribedHealthy(3);

  // The control plane through the topology: 1 -> 3 servers, each joining
  // the first (the simulated RKE2 registers no Node otherwise), each with an
  // address of the pool.
  ScaleControlPlane(3);
  machines = WaitForInitialisedNodes(5);
  ASSERT_EQ(machines.size(), 5u);
  EXPECT_EQ(ControlPlanes(machines), 3u) << MachinesSummary();
  for (const auto& m : machines) {
    if (!m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) continue;
    auto node = workload_->Get(kNodes, "", Str(m, "/status/nodeRef/name"));
    ASSERT_TRUE(node.ok());
    EXPECT_EQ((*node)["metadata"]["labels"].value("node-role.kubernetes.io/etcd", ""), "true")
        << NameOf(*node) << " is no RKE2 server";
  }
  // What RKE2 on the servers was told: the cluster's token on every one, and
  // on the two that joined the first, its address through the load balancer.
  auto join_token = mgmt_->Get(kSecrets, ns(), cluster_ + "-token");
  ASSERT_TRUE(join_token.ok()) << join_token.status().ToString();
  const std::string token_value = kube::Base64Decode(Str(*join_token, "/data/value")).value_or("");
  ASSERT_FALSE(token_value.empty());
  int joining = 0;
  for (const auto& m : machines) {
    if (!m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) continue;
    auto data = mgmt_->Get(kSecrets, ns(), Str(m, "/spec/bootstrap/dataSecretName"));
    ASSERT_TRUE(data.ok()) << NameOf(m) << ": " << data.status().ToString();
    const std::string user_data = kube::Base64Decode(Str(*data, "/data/value")).value_or("");
    EXPECT_NE(user_data.find(token_value), std::string::npos) << NameOf(m) << " lacks the token";
    joining += user_data.find("server: https://" + address + ":9345") != std::string::npos;
  }
  EXPECT_EQ(joining, 2) << "servers joining through https://" << address << ":9345";
  for (const auto& hm : HarvesterMachines()) {
    EXPECT_TRUE(pool.Contains(hm["status"].value("allocatedIPAddress", ""))) << NameOf(hm);
  }
  EXPECT_EQ(EntriesOfThisTest().size(), 5u);
  EXPECT_TRUE(Eventually(
      [&] {
        auto got = mgmt_->Get(kControlPlanes, ns(), Str(c, "/spec/controlPlaneRef/name"));
        if (!got.ok()) return false;
        // RKE2 v0.21 counts them at status.readyReplicas; v0.25, read at
        // v1beta1, at status.v1beta2.readyReplicas (the v1beta2 meaning).
        const Object& st = (*got)["status"];
        return st.value("readyReplicas", 0) == 3 ||
               (st.contains("v1beta2") && st["v1beta2"].value("readyReplicas", 0) == 3);
      },
      kWait, kPoll))
      << DumpOf(mgmt_->Get(kControlPlanes, ns(), Str(c, "/spec/controlPlaneRef/name")));
  std::cout << "scaled to 3 servers after " << SecondsSinceStart() << " s\n";

  // Workers through the topology: 2 -> 4.
  ScaleWorkers(4);
  machines = WaitForInitialisedNodes(7);
  ASSERT_EQ(machines.size(), 7u);
  EXPECT_EQ(EntriesOfThisTest().size(), 7u);
  std::cout << "scaled to 4 workers after " << SecondsSinceStart() << " s\n";

  // 4 -> 2: the removed machines leave nothing behind.
  ScaleWorkers(2);
  std::set<std::string> kept_nodes;
  ASSERT_TRUE(Eventually(
      [&] {
        return Machines().size() == 5 && HarvesterMachines().size() == 5 &&
               NamesOnHarvester(kVirtualMachines).size() == 5 &&
               NamesOnHarvester(kPvcs).size() == 5 && CloudInitSecrets() == 5 &&
               EntriesOfThisTest().size() == 5;
      },
      kWait, kPoll))
      << MachinesSummary();
  machines = WaitForInitialisedNodes(5);
  ASSERT_EQ(machines.size(), 5u);
  EXPECT_EQ(ControlPlanes(machines), 3u);
  for (const auto& m : machines) kept_nodes.insert(Str(m, "/status/nodeRef/name"));
  std::string extra_nodes;
  EXPECT_TRUE(Eventually(
      [&] {
        extra_nodes.clear();
        auto nodes = workload_->List(kNodes, "");
        if (!nodes.ok()) return false;
        for (const auto& n : nodes->items) {
          // A Node of this cluster's VMs (named after them) no Machine keeps.
          const std::string name = NameOf(n);
          if (name.rfind(cluster_ + "-", 0) == 0 && kept_nodes.count(name) == 0) {
            extra_nodes += " " + name;
          }
        }
        return extra_nodes.empty();
      },
      kWait, kPoll))
      << "Nodes of removed machines left:" << extra_nodes;
  std::cout << "scaled back to 2 workers after " << SecondsSinceStart() << " s\n";

  // The etcd of the three servers: one voting member each, named as RKE2
  // names them.
  std::set<std::string> server_nodes;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      server_nodes.insert(Str(m, "/status/nodeRef/name"));
    }
  }
  EtcdView etcd;
  EXPECT_TRUE(Eventually(
      [&] {
        etcd = Etcd();
        return etcd.Quorum() && etcd.voters == 3 && etcd.healthy_voters == 3 &&
               etcd.members.size() == 3;
      },
      kWait, kPoll))
      << etcd.Describe();
  for (const auto& [member, learner] : etcd.members) {
    EXPECT_TRUE(server_nodes.contains(member.substr(0, member.rfind('-'))))
        << member << " is no server's member";
  }

  // CAPHV keeps each server's Node with its finalizer while the VM lives.
  for (const auto& node_name : server_nodes) {
    auto node = workload_->Get(kNodes, "", node_name);
    ASSERT_TRUE(node.ok());
    const std::string finalizers = (*node)["metadata"].value("finalizers", Object::array()).dump();
    EXPECT_NE(finalizers.find("harvester.infrastructure.cluster.x-k8s.io/etcd-member"),
              std::string::npos)
        << node_name << ": " << finalizers;
  }
  // A server's Node deleted before the control-plane provider's
  // pre-terminate hook runs (kubectl delete node; a cloud provider that
  // deletes the Nodes of dead VMs): the provider waits for RKE2 to record
  // the member's removal on that Node, so without it the machine's deletion
  // would hang. The finalizer keeps the Node until the VM is gone. The
  // machine is the first one the scale-down takes (delete-machine).
  std::string doomed_machine, doomed_node;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      doomed_machine = NameOf(m);
      doomed_node = Str(m, "/status/nodeRef/name");
      break;
    }
  }
  ASSERT_TRUE(
      mgmt_
          ->Patch(kMachines, ns(), doomed_machine, kube::PatchType::kMerge,
                  {{"metadata", {{"annotations", {{"cluster.x-k8s.io/delete-machine", ""}}}}}})
          .ok());
  ASSERT_TRUE(workload_->Delete(kNodes, "", doomed_node).ok());
  auto held = workload_->Get(kNodes, "", doomed_node);
  ASSERT_TRUE(held.ok()) << "Node " << doomed_node << " went at once: " << held.status().ToString();
  EXPECT_TRUE(held->at("metadata").contains("deletionTimestamp"));

  // The control plane 3 -> 1 through the topology: the RKE2 control-plane
  // provider moves etcd leadership (through a port-forward to the member's
  // pod) and has RKE2 remove each deleted server's member before its VM
  // goes. Quorum holds at every look; in the end one member, of the server
  // that is left, and nothing of the other two.
  ScaleControlPlane(1);
  int looks = 0;
  std::string lost;
  ASSERT_TRUE(Eventually(
      [&] {
        etcd = Etcd();
        ++looks;
        if (!etcd.Quorum() && lost.empty()) lost = etcd.Describe();
        return Machines().size() == 3 && HarvesterMachines().size() == 3 &&
               NamesOnHarvester(kVirtualMachines).size() == 3 && EntriesOfThisTest().size() == 3 &&
               etcd.members.size() == 1;
      },
      std::chrono::seconds(240), kPoll))
      << etcd.Describe() << "\n"
      << MachinesSummary();
  EXPECT_TRUE(lost.empty()) << "etcd lost quorum during the scale-down: " << lost;
  machines = WaitForInitialisedNodes(3);
  ASSERT_EQ(ControlPlanes(machines), 1u);
  std::string last_server;
  for (const auto& m : machines) {
    if (m["metadata"].value("labels", Object::object()).contains(kControlPlaneLabel)) {
      last_server = Str(m, "/status/nodeRef/name");
    }
  }
  ASSERT_EQ(etcd.members.size(), 1u);
  EXPECT_EQ(etcd.members.begin()->first.rfind(last_server + "-", 0), 0u)
      << etcd.Describe() << " is not the member of " << last_server;
  EXPECT_TRUE(mgmt_->Get(kMachines, ns(), doomed_machine).status().IsNotFound());
  EXPECT_TRUE(Eventually(
      [&] { return workload_->Get(kNodes, "", doomed_node).status().IsNotFound(); }, kWait, kPoll))
      << "Node " << doomed_node << " is still there";
  std::cout << "scaled to 1 server after " << SecondsSinceStart() << " s (" << looks
            << " looks at etcd, quorum kept)\n";

  // Deleting the Cluster leaves nothing on Harvester nor in the pools; all
  // of it existed, so "gone" below means deleted.
  ASSERT_EQ(OnHarvester(kLoadBalancers).size(), 1u);
  ASSERT_FALSE(OnHarvester(kServiceAccounts, ClusterSelector()).empty());
  ASSERT_FALSE(OnHarvester(kSecrets, ClusterSelector()).empty());
  ASSERT_EQ(CloudInitSecrets(), 3u);
  ASSERT_TRUE(ServingSecretExists());
  DeleteClusterExpectingNothingLeft();
  std::cout << "deleted, nothing left, after " << SecondsSinceStart() << " s\n";
  // What the ClusterResourceSets applied stays in a workload cluster; this
  // one is the bed's, shared with the next scenarios.
  DeleteAddonObjectsFromWorkload();
}

}  // namespace
}  // namespace caphv::e2e::topology
