// File: kube/serving_certificate.cc

#include "kube/serving_certificate.h"

#include <openssl/ssl.h>
#include <sys/stat.h>

#include <utility>

namespace caphv::kube {

namespace ssl = boost::asio::ssl;

namespace {

// A server context accepting TLS 1.2 and later, without a certificate yet.
StatusOr<std::shared_ptr<ssl::context>> NewServerContext() {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                       ssl::context::single_dh_use,
                   ec);
  if (ec) return Status(StatusCode::kInternal, "TLS options: " + ec.message());
  if (SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION) != 1) {
    return Status(StatusCode::kInternal, "cannot set TLS 1.2 as the minimum version");
  }
  return ctx;
}

StatusOr<std::shared_ptr<ssl::context>> LoadTlsContext(const std::string& cert,
                                                       const std::string& key) {
  CAPHV_ASSIGN_OR_RETURN(auto ctx, NewServerContext());
  boost::system::error_code ec;
  ctx->use_certificate_chain_file(cert, ec);
  if (ec) return Status(StatusCode::kInvalidArgument, "loading " + cert + ": " + ec.message());
  ctx->use_private_key_file(key, ssl::context::pem, ec);
  if (ec) return Status(StatusCode::kInvalidArgument, "loading " + key + ": " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status(StatusCode::kInvalidArgument, key + " does not match " + cert);
  }
  return ctx;
}

}  // namespace

StatusOr<std::shared_ptr<ssl::context>> MakeServerTlsContext(std::string_view cert_pem,
                                                             std::string_view key_pem) {
  CAPHV_ASSIGN_OR_RETURN(auto ctx, NewServerContext());
  boost::system::error_code ec;
  ctx->use_certificate_chain(boost::asio::buffer(cert_pem.data(), cert_pem.size()), ec);
  if (ec) return Status(StatusCode::kInvalidArgument, "certificate: " + ec.message());
  ctx->use_private_key(boost::asio::buffer(key_pem.data(), key_pem.size()), ssl::context::pem, ec);
  if (ec) return Status(StatusCode::kInvalidArgument, "private key: " + ec.message());
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    return Status(StatusCode::kInvalidArgument, "the private key does not match the certificate");
  }
  return ctx;
}

ServingCertificate::ServingCertificate(std::string cert_path, std::string key_path,
                                       log::Logger logger)
    : cert_path_(std::move(cert_path)),
      key_path_(std::move(key_path)),
      logger_(std::move(logger)) {}

ServingCertificate::Stamp ServingCertificate::StampOf(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size,
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

Status ServingCertificate::Reload(bool initial) {
  Stamp cert = StampOf(cert_path_);
  Stamp key = StampOf(key_path_);
  {
    std::lock_guard lock(mu_);
    if (!initial && cert == cert_stamp_ && key == key_stamp_) return Status::Ok();
  }
  auto ctx = LoadTlsContext(cert_path_, key_path_);
  if (!ctx.ok()) {
    if (initial || !(cert == failed_cert_ && key == failed_key_)) {
      failed_cert_ = cert;
      failed_key_ = key;
      if (!initial) logger_.Error(ctx.status(), "Failed to reload serving certificate");
    }
    return ctx.status();
  }
  std::lock_guard lock(mu_);
  ctx_ = std::move(*ctx);
  cert_stamp_ = cert;
  key_stamp_ = key;
  if (!initial) logger_.Info("Reloaded serving certificate", {{"cert", cert_path_}});
  return Status::Ok();
}

std::shared_ptr<ssl::context> ServingCertificate::Current() const {
  std::lock_guard lock(mu_);
  return ctx_;
}

}  // namespace caphv::kube
