// End-to-end: a HarvesterCluster stamped from the Go provider's ClusterClass
// carries the placeholder endpoint {host: 0.0.0.0, port: 6443}. CAPHV takes
// it for "not set": it makes the load balancer, writes its address over the
// placeholder, and Cluster API takes that address for the Cluster.

#include "e2e_fixture.h"

namespace caphv::e2e {
namespace {

using PlaceholderEndpointTest = E2ETest;

TEST_F(PlaceholderEndpointTest, TheLoadBalancerAddressReplacesThePlaceholder) {
  Object spec = HarvesterClusterSpec();
  spec["controlPlaneEndpoint"] = {{"host", "0.0.0.0"}, {"port", 6443}};
  CreateCluster(spec);

  const std::string lb_name = ns() + "-" + cluster_ + "-lb";
  std::string address;
  ASSERT_TRUE(Eventually(
      [&] {
        auto lb = harvester_->Get(kLoadBalancers, target_ns_, lb_name);
        if (lb.ok()) address = Str(*lb, "/status/address");
        return !address.empty() && address != "0.0.0.0";
      },
      kWait, kPoll))
      << "no LoadBalancer " << target_ns_ << "/" << lb_name << " with an address";
  Object hc;
  EXPECT_TRUE(Eventually(
      [&] {
        hc = HarvesterClusterObject();
        return Str(hc, "/spec/controlPlaneEndpoint/host") == address &&
               hc.value("status", Object::object()).value("ready", false);
      },
      kWait, kPoll))
      << hc.dump(2);
  EXPECT_EQ(hc["spec"]["controlPlaneEndpoint"].value("port", 0), 6443);
  EXPECT_TRUE(ConditionTrue(hc, "LoadBalancerReady")) << ConditionOf(hc, "LoadBalancerReady");
  std::string on_cluster;
  EXPECT_TRUE(Eventually(
      [&] {
        auto cluster = mgmt_->Get(kClusters, ns(), cluster_);
        on_cluster = cluster.ok() ? Str(*cluster, "/spec/controlPlaneEndpoint/host") : "";
        return on_cluster == address;
      },
      kWait, kPoll))
      << "Cluster endpoint " << on_cluster << ", load balancer " << address;
}

}  // namespace
}  // namespace caphv::e2e
