// File: harvester/identity_expiry.h
//
// When the credentials of an identity kubeconfig (the `kubeconfig` key of a
// HarvesterCluster's identity Secret) stop working, and what to tell an
// operator about it.
//
// Rancher API tokens (kubeconfigs downloaded from Harvester's UI carry
// "kubeconfig-user-<id>:<key>") keep their expiry on the token object
// `tokens.management.cattle.io/<name>` (kRancherTokens): `expiresAt`
// (RFC 3339) when set, else `metadata.creationTimestamp` + `ttl`
// (milliseconds); `ttl: 0` never expires. JWTs and client certificates
// carry their own (kube::CredentialExpiryOf).
//
// Thread safety: pure functions.

#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "kube/credential_expiry.h"
#include "kube/object.h"

namespace caphv::harvester {

// Warn this long before the identity's credentials expire.
inline constexpr std::chrono::hours kIdentityExpiryWarning{24 * 14};

// The expiry of a Rancher token object; nullopt when it never expires or
// says nothing usable.
std::optional<std::chrono::system_clock::time_point> RancherTokenExpiry(const kube::Object& token);

enum class ExpiryState { kValid, kExpiringSoon, kExpired };

// Where `expiry` stands at `now` (kExpiringSoon within kIdentityExpiryWarning).
ExpiryState StateOf(const kube::CredentialExpiry& expiry,
                    std::chrono::system_clock::time_point now);

// "the token of the identity kubeconfig expires at 2026-12-01T09:30:00Z (in
// 3 days)" / "... expired at ... (2 days ago)"; without `now`, no part in
// parentheses (a text that does not change as time passes).
std::string DescribeExpiry(const kube::CredentialExpiry& expiry,
                           std::chrono::system_clock::time_point now, bool relative = true);

}  // namespace caphv::harvester
