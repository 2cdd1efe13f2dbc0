// End-to-end: the Go provider CAPHV replaces (cluster-api-provider-harvester
// v0.2.9, `caphv-go`, built by hack/build-testbins.sh caphv-go) provisions a
// cluster on the simulated Harvester, with caphv-manager not running at all:
// pool mode (VM addresses from an IPPool, the load balancer's address from
// another), one control-plane Machine and a MachineDeployment of two
// workers, each VM with an image disk and an extra empty disk.
//
// What a user of the Go provider sees: every Machine Running with its Node,
// every HarvesterMachine ready with providerID harvester://<VM uid>, three
// VMs with two disks each, three VM pool entries owned "<ns>/<name>" (the Go
// provider's format), the placeholder Service of type LoadBalancer that
// kube-vip gave the pool address, and the LoadBalancer serving the control
// plane at that same address, which is the HarvesterCluster's endpoint.
//
// The Go provider runs through `hack/testbed start-go-provider` (its CRDs
// replace CAPHV's while it runs); TearDown deletes the Cluster while it still
// runs, stops it and puts CAPHV's CRDs back. Skipped only when the Go
// provider's sources (../shared/third_party next to the checkout, or
// $CAPHV_THIRD_PARTY) are absent.

#include "go_provider_fixture.h"

namespace caphv::e2e {
namespace {

TEST_F(GoProviderTest, ProvisionsAPoolModeClusterOnTheSimulator) {
  const GoCluster go = ProvisionWithGo();
  ASSERT_FALSE(HasFailure());
  const Pool& vm_pool = go.vm_pool;
  const Pool& lb_pool = go.lb_pool;
  const std::string& cp = go.control_plane;
  const std::vector<Object>& machines = go.machines;
  const Object hc = HarvesterClusterObject();
  EXPECT_TRUE(hc.value("status", Object::object()).value("ready", false));
  const std::string endpoint = Str(hc, "/spec/controlPlaneEndpoint/host");
  EXPECT_EQ(hc["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  EXPECT_TRUE(lb_pool.Contains(endpoint)) << endpoint;
  auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  EXPECT_TRUE(cluster->value("status", Object::object()).value("infrastructureReady", false));
  EXPECT_EQ(Str(*cluster, "/spec/controlPlaneEndpoint/host"), endpoint);

  // Three VMs, each of its HarvesterMachine, with two disks (image + extra).
  std::map<std::string, Object> vms;
  for (const auto& vm : OnHarvester(kVirtualMachines)) vms[NameOf(vm)] = vm;
  ASSERT_EQ(vms.size(), 3u);
  std::map<std::string, std::string> vm_ip;  // VM name -> its VMI's address
  for (const auto& vmi : OnHarvester(kVirtualMachineInstances)) {
    EXPECT_EQ(Str(vmi, "/status/phase"), "Running") << NameOf(vmi);
    vm_ip[NameOf(vmi)] = Str(vmi, "/status/interfaces/0/ipAddress");
  }
  std::map<std::string, int> claims_of;  // VM name -> Bound PVCs
  for (const auto& pvc : OnHarvester(kPvcs)) {
    const std::string name = NameOf(pvc);
    EXPECT_EQ(Str(pvc, "/status/phase"), "Bound") << name;
    const auto at = name.find("-disk-");
    if (at != std::string::npos) ++claims_of[name.substr(0, at)];
  }
  const auto harvester_machines = HarvesterMachines();
  ASSERT_EQ(harvester_machines.size(), 3u);
  const auto allocated = Allocated(vm_pool.name);
  EXPECT_EQ(allocated.size(), 3u) << ::testing::PrintToString(allocated);
  for (const auto& hm : harvester_machines) {
    const std::string name = NameOf(hm);
    SCOPED_TRACE(name);
    ASSERT_TRUE(vms.contains(name));
    const Object& vm = vms[name];
    const Object status = hm.value("status", Object::object());
    EXPECT_TRUE(status.value("ready", false));
    EXPECT_TRUE(ConditionTrue(hm, "MachineCreated"));
    EXPECT_TRUE(ConditionTrue(hm, "VMProvisioningReady"));
    EXPECT_EQ(Str(hm, "/spec/providerID"), "harvester://" + Str(vm, "/metadata/uid"));
    EXPECT_EQ(Str(vm, "/status/printableStatus"), "Running");
    EXPECT_TRUE(vm.value("status", Object::object()).value("ready", false));
    EXPECT_EQ(Str(vm, "/metadata/labels/harvesterhci.io~1creator"), "harvester");
    const Object templates = Object::parse(
        Str(vm, "/metadata/annotations/harvesterhci.io~1volumeClaimTemplates"), nullptr, false);
    ASSERT_TRUE(templates.is_array() && templates.size() == 2) << templates.dump();
    EXPECT_EQ(Str(templates[0], "/spec/storageClassName"), "longhorn-image-ubuntu");
    EXPECT_EQ(Str(templates[1], "/spec/storageClassName"), "harvester-longhorn");
    EXPECT_EQ(Str(templates[1], "/spec/resources/requests/storage"), "10Gi");
    EXPECT_EQ(claims_of[name], 2);
    // Its address: from the VM pool, owned "<ns>/<name>", on the VMI.
    const std::string ip = status.value("allocatedIPAddress", "");
    EXPECT_TRUE(vm_pool.Contains(ip)) << ip;
    EXPECT_EQ(status.value("allocatedPoolRef", ""), vm_pool.name);
    EXPECT_EQ(allocated.contains(ip) ? allocated.at(ip) : "", ns() + "/" + name);
    EXPECT_EQ(vm_ip[name], ip);
  }
  for (const auto& m : machines) {
    EXPECT_TRUE(IsHarvesterProviderId(Str(m, "/spec/providerID"))) << NameOf(m);
  }

  // The placeholder Service the Go provider made, announced by kube-vip at
  // the address the Go provider took from the LB pool, and the LB itself,
  // which took over the Service and reports that address.
  const std::string lb_name = ns() + "-" + cluster_ + "-lb";
  const auto lb_entries = Allocated(lb_pool.name);
  EXPECT_EQ(lb_entries.size(), 1u) << ::testing::PrintToString(lb_entries);
  EXPECT_EQ(lb_entries.contains(endpoint) ? lb_entries.at(endpoint) : "",
            target_ns_ + "/" + lb_name);
  auto svc = harvester_->Get(kServices, target_ns_, lb_name);
  ASSERT_TRUE(svc.ok()) << svc.status().ToString();
  EXPECT_EQ(Str(*svc, "/spec/type"), "LoadBalancer");
  EXPECT_EQ(Str(*svc, "/spec/loadBalancerIP"), endpoint);
  EXPECT_EQ(Str(*svc, "/status/loadBalancer/ingress/0/ip"), endpoint);
  auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
  ASSERT_TRUE(lb.ok()) << lb.status().ToString();
  EXPECT_EQ(Str(*lb, "/spec/ipam"), "pool");
  EXPECT_EQ(Str(*lb, "/spec/ipPool"), lb_pool.name);
  EXPECT_EQ(Str(*lb, "/status/address"), endpoint);
  EXPECT_EQ(Str(*lb, "/status/allocatedAddress/ip"), endpoint);
  EXPECT_TRUE(ConditionTrue(*lb, "Ready")) << lb->dump();
  EXPECT_EQ(lb->value("status", Object::object()).value("backendServers", Object::array()),
            Object::array({vm_ip[cp]}));
}

}  // namespace
}  // namespace caphv::e2e
