// File: kube/self_signed.h
//
// A self-signed serving certificate generated in memory, for servers started
// without a certificate on disk (the metrics endpoint without
// --metrics-cert-path, as controller-runtime's metrics server does):
//
//   auto pem = kube::GenerateSelfSignedCertificate({"localhost", "127.0.0.1"});
//   HttpServerOptions o{.cert_pem = pem->cert_pem, .key_pem = pem->key_pem};
//
// The certificate is an ECDSA P-256 / SHA-256 leaf (not a CA) for TLS server
// authentication, valid from one hour before now for `validity`; every host
// is a subjectAltName (an IP address when it parses as one, else a DNS
// name), and the first host is the subject's common name. Its serial number
// is random. Clients cannot verify it against any CA: they skip verification
// (Prometheus' `insecure_skip_verify`) or pin the certificate.
//
// Thread safety: stateless.

#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "kube/status.h"

namespace caphv::kube {

struct PemCertificate {
  std::string cert_pem;
  std::string key_pem;  // PKCS#8, unencrypted
};

// kInvalidArgument without hosts; kInternal when OpenSSL fails.
StatusOr<PemCertificate> GenerateSelfSignedCertificate(
    const std::vector<std::string>& hosts,
    std::chrono::hours validity = std::chrono::hours(24 * 365));

// A leaf for TLS server and client authentication signed by `issuer` (a CA
// certificate and its private key, PEM; RSA or EC), otherwise as above.
// kInvalidArgument when the issuer does not parse.
StatusOr<PemCertificate> GenerateSignedCertificate(
    const std::vector<std::string>& hosts, const PemCertificate& issuer,
    std::chrono::hours validity = std::chrono::hours(24 * 365));

}  // namespace caphv::kube
