// Unit tests of the HarvesterCluster planner with a placeholder
// spec.controlPlaneEndpoint, as the Go provider's ClusterClass stamps it
// ({host: 0.0.0.0, port: 6443}): it means "not set", so CAPHV makes the load
// balancer and writes its address over the placeholder, as for no endpoint.

#include <gtest/gtest.h>

#include "cluster_plan_fixtures.h"
#include "controllers/cluster/cluster_plan.h"

namespace caphv::controllers {
namespace {

using namespace cluster_plan_fixtures;  // NOLINT(google-build-using-namespace)
using K = ClusterActionKind;

class PlaceholderEndpointTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PlaceholderEndpointTest, TheLoadBalancerIsMadeAndItsAddressReplacesThePlaceholder) {
  auto o = Base();
  o.hc.spec.control_plane_endpoint = api::APIEndpoint{GetParam(), 6443};
  auto p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  EXPECT_EQ(p.action->kind, K::kApplyLoadBalancer);
  EXPECT_NE(Reason(p, kLoadBalancerReady), "ExternallyProvided");
  EXPECT_FALSE(p.status.ready.value_or(false));

  o.lb = ReadyLb("10.8.0.5");
  p = PlanCluster(o);
  ASSERT_TRUE(p.action);
  ASSERT_EQ(p.action->kind, K::kSetControlPlaneEndpoint);
  EXPECT_EQ(p.action->body["spec"]["controlPlaneEndpoint"]["host"], "10.8.0.5");
  EXPECT_EQ(p.action->body["spec"]["controlPlaneEndpoint"]["port"], 6443);
  EXPECT_FALSE(p.status.ready.value_or(false));

  o.hc.spec.control_plane_endpoint = api::APIEndpoint{"10.8.0.5", 6443};
  p = PlanCluster(o);
  EXPECT_FALSE(p.action);
  EXPECT_TRUE(p.status.ready.value_or(false));
  EXPECT_EQ(Reason(p, kLoadBalancerReady), "LoadBalancerReady");
}

INSTANTIATE_TEST_SUITE_P(Placeholders, PlaceholderEndpointTest,
                         ::testing::Values("0.0.0.0", "::", ""));

TEST(ControlPlaneEndpointSetTest, OnlyARealHostCounts) {
  api::HarvesterClusterSpec spec;
  EXPECT_FALSE(api::ControlPlaneEndpointSet(spec));
  for (const char* placeholder : {"", "0.0.0.0", "::"}) {
    spec.control_plane_endpoint = api::APIEndpoint{placeholder, 6443};
    EXPECT_FALSE(api::ControlPlaneEndpointSet(spec)) << placeholder;
  }
  for (const char* host : {"10.0.0.5", "api.example.com", "fd00::5"}) {
    spec.control_plane_endpoint = api::APIEndpoint{host, 6443};
    EXPECT_TRUE(api::ControlPlaneEndpointSet(spec)) << host;
  }
}

TEST(ControlPlaneEndpointSetTest, APlaceholderDoesNotCountAsHavingReachedHarvester) {
  api::HarvesterCluster hc;
  hc.spec.control_plane_endpoint = api::APIEndpoint{"0.0.0.0", 6443};
  EXPECT_FALSE(EverConnected(hc));
  hc.spec.control_plane_endpoint = api::APIEndpoint{"10.0.0.5", 6443};
  EXPECT_TRUE(EverConnected(hc));
}

}  // namespace
}  // namespace caphv::controllers
