// File: sim/webhook.cc

#include "sim/webhook.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "kube/base64.h"
#include "sim/simulator.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using PKey = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Bio = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;

bool AddExt(X509* cert, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

std::string BioString(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

kube::StatusOr<ServingCert> GenerateServingCert(const std::string& ip) {
  PKey key(EVP_EC_gen("P-256"));
  Cert cert(X509_new());
  if (!key || !cert) return Status(StatusCode::kInternal, "cannot create key or certificate");
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), static_cast<long>(time(nullptr)));
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("caphv-sim-webhook"), -1, -1,
                             0);
  X509_set_issuer_name(cert.get(), name);
  const std::string san = "IP:" + ip + ",DNS:localhost";
  if (!AddExt(cert.get(), NID_basic_constraints, "critical,CA:TRUE") ||
      !AddExt(cert.get(), NID_key_usage, "critical,digitalSignature,keyCertSign") ||
      !AddExt(cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddExt(cert.get(), NID_subject_alt_name, san.c_str()) ||
      !AddExt(cert.get(), NID_subject_key_identifier, "hash")) {
    return Status(StatusCode::kInternal, "cannot add certificate extensions");
  }
  if (X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return Status(StatusCode::kInternal, "cannot sign certificate");
  }
  Bio cb(BIO_new(BIO_s_mem())), kb(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_X509(cb.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(kb.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return Status(StatusCode::kInternal, "cannot encode certificate");
  }
  return ServingCert{BioString(cb.get()), BioString(kb.get())};
}

Status WriteCert(const ServingCert& cert, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (auto [file, content] :
       {std::pair{"tls.crt", &cert.cert_pem}, std::pair{"tls.key", &cert.key_pem}}) {
    std::ofstream out(dir + "/" + file, std::ios::trunc);
    out << *content;
    if (!out) return Status(StatusCode::kInternal, "cannot write " + dir + "/" + file);
  }
  return {};
}

std::string ReviewVm(const std::string& body, const VmValidator& validate) {
  Object review = Object::parse(body, nullptr, false);
  Object response = {{"uid", ""}, {"allowed", true}};
  if (review.is_discarded() || !review.contains("request")) {
    response["allowed"] = false;
    response["status"] = {{"code", 400}, {"message", "malformed AdmissionReview"}};
  } else {
    const Object& req = review["request"];
    response["uid"] = req.value("uid", "");
    const std::string op = req.value("operation", "");
    const Object vm = req.value("object", Object::object());
    bool check = op == "CREATE";
    if (op == "UPDATE") {
      const Object old = req.value("oldObject", Object::object());
      auto templates = [](const Object& o) {
        return o.value("metadata", Object::object())
            .value("annotations", Object::object())
            .value(kClaimTemplatesAnnotation, "");
      };
      check = old.value("spec", Object::object()) != vm.value("spec", Object::object()) ||
              templates(old) != templates(vm);
      const Object meta = vm.value("metadata", Object::object());
      if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) {
        check = false;
      }
    }
    if (check) {
      Object v = vm;
      if (!v["metadata"].contains("namespace"))
        v["metadata"]["namespace"] = req.value("namespace", "");
      auto errors = validate(v);
      if (!errors.empty()) {
        std::string msg;
        for (const auto& e : errors) msg += (msg.empty() ? "" : "; ") + e;
        response["allowed"] = false;
        response["status"] = {{"code", 400}, {"reason", "BadRequest"}, {"message", msg}};
      }
    }
  }
  return Object({{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"response", response}})
      .dump();
}

Object WebhookConfiguration(const std::string& name, const std::string& url,
                            const std::string& ca_pem, const std::string& ns) {
  Object selector;
  if (!ns.empty()) {
    selector = {{"matchExpressions", Object::array({{{"key", "kubernetes.io/metadata.name"},
                                                     {"operator", "In"},
                                                     {"values", {ns}}}})}};
  } else {
    selector = {{"matchExpressions",
                 Object::array({{{"key", kDedicatedLabel}, {"operator", "DoesNotExist"}}})}};
  }
  return {
      {"apiVersion", "admissionregistration.k8s.io/v1"},
      {"kind", "ValidatingWebhookConfiguration"},
      {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "caphv-sim"}}}}},
      {"webhooks",
       Object::array({{{"name", "validator.harvesterhci.io"},
                       {"clientConfig", {{"url", url}, {"caBundle", kube::Base64Encode(ca_pem)}}},
                       {"rules", Object::array({{{"apiGroups", {"kubevirt.io"}},
                                                 {"apiVersions", {"v1"}},
                                                 {"operations", {"CREATE", "UPDATE"}},
                                                 {"resources", {"virtualmachines"}},
                                                 {"scope", "Namespaced"}}})},
                       {"namespaceSelector", selector},
                       {"failurePolicy", "Fail"},
                       {"sideEffects", "None"},
                       {"admissionReviewVersions", {"v1"}},
                       {"timeoutSeconds", 10}}})}};
}

}  // namespace caphv::sim
