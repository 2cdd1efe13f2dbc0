// File: kube/serving_certificate.h
//
// ServingCertificate: a server TLS context loaded from a certificate/key pair
// on disk and reloaded when either file changes (cert-manager rotating the
// Secret mounted into the manager's Pod). TLS 1.2 at least; the key must
// match the certificate. MakeServerTlsContext builds the same kind of
// context from PEM text in memory (a certificate generated at start-up).
//
// Thread safety: Current() from any thread; Reload() from one thread at a
// time (the server's certificate poll).

#pragma once

#include <sys/types.h>

#include <boost/asio/ssl/context.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "kube/log.h"
#include "kube/status.h"

namespace caphv::kube {

// A server TLS context (TLS 1.2 at least) for a PEM certificate chain and
// its private key; kInvalidArgument when either does not load or they do
// not match.
StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(std::string_view cert_pem,
                                                                          std::string_view key_pem);

class ServingCertificate {
 public:
  ServingCertificate(std::string cert_path, std::string key_path, log::Logger logger);

  // Loads the pair when either file changed since the last load (always
  // when `initial`). A pair that fails to load (files may be mid-
  // replacement) keeps the previous context, is logged once per change of
  // the files (not when `initial`: the caller reports that error) and is
  // retried on the next call.
  Status Reload(bool initial);

  // The context of the last pair that loaded; null before the first.
  std::shared_ptr<boost::asio::ssl::context> Current() const;

 private:
  // Identity of a file's current content, for change detection.
  struct Stamp {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = -1;
    int64_t mtime_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  static Stamp StampOf(const std::string& path);

  std::string cert_path_, key_path_;
  log::Logger logger_;
  mutable std::mutex mu_;
  std::shared_ptr<boost::asio::ssl::context> ctx_;
  Stamp cert_stamp_, key_stamp_;    // of the loaded pair
  Stamp failed_cert_, failed_key_;  // of the last pair that failed
};

}  // namespace caphv::kube
