// File: webhooks/validation_admission.cc
//
// Semantic equality, the template relaxation and dispatch by kind.

#include "api/quantity.h"
#include "webhooks/validation.h"

namespace caphv::webhooks {
namespace {

// Replaces a quantity string by a value-canonical form so that "4Gi" and
// "4096Mi" compare equal.
void CanonicalQuantity(api::Json& j) {
  if (!j.is_string()) return;
  auto q = api::Quantity::Parse(j.get<std::string>());
  if (!q) return;
  auto milli = q->MilliValue();
  if (milli) j = "q:" + std::to_string(*milli);
}

api::Json Canonical(const api::HarvesterMachineSpec& spec) {
  api::Json j = api::Encode(spec);
  if (j.contains("memory")) CanonicalQuantity(j["memory"]);
  if (j.contains("volumes")) {
    for (auto& v : j["volumes"]) {
      if (v.contains("volumeSize")) CanonicalQuantity(v["volumeSize"]);
    }
  }
  return j;
}

api::Json Canonical(const api::HarvesterClusterSpec& spec) {
  api::HarvesterClusterSpec copy = spec;
  for (auto& l : copy.load_balancer_config.listeners) {
    if (l.protocol.empty()) l.protocol = "TCP";  // the CRD default
  }
  return api::Encode(copy);
}

template <typename T>
FieldErrors DecodeErrors(const kube::StatusOr<T>& decoded) {
  FieldErrors errs;
  if (decoded.ok()) return errs;
  // The message is "path: problem; path: problem".
  std::string_view rest = decoded.status().message();
  while (!rest.empty()) {
    auto end = rest.find("; ");
    std::string_view one = rest.substr(0, end);
    auto colon = one.find(": ");
    std::string field = colon == std::string_view::npos ? "" : std::string(one.substr(0, colon));
    std::string detail(colon == std::string_view::npos ? one : one.substr(colon + 2));
    errs.push_back(Invalid(field.empty() ? "<root>" : field, nullptr, "cannot be read: " + detail));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 2);
  }
  return errs;
}

template <typename T, typename CreateFn, typename UpdateFn>
FieldErrors Run(const api::Json& object, const api::Json* old_object, CreateFn create,
                UpdateFn update) {
  auto obj = api::Decode<T>(object);
  if (!obj.ok()) return DecodeErrors(obj);
  if (old_object == nullptr) return create(*obj);
  auto old = api::Decode<T>(*old_object);
  if (!old.ok()) return create(*obj);  // an unreadable old object: judge the new one alone
  return update(*old, *obj);
}

}  // namespace

bool SemanticallyEqual(const api::HarvesterClusterSpec& a, const api::HarvesterClusterSpec& b) {
  return Canonical(a) == Canonical(b);
}

bool SemanticallyEqual(const api::HarvesterMachineSpec& a, const api::HarvesterMachineSpec& b) {
  return Canonical(a) == Canonical(b);
}

bool IsUnsetValueError(const FieldError& e) {
  if (e.type == ErrorType::kRequired) return true;
  const api::Json& v = e.bad_value;
  return (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_number_integer() && v.get<int64_t>() == 0);
}

FieldErrors WithoutUnsetValues(FieldErrors errors) {
  std::erase_if(errors, IsUnsetValueError);
  return errors;
}

FieldErrors ValidateAdmission(std::string_view kind, const api::Json& object,
                              const api::Json* old_object) {
  if (kind == "HarvesterCluster") {
    return Run<api::HarvesterCluster>(object, old_object, ValidateHarvesterCluster,
                                      ValidateHarvesterClusterUpdate);
  }
  if (kind == "HarvesterMachine") {
    return Run<api::HarvesterMachine>(object, old_object, ValidateHarvesterMachine,
                                      ValidateHarvesterMachineUpdate);
  }
  if (kind == "HarvesterClusterTemplate") {
    return Run<api::HarvesterClusterTemplate>(object, old_object, ValidateHarvesterClusterTemplate,
                                              ValidateHarvesterClusterTemplateUpdate);
  }
  if (kind == "HarvesterMachineTemplate") {
    return Run<api::HarvesterMachineTemplate>(object, old_object, ValidateHarvesterMachineTemplate,
                                              ValidateHarvesterMachineTemplateUpdate);
  }
  return {NotSupported("kind", std::string(kind),
                       {"HarvesterCluster", "HarvesterMachine", "HarvesterClusterTemplate",
                        "HarvesterMachineTemplate"})};
}

}  // namespace caphv::webhooks
