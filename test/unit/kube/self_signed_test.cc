// Unit tests of the self-signed serving certificate: what a TLS client sees
// in it, and that a server context accepts it.

#include "kube/self_signed.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <string>

#include "kube/serving_certificate.h"

namespace caphv::kube {
namespace {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;

X509Ptr Parse(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return X509Ptr(x);
}

TEST(SelfSignedTest, ServesLocalhostAndLoopbackForAYear) {
  auto pem = GenerateSelfSignedCertificate({"localhost", "127.0.0.1"});
  ASSERT_TRUE(pem.ok()) << pem.status().ToString();
  EXPECT_EQ(pem->cert_pem.rfind("-----BEGIN CERTIFICATE-----", 0), 0u);
  EXPECT_EQ(pem->key_pem.rfind("-----BEGIN PRIVATE KEY-----", 0), 0u);
  X509Ptr cert = Parse(pem->cert_pem);
  ASSERT_NE(cert, nullptr);

  EXPECT_EQ(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "127.0.0.1", 0), 1);
  EXPECT_NE(X509_check_host(cert.get(), "example.org", 0, 0, nullptr), 1);
  EXPECT_NE(X509_check_ip_asc(cert.get(), "10.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_purpose(cert.get(), X509_PURPOSE_SSL_SERVER, 0), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0) << "a leaf, not a CA";

  time_t now = std::time(nullptr);
  time_t in_364_days = now + 364 * 24 * 3600, in_366_days = now + 366 * 24 * 3600;
  EXPECT_LT(X509_cmp_time(X509_get0_notBefore(cert.get()), &now), 0);
  EXPECT_GT(X509_cmp_time(X509_get0_notAfter(cert.get()), &in_364_days), 0);
  EXPECT_LT(X509_cmp_time(X509_get0_notAfter(cert.get()), &in_366_days), 0);

  // Self-signed: its own key verifies it.
  EVP_PKEY* key = X509_get0_pubkey(cert.get());
  EXPECT_EQ(X509_verify(cert.get(), key), 1);
  EXPECT_TRUE(MakeServerTlsContext(pem->cert_pem, pem->key_pem).ok());
}

TEST(SelfSignedTest, EveryCertificateHasItsOwnKeyAndSerial) {
  auto a = GenerateSelfSignedCertificate({"localhost"});
  auto b = GenerateSelfSignedCertificate({"localhost"});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->key_pem, b->key_pem);
  X509Ptr ca = Parse(a->cert_pem), cb = Parse(b->cert_pem);
  EXPECT_NE(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca.get()), X509_get0_serialNumber(cb.get())),
            0);
  // A key that is not the certificate's is refused.
  auto mixed = MakeServerTlsContext(a->cert_pem, b->key_pem);
  EXPECT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(MakeServerTlsContext("not a certificate", a->key_pem).ok());
}

TEST(SelfSignedTest, NeedsAHost) {
  EXPECT_EQ(GenerateSelfSignedCertificate({}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace caphv::kube
