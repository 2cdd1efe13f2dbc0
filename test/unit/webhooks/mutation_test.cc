// Unit tests of the mutating rules: a placeholder never replaces a
// HarvesterCluster's real control-plane endpoint; a HarvesterMachine this
// manager reconciles is created with CAPHV's finalizer; everything else
// passes unchanged.

#include "webhooks/mutation.h"

#include <gtest/gtest.h>

#include "api/harvester_machine.h"

namespace caphv::webhooks {
namespace {

using api::Json;

Json Cluster(Json endpoint) {
  Json c = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "HarvesterCluster"},
            {"metadata", {{"name", "c1"}, {"namespace", "ns1"}}},
            {"spec", {{"targetNamespace", "default"}}}};
  if (!endpoint.is_null()) c["spec"]["controlPlaneEndpoint"] = std::move(endpoint);
  return c;
}

Json Endpoint(const std::string& host, int port) { return {{"host", host}, {"port", port}}; }

const Json kKeep = Json::array({{{"op", "add"},
                                 {"path", "/spec/controlPlaneEndpoint"},
                                 {"value", {{"host", "10.0.0.10"}, {"port", 6443}}}}});

TEST(MutationTest, PlaceholdersDoNotReplaceTheAddress) {
  const Json old_obj = Cluster(Endpoint("10.0.0.10", 6443));
  for (const Json& placeholder :
       {Endpoint("0.0.0.0", 6443), Endpoint("::", 6443), Endpoint("", 0), Endpoint("", 6443),
        Endpoint("10.0.0.11", 0), Json::object(), Json(nullptr)}) {
    EXPECT_EQ(HarvesterClusterPatch(Cluster(placeholder), &old_obj), kKeep) << placeholder.dump();
  }
}

TEST(MutationTest, AnotherAddressIsNotTouched) {
  const Json old_obj = Cluster(Endpoint("10.0.0.10", 6443));
  EXPECT_EQ(HarvesterClusterPatch(Cluster(Endpoint("10.0.0.11", 6443)), &old_obj), Json::array());
  EXPECT_EQ(HarvesterClusterPatch(Cluster(Endpoint("10.0.0.10", 443)), &old_obj), Json::array());
  EXPECT_EQ(HarvesterClusterPatch(old_obj, &old_obj), Json::array());
}

TEST(MutationTest, NothingToKeepWhenTheOldObjectHasNoAddress) {
  for (const Json& before : {Endpoint("0.0.0.0", 6443), Endpoint("", 0), Json(nullptr),
                             Json{{"host", 10}, {"port", 6443}}, Endpoint("10.0.0.10", 70000)}) {
    const Json old_obj = Cluster(before);
    EXPECT_EQ(HarvesterClusterPatch(Cluster(Endpoint("0.0.0.0", 6443)), &old_obj), Json::array())
        << before.dump();
  }
}

TEST(MutationTest, CreateIsNotPatched) {
  EXPECT_EQ(HarvesterClusterPatch(Cluster(Endpoint("0.0.0.0", 6443)), nullptr), Json::array());
}

TEST(MutationTest, MalformedObjectsAreNotPatched) {
  const Json old_obj = Cluster(Endpoint("10.0.0.10", 6443));
  EXPECT_EQ(HarvesterClusterPatch(Json("not an object"), &old_obj), Json::array());
  Json no_spec = Cluster(nullptr);
  no_spec.erase("spec");
  EXPECT_EQ(HarvesterClusterPatch(no_spec, &old_obj), Json::array());
}

Json NewMachine(Json finalizers = nullptr, Json labels = nullptr) {
  Json m = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
            {"kind", "HarvesterMachine"},
            {"metadata", {{"generateName", "w-"}}},
            {"spec", {{"cpu", 2}}}};
  if (!finalizers.is_null()) m["metadata"]["finalizers"] = std::move(finalizers);
  if (!labels.is_null()) m["metadata"]["labels"] = std::move(labels);
  return m;
}

const std::string kFinalizer(api::kMachineFinalizer);

TEST(MutationTest, AMachineIsCreatedWithTheFinalizer) {
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(), "ns1", {}),
            Json::parse(R"([{"op":"add","path":"/metadata/finalizers",
                             "value":["harvestermachine.infrastructure.cluster.x-k8s.io/finalizer"]}])"));
  // Another party's finalizers stay; CAPHV's is appended.
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(Json::array({"example.com/keep"})), "ns1", {}),
            Json::parse(R"([{"op":"add","path":"/metadata/finalizers/-",
                             "value":"harvestermachine.infrastructure.cluster.x-k8s.io/finalizer"}])"));
}

TEST(MutationTest, AMachineWithEitherFinalizerNameIsLeftAlone) {
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(Json::array({kFinalizer})), "ns1", {}),
            Json::array());
  // The Go provider's name (a machine restored by clusterctl move, say).
  EXPECT_EQ(HarvesterMachineCreatePatch(
                NewMachine(Json::array({std::string(api::kLegacyMachineFinalizer)})), "ns1", {}),
            Json::array());
}

TEST(MutationTest, OnlyMachinesTheManagerReconcilesGetTheFinalizer) {
  // --namespace: a machine elsewhere would keep a finalizer nobody lifts.
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(), "other", {.ns = "ns1"}), Json::array());
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(), "ns1", {.ns = "ns1"}).size(), 1u);
  // --watch-filter: only machines labelled with its value.
  const MachineScope filtered{.watch_filter = "team-a"};
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine(), "ns1", filtered), Json::array());
  EXPECT_EQ(
      HarvesterMachineCreatePatch(
          NewMachine(nullptr, {{"cluster.x-k8s.io/watch-filter", "team-b"}}), "ns1", filtered),
      Json::array());
  EXPECT_EQ(HarvesterMachineCreatePatch(
                NewMachine(nullptr, {{"cluster.x-k8s.io/watch-filter", "team-a"}}), "ns1", filtered)
                .size(),
            1u);
}

TEST(MutationTest, MalformedOrDeletedMachinesAreNotPatched) {
  Json deleting = NewMachine();
  deleting["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z";
  EXPECT_EQ(HarvesterMachineCreatePatch(deleting, "ns1", {}), Json::array());
  EXPECT_EQ(HarvesterMachineCreatePatch(Json("not an object"), "ns1", {}), Json::array());
  Json no_meta = NewMachine();
  no_meta.erase("metadata");
  EXPECT_EQ(HarvesterMachineCreatePatch(no_meta, "ns1", {}), Json::array());
  EXPECT_EQ(HarvesterMachineCreatePatch(NewMachine("not a list"), "ns1", {}), Json::array());
  EXPECT_EQ(HarvesterMachineCreatePatch(
                NewMachine(nullptr, Json::array({"cluster.x-k8s.io/watch-filter"})), "ns1",
                {.watch_filter = "team-a"}),
            Json::array());
}

}  // namespace
}  // namespace caphv::webhooks
