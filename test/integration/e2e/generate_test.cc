// End-to-end: `caphv generate` (docs/cli.md) against the bed. The YAML of the
// seed's examples (the Go provider's guide: CRS addons; Fleet) is accepted by
// the management apiserver (kubectl apply --dry-run=server: the CRDs, Cluster
// API's webhooks); `caphv generate --apply` provisions a topology Cluster of
// the ClusterClass harvester-rke2 through the RKE2 providers, reporting its
// progress, and deleting the Cluster leaves nothing on Harvester, in the
// pools nor in the workload cluster. The bed's workload apiserver stands for
// the new cluster: the fixture writes `<cluster>-kubeconfig` before the
// Cluster exists, as in topology_test.cc.

#include <gmock/gmock.h>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using caphv::testing::BuildPath;
using caphv::testing::RunCommand;

class GenerateTest : public TopologyFixture {
 protected:
  std::string Kubectl() const {
    return "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
  }
  std::string HarvesterKubeconfig() const {
    return Testbed::Get().KubeconfigPath(caphv::testing::kHarvester);
  }
  // `caphv generate` with the flags of the seed's first example, in the
  // test's namespace.
  std::string SeedExample() const {
    return BuildPath("cmd/caphv/caphv") + " generate --name " + cluster_ + " --namespace " + ns() +
           " --image default/sles15-sp7-minimal-vm.x86_64-cloud-qu2.qcow2"
           " --ssh-keypair default/capi-ssh-key --network default/production"
           " --gateway 172.16.0.1 --subnet-mask 255.255.0.0 --ip-pool prod-ip-pool"
           " --dns 172.16.0.1 --harvester-kubeconfig '" +
           HarvesterKubeconfig() +
           "' --cp-replicas 3 --worker-replicas 2 --cpu 4 --memory 8Gi --disk-size 80Gi"
           " --k8s-version v1.31.14";
  }
};

TEST_F(GenerateTest, SeedExamplesAreAcceptedByTheApiserver) {
  const std::string dir = log_path_.parent_path().string();
  struct Example {
    std::string name;
    std::string flags;
  };
  const std::vector<Example> examples = {
      {"crs", ""},
      {"fleet",
       " --cni calico --cni-mtu 1450 --cni-encapsulation VXLAN --pod-cidr 10.244.0.0/16"
       " --fleet-addon-repo https://git.example.test/caphv-fleet-addons.git"},
  };
  for (const auto& e : examples) {
    const std::string file = dir + "/generate-" + ns() + "-" + e.name + ".yaml";
    std::string out;
    ASSERT_EQ(RunCommand(SeedExample() + e.flags + " -o " + file + " 2>&1", &out), 0) << out;
    auto text = api::ReadFile(file);
    ASSERT_TRUE(text.ok());
    auto docs = api::ParseYaml(*text);
    ASSERT_TRUE(docs.ok());
    // The bed has no Fleet: its GitRepo is checked by the unit tests only.
    std::vector<Object> kept;
    size_t git_repos = 0;
    for (const auto& d : *docs) {
      if (d.value("kind", "") == "GitRepo") {
        ++git_repos;
        continue;
      }
      kept.push_back(d);
    }
    EXPECT_EQ(git_repos, e.name == "fleet" ? 1u : 0u);
    const std::string checked = dir + "/generate-" + ns() + "-" + e.name + "-checked.yaml";
    {
      std::ofstream f(checked);
      for (const auto& d : kept) f << "---\n" << api::ToYaml(d);
    }
    out.clear();  // RunCommand appends
    ASSERT_EQ(RunCommand(Kubectl() + "apply --dry-run=server -f '" + checked + "' 2>&1", &out), 0)
        << e.name << ":\n"
        << out;
    // kubectl lists each object it would create.
    EXPECT_THAT(out, ::testing::HasSubstr("cluster.cluster.x-k8s.io/" + cluster_ +
                                          " created (server dry run)"))
        << out;
    EXPECT_THAT(out, ::testing::HasSubstr("clusterclass.cluster.x-k8s.io/harvester-rke2 created "
                                          "(server dry run)"))
        << out;
  }
}

TEST_F(GenerateTest, ApplyProvisionsTheClusterAndDeletingItLeavesNothing) {
  EXPECT_TRUE(Eventually([&] { return !ServingSecretExists(); }, kWait, kPoll))
      << "kube-system/rke2-serving of an earlier cluster is still in the workload cluster";
  DeleteAddonObjectsFromWorkload();
  const Pool pool = CreatePool(8);
  const std::string command =
      BuildPath("cmd/caphv/caphv") + " generate --apply --kubeconfig '" +
      Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' --name " + cluster_ +
      " --namespace " + ns() +
      " --image default/image-ubuntu --ssh-keypair default/demo-key --ssh-user ubuntu"
      " --network default/vlan100 --gateway " +
      pool.prefix + "1 --subnet-mask 255.255.255.0 --ip-pool " + pool.name +
      " --dns 10.0.10.2 --harvester-kubeconfig '" + HarvesterKubeconfig() +
      "' --target-namespace " + target_ns_ + " --cp-replicas 1 --worker-replicas 2 --k8s-version " +
      kVersion + " --pod-cidr 10.52.0.0/16 --timeout 10m";
  std::string out;
  ASSERT_EQ(RunCommand(command + " 2>&1", &out), 0) << out;
  // What the user sees: each object applied, the progress, the end.
  EXPECT_THAT(out, ::testing::HasSubstr("applied ClusterClass " + ns() + "/harvester-rke2\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("applied Cluster " + ns() + "/" + cluster_ + "\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("machines running 0/3"));
  EXPECT_THAT(out, ::testing::HasSubstr("cluster " + ns() + "/" + cluster_ +
                                        ": control plane initialized, machines running 3/3\n"));
  EXPECT_THAT(out, ::testing::EndsWith("cluster " + ns() + "/" + cluster_ + " is provisioned\n"));

  // Provisioned as it said: three Machines Running with initialised Nodes,
  // the objects owned by the field manager caphv.
  ASSERT_EQ(WaitForInitialisedNodes(3).size(), 3u);
  auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster.ok());
  EXPECT_TRUE(ConditionTrue(*cluster, "ControlPlaneInitialized"));
  bool managed = false;
  for (const auto& m : (*cluster)["metadata"].value("managedFields", Object::array())) {
    managed = managed || m.value("manager", "") == "caphv";
  }
  EXPECT_TRUE(managed) << (*cluster)["metadata"].dump();
  // The cloud provider's ClusterResourceSet applied CAPHV's credentials.
  EXPECT_TRUE(Eventually(
      [&] { return !SecretValueInAddonConfigMap("cloud-config", "cloud-config").empty(); }, kWait,
      kPoll));

  // Again: nothing changes, the class is left alone (it exists), the wait
  // ends at once.
  out.clear();  // RunCommand appends
  ASSERT_EQ(RunCommand(command + " 2>&1", &out), 0) << out;
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("applied ClusterClass")));
  EXPECT_THAT(out, ::testing::HasSubstr("is provisioned\n"));

  const std::string hc_name = InfraClusterName();
  ASSERT_FALSE(hc_name.empty());
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
      kWait, kPoll));
}

// `caphv doctor` against the simulated Harvester: one line per check, the
// exit code the number of failures; a missing image and pools too small for
// the replicas asked are failures with their fix.
TEST_F(GenerateTest, DoctorReportsAMissingImageAndSmallPools) {
  const Pool pool = CreatePool(4);
  const std::string doctor = BuildPath("cmd/caphv/caphv") + " doctor --harvester-kubeconfig '" +
                             HarvesterKubeconfig() + "' --kubeconfig '" +
                             Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) +
                             "' --namespace " + ns() + " --ssh-keypair default/demo-key" +
                             " --network default/vlan100 --ip-pool " + pool.name;
  std::string out;
  const int rc = RunCommand(doctor + " --image default/no-such-image --replicas 5 2>&1", &out);
  EXPECT_THAT(out, ::testing::HasSubstr("✓ harvester reachable: "));
  EXPECT_THAT(out, ::testing::HasSubstr(
                       "✗ image: default/no-such-image not found; fix: upload the image in "
                       "Harvester (Images) or give --image the namespace/name of an Active one\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ key pair: default/demo-key exists\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ network: default/vlan100 exists\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ ip pool " + pool.name + ": 4 free addresses\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("✗ ip pools hold the machines: 4 free addresses for 5 "
                                        "machines; fix: "));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ cloud-provider ClusterRole: "));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ Cluster API: "));
  EXPECT_THAT(out, ::testing::HasSubstr("✓ CAPHV: "));
  EXPECT_THAT(out, ::testing::HasSubstr("✗ ClusterClass: " + ns() + "/harvester-rke2 not found"));
  int failures = 0;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) failures += line.rfind("✗", 0) == 0 ? 1 : 0;
  EXPECT_GE(failures, 3);
  EXPECT_EQ(rc, failures) << out;

  // The image of the bed, the pools large enough, as JSON.
  ApplyClusterClass();
  out.clear();
  RunCommand(doctor + " --image default/image-ubuntu --replicas 4 -o json", &out);
  auto checks = Object::parse(out, nullptr, false);
  ASSERT_TRUE(checks.is_array()) << out;
  std::map<std::string, bool> ok;
  for (const auto& c : checks) ok[c.value("name", "")] = c.value("ok", false);
  EXPECT_TRUE(ok["image"]) << out;
  EXPECT_TRUE(ok["ip pools hold the machines"]) << out;
  EXPECT_TRUE(ok["ClusterClass"]) << out;
}

}  // namespace
}  // namespace caphv::e2e::topology
