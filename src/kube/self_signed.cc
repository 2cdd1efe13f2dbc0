// File: kube/self_signed.cc

#include "kube/self_signed.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <functional>
#include <memory>

namespace caphv::kube {
namespace {

template <auto Free>
struct Deleter {
  template <class T>
  void operator()(T* p) const {
    Free(p);
  }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, Deleter<X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO_free>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BN_free>>;
using ExtPtr = std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION_free>>;

Status OpenSslError(const std::string& what) {
  return Status(StatusCode::kInternal, "self-signed certificate: " + what + " failed");
}

// Adds one v3 extension written in OpenSSL's configuration syntax.
bool AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  return ext != nullptr && X509_add_ext(cert, ext.get(), -1) == 1;
}

StatusOr<std::string> ToPem(const std::function<int(BIO*)>& write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1) return OpenSslError("PEM encoding");
  char* data = nullptr;
  long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

}  // namespace

namespace {

// A P-256 leaf for `hosts`, signed by `issuer`/`issuer_key` (itself when
// both are null), with the extended key usage `eku`.
StatusOr<PemCertificate> MakeLeaf(const std::vector<std::string>& hosts,
                                  std::chrono::hours validity, X509* issuer, EVP_PKEY* issuer_key,
                                  const std::string& eku) {
  if (hosts.empty()) {
    return Status(StatusCode::kInvalidArgument, "a certificate needs at least one host");
  }
  PkeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("key generation");
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return OpenSslError("X509_new");
  }
  BnPtr serial(BN_new());
  if (serial == nullptr || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return OpenSslError("serial number");
  }
  const long seconds = static_cast<long>(std::chrono::seconds(validity).count());
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), seconds) == nullptr) {
    return OpenSslError("validity");
  }
  X509_NAME* name = X509_get_subject_name(cert.get());
  const auto* cn = reinterpret_cast<const unsigned char*>(hosts.front().c_str());
  X509_NAME* issuer_name = issuer != nullptr ? X509_get_subject_name(issuer) : name;
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, cn, -1, -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), issuer_name) != 1 ||
      X509_set_pubkey(cert.get(), key.get()) != 1) {
    return OpenSslError("subject");
  }
  std::string san;
  for (const auto& host : hosts) {
    boost::system::error_code ec;
    boost::asio::ip::make_address(host, ec);
    san += (san.empty() ? "" : ",") + std::string(ec ? "DNS:" : "IP:") + host;
  }
  if (!AddExtension(cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(cert.get(), NID_ext_key_usage, eku) ||
      !AddExtension(cert.get(), NID_subject_alt_name, san)) {
    return OpenSslError("extensions (" + san + ")");
  }
  EVP_PKEY* signer = issuer_key != nullptr ? issuer_key : key.get();
  if (X509_sign(cert.get(), signer, EVP_sha256()) == 0) return OpenSslError("signing");

  PemCertificate out;
  CAPHV_ASSIGN_OR_RETURN(out.cert_pem,
                         ToPem([&](BIO* b) { return PEM_write_bio_X509(b, cert.get()); }));
  CAPHV_ASSIGN_OR_RETURN(out.key_pem, ToPem([&](BIO* b) {
                           return PEM_write_bio_PrivateKey(b, key.get(), nullptr, nullptr, 0,
                                                           nullptr, nullptr);
                         }));
  return out;
}

}  // namespace

StatusOr<PemCertificate> GenerateSelfSignedCertificate(const std::vector<std::string>& hosts,
                                                       std::chrono::hours validity) {
  return MakeLeaf(hosts, validity, nullptr, nullptr, "serverAuth");
}

StatusOr<PemCertificate> GenerateSignedCertificate(const std::vector<std::string>& hosts,
                                                   const PemCertificate& issuer,
                                                   std::chrono::hours validity) {
  BioPtr cert_bio(
      BIO_new_mem_buf(issuer.cert_pem.data(), static_cast<int>(issuer.cert_pem.size())));
  BioPtr key_bio(BIO_new_mem_buf(issuer.key_pem.data(), static_cast<int>(issuer.key_pem.size())));
  if (cert_bio == nullptr || key_bio == nullptr) return OpenSslError("reading the issuer");
  X509Ptr ca(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  PkeyPtr ca_key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (ca == nullptr || ca_key == nullptr) {
    return Status(StatusCode::kInvalidArgument, "the issuer's certificate or key is not PEM");
  }
  return MakeLeaf(hosts, validity, ca.get(), ca_key.get(), "serverAuth,clientAuth");
}

}  // namespace caphv::kube
