// File: webhooks/validation_errors.cc
//
// FieldError construction and rendering (the Go provider's sentences).

#include <string>

#include "webhooks/validation.h"

namespace caphv::webhooks {
namespace {

// Go's %q of a string (JSON's escaping agrees with it for printable text).
std::string Quoted(const api::Json& v) { return v.is_string() ? v.dump() : std::string(); }

}  // namespace

std::string FieldError::ToString() const {
  switch (type) {
    case ErrorType::kRequired:
      return field + " " + (detail.empty() ? std::string("is required") : detail);
    case ErrorType::kInvalid:
      // Strings are quoted after the path (`spec.memory "4 GB" is not ...`);
      // numbers are not (`spec.cpu must be greater than 0`), as the Go
      // provider words them.
      if (bad_value.is_string()) return field + " " + Quoted(bad_value) + " " + detail;
      return field + " " + detail;
    case ErrorType::kForbidden:
    case ErrorType::kNotSupported:
      return field + " " + detail;
    case ErrorType::kDuplicate:
      return field + " " + (bad_value.is_string() ? Quoted(bad_value) : bad_value.dump()) + " " +
             (detail.empty() ? std::string("is a duplicate") : detail);
  }
  return field + " " + detail;
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

FieldError Duplicate(std::string field, api::Json value, std::string detail) {
  return {ErrorType::kDuplicate, std::move(field), std::move(value), std::move(detail)};
}

FieldError NotSupported(std::string field, api::Json value,
                        const std::vector<std::string_view>& supported, char quote) {
  std::string detail = "must be ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += i + 1 == supported.size() ? " or " : ", ";
    detail += quote + std::string(supported[i]) + quote;
  }
  if (value.is_string() && !value.get_ref<const std::string&>().empty()) {
    detail += " (got " + Quoted(value) + ")";
  }
  return {ErrorType::kNotSupported, std::move(field), std::move(value), std::move(detail)};
}

std::string ToAggregateString(const FieldErrors& errors) {
  std::string s;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) s += "; ";
    s += errors[i].ToString();
  }
  return s;
}

kube::Status ToDenialStatus(const FieldErrors& errors, std::string_view kind, std::string_view ns,
                            std::string_view name) {
  std::vector<kube::FieldCause> causes;
  for (const auto& e : errors) {
    causes.push_back({std::string(e.CauseType()), e.ToString(), e.field});
  }
  std::string message = "validation failed for " + std::string(kind) + " " + std::string(ns) + "/" +
                        std::string(name) + ": " + ToAggregateString(errors);
  return kube::Status(kube::StatusCode::kForbidden, std::move(message), 403, "Forbidden",
                      std::move(causes));
}

}  // namespace caphv::webhooks
