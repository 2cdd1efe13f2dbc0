#include "kube/status.h"

#include <nlohmann/json.hpp>

#include "kube/untrusted_json.h"

namespace caphv::kube {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kGone:
      return "Gone";
    case StatusCode::kInvalid:
      return "Invalid";
    case StatusCode::kBadRequest:
      return "BadRequest";
    case StatusCode::kUnauthorized:
      return "Unauthorized";
    case StatusCode::kForbidden:
      return "Forbidden";
    case StatusCode::kTooManyRequests:
      return "TooManyRequests";
    case StatusCode::kTimeout:
      return "Timeout";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

namespace {

StatusCode CodeFor(int http, std::string_view reason) {
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Conflict") return StatusCode::kConflict;
  if (reason == "Expired" || reason == "Gone") return StatusCode::kGone;
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "Invalid") return StatusCode::kInvalid;
  switch (http) {
    case 400:
      return StatusCode::kBadRequest;
    case 401:
      return StatusCode::kUnauthorized;
    case 403:
      return StatusCode::kForbidden;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kConflict;
    case 410:
      return StatusCode::kGone;
    case 422:
      return StatusCode::kInvalid;
    case 429:
      return StatusCode::kTooManyRequests;
    case 504:
      return StatusCode::kTimeout;
    default:
      break;
  }
  if (http >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

}  // namespace

Status Status::FromHttp(int http_status, std::string_view body) {
  std::string reason;
  std::string message;
  std::vector<FieldCause> causes;
  auto j = ParseUntrustedJson(body);
  if (!j.is_discarded() && j.is_object() && j.value("kind", "") == "Status") {
    reason = j.value("reason", "");
    message = j.value("message", "");
    if (auto d = j.find("details"); d != j.end() && d->is_object()) {
      if (auto c = d->find("causes"); c != d->end() && c->is_array()) {
        for (const auto& cause : *c) {
          if (!cause.is_object()) continue;
          causes.push_back(
              {cause.value("reason", ""), cause.value("message", ""), cause.value("field", "")});
        }
      }
    }
    if (int code = j.value("code", 0); code != 0) http_status = code;
  } else {
    message = std::string(body.substr(0, 512));
  }
  if (message.empty()) message = "HTTP " + std::to_string(http_status);
  StatusCode code = CodeFor(http_status, reason);
  if (reason.empty()) reason = std::string(StatusCodeName(code));
  return {code, std::move(message), http_status, std::move(reason), std::move(causes)};
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s = reason_.empty() ? std::string(StatusCodeName(code_)) : reason_;
  s += ": ";
  s += message_;
  for (const auto& c : causes_) {
    s += "; ";
    if (!c.field.empty()) s += c.field + ": ";
    s += c.message;
  }
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  Status s = *this;
  s.message_ = std::string(context) + ": " + message_;
  return s;
}

}  // namespace caphv::kube
