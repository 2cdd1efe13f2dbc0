// Unit tests of kube::CredentialExpiryOf and its parts: what an identity
// kubeconfig's credentials say about when they stop working.

#include "kube/credential_expiry.h"

#include <gtest/gtest.h>

#include <string>

#include "kube/base64.h"
#include "kube/self_signed.h"

namespace caphv::kube {
namespace {

using Clock = std::chrono::system_clock;
using std::chrono::hours;
using std::chrono::seconds;

// base64url without padding, as JWTs carry their parts.
std::string Url(const std::string& data) {
  std::string s = Base64Encode(data);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) {
    if (c == '+') c = '-';
    if (c == '/') c = '_';
  }
  return s;
}

std::string Jwt(const std::string& claims) {
  return Url(R"({"alg":"RS256","kid":"k1"})") + "." + Url(claims) + "." + Url("signature-bytes");
}

TEST(CredentialExpiryTest, AJwtExpiresAtItsExpClaim) {
  // A ServiceAccount token from a TokenRequest (the claims kube-apiserver
  // writes), with characters that base64url encodes differently.
  const std::string token =
      Jwt(R"({"aud":["https://kubernetes.default.svc"],"exp":1796112000,"iat":1795507200,)"
          R"("iss":"https://kubernetes.default.svc","sub":"system:serviceaccount:a:b>>??"})");
  auto exp = JwtExpiry(token);
  ASSERT_TRUE(exp);
  EXPECT_EQ(Clock::to_time_t(*exp), 1796112000);
}

TEST(CredentialExpiryTest, TokensWithoutAnExpiryHaveNone) {
  // A legacy ServiceAccount token Secret: a JWT without `exp`.
  EXPECT_FALSE(JwtExpiry(Jwt(R"({"iss":"kubernetes/serviceaccount","sub":"x"})")));
  // Not JWTs: a Rancher token, a static token, garbage.
  EXPECT_FALSE(JwtExpiry("kubeconfig-user-abc12:n8q4x7k2p5"));
  EXPECT_FALSE(JwtExpiry("0123456789abcdef"));
  EXPECT_FALSE(JwtExpiry("a.b.c"));
  EXPECT_FALSE(JwtExpiry(Url("{}") + "." + Url("[1,2]") + "." + Url("s")));
  EXPECT_FALSE(JwtExpiry(Url("{}") + "." + Url(R"({"exp":"soon"})") + "." + Url("s")));
  EXPECT_FALSE(JwtExpiry(Url("{}") + "." + Url(R"({"exp":-5})") + "." + Url("s")));
  EXPECT_FALSE(JwtExpiry(Jwt(R"({"exp":1796112000})") + ".extra"));
}

TEST(CredentialExpiryTest, AClientCertificateExpiresAtItsNotAfter) {
  auto pem = GenerateSelfSignedCertificate({"user"}, hours(48));
  ASSERT_TRUE(pem.ok()) << pem.status().ToString();
  auto not_after = CertificateNotAfter(pem->cert_pem);
  ASSERT_TRUE(not_after);
  // Valid for 48 h (from about now).
  EXPECT_GT(*not_after, Clock::now() + hours(46));
  EXPECT_LT(*not_after, Clock::now() + hours(49));
  EXPECT_FALSE(CertificateNotAfter("-----BEGIN CERTIFICATE-----\nnot base64\n"));
  EXPECT_FALSE(CertificateNotAfter(""));
}

TEST(CredentialExpiryTest, TheCredentialThatAuthenticatesIsTheOneThatCounts) {
  auto pem = GenerateSelfSignedCertificate({"user"}, hours(48));
  ASSERT_TRUE(pem.ok());
  RestConfig config;
  config.client_cert_pem = pem->cert_pem;
  auto e = CredentialExpiryOf(config);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->source, "client certificate");

  // A bearer token is what the apiserver authenticates: its expiry, or none.
  config.token = Jwt(R"({"exp":1796112000})");
  e = CredentialExpiryOf(config);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->source, "token");
  EXPECT_EQ(Clock::to_time_t(e->expires_at), 1796112000);
  config.token = "kubeconfig-user-abc12:n8q4x7k2p5";
  EXPECT_FALSE(CredentialExpiryOf(config));

  EXPECT_FALSE(CredentialExpiryOf(RestConfig{}));
}

TEST(CredentialExpiryTest, RancherTokensAreNamedByTheirFirstPart) {
  EXPECT_EQ(RancherTokenName("kubeconfig-user-abc12:n8q4x7k2p5zz"), "kubeconfig-user-abc12");
  EXPECT_EQ(RancherTokenName("token-x7k2p:abcdef0123"), "token-x7k2p");
  EXPECT_EQ(RancherTokenName("kubeconfig-u-b2vxq:"), "");
  EXPECT_EQ(RancherTokenName(":abc"), "");
  EXPECT_EQ(RancherTokenName("admin:Secret!"), "");
  EXPECT_EQ(RancherTokenName("kubeconfig-user-abc12"), "");
  EXPECT_EQ(RancherTokenName("Kubeconfig-User:abc"), "");
  EXPECT_EQ(RancherTokenName(Jwt(R"({"exp":1})")), "");
}

}  // namespace
}  // namespace caphv::kube
