// Unit tests for sim/webhook.h: AdmissionReview handling and the serving cert.

#include "sim/webhook.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace caphv::sim {
namespace {

using kube::Object;

std::string Request(const std::string& op, const Object& obj, const Object& old = nullptr) {
  Object req = {{"uid", "u-1"}, {"operation", op}, {"namespace", "ns"}, {"object", obj}};
  if (!old.is_null()) req["oldObject"] = old;
  return Object(
             {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", req}})
      .dump();
}

Object Vm(const std::string& mem) {
  return {{"metadata", {{"name", "vm"}}}, {"spec", {{"memory", mem}}}};
}

VmValidator RejectSmall() {
  return [](const Object& vm) -> std::vector<std::string> {
    EXPECT_EQ(vm["metadata"]["namespace"], "ns");
    if (vm["spec"]["memory"] == "small") return {"too small", "really"};
    return {};
  };
}

TEST(ReviewVm, DeniesCreateWithMessages) {
  auto out = Object::parse(ReviewVm(Request("CREATE", Vm("small")), RejectSmall()));
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "u-1");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["message"], "too small; really");
  EXPECT_EQ(out["response"]["status"]["code"], 400);
}

TEST(ReviewVm, AllowsValidCreateAndMetadataOnlyUpdates) {
  EXPECT_EQ(
      Object::parse(ReviewVm(Request("CREATE", Vm("big")), RejectSmall()))["response"]["allowed"],
      true);
  // An update that leaves the spec alone (finalizers, labels) is not judged.
  Object old = Vm("small"), now = Vm("small");
  now["metadata"]["finalizers"] = {"x"};
  EXPECT_EQ(
      Object::parse(ReviewVm(Request("UPDATE", now, old), RejectSmall()))["response"]["allowed"],
      true);
  // A spec change is.
  EXPECT_EQ(Object::parse(ReviewVm(Request("UPDATE", Vm("small"), Vm("big")),
                                   RejectSmall()))["response"]["allowed"],
            false);
  EXPECT_EQ(Object::parse(ReviewVm("garbage", RejectSmall()))["response"]["allowed"], false);
}

TEST(WebhookConfiguration, PointsAtTheUrlWithTheCa) {
  auto cfg = WebhookConfiguration("caphv-sim", "https://127.0.0.1:1234", "PEM", "", true);
  ASSERT_EQ(cfg["webhooks"].size(), 2u);
  const auto& w = cfg["webhooks"][0];
  EXPECT_EQ(w["clientConfig"]["url"], std::string("https://127.0.0.1:1234") + kWebhookPath);
  EXPECT_EQ(w["clientConfig"]["caBundle"], "UEVN");
  EXPECT_EQ(w["rules"][0]["resources"][0], "virtualmachines");
  EXPECT_EQ(w["namespaceSelector"]["matchExpressions"][0]["operator"], "DoesNotExist");
  const auto& lb = cfg["webhooks"][1];
  EXPECT_EQ(lb["name"], kLbWebhookName);
  ASSERT_EQ(lb["rules"].size(), 2u);
  EXPECT_EQ(lb["rules"][0]["resources"][0], "loadbalancers");
  EXPECT_EQ(lb["rules"][1]["resources"][0], "ippools");
  EXPECT_EQ(lb["rules"][1]["operations"].size(), 3u);  // DELETE too
  // A simulator of one namespace leaves the cluster-scoped pools to the main one.
  auto scoped = WebhookConfiguration("n", "u", "PEM", "ns1", false);
  ASSERT_EQ(scoped["webhooks"][1]["rules"].size(), 1u);
  EXPECT_EQ(scoped["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"][0], "ns1");
}

TEST(Review, DeleteJudgesTheOldObjectAndUpdateGetsBoth) {
  Object pool = {{"metadata", {{"name", "p"}}}, {"status", {{"allocated", {{"10.0.0.5", "x"}}}}}};
  std::string seen_op;
  auto out = Object::parse(Review(
      Request("DELETE", nullptr, pool),
      [&](const std::string& op, const Object& o, const Object* old) {
        seen_op = op;
        EXPECT_EQ(old, nullptr);
        EXPECT_EQ(o["metadata"]["name"], "p");
        return std::vector<std::string>{"still allocated"};
      },
      kLoadBalancerRefusal));
  EXPECT_EQ(seen_op, "DELETE");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["code"], 500);
  EXPECT_EQ(out["response"]["status"]["reason"], "InternalError");
  EXPECT_EQ(out["response"]["status"]["message"], "Internal error occurred: still allocated");
  out = Object::parse(Review(Request("UPDATE", Vm("a"), Vm("b")),
                             [&](const std::string&, const Object& o, const Object* old) {
                               EXPECT_EQ(o["spec"]["memory"], "a");
                               EXPECT_NE(old, nullptr);
                               if (old != nullptr) {
                                 EXPECT_EQ((*old)["spec"]["memory"], "b");
                               }
                               return std::vector<std::string>{};
                             }));
  EXPECT_EQ(out["response"]["allowed"], true);
}

TEST(GenerateServingCert, SelfSignedWithIpSan) {
  auto cert = GenerateServingCert("127.0.0.1");
  ASSERT_TRUE(cert.ok()) << cert.status().ToString();
  BIO* bio = BIO_new_mem_buf(cert->cert_pem.data(), static_cast<int>(cert->cert_pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_ip_asc(x, "127.0.0.2", 0), 0);
  EVP_PKEY* pub = X509_get0_pubkey(x);
  EXPECT_EQ(X509_verify(x, pub), 1);  // self-signed
  X509_free(x);
  EXPECT_NE(cert->key_pem.find("PRIVATE KEY"), std::string::npos);
}

}  // namespace
}  // namespace caphv::sim
