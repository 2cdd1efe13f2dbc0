// Fuzz target: the webhooks' validation of objects of every kind. The input
// is one JSON document, the object under review (the first byte picks the
// kind and the operation; on UPDATE the object is reviewed against itself
// and against an empty old object). Review() and MutationReview() must
// answer every object with an AdmissionReview that allows or denies it.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "kube/log.h"
#include "kube/untrusted_json.h"
#include "webhooks/admission.h"

namespace {

using caphv::api::Json;

Json Request(std::string_view operation, std::string_view kind, const Json& object,
             const Json& old_object) {
  return {
      {"apiVersion", "admission.k8s.io/v1"},
      {"kind", "AdmissionReview"},
      {"request",
       {{"uid", "f0"},
        {"kind",
         {{"group", "infrastructure.cluster.x-k8s.io"}, {"version", "v1alpha1"}, {"kind", kind}}},
        {"operation", operation},
        {"object", object},
        {"oldObject", old_object}}}};
}

void Check(const Json& out) {
  if (!out.is_object() || !out.contains("response") || !out["response"].contains("allowed")) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    caphv::kube::log::Configure(-1, caphv::kube::log::Format::kText);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  static constexpr std::string_view kKinds[] = {"HarvesterCluster", "HarvesterMachine",
                                                "HarvesterClusterTemplate",
                                                "HarvesterMachineTemplate"};
  const std::string_view kind = kKinds[data[0] % 4];
  const bool update = (data[0] & 4) != 0;
  const Json object = caphv::kube::ParseUntrustedJson(
      std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (object.is_discarded()) return 0;
  if (update) {
    Check(caphv::webhooks::Review(Request("UPDATE", kind, object, object), kind));
    Check(caphv::webhooks::Review(Request("UPDATE", kind, object, Json::object()), kind));
    Check(caphv::webhooks::MutationReview(Request("UPDATE", kind, object, object), kind));
  } else {
    Check(caphv::webhooks::Review(Request("CREATE", kind, object, nullptr), kind));
  }
  return 0;
}
