// Unit tests for sim/webhook.h: AdmissionReview handling and the serving cert.

#include "sim/webhook.h"

#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace caphv::sim {
namespace {

using kube::Object;

std::string Review(const std::string& op, const Object& obj, const Object& old = nullptr) {
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
  auto out = Object::parse(ReviewVm(Review("CREATE", Vm("small")), RejectSmall()));
  EXPECT_EQ(out["kind"], "AdmissionReview");
  EXPECT_EQ(out["response"]["uid"], "u-1");
  EXPECT_EQ(out["response"]["allowed"], false);
  EXPECT_EQ(out["response"]["status"]["message"], "too small; really");
  EXPECT_EQ(out["response"]["status"]["code"], 400);
}

TEST(ReviewVm, AllowsValidCreateAndMetadataOnlyUpdates) {
  EXPECT_EQ(
      Object::parse(ReviewVm(Review("CREATE", Vm("big")), RejectSmall()))["response"]["allowed"],
      true);
  // An update that leaves the spec alone (finalizers, labels) is not judged.
  Object old = Vm("small"), now = Vm("small");
  now["metadata"]["finalizers"] = {"x"};
  EXPECT_EQ(
      Object::parse(ReviewVm(Review("UPDATE", now, old), RejectSmall()))["response"]["allowed"],
      true);
  // A spec change is.
  EXPECT_EQ(Object::parse(ReviewVm(Review("UPDATE", Vm("small"), Vm("big")),
                                   RejectSmall()))["response"]["allowed"],
            false);
  EXPECT_EQ(Object::parse(ReviewVm("garbage", RejectSmall()))["response"]["allowed"], false);
}

TEST(WebhookConfiguration, PointsAtTheUrlWithTheCa) {
  auto cfg = WebhookConfiguration("caphv-sim", "https://127.0.0.1:1234/x", "PEM", "");
  const auto& w = cfg["webhooks"][0];
  EXPECT_EQ(w["clientConfig"]["url"], "https://127.0.0.1:1234/x");
  EXPECT_EQ(w["clientConfig"]["caBundle"], "UEVN");
  EXPECT_EQ(w["rules"][0]["resources"][0], "virtualmachines");
  EXPECT_EQ(w["namespaceSelector"]["matchExpressions"][0]["operator"], "DoesNotExist");
  auto scoped = WebhookConfiguration("n", "u", "PEM", "ns1");
  EXPECT_EQ(scoped["webhooks"][0]["namespaceSelector"]["matchExpressions"][0]["values"][0], "ns1");
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
