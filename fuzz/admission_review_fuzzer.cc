// Fuzz target: an AdmissionReview body as the webhook server receives it,
// unauthenticated and of any shape, answered by HandleAdmission for each
// registered webhook (validating and mutating): the JSON decoder with its
// depth limit, the review's envelope and the validation behind it. The first
// byte picks the webhook. Every answer must be an HTTP status the API server
// understands; a crash, a sanitizer report or an exception fails.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "kube/log.h"
#include "webhooks/admission.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using caphv::webhooks::Webhook;
  static const bool quiet = [] {
    caphv::kube::log::Configure(-1, caphv::kube::log::Format::kText);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  static const std::vector<Webhook> hooks = [] {
    std::vector<Webhook> all = caphv::webhooks::ValidatingWebhooks();
    for (const auto& m : caphv::webhooks::MutatingWebhooks()) all.push_back(m);
    return all;
  }();
  const Webhook& hook = hooks[data[0] % hooks.size()];
  caphv::kube::HttpRequest request;
  request.method = "POST";
  request.target = request.path = hook.path;
  request.headers = {{"content-type", "application/json"}};
  request.body.assign(reinterpret_cast<const char*>(data + 1), size - 1);
  const caphv::kube::HttpResponse response = caphv::webhooks::HandleAdmission(request, hook);
  if (response.status != 200 && response.status != 400) std::abort();
  return 0;
}
