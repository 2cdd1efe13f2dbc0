#include "kube/credential_expiry.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cmath>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "kube/base64.h"

namespace caphv::kube {

namespace {

using Clock = std::chrono::system_clock;

// base64url without padding (RFC 7515) to standard base64.
std::optional<std::string> Base64UrlDecode(std::string_view text) {
  std::string s(text);
  for (char& c : s) {
    if (c == '-') {
      c = '+';
    } else if (c == '_') {
      c = '/';
    } else if (c == '+' || c == '/' || c == '=') {
      return std::nullopt;
    }
  }
  while (s.size() % 4 != 0) s.push_back('=');
  return Base64Decode(s);
}

bool IsNameChar(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

}  // namespace

std::optional<Clock::time_point> JwtExpiry(std::string_view token) {
  const size_t first = token.find('.');
  if (first == std::string_view::npos) return std::nullopt;
  const size_t second = token.find('.', first + 1);
  if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  auto payload = Base64UrlDecode(token.substr(first + 1, second - first - 1));
  if (!payload) return std::nullopt;
  const auto claims = nlohmann::json::parse(*payload, nullptr, /*allow_exceptions=*/false);
  if (!claims.is_object()) return std::nullopt;
  const auto it = claims.find("exp");
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  const double exp = it->get<double>();
  if (!std::isfinite(exp) || exp <= 0 || exp > 253402300799.0) return std::nullopt;  // < year 10000
  return Clock::time_point(std::chrono::seconds(static_cast<int64_t>(exp)));
}

std::optional<Clock::time_point> CertificateNotAfter(std::string_view pem) {
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), &BIO_free);
  if (!bio) return std::nullopt;
  std::unique_ptr<X509, decltype(&X509_free)> cert(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), &X509_free);
  if (!cert) return std::nullopt;
  std::tm tm{};
  if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &tm) != 1) return std::nullopt;
  return Clock::from_time_t(timegm(&tm));
}

std::optional<CredentialExpiry> CredentialExpiryOf(const RestConfig& config) {
  if (auto token = config.BearerToken(); token.ok() && !token->empty()) {
    if (auto exp = JwtExpiry(*token)) return CredentialExpiry{*exp, "token"};
    return std::nullopt;  // the token authenticates; a certificate would not be used
  }
  if (!config.client_cert_pem.empty()) {
    if (auto exp = CertificateNotAfter(config.client_cert_pem)) {
      return CredentialExpiry{*exp, "client certificate"};
    }
  }
  return std::nullopt;
}

std::string RancherTokenName(std::string_view token) {
  const size_t colon = token.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == token.size()) return "";
  const std::string_view name = token.substr(0, colon);
  const std::string_view key = token.substr(colon + 1);
  for (char c : name) {
    if (!IsNameChar(c)) return "";
  }
  for (char c : key) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return "";
  }
  if (name.rfind("kubeconfig-", 0) != 0 && name.rfind("token-", 0) != 0) return "";
  return std::string(name);
}

}  // namespace caphv::kube
