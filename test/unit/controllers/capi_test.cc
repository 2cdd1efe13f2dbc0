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
  // Odd shapes are not ready, and do not throw.
  EXPECT_FALSE(ClusterInfrastructureReady(Object{{"status", {{"infrastructureReady", "true"}}}}));
  EXPECT_FALSE(ClusterInfrastructureReady(Object{{"status", {{"initialization", 1}}}}));
}

TEST(CapiTest, ControlPlaneInitializedInBothContracts) {
  EXPECT_FALSE(ClusterControlPlaneInitialized(Object{{"status", Object::object()}}));
  EXPECT_TRUE(ClusterControlPlaneInitialized(
      Object{{"status", {{"initialization", {{"controlPlaneInitialized", true}}}}}}));
  EXPECT_TRUE(ClusterControlPlaneInitialized(Object::parse(
      R"({"status": {"conditions": [{"type": "Ready", "status": "False"},
          {"type": "ControlPlaneInitialized", "status": "True"}]}})")));
  EXPECT_FALSE(ClusterControlPlaneInitialized(Object::parse(
      R"({"status": {"conditions": [{"type": "ControlPlaneInitialized", "status": "False"}]}})")));
  EXPECT_FALSE(ClusterControlPlaneInitialized(Object::parse(
      R"({"status": {"conditions": ["ControlPlaneInitialized", {"type": 1, "status": "True"}],
          "initialization": {"controlPlaneInitialized": "yes"}}})")));
}

TEST(CapiTest, ClusterApiObjectsAreReadAtTheNewestVersionServed) {
  // Cluster API v1.11 and later serve v1beta2 (v1.14: v1beta1 and v1beta2).
  EXPECT_EQ(CapiVersionServed(Object::parse(R"({"kind":"APIGroup","name":"cluster.x-k8s.io",
      "versions":[{"groupVersion":"cluster.x-k8s.io/v1beta2","version":"v1beta2"},
                  {"groupVersion":"cluster.x-k8s.io/v1beta1","version":"v1beta1"}],
      "preferredVersion":{"version":"v1beta2"}})")),
            "v1beta2");
  // v1.10 serves v1beta1 (and the older v1alpha versions are gone).
  EXPECT_EQ(
      CapiVersionServed(Object::parse(
          R"({"versions":[{"version":"v1beta1"}],"preferredVersion":{"version":"v1beta1"}})")),
      "v1beta1");
  // No discovery document (Cluster API not installed yet, or unreadable).
  EXPECT_EQ(CapiVersionServed(Object()), "v1beta1");
  EXPECT_EQ(CapiVersionServed(Object{{"versions", "v1beta2"}}), "v1beta1");
}

TEST(CapiTest, AManagerReadingV1beta1RestartsOnceV1beta2IsServed) {
  const Object v1beta2 = Object::parse(
      R"({"versions":[{"version":"v1beta2"},{"version":"v1beta1"}],"preferredVersion":{"version":"v1beta2"}})");
  const Object v1beta1 = Object::parse(R"({"versions":[{"version":"v1beta1"}]})");
  // Cluster API upgraded from v1.10 to v1.14 underneath it.
  EXPECT_EQ(NewerCapiVersionServed("v1beta1", v1beta2), "v1beta2");
  // Nothing new: reading the newest already, or nothing newer served.
  EXPECT_EQ(NewerCapiVersionServed("v1beta2", v1beta2), "");
  EXPECT_EQ(NewerCapiVersionServed("v1beta1", v1beta1), "");
  // A failed look (no document) never sends a v1beta2 reader back.
  EXPECT_EQ(NewerCapiVersionServed("v1beta2", Object()), "");
  EXPECT_EQ(NewerCapiVersionServed("v1beta2", v1beta1), "");
}

TEST(CapiTest, BootstrapDataSecretName) {
  EXPECT_EQ(BootstrapDataSecretName(Object{{"spec", {{"bootstrap", {{"dataSecretName", "b"}}}}}}),
            "b");
  EXPECT_EQ(BootstrapDataSecretName(Object{{"spec", Object::object()}}), "");
}

// The cache keeps what the reconcilers and their watch predicates read of a
// Machine (v1beta1 and v1beta2 shapes) and none of what Cluster API rewrites
// as the machine progresses.
TEST(CapiTest, ACompactMachineKeepsWhatIsReadAndDropsTheRest) {
  for (const char* json : {
           R"({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
             "metadata": {"name": "m", "namespace": "ns", "labels": {"cluster.x-k8s.io/cluster-name": "c"},
               "annotations": {"cluster.x-k8s.io/paused": ""}, "deletionTimestamp": "t",
               "managedFields": [{"manager": "capi"}]},
             "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "b", "configRef": {"name": "x"}},
               "infrastructureRef": {"kind": "HarvesterMachine", "name": "hm"}, "failureDomain": "zone-a",
               "version": "v1.33.1"},
             "status": {"nodeRef": {"name": "n"}, "phase": "Running", "addresses": [{"type": "x"}],
               "conditions": [{"type": "Ready", "status": "True"}]}})",
           R"({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
             "metadata": {"name": "m", "namespace": "ns"},
             "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "b"},
               "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                     "kind": "HarvesterMachine", "name": "hm"}},
             "status": {"nodeRef": {"name": "n"}, "deprecated": {"v1beta1": {"conditions": []}}}})"}) {
    const Object machine = Object::parse(json);
    Object compact = machine;
    MachineFields().Apply(compact);
    EXPECT_EQ(BootstrapDataSecretName(compact), BootstrapDataSecretName(machine));
    EXPECT_EQ(IsPaused(nullptr, compact), IsPaused(nullptr, machine));
    EXPECT_EQ(IsDeleting(compact), IsDeleting(machine));
    EXPECT_EQ(LabelsOf(compact), LabelsOf(machine));
    EXPECT_EQ(compact["spec"]["infrastructureRef"], machine["spec"]["infrastructureRef"]);
    EXPECT_EQ(compact["status"]["nodeRef"], machine["status"]["nodeRef"]);
    EXPECT_EQ(compact["spec"].value("failureDomain", ""),
              machine["spec"].value("failureDomain", ""));
    EXPECT_EQ(kube::KeyOf(compact), kube::KeyOf(machine));
    EXPECT_FALSE(compact["status"].contains("conditions"));
    EXPECT_FALSE(compact["status"].contains("deprecated"));
    EXPECT_FALSE(compact["spec"].contains("version"));
    EXPECT_FALSE(compact["metadata"].contains("managedFields"));
  }
}

}  // namespace
}  // namespace caphv::controllers
