// End-to-end: VMs that are not provably a machine's are never touched. The
// Harvester target namespace already holds two VMs named like the cluster's
// future machines: one labelled as a cluster of the same name on another
// management cluster, one made by hand (no labels at all, as a user's VM or
// one the Go provider made without recording it). Each machine reports
// VMNameConflict with a Warning Event and waits; neither VM is modified, and
// deleting the Cluster leaves both where they were, and nothing of the
// machines behind. See docs/adoption.md.

#include "e2e_fixture.h"
#include "harvester/naming.h"

namespace caphv::e2e {
namespace {

class ConflictTest : public E2ETest {
 protected:
  // A halted VM as someone else would have made it.
  Object ForeignVm(const std::string& name, const std::map<std::string, std::string>& labels) {
    Object vm = {{"apiVersion", "kubevirt.io/v1"},
                 {"kind", "VirtualMachine"},
                 {"metadata", {{"name", name}, {"namespace", target_ns_}}},
                 {"spec",
                  {{"runStrategy", "Halted"},
                   {"template",
                    {{"spec",
                      {{"domain",
                        {{"devices", Object::object()},
                         {"resources", {{"limits", {{"memory", "1Gi"}}}}}}}}}}}}}};
    if (!labels.empty()) vm["metadata"]["labels"] = labels;
    auto created = harvester_->Create(kVirtualMachines, target_ns_, vm);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : Object::object();
  }
};

TEST_F(ConflictTest, VmsOfAnotherClusterOrOfNobodyAreNeverTouched) {
  auto target = harvester_->Create(
      kube::resources::kNamespaces, "",
      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", target_ns_}}}});
  ASSERT_TRUE(target.ok()) << target.status().ToString();
  const std::string theirs = cluster_ + "-theirs";
  const std::string by_hand = cluster_ + "-by-hand";
  const auto other_cluster =
      harvester::ClusterLabels({"another-management-cluster", ns(), cluster_});
  const std::map<std::string, Object> before = {{theirs, ForeignVm(theirs, other_cluster)},
                                                {by_hand, ForeignVm(by_hand, {})}};
  ASSERT_FALSE(HasFailure());

  CreateCluster(HarvesterClusterSpec());
  CreateMachine(theirs, false);
  CreateMachine(by_hand, false);

  std::string why;
  ASSERT_TRUE(Eventually(
      [&] {
        why.clear();
        for (const auto& [name, vm] : before) {
          auto hm = HarvesterMachine(name);
          const std::string reason =
              hm ? Str(ConditionOf(*hm, "VMProvisioningReady"), "/reason") : "";
          if (reason != "VMNameConflict" || !HasWarning(name, "VMNameConflict")) {
            why += " " + name + ": " + reason;
          }
        }
        return why.empty();
      },
      kWait, kPoll))
      << why << MachinesSummary();

  // Untouched: the same labels, annotations and spec (its status is
  // KubeVirt's to write), not being deleted.
  auto unchanged = [&](const std::string& when) {
    for (const auto& [name, vm] : before) {
      auto now = harvester_->Get(kVirtualMachines, target_ns_, name);
      ASSERT_TRUE(now.ok()) << name << " " << when << ": " << now.status().ToString();
      for (const char* pointer : {"/metadata/labels", "/metadata/annotations", "/spec"}) {
        const Object::json_pointer p(pointer);
        EXPECT_EQ(now->value(p, Object()), vm.value(p, Object()))
            << name << " " << pointer << " was modified " << when;
      }
      EXPECT_FALSE(IsDeleting(*now)) << name << " is being deleted " << when;
    }
  };
  unchanged("while the machines wait");

  DeleteClusterAndWait();
  unchanged("after the Cluster was deleted");
  // A machine beside a VM the cache cannot see (the one made by hand) made
  // its own cloud-init Secret before its VM's creation found the name taken;
  // the machine's deletion removed it.
  EXPECT_TRUE(
      OnHarvester(kube::resources::kSecrets, std::string(harvester::kLabelManagedBy) + "=caphv")
          .empty());
}

}  // namespace
}  // namespace caphv::e2e
