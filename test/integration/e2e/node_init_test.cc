// End-to-end: node initialisation when the guest cluster has no Harvester
// cloud provider. The Harvester target namespace has a simulator of its own
// (labelled sim.caphv.io/dedicated=true, `caphv-sim run --no-cloud-provider`):
// its guests register their Nodes as a kubelet with --cloud-provider=external
// does (no providerID, the node.cloudprovider.kubernetes.io/uninitialized
// taint) and nothing else initialises them. CAPHV sets providerID and lifts
// the taint in one write, which lets Cluster API find the Node (nodeRef);
// a Node whose providerID names something else is left untouched.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

constexpr char kUninitializedTaint[] = "node.cloudprovider.kubernetes.io/uninitialized";

bool HasTaint(const Object& node, const std::string& key) {
  for (const auto& t : node.value("spec", Object::object()).value("taints", Object::array())) {
    if (t.value("key", "") == key) return true;
  }
  return false;
}

// The field managers that wrote the Node's spec.
std::set<std::string> SpecManagers(const Object& node) {
  std::set<std::string> out;
  for (const auto& m :
       node.value("metadata", Object::object()).value("managedFields", Object::array())) {
    if (m.value("subresource", "").empty() &&
        m.value("fieldsV1", Object::object()).contains("f:spec")) {
      out.insert(m.value("manager", ""));
    }
  }
  return out;
}

class NodeInitTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    if (HasFatalFailure()) return;
    auto& bed = Testbed::Get();
    // The target namespace exists before the HarvesterCluster, dedicated to
    // a simulator without the cloud provider.
    auto created = harvester_->Create(
        kube::resources::kNamespaces, "",
        {{"apiVersion", "v1"},
         {"kind", "Namespace"},
         {"metadata", {{"name", target_ns_}, {"labels", {{"sim.caphv.io/dedicated", "true"}}}}}});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    sim_ = std::make_unique<caphv::testing::ChildProcess>(
        std::vector<std::string>{caphv::testing::BuildPath("cmd/caphv-sim/caphv-sim"), "run",
                                 "--kubeconfig", bed.KubeconfigPath(caphv::testing::kHarvester),
                                 "--workload-kubeconfig",
                                 bed.KubeconfigPath(caphv::testing::kWorkload), "--namespace",
                                 target_ns_, "--no-cloud-provider"},
        std::filesystem::path(bed.dir()) / "logs" / ("caphv-sim-" + target_ns_ + ".log"));
    ASSERT_TRUE(Eventually(
        [&] {
          return harvester_
              ->Get(kube::resources::kValidatingWebhookConfigurations, "",
                    "caphv-sim-" + target_ns_)
              .ok();
        },
        std::chrono::seconds(30), kPoll))
        << "the dedicated simulator did not come up:\n"
        << sim_->Log();
  }

  void TearDown() override {
    E2ETest::TearDown();  // the simulator finalises the VMs being deleted
    for (const auto& n : nodes_) workload_->Delete(kube::resources::kNodes, "", n).IgnoreError();
    if (sim_) sim_->Stop(SIGTERM);
    sim_.reset();
  }

  std::optional<Object> Node(const std::string& name) const {
    auto got = workload_->Get(kube::resources::kNodes, "", name);
    return got.ok() ? std::optional<Object>(*got) : std::nullopt;
  }

  int EventCount(const std::string& name, const std::string& reason) const {
    int n = 0;
    for (const auto& e : EventsOf(name)) {
      if (e.value("reason", "") == reason) n += e.value("count", 1);
    }
    return n;
  }

  std::unique_ptr<caphv::testing::ChildProcess> sim_;
  std::vector<std::string> nodes_;  // Nodes the test made
};

TEST_F(NodeInitTest, TheMachinesNodeGetsItsProviderIdAndLosesTheTaintAForeignOneIsLeftAlone) {
  CreateCluster(HarvesterClusterSpec());
  const std::string cp = cluster_ + "-cp-0";
  CreateMachine(cp, true);

  // The guest registers its Node uninitialised; CAPHV initialises it and
  // Cluster API, which finds Nodes by providerID, sets the nodeRef.
  const auto machines = WaitForRunningMachines(1);
  ASSERT_EQ(machines.size(), 1u);
  const auto hm = HarvesterMachine(cp);
  ASSERT_TRUE(hm);
  const std::string provider_id = Str(*hm, "/spec/providerID");
  ASSERT_TRUE(IsHarvesterProviderId(provider_id)) << provider_id;
  auto node = Node(cp);
  ASSERT_TRUE(node);
  EXPECT_EQ(Str(*node, "/spec/providerID"), provider_id);
  EXPECT_FALSE(HasTaint(*node, kUninitializedTaint)) << node->dump();
  EXPECT_TRUE(SpecManagers(*node).contains("caphv")) << node->dump();
  ASSERT_TRUE(Eventually([&] { return ConditionTrue(*HarvesterMachine(cp), "NodeInitialized"); },
                         kWait, kPoll))
      << MachinesSummary();
  EXPECT_EQ(ConditionOf(*HarvesterMachine(cp), "NodeInitialized").value("reason", ""),
            "NodeInitialized");
  EXPECT_NE(ConditionOf(*HarvesterMachine(cp), "NodeInitialized")
                .value("message", "")
                .find("(set by CAPHV)"),
            std::string::npos);
  // One write for the Node; the condition says it, no Event is written.
  EXPECT_EQ(Metric("caphv_node_init_total"), 1.0);
  EXPECT_EQ(Metric("caphv_node_init_errors_total"), 0.0);
  EXPECT_EQ(Metric("caphv_node_init_duration_seconds_count"), 1.0);
  EXPECT_EQ(EventCount(cp, "NodeInitialized"), 0);

  // A worker whose Node already names another instance: never touched.
  const std::string worker = cluster_ + "-w-0";
  auto foreign = workload_->Create(
      kube::resources::kNodes, "",
      {{"apiVersion", "v1"},
       {"kind", "Node"},
       {"metadata", {{"name", worker}}},
       {"spec",
        {{"providerID", "harvester://not-this-vm"},
         {"taints",
          Object::array(
              {{{"key", kUninitializedTaint}, {"value", "true"}, {"effect", "NoSchedule"}}})}}}},
      {.field_manager = "kubelet"});
  ASSERT_TRUE(foreign.ok()) << foreign.status().ToString();
  nodes_.push_back(worker);
  CreateMachine(worker, false);
  ASSERT_TRUE(Eventually(
      [&] {
        auto m = HarvesterMachine(worker);
        return m &&
               ConditionOf(*m, "NodeInitialized").value("reason", "") == "NodeProviderIDMismatch";
      },
      kWait, kPoll))
      << MachinesSummary();
  EXPECT_TRUE(Eventually([&] { return HasWarning(worker, "NodeProviderIDMismatch"); },
                         std::chrono::seconds(10), kPoll));
  node = Node(worker);
  ASSERT_TRUE(node);
  EXPECT_EQ(Str(*node, "/spec/providerID"), "harvester://not-this-vm");
  EXPECT_TRUE(HasTaint(*node, kUninitializedTaint));
  EXPECT_FALSE(SpecManagers(*node).contains("caphv")) << node->dump();
  EXPECT_EQ(Metric("caphv_node_init_total"), 1.0);
  EXPECT_EQ(EventCount(worker, "NodeInitialized"), 0);
}

}  // namespace
}  // namespace caphv::e2e
