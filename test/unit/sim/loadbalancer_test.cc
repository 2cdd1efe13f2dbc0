// Unit tests for sim/loadbalancer.h: pool selection, LB status, the Service of
// a `vm` load balancer and what kube-vip announces.

#include "sim/loadbalancer.h"

#include <gtest/gtest.h>

namespace caphv::sim {
namespace {

using kube::Object;

Object Pool(const std::string& name, int priority, const std::string& network,
            const std::string& ns, bool global = false) {
  Object p = {
      {"metadata", {{"name", name}}},
      {"spec",
       {{"ranges", Object::array({{{"subnet", "192.168.1.0/24"}}})},
        {"selector",
         {{"priority", priority},
          {"network", network},
          {"scope",
           Object::array({{{"project", "*"}, {"namespace", ns}, {"guestCluster", "*"}}})}}}}}};
  if (global) {
    p["metadata"]["labels"] = {{"loadbalancer.harvesterhci.io/global-ip-pool", "true"}};
    p["spec"].erase("selector");
  }
  return p;
}

Object Lb(const std::string& ns, const std::string& network, const std::string& pool = "") {
  Object lb = {{"metadata",
                {{"name", "lb"},
                 {"namespace", ns},
                 {"annotations", {{"loadbalancer.harvesterhci.io/network", network}}}}},
               {"spec", {{"ipam", "pool"}}}};
  if (!pool.empty()) lb["spec"]["ipPool"] = pool;
  return lb;
}

TEST(SelectPool, ExplicitPoolWins) {
  std::vector<Object> pools = {Pool("a", 10, "", "*"), Pool("b", 1, "", "*")};
  EXPECT_EQ(SelectPool(Lb("default", "", "b"), pools), "b");
  EXPECT_FALSE(SelectPool(Lb("default", "", "missing"), pools));
}

TEST(SelectPool, HighestPriorityMatchingSelector) {
  std::vector<Object> pools = {Pool("low", 1, "", "*"), Pool("high", 10, "", "*"),
                               Pool("other-net", 50, "default/vlan9", "*"),
                               Pool("other-ns", 60, "", "prod")};
  EXPECT_EQ(SelectPool(Lb("default", "default/vlan1"), pools), "high");
  EXPECT_EQ(SelectPool(Lb("default", "default/vlan9"), pools), "other-net");
  EXPECT_EQ(SelectPool(Lb("prod", ""), pools), "other-ns");
}

TEST(SelectPool, FallsBackToTheGlobalPool) {
  std::vector<Object> pools = {Pool("scoped", 1, "", "prod"), Pool("global", 0, "", "", true)};
  EXPECT_EQ(SelectPool(Lb("default", ""), pools), "global");
  EXPECT_FALSE(SelectPool(Lb("default", ""), {Pool("scoped", 1, "", "prod")}));
}

TEST(LbOwner, IsNamespaceSlashName) {
  EXPECT_EQ(LbOwner(Lb("ns1", "")), "ns1/lb");
  EXPECT_TRUE(LbUsesPool(Lb("ns1", "")));
  Object dhcp = Lb("ns1", "");
  dhcp["spec"]["ipam"] = "dhcp";
  EXPECT_FALSE(LbUsesPool(dhcp));
}

TEST(BackendServers, MatchesRunningVmisBySelector) {
  Object lb = Lb("default", "");
  lb["spec"]["backendServerSelector"] = {{"harvesterhci.io/vmName", {"cp-0", "cp-1"}}};
  auto vmi = [](const std::string& ns, const std::string& name, const std::string& ip,
                const std::string& phase) {
    return Object{{"metadata", {{"namespace", ns}, {"labels", {{"harvesterhci.io/vmName", name}}}}},
                  {"status",
                   {{"phase", phase},
                    {"interfaces", Object::array({{{"name", "nic-1"}, {"ipAddress", ip}}})}}}};
  };
  std::vector<Object> vmis = {
      vmi("default", "cp-1", "10.0.0.2", "Running"), vmi("default", "cp-0", "10.0.0.1", "Running"),
      vmi("default", "cp-2", "10.0.0.3", "Running"), vmi("other", "cp-0", "10.0.0.4", "Running"),
      vmi("default", "cp-0", "10.0.0.5", "Failed")};
  EXPECT_EQ(BackendServers(lb, vmis), (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
}

TEST(LbStatus, PoolAndDhcpShapes) {
  PoolRange r{"192.168.100.0/24", 24, 0, 0, *ParseIpv4("192.168.100.1")};
  auto s = LbPoolStatus("capi-pool", r, "192.168.100.50", {"10.0.0.1"});
  EXPECT_EQ(s["address"], "192.168.100.50");
  EXPECT_EQ(s["allocatedAddress"]["ipPool"], "capi-pool");
  EXPECT_EQ(s["allocatedAddress"]["mask"], "255.255.255.0");
  EXPECT_EQ(s["allocatedAddress"]["gateway"], "192.168.100.1");
  EXPECT_EQ(s["conditions"][0]["status"], "True");
  EXPECT_EQ(s["backendServers"][0], "10.0.0.1");
  auto d = LbDhcpStatus("10.0.20.10", {});
  EXPECT_EQ(d["allocatedAddress"]["ip"], "0.0.0.0");
  EXPECT_EQ(d["address"], "10.0.20.10");
  EXPECT_FALSE(d.contains("backendServers"));
  EXPECT_EQ(LbErrorStatus("x")["conditions"][0]["status"], "False");
}

Object VmLb() {
  return {{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
          {"kind", "LoadBalancer"},
          {"metadata", {{"name", "ns-c-lb"}, {"namespace", "hv"}, {"uid", "u-1"}}},
          {"spec",
           {{"workloadType", "vm"},
            {"ipam", "pool"},
            {"listeners", Object::array({{{"name", "api-server"},
                                          {"port", 6443},
                                          {"protocol", "TCP"},
                                          {"backendPort", 6443}}})}}}};
}

TEST(LbServesVms, VmOrEmptyWorkloadType) {
  Object lb = VmLb();
  EXPECT_TRUE(LbServesVms(lb));
  lb["spec"].erase("workloadType");
  EXPECT_TRUE(LbServesVms(lb));
  lb["spec"]["workloadType"] = "cluster";
  EXPECT_FALSE(LbServesVms(lb));
}

TEST(LbService, ShapeOfTheLoadBalancerControllersService) {
  const Object svc = LbService(VmLb(), "192.168.100.50");
  EXPECT_EQ(svc["metadata"]["name"], "ns-c-lb");
  EXPECT_EQ(svc["metadata"]["namespace"], "hv");
  EXPECT_EQ(svc["metadata"]["labels"]["loadbalancer.harvesterhci.io/servicelb"], "true");
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["kind"], "LoadBalancer");
  EXPECT_EQ(svc["metadata"]["ownerReferences"][0]["uid"], "u-1");
  EXPECT_EQ(svc["spec"]["type"], "LoadBalancer");
  EXPECT_EQ(svc["spec"]["loadBalancerIP"], "192.168.100.50");
  EXPECT_EQ(
      svc["spec"]["ports"][0],
      Object({{"name", "api-server"}, {"protocol", "TCP"}, {"port", 6443}, {"targetPort", 6443}}));
}

TEST(LbServicePatch, AdoptsAPlaceholderAndLeavesAServingOneAlone) {
  // A provider's placeholder: same name, asks DHCP, port without targetPort change.
  Object placeholder = LbService(VmLb(), "0.0.0.0");
  placeholder["metadata"].erase("ownerReferences");
  placeholder["spec"]["ports"][0]["nodePort"] = 31000;
  EXPECT_EQ(LbServicePatch(VmLb(), "192.168.100.50", placeholder),
            Object({{"spec", {{"loadBalancerIP", "192.168.100.50"}}}}));
  EXPECT_TRUE(LbServicePatch(VmLb(), "0.0.0.0", placeholder).empty());
  placeholder["spec"]["ports"][0]["port"] = 443;
  EXPECT_TRUE(LbServicePatch(VmLb(), "0.0.0.0", placeholder)["spec"].contains("ports"));
}

TEST(LbVmStatus, AddressFromTheServiceReadyWithBackends) {
  const Object allocated = {{"ip", "0.0.0.0"}};
  auto waiting = LbVmStatus(allocated, "", {"10.0.10.5"});
  EXPECT_FALSE(waiting.contains("address"));
  EXPECT_EQ(waiting["allocatedAddress"], allocated);
  EXPECT_EQ(waiting["conditions"][0]["status"], "False");
  EXPECT_EQ(waiting["conditions"][0]["message"], "service is waiting for external IP");
  auto no_backend = LbVmStatus(allocated, "10.0.20.10", {});
  EXPECT_EQ(no_backend["address"], "10.0.20.10");
  EXPECT_EQ(no_backend["conditions"][0]["status"], "False");
  EXPECT_EQ(no_backend["conditions"][0]["message"], "no running backend servers");
  auto ready = LbVmStatus(allocated, "10.0.20.10", {"10.0.10.5"});
  EXPECT_EQ(ready["conditions"][0]["status"], "True");
  EXPECT_EQ(ready["backendServers"][0], "10.0.10.5");
}

TEST(KubeVip, RequestedAddress) {
  Object svc = {{"metadata", {{"name", "s"}, {"namespace", "n"}}},
                {"spec", {{"type", "LoadBalancer"}, {"loadBalancerIP", "0.0.0.0"}}}};
  EXPECT_EQ(KubeVipRequestedAddress(svc), kDhcpAddress);
  svc["metadata"]["annotations"] = {{kKubeVipIpsAnnotation, " 10.1.1.1 ,10.1.1.2"}};
  EXPECT_EQ(KubeVipRequestedAddress(svc), "10.1.1.1");
  svc["metadata"].erase("annotations");
  svc["spec"].erase("loadBalancerIP");
  EXPECT_EQ(KubeVipRequestedAddress(svc), "");  // left pending
  svc["spec"] = {{"type", "ClusterIP"}, {"loadBalancerIP", "10.1.1.1"}};
  EXPECT_EQ(KubeVipRequestedAddress(svc), "");
  svc["status"] = {{"loadBalancer", KubeVipServiceStatus("10.0.20.11")}};
  EXPECT_EQ(ServiceIngressIp(svc), "10.0.20.11");
  EXPECT_EQ(ServiceIngressIp(Object::object()), "");
}

Object Lb(Object listeners) {
  return {{"metadata", {{"name", "lb"}, {"namespace", "ns"}}},
          {"spec",
           {{"ipam", "pool"},
            {"workloadType", "vm"},
            {"listeners", std::move(listeners)},
            {"healthCheck", {{"port", 6443}}}}}};
}

TEST(ValidateLb, BackendPortsPerProtocolAreUnique) {
  Object ok = Lb(
      Object::array({{{"name", "api"}, {"port", 6443}, {"protocol", "TCP"}, {"backendPort", 6443}},
                     {{"name", "dns"}, {"port", 53}, {"protocol", "UDP"}, {"backendPort", 6443}}}));
  EXPECT_TRUE(ValidateLb(ok, nullptr).empty());
  Object dup = ok;
  dup["spec"]["listeners"].push_back(
      {{"name", "alt"}, {"port", 443}, {"protocol", "TCP"}, {"backendPort", 6443}});
  auto errs = ValidateLb(dup, nullptr);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0],
            "create loadbalancer ns/lb failed: listener alt has duplicate backend port TCP:6443 "
            "with listener api");
  dup = ok;
  dup["spec"]["listeners"].push_back(
      {{"name", "alt"}, {"port", 6443}, {"protocol", "TCP"}, {"backendPort", 7443}});
  errs = ValidateLb(dup, nullptr);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_NE(errs[0].find("listener alt has duplicate port TCP:6443 with listener api"),
            std::string::npos)
      << errs[0];
}

TEST(ValidateLb, HealthCheckOnATcpBackendPortAndIpamImmutable) {
  Object lb = Lb(Object::array(
      {{{"name", "api"}, {"port", 6443}, {"protocol", "TCP"}, {"backendPort", 6443}}}));
  lb["spec"]["healthCheck"]["port"] = 9345;
  ASSERT_EQ(ValidateLb(lb, nullptr),
            std::vector<std::string>{"create loadbalancer ns/lb failed with healthyCheck: "
                                     "healthcheck port 9345 is not in listener backend port list"});
  lb["spec"]["healthCheck"]["port"] = 6443;
  Object changed = lb;
  changed["spec"]["ipam"] = "dhcp";
  auto errs = ValidateLb(changed, &lb);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0], "update loadbalancer ns/lb failed: can't change the IPAM from pool to dhcp");
  changed["spec"]["ipam"] = "";  // "" is pool
  EXPECT_TRUE(ValidateLb(changed, &lb).empty());
  changed = lb;
  changed["spec"]["workloadType"] = "cluster";
  EXPECT_EQ(ValidateLb(changed, &lb).size(), 1u);
  EXPECT_TRUE(ValidateLb(lb, &lb).empty());
}

}  // namespace
}  // namespace caphv::sim
