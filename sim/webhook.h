// File: sim/webhook.h
//
// The simulator's stand-in for Harvester's validating webhook on
// VirtualMachines: a self-signed serving certificate (OpenSSL 3, SAN
// 127.0.0.1), the AdmissionReview handler, and the
// ValidatingWebhookConfiguration that points the real apiserver at it.
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

struct ServingCert {
  std::string cert_pem;
  std::string key_pem;
};
// A self-signed certificate for `ip` (also its own CA), valid for a year.
kube::StatusOr<ServingCert> GenerateServingCert(const std::string& ip);
// Writes tls.crt / tls.key into `dir` (created if needed).
kube::Status WriteCert(const ServingCert& cert, const std::string& dir);

using VmValidator = std::function<std::vector<std::string>(const kube::Object& vm)>;

// Answers one AdmissionReview (v1) request body. CREATEs are validated;
// UPDATEs only when the spec or the volumeClaimTemplates changed (so the
// controllers' own metadata writes always pass); everything else is allowed.
std::string ReviewVm(const std::string& body, const VmValidator& validate);

// The ValidatingWebhookConfiguration `name` for `url`, trusting `ca_pem`.
// With `ns` set it only covers that namespace; otherwise every namespace not
// labelled sim.caphv.io/dedicated=true.
kube::Object WebhookConfiguration(const std::string& name, const std::string& url,
                                  const std::string& ca_pem, const std::string& ns);

}  // namespace caphv::sim
