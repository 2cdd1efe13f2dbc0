// File: kube/digest.cc

#include "kube/digest.h"

#include <openssl/evp.h>

namespace caphv::kube {

namespace {
// SHA-256 fetched from OpenSSL's providers once. EVP_sha256() makes
// EVP_Digest look the algorithm up again on every call (OpenSSL 3's
// implicit fetch, under its locks); a machine's reconcile hashes its
// cluster's identity for each object it checks ownership of. Kept for the
// life of the process.
const EVP_MD* Sha256() {
  static const EVP_MD* const fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  return fetched != nullptr ? fetched : EVP_sha256();
}
}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, Sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{len} * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

}  // namespace caphv::kube
