// File: kube/credential_expiry.h
//
// When the credentials of a RestConfig stop working, as far as the
// credentials themselves say:
//
//   auto config = kube::LoadKubeconfigString(yaml, "");
//   if (auto e = kube::CredentialExpiryOf(*config)) ... e->expires_at, e->source
//
//   - a bearer token that is a JWT (a ServiceAccount token from a
//     TokenRequest, an OIDC id token): its `exp` claim;
//   - else a client certificate: its notAfter.
// Legacy ServiceAccount token Secrets have no `exp`; Rancher API tokens
// ("<name>:<key>", not JWTs) keep their expiry on the server (the token
// object `tokens.management.cattle.io/<name>`): RancherTokenName() names it
// and harvester::RancherTokenExpiry() reads it.
//
// The signature of a JWT is not checked: the expiry is a forecast for
// operators, not an authentication decision.
//
// Thread safety: pure functions.

#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kube/config.h"

namespace caphv::kube {

struct CredentialExpiry {
  std::chrono::system_clock::time_point expires_at;
  std::string source;  // "token" or "client certificate"
  bool operator==(const CredentialExpiry&) const = default;
};

// The `exp` claim of a JWT; nullopt when `token` is not a JWT or has none.
std::optional<std::chrono::system_clock::time_point> JwtExpiry(std::string_view token);

// The notAfter of the first certificate of `pem`; nullopt when none parses.
std::optional<std::chrono::system_clock::time_point> CertificateNotAfter(std::string_view pem);

// The bearer token's expiry when it has one, else the client certificate's.
// A token file is read once (its current token).
std::optional<CredentialExpiry> CredentialExpiryOf(const RestConfig& config);

// "<name>" of a Rancher API token "<name>:<key>" (names such as
// "kubeconfig-user-abc12" or "token-x7k2p"); "" for any other token.
std::string RancherTokenName(std::string_view token);

}  // namespace caphv::kube
