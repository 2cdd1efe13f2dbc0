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

}  // namespace
}  // namespace caphv::sim::testing
