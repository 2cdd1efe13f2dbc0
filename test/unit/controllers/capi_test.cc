// Unit tests of the pure helpers the reconcilers share (controllers/capi.h).

#include "controllers/capi.h"

#include <gtest/gtest.h>

#include "api/conditions.h"

namespace caphv::controllers {
namespace {

using kube::Object;

Object WithFinalizers(std::vector<std::string> f) {
  return {{"metadata", {{"name", "m"}, {"resourceVersion", "42"}, {"finalizers", f}}}};
}

TEST(CapiTest, AddFinalizerIsGuardedByResourceVersionAndMigratesLegacy) {
  auto p = AddFinalizerPatch(WithFinalizers({"other", std::string(kLegacyMachineFinalizer)}),
                             kMachineFinalizer, kLegacyMachineFinalizer);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["metadata"]["resourceVersion"], "42");
  EXPECT_EQ((*p)["metadata"]["finalizers"],
            Object::array({"other", std::string(kMachineFinalizer)}));
}

TEST(CapiTest, AddFinalizerIsNoOpWhenPresent) {
  EXPECT_FALSE(AddFinalizerPatch(WithFinalizers({std::string(kClusterFinalizer)}),
                                 kClusterFinalizer, kLegacyClusterFinalizer)
                   .has_value());
}

TEST(CapiTest, RemoveFinalizerKeepsOthers) {
  auto p = RemoveFinalizerPatch(
      WithFinalizers({"a", std::string(kClusterFinalizer), std::string(kLegacyClusterFinalizer)}),
      kClusterFinalizer, kLegacyClusterFinalizer);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ((*p)["metadata"]["finalizers"], Object::array({"a"}));
  EXPECT_FALSE(
      RemoveFinalizerPatch(WithFinalizers({"a"}), kClusterFinalizer, kLegacyClusterFinalizer));
}

TEST(CapiTest, PausedByClusterSpecOrAnnotation) {
  Object hm = {{"metadata", {{"name", "m"}}}};
  Object cluster = {{"spec", {{"paused", false}}}};
  EXPECT_FALSE(IsPaused(&cluster, hm));
  EXPECT_FALSE(IsPaused(nullptr, hm));
  cluster["spec"]["paused"] = true;
  EXPECT_TRUE(IsPaused(&cluster, hm));
  Object annotated = {{"metadata", {{"annotations", {{"cluster.x-k8s.io/paused", ""}}}}}};
  EXPECT_TRUE(IsPaused(nullptr, annotated));
}

TEST(CapiTest, OwnerOnlyFromClusterApiGroup) {
  Object o = {
      {"metadata",
       {{"ownerReferences",
         Object::array({{{"apiVersion", "example.com/v1"}, {"kind", "Machine"}, {"name", "x"}},
                        {{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                         {"kind", "Machine"},
                         {"name", "m-1"}}})}}}};
  EXPECT_EQ(CapiOwnerName(o, "Machine"), "m-1");
  EXPECT_EQ(CapiOwnerName(o, "Cluster"), "");
}

TEST(CapiTest, InfrastructureReadyInBothContracts) {
  EXPECT_FALSE(ClusterInfrastructureReady(Object{{"status", Object::object()}}));
  EXPECT_TRUE(ClusterInfrastructureReady(Object{{"status", {{"infrastructureReady", true}}}}));
  EXPECT_TRUE(ClusterInfrastructureReady(
      Object{{"status", {{"initialization", {{"infrastructureProvisioned", true}}}}}}));
}

TEST(CapiTest, BootstrapDataSecretName) {
  EXPECT_EQ(BootstrapDataSecretName(Object{{"spec", {{"bootstrap", {{"dataSecretName", "b"}}}}}}),
            "b");
  EXPECT_EQ(BootstrapDataSecretName(Object{{"spec", Object::object()}}), "");
}

TEST(CapiTest, MarkConditionReportsTransitionsOnly) {
  std::vector<api::Condition> cs;
  EXPECT_TRUE(MarkCondition(cs, "VMIPAllocated", false, "VMIPPoolExhausted", "full", 1));
  const std::string first_time = cs[0].last_transition_time;
  EXPECT_FALSE(MarkCondition(cs, "VMIPAllocated", false, "VMIPPoolExhausted", "still full", 2));
  EXPECT_EQ(cs[0].message, "still full");
  EXPECT_EQ(cs[0].observed_generation, 2);
  EXPECT_EQ(cs[0].last_transition_time, first_time);
  EXPECT_TRUE(MarkCondition(cs, "VMIPAllocated", true, "VMIPAllocated", "10.0.0.5", 2));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].status, "True");
}

TEST(CapiTest, PausedConditionAppearsWhenPausedAndTurnsFalseAfter) {
  std::vector<api::Condition> cs;
  EXPECT_FALSE(SyncPausedCondition(cs, false, 1));
  EXPECT_TRUE(cs.empty());  // never paused: no condition at all
  EXPECT_TRUE(SyncPausedCondition(cs, true, 1));
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0].status, "True");
  EXPECT_FALSE(SyncPausedCondition(cs, false, 2));
  EXPECT_EQ(cs[0].status, "False");
  EXPECT_EQ(cs[0].reason, "NotPaused");
}

TEST(CapiTest, InlinePoolNamesAreTheGoProvidersNames) {
  EXPECT_EQ(VmPoolName("ns", "hc"), "ns-hc-vm-ippool");
  EXPECT_EQ(LbPoolName("ns", "hc"), "ns-hc-lb-ippool");
}

}  // namespace
}  // namespace caphv::controllers
