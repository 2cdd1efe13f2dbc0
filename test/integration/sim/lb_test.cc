// Integration tests: the simulator playing Harvester's load-balancer
// controller (pool and DHCP IPAM) against the real test bed.

#include <gtest/gtest.h>

#include <thread>

#include "sim/env.h"
#include "sim_fixture.h"

namespace caphv::sim::testing {
namespace {

using caphv::testing::Eventually;
using caphv::testing::UniqueName;
using kube::Object;

Object Lb(const std::string& ns, const std::string& name, const std::string& ipam,
          const std::string& pool) {
  Object lb = {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
               {"kind", "LoadBalancer"},
               {"metadata", {{"name", name}, {"namespace", ns}}},
               {"spec",
                {{"workloadType", "cluster"},
                 {"ipam", ipam},
                 {"listeners", Object::array({{{"name", "k8s-api"},
                                               {"port", 6443},
                                               {"protocol", "TCP"},
                                               {"backendPort", 6443}}})}}}};
  if (!pool.empty()) lb["spec"]["ipPool"] = pool;
  return lb;
}

class SimLbTest : public SimTest {
 protected:
  void TearDown() override {
    if (!pool_.empty()) h_->Delete(gvr::kIPPools, "", pool_).IgnoreError();
    SimTest::TearDown();
  }
  // A pool of four addresses in a subnet of its own, scoped to the namespace.
  void MakePool(int third_octet) {
    pool_ = UniqueName("pool");
    const std::string net = "172.31." + std::to_string(third_octet);
    Object pool = {
        {"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
        {"kind", "IPPool"},
        {"metadata", {{"name", pool_}}},
        {"spec",
         {{"ranges", Object::array({{{"subnet", net + ".0/24"},
                                     {"rangeStart", net + ".10"},
                                     {"rangeEnd", net + ".13"},
                                     {"gateway", net + ".1"}}})},
          {"selector",
           {{"priority", 1000 + third_octet},
            {"scope",
             Object::array(
                 {{{"project", "*"}, {"namespace", ns_->name()}, {"guestCluster", "*"}}})}}}}}};
    auto created = h_->Create(gvr::kIPPools, "", pool);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  Object Pool() {
    auto got = h_->Get(gvr::kIPPools, "", pool_);
    return got.ok() ? *got : Object::object();
  }
  std::string pool_;
};

TEST_F(SimLbTest, PoolAllocationRecordedAndReleased) {
  MakePool(7);
  StartSim();
  const std::string name = UniqueName("lb");
  ASSERT_TRUE(
      h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), name, "pool", pool_)).ok());
  Object lb;
  ASSERT_TRUE(Eventually([&] {
    auto got = h_->Get(gvr::kLoadBalancers, ns_->name(), name);
    if (got.ok()) lb = *got;
    return got.ok() && !lb.value("status", Object::object()).value("address", "").empty();
  })) << lb.dump();
  const std::string ip = lb["status"]["address"];
  EXPECT_EQ(ip, "172.31.7.10");
  EXPECT_EQ(lb["status"]["allocatedAddress"]["ipPool"], pool_);
  EXPECT_EQ(lb["status"]["allocatedAddress"]["mask"], "255.255.255.0");
  EXPECT_EQ(lb["status"]["allocatedAddress"]["gateway"], "172.31.7.1");

  Object pool = Pool();
  EXPECT_EQ(pool["status"]["allocated"][ip], ns_->name() + "/" + name) << pool.dump();
  EXPECT_EQ(pool["status"]["lastAllocated"], ip);
  EXPECT_EQ(pool["status"]["total"], 4);
  EXPECT_EQ(pool["status"]["available"], 3);

  // Selected by scope as well, without spec.ipPool: the next address.
  const std::string other = UniqueName("lb");
  ASSERT_TRUE(
      h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), other, "pool", "")).ok());
  EXPECT_TRUE(Eventually([&] {
    auto got = h_->Get(gvr::kLoadBalancers, ns_->name(), other);
    return got.ok() && got->value("status", Object::object()).value("address", "") == "172.31.7.11";
  }));

  ASSERT_TRUE(h_->Delete(gvr::kLoadBalancers, ns_->name(), name).ok());
  EXPECT_TRUE(Eventually([&] {
    Object p = Pool();
    const Object allocated = p["status"].value("allocated", Object::object());
    return !allocated.contains(ip) &&
           p["status"].value("allocatedHistory", Object::object()).value(ip, "") ==
               ns_->name() + "/" + name;
  })) << Pool().dump();
  EXPECT_EQ(Pool()["status"]["available"], 3);
}

TEST_F(SimLbTest, DhcpAddressFromTheRange) {
  StartSim();
  const std::string a = UniqueName("lb"), b = UniqueName("lb");
  ASSERT_TRUE(h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), a, "dhcp", "")).ok());
  ASSERT_TRUE(h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), b, "dhcp", "")).ok());
  std::string ip_a, ip_b;
  ASSERT_TRUE(Eventually([&] {
    auto ga = h_->Get(gvr::kLoadBalancers, ns_->name(), a);
    auto gb = h_->Get(gvr::kLoadBalancers, ns_->name(), b);
    if (!ga.ok() || !gb.ok()) return false;
    ip_a = ga->value("status", Object::object()).value("address", "");
    ip_b = gb->value("status", Object::object()).value("address", "");
    return !ip_a.empty() && !ip_b.empty();
  }));
  EXPECT_EQ(ip_a.rfind("10.0.20.", 0), 0u) << ip_a;
  EXPECT_NE(ip_a, ip_b);
  auto got = h_->Get(gvr::kLoadBalancers, ns_->name(), a);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["status"]["allocatedAddress"]["ip"], "0.0.0.0");
  // Released on delete: a new LB can take the address again.
  ASSERT_TRUE(h_->Delete(gvr::kLoadBalancers, ns_->name(), a).ok());
  const std::string c = UniqueName("lb");
  ASSERT_TRUE(Eventually(
      [&] { return h_->Get(gvr::kLoadBalancers, ns_->name(), a).status().IsNotFound(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_TRUE(h_->Create(gvr::kLoadBalancers, ns_->name(), Lb(ns_->name(), c, "dhcp", "")).ok());
  EXPECT_TRUE(Eventually([&] {
    auto gc = h_->Get(gvr::kLoadBalancers, ns_->name(), c);
    return gc.ok() && gc->value("status", Object::object()).value("address", "") == ip_a;
  }));
}

// A `vm` load balancer is served by a Service of its name: one a provider
// made before (a placeholder asking DHCP, as the Go provider does) is
// adopted, otherwise the LB makes it; kube-vip announces the Service's
// address and the LB reports it.
TEST_F(SimLbTest, VmLoadBalancerIsServedByItsServiceThroughKubeVip) {
  MakePool(8);
  StartSim();
  const std::string ns = ns_->name();
  auto ingress = [&](const std::string& name) {
    auto got = h_->Get(gvr::kServices, ns, name);
    if (!got.ok()) return std::string();
    const Object ing = got->value("status", Object::object())
                           .value("loadBalancer", Object::object())
                           .value("ingress", Object::array());
    return ing.empty() ? std::string() : ing[0].value("ip", "");
  };
  auto address = [&](const std::string& name) {
    auto got = h_->Get(gvr::kLoadBalancers, ns, name);
    return got.ok() ? got->value("status", Object::object()).value("address", "") : "";
  };

  // The placeholder: kube-vip leases from the DHCP range for "0.0.0.0".
  const std::string placeholder = UniqueName("lb");
  Object svc = {{"apiVersion", "v1"},
                {"kind", "Service"},
                {"metadata",
                 {{"name", placeholder},
                  {"namespace", ns},
                  {"labels", {{"loadbalancer.harvesterhci.io/servicelb", "true"}}}}},
                {"spec",
                 {{"type", "LoadBalancer"},
                  {"loadBalancerIP", "0.0.0.0"},
                  {"ports", Object::array({{{"name", "api-server"},
                                            {"port", 6443},
                                            {"protocol", "TCP"},
                                            {"targetPort", 6443}}})}}}};
  ASSERT_TRUE(h_->Create(gvr::kServices, ns, svc).ok());
  std::string leased;
  ASSERT_TRUE(Eventually([&] {
    leased = ingress(placeholder);
    return !leased.empty();
  }));
  EXPECT_EQ(leased.rfind("10.0.20.", 0), 0u) << leased;

  // The LB of that name adopts it and reports its address; no VM runs yet.
  Object dhcp_lb = Lb(ns, placeholder, "dhcp", "");
  dhcp_lb["spec"]["workloadType"] = "vm";
  dhcp_lb["spec"]["backendServerSelector"] = {{"harvestercluster/machinetype", {"cp"}}};
  ASSERT_TRUE(h_->Create(gvr::kLoadBalancers, ns, dhcp_lb).ok());
  ASSERT_TRUE(Eventually([&] { return address(placeholder) == leased; })) << address(placeholder);
  auto got = h_->Get(gvr::kLoadBalancers, ns, placeholder);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["status"]["allocatedAddress"]["ip"], "0.0.0.0");
  EXPECT_EQ((*got)["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ((*got)["status"]["conditions"][0]["message"], "no running backend servers");
  auto adopted = h_->Get(gvr::kServices, ns, placeholder);
  ASSERT_TRUE(adopted.ok());
  EXPECT_FALSE((*adopted)["metadata"].contains("ownerReferences"));

  // A pool LB without a Service: it makes one owned by it, asking its pool address.
  const std::string pooled = UniqueName("lb");
  Object pool_lb = Lb(ns, pooled, "pool", pool_);
  pool_lb["spec"]["workloadType"] = "vm";
  ASSERT_TRUE(h_->Create(gvr::kLoadBalancers, ns, pool_lb).ok());
  ASSERT_TRUE(Eventually([&] { return address(pooled) == "172.31.8.10"; }));
  EXPECT_EQ(ingress(pooled), "172.31.8.10");
  auto made = h_->Get(gvr::kServices, ns, pooled);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)["spec"]["loadBalancerIP"], "172.31.8.10");
  EXPECT_EQ((*made)["metadata"]["ownerReferences"][0]["name"], pooled);
  EXPECT_EQ(Pool()["status"]["allocated"]["172.31.8.10"], ns + "/" + pooled);
}

}  // namespace
}  // namespace caphv::sim::testing
