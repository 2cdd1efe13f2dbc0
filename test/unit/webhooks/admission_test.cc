// Unit tests of the AdmissionReview handler: the response shape of allowed
// and denied requests, every bad manifest denied with its field path in the
// message and the causes, malformed reviews denied (never a crash), and the
// HTTP checks of the handler.

#include "webhooks/admission.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "../api/test_paths.h"
#include "api/yaml.h"
#include "kube/base64.h"

namespace caphv::webhooks {
namespace {

using api::Json;

Json Machine(int cpu) {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "HarvesterMachine"},
          {"metadata", {{"name", "m1"}, {"namespace", "ns1"}}},
          {"spec",
           {{"cpu", cpu},
            {"memory", "4Gi"},
            {"sshUser", "ubuntu"},
            {"sshKeyPair", "default/key"},
            {"volumes",
             {{{"volumeType", "image"},
               {"imageName", "default/img"},
               {"volumeSize", "40Gi"},
               {"bootOrder", 1}}}},
            {"networks", {"default/net"}}}}};
}

Json Request(std::string op, Json object, Json old_object = nullptr,
             std::string kind = "HarvesterMachine") {
  Json req = {
      {"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
      {"kind",
       {{"group", "infrastructure.cluster.x-k8s.io"}, {"version", "v1alpha1"}, {"kind", kind}}},
      {"operation", op},
      {"namespace", "ns1"},
      {"name", "m1"},
      {"dryRun", false}};
  if (!object.is_null()) req["object"] = std::move(object);
  if (!old_object.is_null()) req["oldObject"] = std::move(old_object);
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}};
}

TEST(AdmissionTest, PathsMatchTheGoProvider) {
  const auto& hooks = ValidatingWebhooks();
  ASSERT_EQ(hooks.size(), 4u);
  EXPECT_EQ(hooks[0].path, "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestercluster");
  EXPECT_EQ(hooks[0].name, "vharvestercluster.kb.io");
  EXPECT_EQ(hooks[1].path, "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestermachine");
  EXPECT_EQ(hooks[1].name, "vharvestermachine.kb.io");
  EXPECT_EQ(hooks[1].resource, "harvestermachines");
  EXPECT_EQ(hooks[2].path,
            "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-harvesterclustertemplate");
  EXPECT_EQ(hooks[3].path,
            "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestermachinetemplate");
  EXPECT_EQ(hooks[3].resource, "harvestermachinetemplates");
}

TEST(AdmissionTest, TheMutatingWebhooksAreNamedLikeTheValidatingOnes) {
  const auto& hooks = MutatingWebhooks();
  ASSERT_EQ(hooks.size(), 2u);
  EXPECT_EQ(hooks[0].path, "/mutate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestercluster");
  EXPECT_EQ(hooks[0].name, "mharvestercluster.kb.io");
  EXPECT_EQ(hooks[0].resource, "harvesterclusters");
  EXPECT_TRUE(hooks[0].mutating);
  EXPECT_EQ(hooks[0].operations, std::vector<std::string>{"UPDATE"});
  EXPECT_EQ(hooks[1].path, "/mutate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestermachine");
  EXPECT_EQ(hooks[1].name, "mharvestermachine.kb.io");
  EXPECT_EQ(hooks[1].resource, "harvestermachines");
  EXPECT_TRUE(hooks[1].mutating);
  EXPECT_EQ(hooks[1].operations, std::vector<std::string>{"CREATE"});
  for (const auto& h : ValidatingWebhooks()) EXPECT_FALSE(h.mutating) << h.name;
}

TEST(AdmissionTest, MutationKeepsTheEndpointAsABase64JsonPatch) {
  Json old_obj = {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                  {"kind", "HarvesterCluster"},
                  {"metadata", {{"name", "c1"}, {"namespace", "ns1"}}},
                  {"spec", {{"controlPlaneEndpoint", {{"host", "10.0.0.10"}, {"port", 6443}}}}}};
  Json new_obj = old_obj;
  new_obj["spec"]["controlPlaneEndpoint"]["host"] = "0.0.0.0";
  Json out =
      MutationReview(Request("UPDATE", new_obj, old_obj, "HarvesterCluster"), "HarvesterCluster");
  const Json& resp = out["response"];
  EXPECT_EQ(resp["allowed"], true) << out.dump();
  EXPECT_EQ(resp["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  ASSERT_EQ(resp.value("patchType", ""), "JSONPatch") << out.dump();
  auto patch = kube::Base64Decode(resp.value("patch", ""));
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(Json::parse(*patch), Json::parse(R"([{"op":"add","path":"/spec/controlPlaneEndpoint",
                             "value":{"host":"10.0.0.10","port":6443}}])"));

  // Nothing to keep: allowed without a patch; invalid values are the
  // validating webhook's business, not this one's.
  new_obj["spec"]["controlPlaneEndpoint"] = {{"host", "10.0.0.11"}, {"port", 0x10000}};
  old_obj["spec"].erase("controlPlaneEndpoint");
  out = MutationReview(Request("UPDATE", new_obj, old_obj, "HarvesterCluster"), "HarvesterCluster");
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
  EXPECT_FALSE(out["response"].contains("patch")) << out.dump();
  // Malformed reviews are refused as by the validating webhooks.
  out = MutationReview(Request("UPDATE", new_obj, nullptr, "HarvesterCluster"), "HarvesterCluster");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 400);
  out = MutationReview(Request("UPDATE", new_obj, old_obj, "HarvesterMachine"), "HarvesterCluster");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_NE(out["response"]["status"]["message"].get<std::string>().find("mutates"),
            std::string::npos);
}

TEST(AdmissionTest, AMachineIsCreatedWithTheFinalizerOfItsManager) {
  Json machine = Machine(2);
  Json review = Request("CREATE", machine, nullptr, "HarvesterMachine");
  review["request"]["namespace"] = "ns1";
  Json out = MutationReview(review, "HarvesterMachine", {.ns = "ns1"});
  ASSERT_EQ(out["response"].value("patchType", ""), "JSONPatch") << out.dump();
  auto patch = kube::Base64Decode(out["response"].value("patch", ""));
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(Json::parse(*patch), Json::parse(R"([{"op":"add","path":"/metadata/finalizers",
      "value":["harvestermachine.infrastructure.cluster.x-k8s.io/finalizer"]}])"));
  // Another manager's namespace: allowed, unchanged.
  out = MutationReview(review, "HarvesterMachine", {.ns = "ns2"});
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
  EXPECT_FALSE(out["response"].contains("patch")) << out.dump();
  // Updates are not the rule's: a finalizer removed by hand stays removed.
  out = MutationReview(Request("UPDATE", machine, machine, "HarvesterMachine"), "HarvesterMachine");
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
  EXPECT_FALSE(out["response"].contains("patch")) << out.dump();
}

TEST(AdmissionTest, AllowsAValidCreate) {
  Json out = Review(Request("CREATE", Machine(2)), "HarvesterMachine");
  EXPECT_EQ(out["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
}

TEST(AdmissionTest, DeniesAnInvalidCreateAsTheGoProviderDoes) {
  Json out = Review(Request("CREATE", Machine(0)), "HarvesterMachine");
  const Json& resp = out["response"];
  EXPECT_EQ(resp["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  EXPECT_EQ(resp["allowed"], false);
  const Json& status = resp["status"];
  EXPECT_EQ(status["code"], 403);
  EXPECT_EQ(status["reason"], "Forbidden");
  EXPECT_EQ(status["status"], "Failure");
  EXPECT_EQ(status["message"],
            "validation failed for HarvesterMachine ns1/m1: spec.cpu must be greater than 0");
  ASSERT_EQ(status["details"]["causes"].size(), 1u);
  EXPECT_EQ(status["details"]["causes"][0]["field"], "spec.cpu");
  EXPECT_EQ(status["details"]["causes"][0]["reason"], "FieldValueInvalid");
  EXPECT_EQ(status["details"]["kind"], "HarvesterMachine");
  EXPECT_EQ(status["details"]["group"], "infrastructure.cluster.x-k8s.io");
  EXPECT_EQ(status["details"]["name"], "m1");
}

TEST(AdmissionTest, ListsEveryFieldError) {
  Json bad = Machine(0);
  bad["spec"].erase("sshUser");
  bad["spec"]["networks"] = Json::array();
  Json out = Review(Request("CREATE", bad), "HarvesterMachine");
  const Json& status = out["response"]["status"];
  std::string message = status["message"];
  EXPECT_EQ(message,
            "validation failed for HarvesterMachine ns1/m1: spec.cpu must be greater than 0; "
            "spec.sshUser is required; spec.networks must contain at least one network");
  EXPECT_EQ(status["details"]["causes"].size(), 3u) << status.dump();
}

TEST(AdmissionTest, DeleteIsAllowed) {
  Json out = Review(Request("DELETE", nullptr, Machine(0)), "HarvesterMachine");
  EXPECT_EQ(out["response"]["allowed"], true);
}

TEST(AdmissionTest, UpdateRunsTheUpdateRules) {
  Json old_obj = Machine(2);
  old_obj["spec"]["providerID"] = "harvester://8f14e45f-ceea-467f-a0e6-3f1b2c4d5e6f";
  Json new_obj = old_obj;
  new_obj["spec"]["providerID"] = "harvester://00000000-ceea-467f-a0e6-3f1b2c4d5e6f";
  Json out = Review(Request("UPDATE", new_obj, old_obj), "HarvesterMachine");
  EXPECT_EQ(out["response"]["allowed"], false) << out.dump();
  EXPECT_NE(out["response"]["status"]["message"].get<std::string>().find("spec.providerID"),
            std::string::npos);
  // The same object again is fine.
  out = Review(Request("UPDATE", old_obj, old_obj), "HarvesterMachine");
  EXPECT_EQ(out["response"]["allowed"], true) << out.dump();
}

TEST(AdmissionTest, UndecodableObjectIsDeniedWithItsPath) {
  Json bad = Machine(2);
  bad["spec"]["cpu"] = "two";
  Json out = Review(Request("CREATE", bad), "HarvesterMachine");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 403);
  EXPECT_NE(out["response"]["status"]["message"].get<std::string>().find("spec.cpu cannot be read"),
            std::string::npos)
      << out.dump();
}

TEST(AdmissionTest, MalformedReviewsAreDeniedWith400) {
  std::vector<Json> bad = {
      Json("a string"),
      Json::object(),
      Json{{"apiVersion", "admission.k8s.io/v1"}, {"request", 3}},
      Json{{"apiVersion", "admission.k8s.io/v1"}, {"request", {{"operation", "CREATE"}}}},
      Json{{"apiVersion", "admission.k8s.io/v2"}, {"request", {{"uid", "u"}}}},
      Request("CREATE", nullptr),
      Request("CREATE", Json::array()),
      Request("UPDATE", Machine(2)),  // no oldObject
      Request("PATCH", Machine(2)),
      Request("CREATE", Machine(2), nullptr, "HarvesterCluster"),  // wrong kind for the path
  };
  for (const auto& review : bad) {
    Json out = Review(review, "HarvesterMachine");
    ASSERT_TRUE(out.contains("response")) << review.dump();
    EXPECT_EQ(out["response"]["allowed"], false) << review.dump();
    EXPECT_EQ(out["response"]["status"]["code"], 400) << review.dump() << " -> " << out.dump();
    EXPECT_FALSE(out["response"]["status"]["message"].get<std::string>().empty());
  }
}

TEST(AdmissionTest, EchoesV1beta1) {
  Json review = Request("CREATE", Machine(2));
  review["apiVersion"] = "admission.k8s.io/v1beta1";
  EXPECT_EQ(Review(review, "HarvesterMachine")["apiVersion"], "admission.k8s.io/v1beta1");
}

// Every manifest of test/data/manifests/invalid, sent as the apiserver
// would, is denied with its expected field path in message and causes.
TEST(AdmissionTest, EveryInvalidManifestIsDenied) {
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::ManifestDir("invalid"))) {
    auto text = api::ReadFile(e.path().string());
    ASSERT_TRUE(text.ok());
    std::string expect;
    std::istringstream in(*text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("# expect: ", 0) == 0) expect = line.substr(10);
    }
    ASSERT_FALSE(expect.empty()) << e.path();
    auto docs = api::ParseYaml(*text);
    ASSERT_TRUE(docs.ok()) << e.path();
    const Json& obj = docs->back();
    std::string kind = obj["kind"];
    Json review = docs->size() == 2 ? Request("UPDATE", obj, docs->front(), kind)
                                    : Request("CREATE", obj, nullptr, kind);
    Json out = Review(review, kind);
    const Json& status = out["response"]["status"];
    EXPECT_EQ(out["response"]["allowed"], false) << e.path();
    EXPECT_EQ(status["code"], 403) << e.path();
    EXPECT_NE(status["message"].get<std::string>().find(": " + expect + " "), std::string::npos)
        << e.path() << ": " << status["message"];
    bool in_causes = false;
    for (const auto& c : status["details"]["causes"]) in_causes |= c["field"] == expect;
    EXPECT_TRUE(in_causes) << e.path() << ": " << status.dump();
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

TEST(AdmissionTest, EveryValidManifestIsAllowed) {
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(testing::ManifestDir("valid"))) {
    auto text = api::ReadFile(e.path().string());
    ASSERT_TRUE(text.ok());
    auto docs = api::ParseYaml(*text);
    ASSERT_TRUE(docs.ok()) << e.path();
    for (const auto& obj : *docs) {
      std::string kind = obj["kind"];
      Json out = Review(Request("CREATE", obj, nullptr, kind), kind);
      EXPECT_EQ(out["response"]["allowed"], true) << e.path() << ": " << out.dump();
      ++checked;
    }
  }
  EXPECT_GT(checked, 5);
}

kube::HttpRequest Http(std::string method, std::string content_type, std::string body) {
  kube::HttpRequest r;
  r.method = std::move(method);
  r.path = ValidatingWebhooks()[1].path;
  r.target = r.path;
  r.headers = {{"content-type", std::move(content_type)}};
  r.body = std::move(body);
  return r;
}

TEST(AdmissionTest, HttpHandlerChecksMethodAndContentType) {
  const auto& hook = ValidatingWebhooks()[1];
  EXPECT_EQ(HandleAdmission(Http("GET", "application/json", ""), hook).status, 405);

  auto resp = HandleAdmission(Http("POST", "text/plain", "{}"), hook);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(Json::parse(resp.body)["response"]["status"]["code"], 400);

  resp = HandleAdmission(Http("POST", "application/json", "{not json"), hook);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(resp.content_type, "application/json");
  EXPECT_EQ(Json::parse(resp.body)["response"]["allowed"], false);

  resp =
      HandleAdmission(Http("POST", "application/json", Request("CREATE", Machine(4)).dump()), hook);
  EXPECT_EQ(resp.status, 200);
  EXPECT_EQ(Json::parse(resp.body)["response"]["allowed"], true) << resp.body;
}

// One unauthenticated request crashed the manager: an AdmissionReview of
// about 200 KB whose metadata held an array nested 100,000 deep. It is
// denied before it is decoded.
TEST(AdmissionTest, AReviewNestedTooDeepIsDeniedNotDecoded) {
  const auto& hook = ValidatingWebhooks()[1];
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += '[';
  for (int i = 0; i < 100000; ++i) deep += ']';
  const std::string body = R"({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
      "request": {"uid": "u", "operation": "CREATE", "object": {"metadata": {"x": )" +
                           deep + "}}}}";
  auto resp = HandleAdmission(Http("POST", "application/json", body), hook);
  EXPECT_EQ(resp.status, 200);
  const Json out = Json::parse(resp.body);
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 400);
  EXPECT_NE(out["response"]["status"]["message"].get<std::string>().find("nests deeper than"),
            std::string::npos)
      << resp.body;
}

}  // namespace
}  // namespace caphv::webhooks
