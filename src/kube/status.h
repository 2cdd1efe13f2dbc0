// File: kube/status.h
//
// Status and StatusOr<T>: error values for everything that crosses the
// Kubernetes API boundary. A Status carries a canonical code, the HTTP status
// and the `reason` of a metav1.Status, a message and, for Invalid errors, the
// field causes. OK is the default-constructed value.
//
// Thread safety: const methods may be called concurrently; these are values.

#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace caphv::kube {

enum class StatusCode {
  kOk = 0,
  kNotFound,         // 404
  kAlreadyExists,    // 409 reason AlreadyExists
  kConflict,         // 409 reason Conflict (stale resourceVersion, SSA conflict)
  kGone,             // 410 (expired resourceVersion)
  kInvalid,          // 422 (field errors in causes())
  kBadRequest,       // 400
  kUnauthorized,     // 401
  kForbidden,        // 403
  kTooManyRequests,  // 429
  kTimeout,          // 504 or a client-side timeout
  kUnavailable,      // 5xx, connection refused, TLS failure
  kCancelled,        // the caller asked to stop
  kInvalidArgument,  // a local precondition failed before any request
  kInternal,         // anything else
};

std::string_view StatusCodeName(StatusCode code);

// One entry of metav1.Status.details.causes.
struct FieldCause {
  std::string type;     // e.g. FieldValueRequired
  std::string message;  // e.g. Required value
  std::string field;    // e.g. spec.volumes[0].volumeSize
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message, int http_status = 0, std::string reason = {},
         std::vector<FieldCause> causes = {})
      : code_(code),
        http_status_(http_status),
        reason_(std::move(reason)),
        message_(std::move(message)),
        causes_(std::move(causes)) {}

  static Status Ok() { return {}; }

  // Builds a Status from an HTTP response of the apiserver: decodes a
  // metav1.Status body when there is one, otherwise maps the HTTP code.
  static Status FromHttp(int http_status, std::string_view body);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  int http_status() const { return http_status_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  const std::vector<FieldCause>& causes() const { return causes_; }

  bool IsNotFound() const { return code_ == StatusCode::kNotFound; }
  bool IsAlreadyExists() const { return code_ == StatusCode::kAlreadyExists; }
  bool IsConflict() const { return code_ == StatusCode::kConflict; }
  bool IsGone() const { return code_ == StatusCode::kGone; }
  bool IsInvalid() const { return code_ == StatusCode::kInvalid; }
  bool IsCancelled() const { return code_ == StatusCode::kCancelled; }

  // "NotFound: configmaps \"x\" not found" (plus causes when present).
  std::string ToString() const;

  // Returns a copy with `context: ` prefixed to the message.
  Status WithContext(std::string_view context) const;

  // Explicitly drops a status the caller chose not to act on.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  int http_status_ = 0;
  std::string reason_;
  std::string message_;
  std::vector<FieldCause> causes_;
};

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK status");
  }
  StatusOr(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace caphv::kube

#define CAPHV_STATUS_CONCAT_INNER(a, b) a##b
#define CAPHV_STATUS_CONCAT(a, b) CAPHV_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define CAPHV_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::caphv::kube::Status caphv_status_ = (expr);  \
    if (!caphv_status_.ok()) return caphv_status_; \
  } while (false)

// `lhs` = value of the StatusOr `expr`, or return its status.
#define CAPHV_ASSIGN_OR_RETURN(lhs, expr) \
  CAPHV_ASSIGN_OR_RETURN_IMPL(CAPHV_STATUS_CONCAT(caphv_statusor_, __LINE__), lhs, expr)
// NOLINTBEGIN(bugprone-macro-parentheses): `lhs` may be a declaration.
#define CAPHV_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()
// NOLINTEND(bugprone-macro-parentheses)
