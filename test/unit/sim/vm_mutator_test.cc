// Unit tests for sim/vm_mutator.h: Harvester's VM mutator on CREATE.

#include "sim/vm_mutator.h"

#include <gtest/gtest.h>

#include "sim/kubevirt.h"

namespace caphv::sim {
namespace {

using kube::Object;

// A VM as CAPHV sends it: guest memory below the limit, no requests, no MAC.
Object Vm() {
  return Object::parse(R"({
    "metadata": {"name": "m-0", "namespace": "guests"},
    "spec": {"template": {"spec": {
      "domain": {
        "cpu": {"cores": 2, "sockets": 1, "threads": 1},
        "memory": {"guest": "3996Mi"},
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}},
        "devices": {"interfaces": [{"name": "nic-0", "bridge": {}, "model": "virtio"}]}},
      "networks": [{"name": "nic-0", "multus": {"networkName": "default/vlan100"}}]}}}
  })");
}

// Applies the JSON patch operations MutateVmPatch returns (add / replace).
Object Apply(Object doc, const Object& ops) {
  for (const auto& op : ops) {
    const auto ptr = Object::json_pointer(op["path"].get<std::string>());
    doc[ptr] = op["value"];
  }
  return doc;
}

std::string MgmtNetwork(const std::string& ns, const std::string& name) {
  return ns == "default" && name == "vlan100" ? "mgmt" : "";
}

TEST(MutateVmPatchTest, TheVmIsStoredAsHarvesterStoresIt) {
  const Object ops = MutateVmPatch(Vm(), MgmtNetwork);
  const Object vm = Apply(Vm(), ops);
  const Object& spec = vm["spec"]["template"]["spec"];
  const Object& domain = spec["domain"];
  EXPECT_EQ(domain["memory"]["guest"], "4Gi");                // = limit: no reserve at ratio 1.5
  EXPECT_EQ(domain["resources"]["requests"]["cpu"], "125m");  // 2 cores / 16
  EXPECT_EQ(domain["resources"]["requests"]["memory"], "2730Mi");  // 4Gi / 1.5, in MiB
  EXPECT_EQ(domain["cpu"]["maxSockets"], 1);
  EXPECT_EQ(spec["terminationGracePeriodSeconds"], 120);
  EXPECT_EQ(domain["devices"]["interfaces"][0]["macAddress"], GeneratedMac("guests/m-0", 0));
  const Object& term =
      spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
          ["nodeSelectorTerms"][0];
  EXPECT_EQ(term["matchExpressions"][0]["key"], "network.harvesterhci.io/mgmt");
  // Mutating the stored VM again changes nothing but the requests it recomputes.
  const Object again = Apply(vm, MutateVmPatch(vm, MgmtNetwork));
  EXPECT_EQ(again, vm);
}

TEST(MutateVmPatchTest, AUsersAffinityTermsEachGetTheNetwork) {
  Object vm = Vm();
  vm["spec"]["template"]["spec"]["affinity"] = Object::parse(R"({"nodeAffinity":
    {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}})");
  const Object out = Apply(vm, MutateVmPatch(vm, MgmtNetwork));
  const Object& terms = out["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                           ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);
  for (const auto& t : terms) {
    ASSERT_EQ(t["matchExpressions"].size(), 2u) << t.dump();
    EXPECT_EQ(t["matchExpressions"][1]["key"], "network.harvesterhci.io/mgmt");
  }
}

TEST(MutateVmPatchTest, SetValuesAreKept) {
  Object vm = Vm();
  vm["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = 30;
  vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0]["macAddress"] =
      "52:54:00:aa:bb:cc";
  const Object out = Apply(vm, MutateVmPatch(vm, MgmtNetwork));
  EXPECT_EQ(out["spec"]["template"]["spec"]["terminationGracePeriodSeconds"], 30);
  EXPECT_EQ(out["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0]["macAddress"],
            "52:54:00:aa:bb:cc");
  EXPECT_TRUE(MutateVmPatch(Object::object(), MgmtNetwork).empty());
}

}  // namespace
}  // namespace caphv::sim
