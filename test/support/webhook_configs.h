// The admission webhook configurations of a caphv-manager started by a test:
// the validating one and the mutating one, as config/webhook/manifests.yaml
// registers them, but pointed at https://127.0.0.1:<port> with the given CA
// and limited to one namespace so that concurrent tests do not see each
// other's servers.
//
//   for (const auto& config : WebhookConfigurations("t-1", port, ca_pem, ns)) {
//     client->Create(config.resource, "", config.object);
//   }

#pragma once

#include <string>
#include <vector>

#include "kube/base64.h"
#include "kube/resource.h"
#include "webhooks/admission.h"

namespace caphv::testing {

struct WebhookConfiguration {
  kube::GroupVersionResource resource;  // validating or mutating configurations
  nlohmann::json object;
};

// Configurations named `name` (one of each kind).
inline std::vector<WebhookConfiguration> WebhookConfigurations(const std::string& name, int port,
                                                               const std::string& ca_pem,
                                                               const std::string& ns,
                                                               int timeout_seconds = 10) {
  auto hooks_of = [&](const std::vector<webhooks::Webhook>& list) {
    nlohmann::json hooks = nlohmann::json::array();
    for (const auto& h : list) {
      hooks.push_back(
          {{"name", h.name},
           {"admissionReviewVersions", {"v1"}},
           {"sideEffects", "None"},
           {"failurePolicy", "Fail"},
           {"timeoutSeconds", timeout_seconds},
           {"clientConfig",
            {{"url", "https://127.0.0.1:" + std::to_string(port) + h.path},
             {"caBundle", kube::Base64Encode(ca_pem)}}},
           {"namespaceSelector",
            {{"matchExpressions",
              {{{"key", "kubernetes.io/metadata.name"}, {"operator", "In"}, {"values", {ns}}}}}}},
           {"rules",
            {{{"apiGroups", {"infrastructure.cluster.x-k8s.io"}},
              {"apiVersions", {"v1alpha1"}},
              {"operations", h.operations},
              {"resources", {h.resource}}}}}});
      if (h.mutating) hooks.back()["reinvocationPolicy"] = "Never";
    }
    return hooks;
  };
  auto config = [&](const char* kind, const std::vector<webhooks::Webhook>& list) {
    return nlohmann::json{{"apiVersion", "admissionregistration.k8s.io/v1"},
                          {"kind", kind},
                          {"metadata", {{"name", name}}},
                          {"webhooks", hooks_of(list)}};
  };
  return {{kube::resources::kValidatingWebhookConfigurations,
           config("ValidatingWebhookConfiguration", webhooks::ValidatingWebhooks())},
          {kube::resources::kMutatingWebhookConfigurations,
           config("MutatingWebhookConfiguration", webhooks::MutatingWebhooks())}};
}

}  // namespace caphv::testing
