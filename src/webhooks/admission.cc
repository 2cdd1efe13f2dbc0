// File: webhooks/admission.cc
//
// AdmissionReview v1 decoding, the rules dispatch and the HTTP handlers.

#include "webhooks/admission.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <chrono>
#include <exception>
#include <utility>

#include "kube/base64.h"
#include "kube/log.h"
#include "kube/metrics.h"
#include "kube/untrusted_json.h"
#include "webhooks/mutation.h"
#include "webhooks/validation.h"

namespace caphv::webhooks {
namespace {

constexpr std::string_view kGroup = "infrastructure.cluster.x-k8s.io";
constexpr std::string_view kReviewV1 = "admission.k8s.io/v1";
constexpr std::string_view kReviewV1beta1 = "admission.k8s.io/v1beta1";

Webhook Hook(std::string kind, bool mutating = false,
             std::vector<std::string> operations = {"CREATE", "UPDATE"}) {
  std::string lower;
  for (char c : kind) lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  Webhook hook{.kind = std::move(kind),
               .resource = lower + "s",
               .path = std::string(mutating ? "/mutate" : "/validate") +
                       "-infrastructure-cluster-x-k8s-io-v1alpha1-" + lower,
               .name = (mutating ? "m" : "v") + lower + ".kb.io",
               .mutating = mutating,
               .operations = std::move(operations)};
  return hook;
}

std::string StringAt(const api::Json& j, std::string_view key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// controller-runtime's webhook metrics (pkg/webhook/internal/metrics).
struct WebhookMetrics {
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("controller_runtime_webhook_requests_total")
          .Help("Total number of admission requests by HTTP status code.")
          .Register(kube::metrics::Registry());
  prometheus::Family<prometheus::Histogram>& latency =
      prometheus::BuildHistogram()
          .Name("controller_runtime_webhook_latency_seconds")
          .Help("Histogram of the latency of processing admission requests")
          .Register(kube::metrics::Registry());
  prometheus::Family<prometheus::Gauge>& in_flight =
      prometheus::BuildGauge()
          .Name("controller_runtime_webhook_requests_in_flight")
          .Help("Current number of admission requests being served.")
          .Register(kube::metrics::Registry());
};

WebhookMetrics& Metrics() {
  static auto* m = new WebhookMetrics();  // never destroyed, like the registry
  return *m;
}

api::Json ResponseReview(std::string_view api_version, api::Json response) {
  return {
      {"apiVersion", api_version}, {"kind", "AdmissionReview"}, {"response", std::move(response)}};
}

api::Json DeniedWith(std::string_view api_version, std::string_view uid, int code,
                     std::string_view reason, std::string message, api::Json details = nullptr) {
  api::Json review = Denied(uid, code, reason, std::move(message), std::move(details));
  review["apiVersion"] = api_version;
  return review;
}

api::Json ValidationDenial(std::string_view api_version, std::string_view uid,
                           std::string_view kind, const std::string& ns, const std::string& name,
                           const FieldErrors& errors) {
  kube::Status status = ToDenialStatus(errors, kind, ns, name);
  api::Json causes = api::Json::array();
  for (const auto& c : status.causes()) {
    causes.push_back({{"reason", c.type}, {"message", c.message}, {"field", c.field}});
  }
  api::Json details = {{"name", name}, {"group", kGroup}, {"kind", kind}, {"causes", causes}};
  return DeniedWith(api_version, uid, status.http_status(), status.reason(), status.message(),
                    std::move(details));
}

api::Json ReviewUnsafe(const api::Json& review, std::string_view kind, bool mutating,
                       const MachineScope& scope) {
  if (!review.is_object()) {
    return Denied("", 400, "BadRequest", "the request body is not an AdmissionReview object");
  }
  std::string api_version = StringAt(review, "apiVersion");
  if (api_version.empty()) api_version = std::string(kReviewV1);
  if (api_version != kReviewV1 && api_version != kReviewV1beta1) {
    return Denied("", 400, "BadRequest",
                  "unsupported AdmissionReview apiVersion \"" + api_version + "\"");
  }
  auto req_it = review.find("request");
  if (req_it == review.end() || !req_it->is_object()) {
    return DeniedWith(api_version, "", 400, "BadRequest", "the AdmissionReview has no request");
  }
  const api::Json& req = *req_it;
  const std::string uid = StringAt(req, "uid");
  if (uid.empty()) {
    return DeniedWith(api_version, "", 400, "BadRequest", "request.uid is required");
  }
  std::string got_kind = StringAt(req.value("kind", api::Json::object()), "kind");
  if (!got_kind.empty() && got_kind != kind) {
    return DeniedWith(api_version, uid, 400, "BadRequest",
                      std::string(mutating ? "this webhook mutates " : "this webhook validates ") +
                          std::string(kind) + ", not " + got_kind);
  }
  const std::string operation = StringAt(req, "operation");
  if (operation == "DELETE" || operation == "CONNECT") {
    api::Json out = Allowed(uid);
    out["apiVersion"] = api_version;
    return out;
  }
  if (operation != "CREATE" && operation != "UPDATE") {
    return DeniedWith(api_version, uid, 400, "BadRequest",
                      "unsupported operation \"" + operation + "\"");
  }
  auto obj_it = req.find("object");
  if (obj_it == req.end() || !obj_it->is_object()) {
    return DeniedWith(api_version, uid, 400, "BadRequest", "request.object must be an object");
  }
  const api::Json* old_object = nullptr;
  if (operation == "UPDATE") {
    auto old_it = req.find("oldObject");
    if (old_it == req.end() || !old_it->is_object()) {
      return DeniedWith(api_version, uid, 400, "BadRequest",
                        "request.oldObject is required for UPDATE");
    }
    old_object = &*old_it;
  }
  if (mutating) {
    api::Json out = Allowed(uid);
    out["apiVersion"] = api_version;
    api::Json patch = api::Json::array();
    if (kind == "HarvesterCluster") {
      patch = HarvesterClusterPatch(*obj_it, old_object);
    } else if (kind == "HarvesterMachine" && operation == "CREATE") {
      patch = HarvesterMachineCreatePatch(*obj_it, StringAt(req, "namespace"), scope);
    }
    if (!patch.empty()) {
      out["response"]["patchType"] = "JSONPatch";
      out["response"]["patch"] = kube::Base64Encode(patch.dump());
    }
    return out;
  }
  FieldErrors errors = ValidateAdmission(kind, *obj_it, old_object);
  if (errors.empty()) {
    api::Json out = Allowed(uid);
    out["apiVersion"] = api_version;
    return out;
  }
  const api::Json meta = obj_it->value("metadata", api::Json::object());
  std::string name = StringAt(req, "name");
  if (name.empty()) name = StringAt(meta, "name");
  std::string ns = StringAt(req, "namespace");
  if (ns.empty()) ns = StringAt(meta, "namespace");
  return ValidationDenial(api_version, uid, kind, ns, name, errors);
}

kube::HttpResponse JsonResponse(const api::Json& body) {
  return {.status = 200,
          .content_type = "application/json",
          .body = body.dump(-1, ' ', false, api::Json::error_handler_t::replace)};
}

}  // namespace

const std::vector<Webhook>& ValidatingWebhooks() {
  static const auto* hooks =
      new std::vector<Webhook>{Hook("HarvesterCluster"), Hook("HarvesterMachine"),
                               Hook("HarvesterClusterTemplate"), Hook("HarvesterMachineTemplate")};
  return *hooks;
}

const std::vector<Webhook>& MutatingWebhooks() {
  static const auto* hooks = new std::vector<Webhook>{Hook("HarvesterCluster", true, {"UPDATE"}),
                                                      Hook("HarvesterMachine", true, {"CREATE"})};
  return *hooks;
}

api::Json Allowed(std::string_view uid) {
  return ResponseReview(kReviewV1,
                        {{"uid", uid},
                         {"allowed", true},
                         {"status", {{"metadata", api::Json::object()}, {"code", 200}}}});
}

api::Json Denied(std::string_view uid, int code, std::string_view reason, std::string message,
                 api::Json details) {
  api::Json status = {{"metadata", api::Json::object()},
                      {"status", "Failure"},
                      {"message", std::move(message)},
                      {"reason", reason},
                      {"code", code}};
  if (!details.is_null()) status["details"] = std::move(details);
  return ResponseReview(kReviewV1, {{"uid", uid}, {"allowed", false}, {"status", status}});
}

namespace {

api::Json SafeReview(const api::Json& review, std::string_view kind, bool mutating,
                     const MachineScope& scope = {}) {
  try {
    return ReviewUnsafe(review, kind, mutating, scope);
  } catch (const std::exception& e) {
    std::string uid;
    if (review.is_object()) {
      if (auto req = review.find("request"); req != review.end()) uid = StringAt(*req, "uid");
    }
    kube::log::Root().WithName("webhook").Error(
        e.what(),
        mutating ? "Mutation failed with an exception" : "Validation failed with an exception",
        {{"kind", kind}, {"uid", uid}});
    return Denied(uid, 500, "InternalError",
                  std::string(mutating ? "internal error while mutating: "
                                       : "internal error while validating: ") +
                      e.what());
  }
}

}  // namespace

api::Json Review(const api::Json& review, std::string_view kind) {
  return SafeReview(review, kind, /*mutating=*/false);
}

api::Json MutationReview(const api::Json& review, std::string_view kind,
                         const MachineScope& scope) {
  return SafeReview(review, kind, /*mutating=*/true, scope);
}

kube::HttpResponse HandleAdmission(const kube::HttpRequest& request, const Webhook& hook,
                                   const MachineScope& scope) {
  static const kube::log::Logger base = kube::log::Root().WithName("webhook");
  auto start = std::chrono::steady_clock::now();
  auto& metrics = Metrics();
  auto& in_flight = metrics.in_flight.Add({{"webhook", hook.path}});
  in_flight.Increment();
  auto finish = [&](kube::HttpResponse response) {
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    metrics.latency
        .Add({{"webhook", hook.path}},
             prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                     2.5, 5, 10})
        .Observe(seconds);
    metrics.requests.Add({{"webhook", hook.path}, {"code", std::to_string(response.status)}})
        .Increment();
    in_flight.Decrement();
    return response;
  };

  if (request.method != "POST") {
    return finish(
        {.status = 405, .body = "only POST is supported\n", .headers = {{"Allow", "POST"}}});
  }
  std::string content_type = request.Header("content-type");
  if (content_type.rfind("application/json", 0) != 0) {
    base.V(1).Info("Rejected admission request", {{"webhook", hook.name},
                                                  {"contentType", content_type},
                                                  {"remote", request.remote_address}});
    return finish(JsonResponse(Denied(
        "", 400, "BadRequest", "contentType=" + content_type + ", expected application/json")));
  }
  bool too_deep = false;
  api::Json review = kube::ParseUntrustedJson(request.body, &too_deep);
  if (review.is_discarded()) {
    const std::string why =
        too_deep ? "the request body nests deeper than " + std::to_string(kube::kMaxJsonDepth) +
                       " levels (AdmissionReview)"
                 : std::string("the request body is not valid JSON (AdmissionReview)");
    base.V(1).Info("Rejected admission request", {{"webhook", hook.name}, {"reason", why}});
    return finish(JsonResponse(Denied("", 400, "BadRequest", why)));
  }
  api::Json answer =
      hook.mutating ? MutationReview(review, hook.kind, scope) : Review(review, hook.kind);

  // Log the decision keyed by object; never the object itself.
  const api::Json& req =
      review.is_object() ? review.value("request", api::Json::object()) : api::Json::object();
  const api::Json& resp = answer["response"];
  std::string ns = StringAt(req, "namespace");
  std::string name = StringAt(req, "name");
  if (name.empty() && req.is_object() && req.contains("object")) {
    name = StringAt(req["object"].value("metadata", api::Json::object()), "name");
  }
  bool allowed = resp.value("allowed", false);
  auto logger = base.WithValues({{"webhook", hook.name},
                                 {"kind", hook.kind},
                                 {"object", kube::log::KRef(ns, name)},
                                 {"operation", StringAt(req, "operation")},
                                 {"uid", StringAt(req, "uid")}});
  if (allowed && resp.contains("patch")) {
    logger.V(2).Info("Admission patched", {{"patchType", StringAt(resp, "patchType")}});
  } else if (allowed) {
    logger.V(4).Info("Admission allowed");
  } else {
    // The field paths only: rejected values stay out of the logs.
    const api::Json& status = resp.value("status", api::Json::object());
    api::Json fields = api::Json::array();
    const api::Json& details = status.value("details", api::Json::object());
    for (const auto& c : details.value("causes", api::Json::array())) {
      fields.push_back(StringAt(c, "field"));
    }
    logger.V(2).Info("Admission denied", {{"code", status.value("code", 0)},
                                          {"reason", StringAt(status, "reason")},
                                          {"fields", fields}});
  }
  return finish(JsonResponse(answer));
}

void RegisterWebhooks(kube::HttpServer& server, const MachineScope& scope) {
  Metrics();
  for (const auto* hooks : {&ValidatingWebhooks(), &MutatingWebhooks()}) {
    for (const auto& hook : *hooks) {
      server.Handle(hook.path, [&hook, scope](const kube::HttpRequest& r) {
        return HandleAdmission(r, hook, scope);
      });
    }
  }
}

}  // namespace caphv::webhooks
