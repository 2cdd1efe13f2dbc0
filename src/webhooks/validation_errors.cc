// File: webhooks/validation_errors.cc
//
// FieldError construction and rendering (Kubernetes field.Error format).

#include <string>

#include "webhooks/validation.h"

namespace caphv::webhooks {
namespace {

std::string_view TypeText(ErrorType t) {
  switch (t) {
    case ErrorType::kRequired:
      return "Required value";
    case ErrorType::kInvalid:
      return "Invalid value";
    case ErrorType::kForbidden:
      return "Forbidden";
    case ErrorType::kDuplicate:
      return "Duplicate value";
    case ErrorType::kNotSupported:
      return "Unsupported value";
  }
  return "";
}

// Go's %q for strings, plain text for numbers and booleans.
std::string ValueText(const api::Json& v) {
  if (v.is_string()) return v.dump();
  if (v.is_number() || v.is_boolean()) return v.dump();
  return v.dump();
}

}  // namespace

std::string FieldError::ToString() const {
  std::string s = field + ": " + std::string(TypeText(type));
  if (type != ErrorType::kRequired && type != ErrorType::kForbidden) {
    s += ": " + ValueText(bad_value);
  }
  if (!detail.empty()) s += ": " + detail;
  return s;
}

std::string_view FieldError::CauseType() const {
  switch (type) {
    case ErrorType::kRequired:
      return "FieldValueRequired";
    case ErrorType::kInvalid:
      return "FieldValueInvalid";
    case ErrorType::kForbidden:
      return "FieldValueForbidden";
    case ErrorType::kDuplicate:
      return "FieldValueDuplicate";
    case ErrorType::kNotSupported:
      return "FieldValueNotSupported";
  }
  return "";
}

FieldError Required(std::string field, std::string detail) {
  return {ErrorType::kRequired, std::move(field), nullptr, std::move(detail)};
}

FieldError Invalid(std::string field, api::Json value, std::string detail) {
  return {ErrorType::kInvalid, std::move(field), std::move(value), std::move(detail)};
}

FieldError Forbidden(std::string field, std::string detail) {
  return {ErrorType::kForbidden, std::move(field), nullptr, std::move(detail)};
}

FieldError Duplicate(std::string field, api::Json value) {
  return {ErrorType::kDuplicate, std::move(field), std::move(value), {}};
}

FieldError NotSupported(std::string field, api::Json value,
                        const std::vector<std::string_view>& supported) {
  std::string detail = "supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += ", ";
    detail += "\"" + std::string(supported[i]) + "\"";
  }
  return {ErrorType::kNotSupported, std::move(field), std::move(value), std::move(detail)};
}

std::string ToAggregateString(const FieldErrors& errors) {
  if (errors.size() == 1) return errors.front().ToString();
  std::string s = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) s += ", ";
    s += errors[i].ToString();
  }
  return s + "]";
}

kube::Status ToInvalidStatus(const FieldErrors& errors, std::string_view kind,
                             std::string_view name) {
  std::vector<kube::FieldCause> causes;
  for (const auto& e : errors) {
    std::string message = e.ToString().substr(e.field.size() + 2);
    causes.push_back({std::string(e.CauseType()), std::move(message), e.field});
  }
  std::string message =
      std::string(kind) + " \"" + std::string(name) + "\" is invalid: " + ToAggregateString(errors);
  return kube::Status(kube::StatusCode::kInvalid, std::move(message), 422, "Invalid",
                      std::move(causes));
}

}  // namespace caphv::webhooks
