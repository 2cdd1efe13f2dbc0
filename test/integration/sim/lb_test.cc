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
// made before (a placeholder, as the Go provider makes one) is adopted,
// otherwise the LB makes it; kube-vip announces the Service's address and
// the LB reports it.
class SimVmLbTest : public SimLbTest {
 protected:
  std::string Ingress(const std::string& name) {
    auto got = h_->Get(gvr::kServices, ns_->name(), name);
    if (!got.ok()) return "";
    const Object ing = got->value("status", Object::object())
                           .value("loadBalancer", Object::object())
                           .value("ingress", Object::array());
    return ing.empty() ? std::string() : ing[0].value("ip", "");
  }
  std::string Address(const std::string& name) {
    auto got = h_->Get(gvr::kLoadBalancers, ns_->name(), name);
    return got.ok() ? got->value("status", Object::object()).value("address", "") : "";
  }
  // A placeholder Service of type LoadBalancer asking for `ip`.
  void CreatePlaceholder(const std::string& name, const std::string& ip) {
    Object svc = {{"apiVersion", "v1"},
                  {"kind", "Service"},
                  {"metadata",
                   {{"name", name},
                    {"namespace", ns_->name()},
                    {"labels", {{"loadbalancer.harvesterhci.io/servicelb", "true"}}}}},
                  {"spec",
                   {{"type", "LoadBalancer"},
                    {"loadBalancerIP", ip},
                    {"ports", Object::array({{{"name", "api-server"},
                                              {"port", 6443},
                                              {"protocol", "TCP"},
                                              {"targetPort", 6443}}})}}}};
    auto created = h_->Create(gvr::kServices, ns_->name(), svc);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  void CreateVmLb(const std::string& name, const std::string& ipam, const std::string& pool) {
    Object lb = Lb(ns_->name(), name, ipam, pool);
    lb["spec"]["workloadType"] = "vm";
    lb["spec"]["backendServerSelector"] = {{"harvestercluster/machinetype", {"cp"}}};
    auto created = h_->Create(gvr::kLoadBalancers, ns_->name(), lb);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
};

// Pool mode as the Go provider does it: it takes an address from the pool
// for "<ns>/<lb name>" itself, asks kube-vip for it on its placeholder, and
// the LB of that name, owner of the same entry, takes the same address.
TEST_F(SimVmLbTest, PoolPlaceholderKeepsItsAddressAndTheLbAdoptsIt) {
  MakePool(8);
  StartSim();
  const std::string ns = ns_->name();
  const std::string name = UniqueName("lb");
  Object pool;
  ASSERT_TRUE(Eventually([&] {
    pool = Pool();
    return pool.value("status", Object::object()).value("total", 0) == 4;
  }));
  pool["status"]["allocated"] = {{"172.31.8.12", ns + "/" + name}};
  pool["status"]["lastAllocated"] = "172.31.8.12";
  pool["status"]["available"] = 3;
  ASSERT_TRUE(h_->Update(gvr::kIPPools, "", pool).ok());
  CreatePlaceholder(name, "172.31.8.12");
  ASSERT_TRUE(Eventually([&] { return Ingress(name) == "172.31.8.12"; }));
  // No LB yet: the entry is not the simulated load-balancer controller's to release.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Pool()["status"].value("allocated", Object::object()).value("172.31.8.12", ""),
            ns + "/" + name)
      << Pool().dump();

  CreateVmLb(name, "pool", pool_);
  ASSERT_TRUE(Eventually([&] { return Address(name) == "172.31.8.12"; })) << Address(name);
  auto lb = h_->Get(gvr::kLoadBalancers, ns, name);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ((*lb)["status"]["allocatedAddress"]["ip"], "172.31.8.12");
  EXPECT_EQ((*lb)["status"]["allocatedAddress"]["ipPool"], pool_);
  // No VM behind it: the address is there, Ready is not.
  EXPECT_EQ((*lb)["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ((*lb)["status"]["conditions"][0]["message"], "no running backend servers");
  EXPECT_EQ(Pool()["status"]["allocated"], Object({{"172.31.8.12", ns + "/" + name}}));
  auto svc = h_->Get(gvr::kServices, ns, name);
  ASSERT_TRUE(svc.ok());
  EXPECT_FALSE((*svc)["metadata"].contains("ownerReferences"));  // adopted, not made
}

TEST_F(SimVmLbTest, DhcpPlaceholderAndServicesTheLbMakes) {
  MakePool(9);
  StartSim();
  const std::string ns = ns_->name();

  // A placeholder asking DHCP: kube-vip leases from the LB range; the LB of
  // that name (ipam dhcp) adopts it and reports the leased address.
  const std::string placeholder = UniqueName("lb");
  CreatePlaceholder(placeholder, "0.0.0.0");
  std::string leased;
  ASSERT_TRUE(Eventually([&] {
    leased = Ingress(placeholder);
    return !leased.empty();
  }));
  EXPECT_EQ(leased.rfind("10.0.20.", 0), 0u) << leased;
  CreateVmLb(placeholder, "dhcp", "");
  ASSERT_TRUE(Eventually([&] { return Address(placeholder) == leased; })) << Address(placeholder);
  auto got = h_->Get(gvr::kLoadBalancers, ns, placeholder);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["status"]["allocatedAddress"]["ip"], "0.0.0.0");

  // A pool LB without a Service makes one, owned by it, asking its pool address.
  const std::string pooled = UniqueName("lb");
  CreateVmLb(pooled, "pool", pool_);
  ASSERT_TRUE(Eventually([&] { return Address(pooled) == "172.31.9.10"; })) << Address(pooled);
  EXPECT_EQ(Ingress(pooled), "172.31.9.10");
  auto made = h_->Get(gvr::kServices, ns, pooled);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)["spec"]["loadBalancerIP"], "172.31.9.10");
  EXPECT_EQ((*made)["metadata"]["labels"]["loadbalancer.harvesterhci.io/servicelb"], "true");
  EXPECT_EQ((*made)["metadata"]["ownerReferences"][0]["name"], pooled);
  EXPECT_EQ(Pool()["status"]["allocated"]["172.31.9.10"], ns + "/" + pooled);

  // A Service asking for no address stays pending, as on Harvester.
  const std::string pending = UniqueName("svc");
  CreatePlaceholder(pending, "");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Ingress(pending), "");
}

}  // namespace
}  // namespace caphv::sim::testing
