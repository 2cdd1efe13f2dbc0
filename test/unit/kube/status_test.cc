#include "kube/status.h"

#include <gtest/gtest.h>

#include "kube/client.h"
#include "kube/resource.h"

namespace caphv::kube {
namespace {

TEST(StatusTest, DecodesMetavStatusWithCauses) {
  std::string body = R"({"kind":"Status","apiVersion":"v1","status":"Failure",
    "message":"Widget.test.caphv.io \"w\" is invalid: spec.size: Required value",
    "reason":"Invalid","code":422,
    "details":{"causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.size"}]}})";
  Status s = Status::FromHttp(422, body);
  EXPECT_TRUE(s.IsInvalid());
  EXPECT_EQ(s.http_status(), 422);
  ASSERT_EQ(s.causes().size(), 1u);
  EXPECT_EQ(s.causes()[0].field, "spec.size");
  EXPECT_NE(s.ToString().find("spec.size: Required value"), std::string::npos);
}

TEST(StatusTest, MapsReasonsAndCodes) {
  EXPECT_TRUE(Status::FromHttp(409, R"({"kind":"Status","reason":"AlreadyExists","code":409})")
                  .IsAlreadyExists());
  EXPECT_TRUE(
      Status::FromHttp(409, R"({"kind":"Status","reason":"Conflict","code":409})").IsConflict());
  EXPECT_TRUE(Status::FromHttp(410, R"({"kind":"Status","reason":"Expired","code":410})").IsGone());
  EXPECT_TRUE(Status::FromHttp(404, "not json").IsNotFound());
  EXPECT_EQ(Status::FromHttp(503, "").code(), StatusCode::kUnavailable);
  EXPECT_EQ(Status::FromHttp(429, "").code(), StatusCode::kTooManyRequests);
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return Status(StatusCode::kInvalidArgument, "odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  CAPHV_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

TEST(StatusTest, Macros) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
}

TEST(ResourceTest, Paths) {
  GroupVersionResource cm = resources::kConfigMaps;
  EXPECT_EQ(cm.CollectionPath("ns"), "/api/v1/namespaces/ns/configmaps");
  EXPECT_EQ(cm.CollectionPath(""), "/api/v1/configmaps");
  EXPECT_EQ(cm.ObjectPath("ns", "x", "status"), "/api/v1/namespaces/ns/configmaps/x/status");
  GroupVersionResource crd = resources::kCustomResourceDefinitions;
  EXPECT_EQ(crd.ObjectPath("ignored", "a.b"),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/a.b");
  EXPECT_EQ(crd.ApiVersion(), "apiextensions.k8s.io/v1");
}

TEST(ClientHelpersTest, KeysAndEncoding) {
  Object o = {{"metadata", {{"name", "a"}, {"namespace", "b"}, {"resourceVersion", "7"}}}};
  EXPECT_EQ(KeyOf(o), "b/a");
  EXPECT_EQ(ResourceVersionOf(o), "7");
  EXPECT_EQ(KeyOf(Object{{"metadata", {{"name", "n"}}}}), "n");
  EXPECT_EQ(UrlEncode("app=x,tier in (a b)"), "app%3Dx%2Ctier%20in%20%28a%20b%29");
}

}  // namespace
}  // namespace caphv::kube
