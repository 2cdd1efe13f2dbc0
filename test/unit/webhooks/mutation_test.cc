// Unit tests of the mutating rule: a placeholder never replaces a
// HarvesterCluster's real control-plane endpoint; everything else passes
// unchanged.

#include "webhooks/mutation.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace caphv::webhooks
