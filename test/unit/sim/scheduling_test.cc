// Unit tests for sim/scheduling.h: where a VM's pod lands among the Harvester
// hosts, and the scheduler's words when it lands nowhere.

#include "sim/scheduling.h"

#include <gtest/gtest.h>

#include <set>

#include "sim/kubevirt.h"

namespace caphv::sim {
namespace {

using kube::Object;

Host Zoned(const std::string& name, const std::string& zone) {
  return {name,
          {{"kubernetes.io/hostname", name},
           {"topology.kubernetes.io/zone", zone},
           {"network.harvesterhci.io/mgmt", "true"}}};
}

std::vector<Host> ThreeZones() {
  return {Zoned("h1", "zone-a"), Zoned("h2", "zone-b"), Zoned("h3", "zone-c")};
}

Object Requirement(const std::string& key, const std::string& op,
                   std::vector<std::string> values = {}) {
  Object r = {{"key", key}, {"operator", op}};
  if (!values.empty()) r["values"] = values;
  return r;
}

// A VM whose template requires each term (ORed), each a list of requirements.
Object VmRequiring(const std::string& uid, std::vector<std::vector<Object>> terms) {
  Object t = Object::array();
  for (auto& reqs : terms) t.push_back({{"matchExpressions", reqs}});
  Object vm = {{"metadata", {{"name", "vm-" + uid}, {"namespace", "default"}, {"uid", uid}}},
               {"spec", {{"template", {{"spec", Object::object()}}}}}};
  if (!t.empty()) {
    vm["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
      ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = t;
  }
  return vm;
}

TEST(Scheduling, AVmPinnedToAZoneLandsOnThatZonesHost) {
  for (const char* zone : {"zone-a", "zone-b", "zone-c"}) {
    Object vm = VmRequiring(std::string("uid-") + zone,
                            {{Requirement("network.harvesterhci.io/mgmt", "In", {"true"}),
                              Requirement("topology.kubernetes.io/zone", "In", {zone})}});
    Placement p = PlaceVm(vm, ThreeZones());
    EXPECT_TRUE(p.unschedulable.empty()) << p.unschedulable;
    EXPECT_EQ(p.zone, zone);
  }
}

TEST(Scheduling, AFreeVmSpreadsAndKeepsItsHost) {
  std::set<std::string> used;
  for (int i = 0; i < 30; ++i) {
    Object vm = VmRequiring("uid-" + std::to_string(i), {});
    const Placement p = PlaceVm(vm, ThreeZones());
    used.insert(p.node);
    EXPECT_EQ(PlaceVm(vm, ThreeZones()).node, p.node) << "the choice is stable";
  }
  EXPECT_EQ(used.size(), 3u);
}

TEST(Scheduling, TermsAreOredAndRequirementsAnded) {
  // zone-a AND not h1: nothing; (zone-a) OR (zone-c): h1 or h3.
  Object none = VmRequiring("u1", {{Requirement("topology.kubernetes.io/zone", "In", {"zone-a"}),
                                    Requirement("kubernetes.io/hostname", "NotIn", {"h1"})}});
  EXPECT_FALSE(PlaceVm(none, ThreeZones()).unschedulable.empty());
  Object either =
      VmRequiring("u2", {{Requirement("topology.kubernetes.io/zone", "In", {"zone-a"})},
                         {Requirement("topology.kubernetes.io/zone", "In", {"zone-c"})}});
  const std::string node = PlaceVm(either, ThreeZones()).node;
  EXPECT_TRUE(node == "h1" || node == "h3") << node;
}

TEST(Scheduling, OperatorsAsKubernetesDefinesThem) {
  Host h = {"h", {{"cpus", "16"}, {"gpu", "a100"}}};
  auto fits = [&](Object req) {
    return TermMatches({{"matchExpressions", Object::array({std::move(req)})}}, h);
  };
  EXPECT_TRUE(fits(Requirement("gpu", "In", {"a100", "h100"})));
  EXPECT_FALSE(fits(Requirement("gpu", "NotIn", {"a100"})));
  EXPECT_TRUE(fits(Requirement("missing", "NotIn", {"x"})));
  EXPECT_TRUE(fits(Requirement("gpu", "Exists")));
  EXPECT_FALSE(fits(Requirement("gpu", "DoesNotExist")));
  EXPECT_TRUE(fits(Requirement("missing", "DoesNotExist")));
  EXPECT_TRUE(fits(Requirement("cpus", "Gt", {"8"})));
  EXPECT_FALSE(fits(Requirement("cpus", "Lt", {"8"})));
  EXPECT_FALSE(fits(Requirement("gpu", "Gt", {"8"})));  // not an integer
  EXPECT_FALSE(fits(Requirement("gpu", "Foo", {"a100"})));
  // matchFields: metadata.name only.
  Object by_name = {{"matchFields", Object::array({Requirement("metadata.name", "In", {"h"})})}};
  EXPECT_TRUE(TermMatches(by_name, h));
  // An empty term matches nothing.
  EXPECT_FALSE(TermMatches(Object::object(), h));
}

TEST(Scheduling, NodeSelectorMustMatchToo) {
  Object vm = VmRequiring("u", {});
  vm["spec"]["template"]["spec"]["nodeSelector"] = {{"topology.kubernetes.io/zone", "zone-b"}};
  EXPECT_EQ(PlaceVm(vm, ThreeZones()).node, "h2");
}

TEST(Scheduling, NoHostFitsInTheSchedulersWords) {
  std::vector<Host> hosts = ThreeZones();
  hosts[2].unschedulable = true;
  Object vm = VmRequiring("u", {{Requirement("topology.kubernetes.io/zone", "In", {"zone-x"})}});
  const Placement p = PlaceVm(vm, hosts);
  EXPECT_TRUE(p.node.empty());
  EXPECT_EQ(p.unschedulable,
            "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match "
            "Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption "
            "is not helpful for scheduling.");
  EXPECT_EQ(PlaceVm(vm, {}).unschedulable, "no nodes available to schedule pods");
}

TEST(Scheduling, ACordonedHostTakesNoNewVm) {
  std::vector<Host> hosts = {Zoned("h1", "zone-a")};
  hosts[0].unschedulable = true;
  EXPECT_FALSE(PlaceVm(VmRequiring("u", {}), hosts).unschedulable.empty());
  // ... but keeps the VMs bound to it, whatever their affinity says now.
  Object vm = VmRequiring("u", {{Requirement("topology.kubernetes.io/zone", "In", {"zone-x"})}});
  EXPECT_EQ(PlaceVm(vm, hosts, /*bound=*/true).node, "h1");
}

TEST(Scheduling, AnUnschedulableVmIsReportedAsKubeVirtDoes) {
  Object vm = VmRequiring("u", {});
  Placement where;
  where.node.clear();
  where.unschedulable =
      "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.";
  // Whatever its time says, the VMI waits in Scheduling on no node.
  Object vmi = BuildVmi(vm, Stage::kRunning, {}, {.runs = true}, where);
  EXPECT_EQ(vmi["status"]["phase"], "Scheduling");
  EXPECT_FALSE(vmi["status"].contains("nodeName"));
  bool found = false;
  for (const auto& c : vmi["status"]["conditions"]) {
    if (c["type"] == "PodScheduled") {
      found = true;
      EXPECT_EQ(c["status"], "False");
      EXPECT_EQ(c["reason"], "Unschedulable");
      EXPECT_EQ(c["message"], where.unschedulable);
    }
  }
  EXPECT_TRUE(found);
  Object status = BuildVmStatus(vm, Stage::kRunning, where);
  EXPECT_EQ(status["printableStatus"], "ErrorUnschedulable");
  EXPECT_EQ(status["ready"], false);
  EXPECT_EQ(status["conditions"].back()["type"], "PodScheduled");
  EXPECT_EQ(status["conditions"].back()["message"], where.unschedulable);
  // Placed: the VMI is on the chosen host.
  Placement on{"h2", "zone-b", "", ""};
  EXPECT_EQ(BuildVmi(vm, Stage::kRunning, {}, {}, on)["status"]["nodeName"], "h2");
}

}  // namespace
}  // namespace caphv::sim
