// File: kube/http_server_impl.h
//
// The state of an HttpServer (kube/http_server.h) shared by the files that
// implement it: HttpServerImpl (options, routes, the io_context and its
// pool, the acceptor, the TLS material, the session registry that is also
// the shutdown gate, the budget of buffered request bytes) and SessionBase,
// what the server knows of a connection. Internal to http_server.cc and
// http_server_session.cc (it includes Boost.Asio).
//
// Thread safety: see kube/http_server.h.

#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "kube/http_server.h"
#include "kube/log.h"
#include "kube/serving_certificate.h"

namespace caphv::kube {

namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace internal {

class SessionBase;

class HttpServerImpl {
 public:
  explicit HttpServerImpl(HttpServerOptions options)
      : options_(std::move(options)),
        ioc_(std::make_unique<net::io_context>(options_.threads > 0 ? options_.threads : 1)),
        logger_(log::Root().WithName("http").WithValues({{"server", options_.name}})) {}

  ~HttpServerImpl() { Teardown(); }

  HttpServerOptions options_;
  std::vector<std::pair<std::string, HttpHandler>> routes_;
  std::unique_ptr<net::io_context> ioc_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<net::steady_timer> cert_timer_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  log::Logger logger_;

  // TLS material, reloaded when the files change; set in Start() when
  // cert_dir is set. Otherwise, with cert_pem, the fixed context built from it.
  std::optional<ServingCertificate> certificate_;
  std::shared_ptr<ssl::context> fixed_tls_;

  // The gate: live sessions.
  std::mutex gate_mu_;
  std::condition_variable gate_cv_;
  std::map<uint64_t, std::weak_ptr<SessionBase>> sessions_;
  uint64_t next_session_ = 0;
  std::atomic<bool> draining_{false};
  std::atomic<uint64_t> served_{0};
  // Request body bytes reserved by the sessions reading or handling one.
  std::atomic<size_t> buffered_{0};

  size_t BufferedLimit() const {
    return options_.buffered_limit > 0 ? options_.buffered_limit : 4 * options_.body_limit;
  }
  // Reserves `n` body bytes; false when that would pass the limit.
  bool Reserve(size_t n) {
    size_t now = buffered_.load();
    do {
      if (now + n > BufferedLimit()) return false;
    } while (!buffered_.compare_exchange_weak(now, now + n));
    return true;
  }
  void ReleaseBuffered(size_t n) { buffered_.fetch_sub(n); }

  std::mutex state_mu_;
  bool started_ = false;
  bool stopped_ = false;
  int port_ = 0;
  std::string address_;

  std::string CertPath() const { return options_.cert_dir + "/" + options_.cert_name; }
  std::string KeyPath() const { return options_.cert_dir + "/" + options_.key_name; }
  bool tls() const { return !options_.cert_dir.empty() || !options_.cert_pem.empty(); }

  std::shared_ptr<ssl::context> CurrentTls() {
    return certificate_ ? certificate_->Current() : fixed_tls_;
  }

  void ScheduleCertPoll();
  void DoAccept();
  void OnAccept(boost::system::error_code ec, tcp::socket socket);
  uint64_t Register(const std::shared_ptr<SessionBase>& s);
  void Unregister(uint64_t id);
  HttpResponse Dispatch(const HttpRequest& req);
  Status Shutdown(std::chrono::milliseconds timeout);
  void Teardown();
};

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void Run() = 0;
  virtual void CloseIfIdle() = 0;
  virtual void ForceClose() = 0;
};

}  // namespace internal
}  // namespace caphv::kube
