// File: test/unit/harvester/load_balancer_test.cc

#include "harvester/load_balancer.h"

#include <gtest/gtest.h>

#include "golden.h"
#include "harvester/vm_builder.h"

namespace caphv::harvester {
namespace {

using caphv::testing::MatchesGolden;
using kube::Object;

LoadBalancerInputs Inputs() {
  LoadBalancerInputs in;
  in.cluster = {"mgmt-uid-1", "capi-demo", "demo"};
  in.harvester_cluster_namespace = "capi-demo";
  in.harvester_cluster_name = "demo-hv";
  in.target_namespace = "default";
  in.config.ipam_type = "pool";
  in.config.ip_pool_ref = "capi-pool";
  in.ip_pool = "capi-pool";
  in.config.listeners = {{"rke2-server", 9345, "", 9345}};
  return in;
}

TEST(LoadBalancerTest, PoolGolden) {
  auto lb = BuildLoadBalancer(Inputs());
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_TRUE(MatchesGolden("loadbalancer_pool.json", lb->dump(2) + "\n"));
  EXPECT_EQ((*lb)["metadata"]["name"], "capi-demo-demo-hv-lb");
  EXPECT_EQ((*lb)["spec"]["ipPool"], "capi-pool");
  EXPECT_EQ(
      (*lb)["spec"]["listeners"][0],
      (Object{{"name", "api-server"}, {"port", 6443}, {"protocol", "TCP"}, {"backendPort", 6443}}));
  EXPECT_EQ((*lb)["spec"]["listeners"][1]["protocol"], "TCP");
}

TEST(LoadBalancerTest, DhcpHasNoPool) {
  auto in = Inputs();
  in.config.ipam_type = "dhcp";
  auto lb = BuildLoadBalancer(in);
  ASSERT_TRUE(lb.ok());
  EXPECT_EQ((*lb)["spec"]["ipam"], "dhcp");
  EXPECT_FALSE((*lb)["spec"].contains("ipPool"));
}

TEST(LoadBalancerTest, SelectorMatchesControlPlaneVmsOnly) {
  auto lb = BuildLoadBalancer(Inputs());
  ASSERT_TRUE(lb.ok());
  const auto& selector = (*lb)["spec"]["backendServerSelector"];
  VmInputs vm;
  vm.cluster = Inputs().cluster;
  vm.name = "demo-cp-1";
  vm.control_plane = true;
  auto cp = VmLabels(vm);
  vm.control_plane = false;
  auto worker = VmLabels(vm);
  bool worker_matches = true;
  for (const auto& [key, values] : selector.items()) {
    ASSERT_TRUE(cp.count(key)) << key;
    EXPECT_EQ(values, Object::array({cp[key]}));
    if (worker[key] != values[0].get<std::string>()) worker_matches = false;
  }
  EXPECT_FALSE(worker_matches);
}

TEST(LoadBalancerTest, NameIsStableAndRfc1035) {
  EXPECT_EQ(LoadBalancerName("ns", "My.Cluster"), "ns-my-cluster-lb");
  EXPECT_LE(LoadBalancerName(std::string(50, 'n'), std::string(50, 'c')).size(), 63u);
}

TEST(LoadBalancerTest, DescriptionIsUsed) {
  auto in = Inputs();
  in.config.description = "prod API";
  EXPECT_EQ((*BuildLoadBalancer(in))["spec"]["description"], "prod API");
}

TEST(LoadBalancerTest, RejectsBadConfig) {
  auto in = Inputs();
  in.config.ipam_type = "ippool";
  EXPECT_FALSE(BuildLoadBalancer(in).ok());
  in = Inputs();
  in.config.listeners.push_back({"api-server", 1234, "TCP", 1234});
  EXPECT_FALSE(BuildLoadBalancer(in).ok());
  in = Inputs();
  in.config.listeners.push_back({"dup", 6443, "TCP", 6443});
  EXPECT_FALSE(BuildLoadBalancer(in).ok());
  in = Inputs();
  in.config.listeners.push_back({"udp-ok", 6443, "UDP", 6443});
  EXPECT_TRUE(BuildLoadBalancer(in).ok());
  in = Inputs();
  in.config.listeners.push_back({"bad", 70000, "TCP", 1});
  EXPECT_FALSE(BuildLoadBalancer(in).ok());
  in = Inputs();
  in.config.listeners.push_back({"bad", 80, "SCTP", 80});
  EXPECT_FALSE(BuildLoadBalancer(in).ok());
}

TEST(LoadBalancerTest, Endpoint) {
  EXPECT_FALSE(EndpointFromLoadBalancer(Object{{"spec", Object::object()}}));
  EXPECT_FALSE(EndpointFromLoadBalancer(Object{{"status", {{"address", ""}}}}));
  EXPECT_FALSE(EndpointFromLoadBalancer(Object{{"status", {{"address", "0.0.0.0"}}}}));
  EXPECT_FALSE(EndpointFromLoadBalancer(Object{{"status", {{"address", "pending"}}}}));
  EXPECT_FALSE(EndpointFromLoadBalancer(Object::array()));
  auto ep = EndpointFromLoadBalancer(
      Object{{"status", {{"address", "192.168.100.51"}, {"allocatedAddress", {{"ip", "x"}}}}}});
  ASSERT_TRUE(ep);
  EXPECT_EQ(*ep, (Endpoint{"192.168.100.51", 6443}));
  EXPECT_TRUE(EndpointFromLoadBalancer(Object{{"status", {{"address", "fd00::51"}}}}));
}

}  // namespace
}  // namespace caphv::harvester
