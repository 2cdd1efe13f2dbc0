// End-to-end: `caphv generate` (docs/cli.md) against the bed. The YAML of the
// seed's examples (the Go provider's guide: CRS addons; Fleet) and of one
// with --cis-profile and --fips-required is accepted by the management
// apiserver (kubectl apply --dry-run=server: the CRDs, Cluster API's
// webhooks); `caphv generate --interactive --apply`, driven in a real
// terminal (tmux) from the first question to the end, offers what the
// simulated Harvester has, provisions a topology Cluster of the ClusterClass
// harvester-rke2 through the RKE2 providers, reporting its progress, and
// deleting the Cluster leaves nothing on Harvester, in the pools nor in the
// workload cluster. The bed's workload apiserver stands for the new cluster:
// the fixture writes `<cluster>-kubeconfig` before the Cluster exists, as in
// topology_test.cc.

#include <gmock/gmock.h>

#include <regex>

#include "topology_fixture.h"

namespace caphv::e2e::topology {
namespace {

using caphv::testing::BuildPath;
using caphv::testing::RunCommand;

// A command in a detached tmux session of its own server (socket): 200x50,
// keys sent as a user types them, the screen read with capture-pane.
class Tmux {
 public:
  explicit Tmux(std::string name) : name_(std::move(name)) {}
  ~Tmux() { RunCommand(Base() + "kill-server 2>/dev/null"); }
  Tmux(const Tmux&) = delete;
  Tmux& operator=(const Tmux&) = delete;

  // Runs `script` (a shell script file) under /bin/sh, whatever the user's
  // shell; its exit code goes to `rc_file`, and the pane stays for
  // capture-pane.
  bool Start(const std::string& script, const std::string& rc_file) {
    std::string out;
    return RunCommand(Base() + "new-session -d -x 200 -y 50 -s main /bin/sh -c \"sh '" + script +
                          "'; echo \\$? > '" + rc_file + "'; sleep 600\"",
                      &out) == 0;
  }
  // The whole screen and its history, wrapped lines joined, trailing blanks gone.
  std::string Screen() const {
    std::string out;
    RunCommand(Base() + "capture-pane -p -J -S - -t main", &out);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }
  std::string LastLine() const {
    const std::string screen = Screen();
    return screen.substr(screen.rfind('\n') + 1);
  }
  // Types `text` and Enter.
  void Type(const std::string& text) const {
    if (!text.empty()) RunCommand(Base() + "send-keys -t main -l '" + text + "'");
    RunCommand(Base() + "send-keys -t main Enter");
  }

 private:
  // Its own server (socket), without the user's configuration.
  std::string Base() const { return "env -u TMUX tmux -f /dev/null -L '" + name_ + "' "; }
  std::string name_;
};

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
      {"compliance", " --cis-profile cis --fips-required"},
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

// A namespace whose class still names the RKE2 templates at v1beta1 on a
// management cluster whose RKE2 providers (v0.25) serve v1beta2, as after an
// upgrade of Cluster API: `caphv generate --apply` refuses in one line,
// naming the fix, and creates nothing (Cluster API v1.14 could not reconcile
// the topology of such a cluster).
TEST_F(GenerateTest, ApplyRefusesAClassAtAnotherRke2ApiThanServed) {
  if (Rke2ApiVersion() != "v1beta2") {
    GTEST_SKIP() << "the bed's RKE2 providers serve v1beta1 only";
  }
  std::string out;
  ASSERT_EQ(
      RunCommand(Kubectl() + "apply -n " + ns() + " -f '" +
                     caphv::testing::SourcePath("templates/clusterclass-harvester-rke2.yaml") +
                     "' 2>&1",
                 &out),
      0)
      << out;
  out.clear();
  EXPECT_EQ(RunCommand(SeedExample() + " --apply --timeout 30s --kubeconfig '" +
                           Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' 2>&1",
                       &out),
            1)
      << out;
  EXPECT_THAT(out, ::testing::HasSubstr("caphv generate: ClusterClass " + ns() +
                                        "/harvester-rke2 refers to the RKE2 providers' API at "
                                        "v1beta1 but they serve v1beta2: apply it with its RKE2 "
                                        "apiVersions moved to v1beta2 first"))
      << out;
  EXPECT_TRUE(mgmt_->Get(kClusters, ns(), cluster_).status().IsNotFound());
}

// Waits until the last line of the terminal is the question `prompt` (its
// default in brackets included); false after `timeout`.
bool AwaitPrompt(const Tmux& tmux, const std::string& prompt,
                 std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  return Eventually([&] { return tmux.LastLine() == prompt; }, timeout,
                    std::chrono::milliseconds(50));
}

// The number a list on the screen gives the choice starting with `item`
// ("  3) default/image-ubuntu  ubuntu-24.04  Active"): the last such line.
std::string ChoiceNumber(const std::string& screen, const std::string& item) {
  const std::regex line("\n  ([0-9]+)\\) " + std::regex_replace(item, std::regex("[.]"), "\\.") +
                        "( [^\n]*)?(?=\n)");
  std::string number;
  for (std::sregex_iterator it(screen.begin(), screen.end(), line), end; it != end; ++it) {
    number = (*it)[1];
  }
  return number;
}

// `caphv generate --interactive --apply` in a terminal, from the first
// question to the provisioned cluster: the lists offer the simulator's
// image (with its state), key pair, network and the test's pool (with its
// free addresses); the flags given are the defaults; the gateway and mask
// come from the pool; an answer the pool cannot hold is asked again.
TEST_F(GenerateTest, InteractiveApplyProvisionsTheClusterAndDeletingItLeavesNothing) {
  if (RunCommand("command -v tmux >/dev/null") != 0) {
    GTEST_SKIP() << "tmux is not installed (hack/setup.sh installs it): the interactive mode is "
                    "driven in a terminal";
  }
  EXPECT_TRUE(Eventually([&] { return !ServingSecretExists(); }, kWait, kPoll))
      << "kube-system/rke2-serving of an earlier cluster is still in the workload cluster";
  DeleteAddonObjectsFromWorkload();
  const Pool pool = CreatePool(8);
  const std::string dir = log_path_.parent_path().string();
  const std::string script = dir + "/interactive-" + ns() + ".sh";
  const std::string rc_file = dir + "/interactive-" + ns() + ".rc";
  std::filesystem::remove(rc_file);
  // The management cluster, the target namespace and the version as flags:
  // they are the defaults of their questions.
  const std::string flags = " --kubeconfig '" +
                            Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) +
                            "' --target-namespace " + target_ns_ + " --k8s-version " + kVersion +
                            " --pod-cidr 10.52.0.0/16 --timeout 10m";
  std::ofstream(script) << "exec " << BuildPath("cmd/caphv/caphv")
                        << " generate --interactive --apply" << flags << "\n";
  Tmux tmux("caphv-e2e-" + ns());
  ASSERT_TRUE(tmux.Start(script, rc_file));

  // Each question, its default as the user sees it, the answer typed.
  auto answer = [&](const std::string& prompt, const std::string& typed) {
    ASSERT_TRUE(AwaitPrompt(tmux, prompt)) << "waiting for \"" << prompt << "\":\n"
                                           << tmux.Screen();
    tmux.Type(typed);
  };
  ASSERT_NO_FATAL_FAILURE(answer("Harvester kubeconfig:", HarvesterKubeconfig()));
  ASSERT_NO_FATAL_FAILURE(answer("Cluster name:", cluster_));
  ASSERT_NO_FATAL_FAILURE(
      answer("Namespace of the Cluster (management cluster) [" + cluster_ + "]:", ns()));
  ASSERT_NO_FATAL_FAILURE(answer("Harvester namespace of the VMs [" + target_ns_ + "]:", ""));

  // The lists are the simulator's.
  ASSERT_TRUE(Eventually([&] { return tmux.LastLine().starts_with("VM image ["); }, kWait,
                         std::chrono::milliseconds(50)))
      << tmux.Screen();
  std::string screen = tmux.Screen();
  EXPECT_THAT(screen, ::testing::ContainsRegex(
                          "\n  [0-9]+\\) default/image-ubuntu +ubuntu-24.04 +Active\n"));
  const std::string image = ChoiceNumber(screen, "default/image-ubuntu");
  ASSERT_FALSE(image.empty()) << screen;
  tmux.Type(image);
  ASSERT_TRUE(Eventually([&] { return tmux.LastLine().starts_with("SSH key pair ["); }, kWait,
                         std::chrono::milliseconds(50)))
      << tmux.Screen();
  const std::string key = ChoiceNumber(tmux.Screen(), "default/demo-key");
  ASSERT_FALSE(key.empty()) << tmux.Screen();
  tmux.Type(key);
  ASSERT_NO_FATAL_FAILURE(answer("SSH user [ubuntu]:", ""));  // the image's
  ASSERT_TRUE(Eventually([&] { return tmux.LastLine().starts_with("VM network ["); }, kWait,
                         std::chrono::milliseconds(50)))
      << tmux.Screen();
  EXPECT_THAT(tmux.Screen(), ::testing::ContainsRegex("\\) default/vlan100 +VLAN 100\n"));
  tmux.Type(ChoiceNumber(tmux.Screen(), "default/vlan100"));
  ASSERT_TRUE(Eventually([&] { return tmux.LastLine().starts_with("IP pool(s)"); }, kWait,
                         std::chrono::milliseconds(50)))
      << tmux.Screen();
  screen = tmux.Screen();
  EXPECT_THAT(screen,
              ::testing::ContainsRegex("\\) " + pool.name + " +" +
                                       std::regex_replace(pool.prefix, std::regex("[.]"), "\\.") +
                                       "0/24 +8 free of 8 +network default/vlan100\n"));
  tmux.Type(ChoiceNumber(screen, pool.name));
  ASSERT_NO_FATAL_FAILURE(answer("Gateway [" + pool.prefix + "1]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("Subnet mask [255.255.255.0]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("DNS servers, comma-separated [none]:", "10.0.10.2"));
  // More machines than the pool has addresses: said, and asked again.
  ASSERT_NO_FATAL_FAILURE(answer("Control-plane machines [3]:", "9"));
  ASSERT_TRUE(AwaitPrompt(tmux, "Control-plane machines [3]:")) << tmux.Screen();
  EXPECT_THAT(tmux.Screen(),
              ::testing::HasSubstr("Control-plane machines [3]: 9\n  the pools (" + pool.name +
                                   ") have 8 free addresses: at most 8\n"));
  tmux.Type("1");
  ASSERT_NO_FATAL_FAILURE(answer("Worker machines [2]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("CPUs per machine [2]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("Memory per machine [4Gi]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("Boot disk size [40Gi]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer(std::string("Kubernetes version [") + kVersion + "]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("CNI [calico]:", ""));
  ASSERT_NO_FATAL_FAILURE(answer("Apply now? [Y/n]:", "y"));
  screen = tmux.Screen();
  EXPECT_THAT(screen, ::testing::ContainsRegex("\n  Cluster +" + ns() + "/" + cluster_ +
                                               " of the ClusterClass harvester-rke2\n"));
  EXPECT_THAT(screen,
              ::testing::ContainsRegex("\n  IP pools +" + pool.name + " \\(8 free addresses\\)\n"));
  EXPECT_THAT(screen, ::testing::ContainsRegex(
                          "\n  Machines +1 control plane, 2 workers; 2 CPUs, 4Gi memory"));

  // Applied and provisioned; the command exits 0.
  std::string rc;
  ASSERT_TRUE(Eventually(
      [&] {
        rc = ReadWholeFile(rc_file);
        return !rc.empty();
      },
      std::chrono::minutes(10), kPoll))
      << tmux.Screen();
  std::string out = tmux.Screen();
  EXPECT_EQ(rc, "0\n") << out;
  // What the user sees: each object applied, the progress, the end.
  EXPECT_THAT(out, ::testing::HasSubstr("applied ClusterClass " + ns() + "/harvester-rke2\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("applied Cluster " + ns() + "/" + cluster_ + "\n"));
  EXPECT_THAT(out, ::testing::HasSubstr("machines running 0/3"));
  EXPECT_THAT(out, ::testing::HasSubstr("cluster " + ns() + "/" + cluster_ +
                                        ": control plane initialized, machines running 3/3\n"));
  EXPECT_THAT(out, ::testing::EndsWith("cluster " + ns() + "/" + cluster_ + " is provisioned"));

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

  // Again, with the answers as flags: nothing changes, the class is left
  // alone (it exists), the wait ends at once.
  const std::string command =
      BuildPath("cmd/caphv/caphv") + " generate --apply" + flags + " --name " + cluster_ +
      " --namespace " + ns() +
      " --image default/image-ubuntu --ssh-keypair default/demo-key --ssh-user ubuntu"
      " --network default/vlan100 --gateway " +
      pool.prefix + "1 --subnet-mask 255.255.255.0 --ip-pool " + pool.name +
      " --dns 10.0.10.2 --harvester-kubeconfig '" + HarvesterKubeconfig() +
      "' --cp-replicas 1 --worker-replicas 2";
  out.clear();
  ASSERT_EQ(RunCommand(command + " 2>&1", &out), 0) << out;
  EXPECT_THAT(out, ::testing::Not(::testing::HasSubstr("applied ClusterClass")));
  EXPECT_THAT(out, ::testing::HasSubstr("is provisioned\n"));

  ASSERT_FALSE(InfraClusterName().empty());
  DeleteClusterExpectingNothingLeft();
}

}  // namespace
}  // namespace caphv::e2e::topology
