#include "harvester/identity_expiry.h"

#include "api/conditions.h"

namespace caphv::harvester {

namespace {

using Clock = std::chrono::system_clock;

std::string Str(const kube::Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// "3 days", "1 day", "5 hours", "less than an hour".
std::string Span(Clock::duration d) {
  const auto hours = std::chrono::duration_cast<std::chrono::hours>(d).count();
  if (hours >= 48) return std::to_string(hours / 24) + " days";
  if (hours >= 24) return "1 day";
  if (hours >= 2) return std::to_string(hours) + " hours";
  if (hours == 1) return "1 hour";
  return "less than an hour";
}

}  // namespace

std::optional<Clock::time_point> RancherTokenExpiry(const kube::Object& token) {
  if (!token.is_object()) return std::nullopt;
  if (const std::string at = Str(token, "expiresAt"); !at.empty()) {
    if (auto t = api::ParseTime(at)) return t;
  }
  auto ttl = token.find("ttl");
  if (ttl == token.end() || !ttl->is_number_integer() || ttl->get<int64_t>() <= 0) {
    return std::nullopt;
  }
  auto meta = token.find("metadata");
  if (meta == token.end() || !meta->is_object()) return std::nullopt;
  auto created = api::ParseTime(Str(*meta, "creationTimestamp"));
  if (!created) return std::nullopt;
  return *created + std::chrono::milliseconds(ttl->get<int64_t>());
}

ExpiryState StateOf(const kube::CredentialExpiry& expiry, Clock::time_point now) {
  if (expiry.expires_at <= now) return ExpiryState::kExpired;
  if (expiry.expires_at - now <= kIdentityExpiryWarning) return ExpiryState::kExpiringSoon;
  return ExpiryState::kValid;
}

std::string DescribeExpiry(const kube::CredentialExpiry& expiry, Clock::time_point now,
                           bool relative) {
  const std::string what = "the " + expiry.source + " of the identity kubeconfig";
  const std::string at = api::FormatTime(expiry.expires_at);
  if (expiry.expires_at <= now) {
    return what + " expired at " + at +
           (relative ? " (" + Span(now - expiry.expires_at) + " ago)" : "");
  }
  return what + " expires at " + at +
         (relative ? " (in " + Span(expiry.expires_at - now) + ")" : "");
}

}  // namespace caphv::harvester
