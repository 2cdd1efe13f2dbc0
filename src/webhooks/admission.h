// File: webhooks/admission.h
//
// The admission webhooks of the CAPHV kinds, speaking admission.k8s.io/v1
// AdmissionReview over the runtime's HttpServer.
//
//   kube::HttpServer server({.name = "webhook", .bind_address = ":9443",
//                            .body_limit = kAdmissionBodyLimit, .cert_dir = dir});
//   webhooks::RegisterWebhooks(server);
//
// Validating webhooks: CREATE and UPDATE run the rules of
// webhooks/validation.h on `request.object` (and `request.oldObject`); DELETE
// and CONNECT are allowed. The mutating webhooks (HarvesterCluster, UPDATE;
// HarvesterMachine, CREATE) allow every well-formed request and answer with
// the JSON Patch of webhooks/mutation.h when there is one. A denial is worded and coded as the
// Go provider's (code 403, reason Forbidden), with details.causes added, one
// per field error (webhooks/validation.h):
//   validation failed for HarvesterMachine ns/m: spec.cpu must be greater than 0
// (several errors joined by "; ").
// Malformed reviews are denied with code 400, never answered with a crash;
// an internal failure is denied with code 500.
//
// The validating paths are those of the Go provider's kubebuilder markers:
//   /validate-infrastructure-cluster-x-k8s-io-v1alpha1-<lower-case kind>
// The mutating ones (the Go provider has none) are named the same way:
//   /mutate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestercluster
//   /mutate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestermachine
//
// Thread safety: stateless functions; the handlers may run concurrently.

#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "api/fields.h"
#include "kube/http_server.h"
#include "webhooks/mutation.h"

namespace caphv::webhooks {

// Requests up to 7 MiB are accepted (controller-runtime's limit: two 3 MiB
// objects plus 1 MiB); a little headroom for the HTTP layer.
inline constexpr size_t kAdmissionBodyLimit = (7u << 20) + (64u << 10);

struct Webhook {
  std::string kind;      // "HarvesterMachine"
  std::string resource;  // "harvestermachines"
  std::string path;      // "/validate-infrastructure-cluster-x-k8s-io-v1alpha1-harvestermachine"
  std::string name;      // "vharvestermachine.kb.io"
  bool mutating = false;
  // The operations its configuration registers.
  std::vector<std::string> operations = {"CREATE", "UPDATE"};
};

// The four validating webhooks: HarvesterCluster, HarvesterMachine and their
// templates, as the Go provider registers them.
const std::vector<Webhook>& ValidatingWebhooks();
// The mutating webhooks: HarvesterCluster, UPDATE; HarvesterMachine, CREATE
// (webhooks/mutation.h).
const std::vector<Webhook>& MutatingWebhooks();

// Answers one AdmissionReview (already parsed) for the validating webhook of
// `kind`: returns the AdmissionReview to send back. Never throws.
api::Json Review(const api::Json& review, std::string_view kind);
// The same for the mutating webhook of `kind`; `scope` is what the serving
// manager reconciles (the HarvesterMachine finalizer rule).
api::Json MutationReview(const api::Json& review, std::string_view kind,
                         const MachineScope& scope = {});

// Builds the response review for `uid` (helpers, exposed for tests).
api::Json Allowed(std::string_view uid);
api::Json Denied(std::string_view uid, int code, std::string_view reason, std::string message,
                 api::Json details = nullptr);

// The HTTP handler of one webhook: checks method and content type, parses
// the body, calls Review() and logs the decision (keyed by object; object
// contents are never logged).
kube::HttpResponse HandleAdmission(const kube::HttpRequest& request, const Webhook& hook,
                                   const MachineScope& scope = {});

// Registers every webhook path, validating and mutating, on `server` (before
// it starts); `scope`: the namespace and watch filter of the manager.
void RegisterWebhooks(kube::HttpServer& server, const MachineScope& scope = {});

}  // namespace caphv::webhooks
