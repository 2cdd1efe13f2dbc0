// Integration tests: Harvester's admission rules as the simulated Harvester
// plays them, through the bed's real kube-apiserver, each refusal with the
// words Harvester's load balancer webhook uses (load-balancer-harvester
// v1.7.3 pkg/webhook/ippool, pkg/webhook/loadbalancer; docs/testbed.md).
// IPPools are cluster-scoped: the bed's own simulator judges them.
// LoadBalancers are judged by the simulator of the test's namespace.

#include <gtest/gtest.h>

#include "sim/env.h"
#include "sim_fixture.h"

namespace caphv::sim::testing {
namespace {

using caphv::testing::UniqueName;
using kube::Object;

constexpr char kDenied[] =
    "admission webhook \"validator.harvester-system.harvester-load-balancer-webhook\" denied the "
    "request: Internal error occurred: ";

class AdmissionTest : public SimTest {
 protected:
  void TearDown() override {
    for (const auto& p : pools_) {
      // Release what a test allocated, so the pool can go.
      h_->Patch(gvr::kIPPools, "", p, kube::PatchType::kMerge,
                {{"status", {{"allocated", nullptr}}}})
          .status()
          .IgnoreError();
      h_->Delete(gvr::kIPPools, "", p).IgnoreError();
    }
    SimTest::TearDown();
  }

  // A /24 of 172.30.x.0 that no pool of the bed uses: "172.30.x.".
  std::string FreePrefix() const { return caphv::testing::UnusedPoolPrefix(*h_, "172.30"); }

  Object PoolObject(const std::string& name, const std::string& prefix,
                    const std::string& network = "default/vlan100") const {
    Object selector = {{"network", network}};
    return {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
            {"kind", "IPPool"},
            {"metadata", {{"name", name}}},
            {"spec",
             {{"ranges", Object::array({{{"subnet", prefix + "0/24"},
                                         {"rangeStart", prefix + "10"},
                                         {"rangeEnd", prefix + "20"},
                                         {"gateway", prefix + "1"}}})},
              {"selector", selector}}}};
  }

  // Creates `pool` (deleted at TearDown); the apiserver's answer.
  kube::StatusOr<Object> CreatePool(const Object& pool) {
    auto r = h_->Create(gvr::kIPPools, "", pool);
    if (r.ok()) pools_.push_back(kube::NameOf(pool));
    return r;
  }

  // The refusal of `pool`, once the webhook's cache holds the pools made
  // just before (it judges from its informer, as Harvester's does): a pool
  // that slipped through meanwhile is deleted and tried again.
  kube::Status RefusalOf(const Object& pool) {
    kube::Status last;
    caphv::testing::Eventually([&] {
      auto r = h_->Create(gvr::kIPPools, "", pool);
      if (r.ok()) {
        h_->Delete(gvr::kIPPools, "", kube::NameOf(pool)).IgnoreError();
        return false;
      }
      last = r.status();
      return true;
    });
    return last;
  }

  std::vector<std::string> pools_;
};

// The message of a refusal, as the apiserver relays it.
std::string Refusal(const kube::Status& s) { return s.ok() ? "<allowed>" : s.message(); }

TEST_F(AdmissionTest, ASecondGlobalPoolIsRefusedAPoolWithoutScopeIsNot) {
  auto global = h_->Get(gvr::kIPPools, "", "capi-pool");
  ASSERT_TRUE(global.ok()) << global.status().ToString();
  ASSERT_EQ((*global)["spec"]["selector"]["scope"].size(), 1u) << "the bed's global pool";

  const std::string name = UniqueName("second-global");
  Object pool = PoolObject(name, FreePrefix());
  pool["spec"]["selector"]["scope"] =
      Object::array({{{"project", "*"}, {"namespace", "*"}, {"guestCluster", "*"}}});
  auto refused = CreatePool(pool);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status())
                .find(std::string(kDenied) + "can't create IP pool " + name +
                      " because there is already a global IP pool: capi-pool"),
            std::string::npos)
      << Refusal(refused.status());

  // What CAPHV (and the Go provider) create: no scope at all.
  pool["spec"]["selector"].erase("scope");
  EXPECT_TRUE(CreatePool(pool).ok());
}

TEST_F(AdmissionTest, TheNetworkIsAnExistingNadNamedWithItsNamespace) {
  const std::string name = UniqueName("pool");
  auto refused = CreatePool(PoolObject(name, FreePrefix(), "vlan100"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status())
                .find("can't create IP pool " + name + " because invalid network vlan100"),
            std::string::npos)
      << Refusal(refused.status());
  refused = CreatePool(PoolObject(name, FreePrefix(), "default/nowhere"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status())
                .find("network-attachment-definitions.k8s.cni.cncf.io \"nowhere\" not found"),
            std::string::npos)
      << Refusal(refused.status());
}

TEST_F(AdmissionTest, RangesMayNotOverlapNorStartAtTheNetworkAddress) {
  const std::string prefix = FreePrefix();
  ASSERT_TRUE(CreatePool(PoolObject(UniqueName("first"), prefix)).ok());
  const std::string name = UniqueName("second");
  Object second = PoolObject(name, prefix);
  second["spec"]["ranges"][0]["rangeStart"] = prefix + "15";
  second["spec"]["ranges"][0]["rangeEnd"] = prefix + "30";
  const kube::Status overlap = RefusalOf(second);
  ASSERT_FALSE(overlap.ok());
  EXPECT_NE(
      Refusal(overlap).find("can't create IP pool " + name + " because the ranges [{RangeStart:" +
                            prefix + "15 RangeEnd:" + prefix + "30 Subnet:{IP:" + prefix +
                            "0 Mask:ffffff00} Gateway:" + prefix + "1}] overlap with other pools"),
      std::string::npos)
      << Refusal(overlap);

  second["spec"]["ranges"][0]["rangeStart"] = prefix + "0";
  auto refused = CreatePool(second);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      Refusal(refused.status())
          .find("invalid range start " + prefix + "0: IP " + prefix + "0 is the network address"),
      std::string::npos)
      << Refusal(refused.status());
}

TEST_F(AdmissionTest, AllocatedAddressesStayInRangeAndHoldThePool) {
  const std::string prefix = FreePrefix();
  const std::string name = UniqueName("pool");
  ASSERT_TRUE(CreatePool(PoolObject(name, prefix)).ok());
  // As an allocator writes it (the CRD requires the totals with it).
  auto p = h_->Patch(gvr::kIPPools, "", name, kube::PatchType::kMerge,
                     {{"status",
                       {{"allocated", {{prefix + "12", "ns/holder"}}},
                        {"total", 11},
                        {"available", 10},
                        {"lastAllocated", prefix + "12"}}}});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto refused = h_->Patch(gvr::kIPPools, "", name, kube::PatchType::kMerge,
                           {{"status", {{"allocated", {{prefix + "99", "ns/other"}}}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status()).find("allocated IP " + prefix + "99 is excluded"),
            std::string::npos)
      << Refusal(refused.status());

  const kube::Status deleted = h_->Delete(gvr::kIPPools, "", name);
  ASSERT_FALSE(deleted.ok());
  EXPECT_NE(Refusal(deleted).find("can't delete pool before releasing all the allocated IP"),
            std::string::npos)
      << Refusal(deleted);
  ASSERT_TRUE(h_->Patch(gvr::kIPPools, "", name, kube::PatchType::kMerge,
                        {{"status", {{"allocated", nullptr}}}})
                  .ok());
  EXPECT_TRUE(h_->Delete(gvr::kIPPools, "", name).ok());
}

// KubeVirt's own schema (the bed installs the CRDs of kubevirt.io/kubevirt
// v1.6.0): a field KubeVirt does not know is pruned, as on a real Harvester,
// where the hand-written subset kept it.
TEST_F(AdmissionTest, AnUnknownVmFieldIsPrunedAsByKubeVirt) {
  auto crd =
      h_->Get(kube::resources::kCustomResourceDefinitions, "", "virtualmachines.kubevirt.io");
  ASSERT_TRUE(crd.ok()) << crd.status().ToString();
  ASSERT_NE(crd->value("metadata", Object::object())
                .value("annotations", Object::object())
                .value("sim.caphv.io/kubevirt-crds", ""),
            "")
      << "the bed runs the simulator's embedded VM CRD, not KubeVirt's "
         "(hack/build-testbins.sh kubevirt-crds)";
  const std::string name = UniqueName("vm");
  Object vm = MakeVm(name, "");
  vm["spec"]["template"]["spec"]["domain"]["notAKubeVirtField"] = "x";
  vm["spec"]["template"]["spec"]["domain"]["cpu"]["alsoUnknown"] = 3;
  vm["spec"]["runStrategy"] = "Halted";
  auto created = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const Object& domain = (*created)["spec"]["template"]["spec"]["domain"];
  EXPECT_FALSE(domain.contains("notAKubeVirtField")) << domain.dump();
  EXPECT_FALSE(domain["cpu"].contains("alsoUnknown")) << domain.dump();
  EXPECT_TRUE(domain["cpu"].contains("cores")) << domain.dump();
  h_->Delete(gvr::kVirtualMachines, ns_->name(), name).IgnoreError();
}

// Harvester's VM mutator: the VM is stored as Harvester stores it, not as
// the provider sent it (guest memory, requests, MACs, sockets, grace period,
// the cluster network's node affinity).
TEST_F(AdmissionTest, TheStoredVmIsTheOneHarvesterMutated) {
  StartSim();
  const std::string name = UniqueName("vm");
  Object vm = MakeVm(name, "");
  vm["spec"]["template"]["spec"]["domain"]["memory"]["guest"] = "3996Mi";
  ASSERT_TRUE(h_->Create(kube::resources::kSecrets, ns_->name(), MakeCloudInit(name, "")).ok());
  auto created = h_->Create(gvr::kVirtualMachines, ns_->name(), vm);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const Object& spec = (*created)["spec"]["template"]["spec"];
  EXPECT_EQ(spec["domain"]["memory"]["guest"], "4Gi");
  EXPECT_EQ(spec["domain"]["resources"]["requests"]["cpu"], "125m");
  EXPECT_EQ(spec["domain"]["resources"]["requests"]["memory"], "2730Mi");
  EXPECT_EQ(spec["domain"]["cpu"]["maxSockets"], 1);
  EXPECT_EQ(spec["terminationGracePeriodSeconds"], 120);
  EXPECT_EQ(spec["domain"]["devices"]["interfaces"][0]["macAddress"].get<std::string>().rfind(
                "52:54:00:", 0),
            0u);
  EXPECT_EQ(spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"][0]["matchExpressions"][0]["key"],
            "network.harvesterhci.io/mgmt");
}

Object Lb(const std::string& ns, const std::string& name, Object listeners) {
  return {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
          {"kind", "LoadBalancer"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec",
           {{"workloadType", "vm"},
            {"ipam", "dhcp"},
            {"listeners", std::move(listeners)},
            {"healthCheck", {{"port", 6443}}}}}};
}

TEST_F(AdmissionTest, LoadBalancerBackendPortsAreUniqueAndItsIpamStays) {
  StartSim();
  const std::string name = UniqueName("lb");
  Object api = {{"name", "api"}, {"port", 6443}, {"protocol", "TCP"}, {"backendPort", 6443}};
  Object dup = {{"name", "alt"}, {"port", 443}, {"protocol", "TCP"}, {"backendPort", 6443}};
  auto refused = h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), name, {api, dup}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status())
                .find("create loadbalancer " + ns_->name() + "/" + name +
                      " failed: listener alt has duplicate backend port TCP:6443 with listener "
                      "api"),
            std::string::npos)
      << Refusal(refused.status());

  ASSERT_TRUE(
      h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), name, Object::array({api})))
          .ok());
  refused = h_->Patch(gvr::kLoadBalancers, ns_->name(), name, kube::PatchType::kMerge,
                      {{"spec", {{"ipam", "pool"}}}});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(Refusal(refused.status()).find("can't change the IPAM from dhcp to pool"),
            std::string::npos)
      << Refusal(refused.status());
  EXPECT_TRUE(h_->Delete(gvr::kLoadBalancers, ns_->name(), name).ok());
}

}  // namespace
}  // namespace caphv::sim::testing
