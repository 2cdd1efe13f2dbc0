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

std::string Review(const std::string& body, const Admitter& admit, const Refusal& refusal) {
  Object review = Object::parse(body, nullptr, false);
  Object response = {{"uid", ""}, {"allowed", true}};
  if (review.is_discarded() || !review.is_object() || !review.contains("request") ||
      !review["request"].is_object()) {
    response["allowed"] = false;
    response["status"] = {{"code", 400}, {"message", "malformed AdmissionReview"}};
  } else {
    const Object& req = review["request"];
    response["uid"] = req.value("uid", "");
    const std::string op = req.value("operation", "");
    Object object = req.value(op == "DELETE" ? "oldObject" : "object", Object::object());
    if (!object.is_object()) object = Object::object();
    if (!object.contains("metadata") || !object["metadata"].is_object()) {
      object["metadata"] = Object::object();
    }
    if (!object["metadata"].contains("namespace") && !req.value("namespace", "").empty()) {
      object["metadata"]["namespace"] = req.value("namespace", "");
    }
    const Object old = req.value("oldObject", Object());
    const bool has_old = op == "UPDATE" && old.is_object();
    auto errors = admit(op, object, has_old ? &old : nullptr);
    if (!errors.empty()) {
      std::string msg;
      for (const auto& e : errors) msg += (msg.empty() ? "" : "; ") + e;
      response["allowed"] = false;
      response["status"] = {{"code", refusal.code},
                            {"reason", refusal.reason},
                            {"message", refusal.message_prefix + msg}};
    }
  }
  return Object({{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"response", response}})
      .dump();
}

std::string ReviewVm(const std::string& body, const VmValidator& validate) {
  return Review(
      body,
      [&](const std::string& op, const Object& vm, const Object* old) -> std::vector<std::string> {
        if (op == "CREATE") return validate(vm);
        if (op != "UPDATE" || old == nullptr) return {};
        auto templates = [](const Object& o) {
          return o.value("metadata", Object::object())
              .value("annotations", Object::object())
              .value(kClaimTemplatesAnnotation, "");
        };
        const Object meta = vm.value("metadata", Object::object());
        if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return {};
        if (old->value("spec", Object::object()) == vm.value("spec", Object::object()) &&
            templates(*old) == templates(vm)) {
          return {};
        }
        return validate(vm);
      });
}

namespace {

Object NamespaceSelector(const std::string& ns) {
  if (!ns.empty()) {
    return {{"matchExpressions", Object::array({{{"key", "kubernetes.io/metadata.name"},
                                                 {"operator", "In"},
                                                 {"values", {ns}}}})}};
  }
  return {{"matchExpressions",
           Object::array({{{"key", kDedicatedLabel}, {"operator", "DoesNotExist"}}})}};
}

}  // namespace

std::string ReviewVmMutation(const std::string& body,
                             const std::function<Object(const Object& vm)>& mutate) {
  Object review = Object::parse(body, nullptr, false);
  Object response = {{"uid", ""}, {"allowed", true}};
  if (review.is_object() && review.contains("request") && review["request"].is_object()) {
    const Object& req = review["request"];
    response["uid"] = req.value("uid", "");
    Object vm = req.value("object", Object::object());
    if (req.value("operation", "") == "CREATE" && vm.is_object()) {
      if (!vm.contains("metadata") || !vm["metadata"].is_object()) {
        vm["metadata"] = Object::object();
      }
      if (!vm["metadata"].contains("namespace")) {
        vm["metadata"]["namespace"] = req.value("namespace", "");
      }
      const Object patch = mutate(vm);
      if (patch.is_array() && !patch.empty()) {
        response["patchType"] = "JSONPatch";
        response["patch"] = kube::Base64Encode(patch.dump());
      }
    }
  }
  return Object({{"apiVersion", "admission.k8s.io/v1"},
                 {"kind", "AdmissionReview"},
                 {"response", response}})
      .dump();
}

Object MutatingWebhookConfiguration(const std::string& name, const std::string& base_url,
                                    const std::string& ca_pem, const std::string& ns) {
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "MutatingWebhookConfiguration"},
          {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "caphv-sim"}}}}},
          {"webhooks", Object::array({{{"name", "mutator.harvesterhci.io"},
                                       {"clientConfig",
                                        {{"url", base_url + kMutateVmPath},
                                         {"caBundle", kube::Base64Encode(ca_pem)}}},
                                       {"rules", Object::array({{{"apiGroups", {"kubevirt.io"}},
                                                                 {"apiVersions", {"v1"}},
                                                                 {"operations", {"CREATE"}},
                                                                 {"resources", {"virtualmachines"}},
                                                                 {"scope", "Namespaced"}}})},
                                       {"namespaceSelector", NamespaceSelector(ns)},
                                       {"failurePolicy", "Fail"},
                                       {"sideEffects", "None"},
                                       {"reinvocationPolicy", "Never"},
                                       {"admissionReviewVersions", {"v1"}},
                                       {"timeoutSeconds", 10}}})}};
}

Object WebhookConfiguration(const std::string& name, const std::string& base_url,
                            const std::string& ca_pem, const std::string& ns, bool ip_pools) {
  const Object selector = NamespaceSelector(ns);
  auto rule = [](const char* group, const char* version, const char* resource, Object operations,
                 const char* scope) {
    return Object{{"apiGroups", {group}},
                  {"apiVersions", {version}},
                  {"operations", std::move(operations)},
                  {"resources", {resource}},
                  {"scope", scope}};
  };
  auto webhook = [&](const char* webhook_name, const char* path, Object rules) {
    // namespaceSelector never skips a cluster-scoped object (IPPools).
    return Object{
        {"name", webhook_name},
        {"clientConfig", {{"url", base_url + path}, {"caBundle", kube::Base64Encode(ca_pem)}}},
        {"rules", std::move(rules)},
        {"namespaceSelector", selector},
        {"failurePolicy", "Fail"},
        {"sideEffects", "None"},
        {"admissionReviewVersions", {"v1"}},
        {"timeoutSeconds", 10}};
  };
  Object lb_rules = Object::array({rule("loadbalancer.harvesterhci.io", "v1beta1", "loadbalancers",
                                        {"CREATE", "UPDATE"}, "Namespaced")});
  if (ip_pools) {
    lb_rules.push_back(rule("loadbalancer.harvesterhci.io", "v1beta1", "ippools",
                            {"CREATE", "UPDATE", "DELETE"}, "Cluster"));
  }
  Object webhooks = Object::array();
  webhooks.push_back(webhook("validator.harvesterhci.io", kWebhookPath,
                             Object::array({rule("kubevirt.io", "v1", "virtualmachines",
                                                 {"CREATE", "UPDATE"}, "Namespaced")})));
  webhooks.push_back(webhook(kLbWebhookName, kLbWebhookPath, std::move(lb_rules)));
  return {{"apiVersion", "admissionregistration.k8s.io/v1"},
          {"kind", "ValidatingWebhookConfiguration"},
          {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "caphv-sim"}}}}},
          {"webhooks", webhooks}};
}

}  // namespace caphv::sim
