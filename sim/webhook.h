// File: sim/webhook.h
//
// The simulator's stand-in for Harvester's validating webhooks on
// VirtualMachines, LoadBalancers and IPPools: a self-signed serving
// certificate (OpenSSL 3, SAN 127.0.0.1), the AdmissionReview handlers, and
// the ValidatingWebhookConfiguration that points the real apiserver at them.
//
// Thread safety: pure functions, plus RegisterWebhook (one API write).

#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/status.h"

namespace caphv::sim {

inline constexpr char kWebhookPath[] = "/validate-kubevirt-io-v1-virtualmachine";
// Harvester's VM mutator (sim/vm_mutator.h).
inline constexpr char kMutateVmPath[] = "/mutate-kubevirt-io-v1-virtualmachine";
// The load balancer's validator: LoadBalancers and IPPools, one webhook as
// in load-balancer-harvester (named as Harvester names it).
inline constexpr char kLbWebhookPath[] = "/validate-loadbalancer-harvesterhci-io";
inline constexpr char kLbWebhookName[] =
    "validator.harvester-system.harvester-load-balancer-webhook";

struct ServingCert {
  std::string cert_pem;
  std::string key_pem;
};
// A self-signed certificate for `ip` (also its own CA), valid for a year.
kube::StatusOr<ServingCert> GenerateServingCert(const std::string& ip);
// Writes tls.crt / tls.key into `dir` (created if needed).
kube::Status WriteCert(const ServingCert& cert, const std::string& dir);

// Judges one admission request: `operation` CREATE, UPDATE or DELETE,
// `object` the object (for DELETE the one being deleted), `old_object` the
// object before an UPDATE (else null). Returns the refusal messages (empty =
// allowed).
using Admitter = std::function<std::vector<std::string>(
    const std::string& operation, const kube::Object& object, const kube::Object* old_object)>;

// How a webhook words its refusal: Harvester's own webhook answers 400
// BadRequest; the load balancer's (wrangler's router) turns every error into
// 500 InternalError "Internal error occurred: <message>".
struct Refusal {
  int code = 400;
  std::string reason = "BadRequest";
  std::string message_prefix;
};
inline const Refusal kLoadBalancerRefusal{500, "InternalError", "Internal error occurred: "};

// Answers one AdmissionReview (v1) request body with `admit`'s verdict,
// refusing as `refusal` says with the messages joined by "; ". The object
// gets the request's namespace when it lacks one.
std::string Review(const std::string& body, const Admitter& admit, const Refusal& refusal = {});

using VmValidator = std::function<std::vector<std::string>(const kube::Object& vm)>;

// The VirtualMachine review: CREATEs are validated; UPDATEs only when the
// spec or the volumeClaimTemplates changed (so the controllers' own metadata
// writes always pass); everything else is allowed.
std::string ReviewVm(const std::string& body, const VmValidator& validate);

// Answers one AdmissionReview for the VM mutator: on CREATE the JSON patch
// `mutate` returns for the VM (patchType JSONPatch, base64), nothing else.
std::string ReviewVmMutation(const std::string& body,
                             const std::function<kube::Object(const kube::Object& vm)>& mutate);

// The MutatingWebhookConfiguration `name` (VirtualMachines, CREATE) for the
// webhook server at `base_url`, covering namespaces as WebhookConfiguration.
kube::Object MutatingWebhookConfiguration(const std::string& name, const std::string& base_url,
                                          const std::string& ca_pem, const std::string& ns);

// The ValidatingWebhookConfiguration `name` for the webhook server at
// `base_url` ("https://127.0.0.1:port"), trusting `ca_pem`: VirtualMachines
// (CREATE, UPDATE) at kWebhookPath; LoadBalancers (CREATE, UPDATE) and, with
// `ip_pools`, every IPPool (CREATE, UPDATE, DELETE; they are cluster-scoped,
// so only one simulator may judge them) at kLbWebhookPath. With `ns` set it
// only covers that namespace; otherwise every namespace not labelled
// sim.caphv.io/dedicated=true.
kube::Object WebhookConfiguration(const std::string& name, const std::string& base_url,
                                  const std::string& ca_pem, const std::string& ns, bool ip_pools);

}  // namespace caphv::sim
