// File: kube/http_server.cc
//
// HttpServer on Boost.Beast/Asio: one io_context run by a fixed pool, one
// strand per connection, an acceptor strand, a certificate poll timer, and a
// session registry that doubles as the shutdown gate.
//
// This file: starting (TLS material, bind, the pool), routing, the
// certificate poll and shutdown. The connections are in
// http_server_session.cc, the state both share in http_server_impl.h.

#include "kube/http_server.h"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/http_server_impl.h"

namespace caphv::kube {

namespace internal {

uint64_t HttpServerImpl::Register(const std::shared_ptr<SessionBase>& s) {
  std::lock_guard lock(gate_mu_);
  uint64_t id = ++next_session_;
  sessions_[id] = s;
  return id;
}

void HttpServerImpl::Unregister(uint64_t id) {
  std::lock_guard lock(gate_mu_);
  sessions_.erase(id);
  if (sessions_.empty()) gate_cv_.notify_all();
}

HttpResponse HttpServerImpl::Dispatch(const HttpRequest& req) {
  const HttpHandler* best = nullptr;
  size_t best_len = 0;
  for (const auto& [pattern, handler] : routes_) {
    if (pattern == req.path) {
      best = &handler;
      break;
    }
    if (!pattern.empty() && pattern.back() == '/' && req.path.starts_with(pattern) &&
        pattern.size() > best_len) {
      best = &handler;
      best_len = pattern.size();
    }
  }
  if (best == nullptr)
    return HttpResponse{404, "text/plain; charset=utf-8", "404 page not found\n"};
  try {
    return (*best)(req);
  } catch (const std::exception& e) {
    logger_.Error(e.what(), "Handler failed", {{"path", req.path}});
  } catch (...) {
    logger_.Error("unknown exception", "Handler failed", {{"path", req.path}});
  }
  return HttpResponse{500, "text/plain; charset=utf-8", "internal server error\n"};
}

void HttpServerImpl::ScheduleCertPoll() {
  cert_timer_->expires_after(options_.cert_poll_interval);
  cert_timer_->async_wait([this](boost::system::error_code ec) {
    if (ec || draining_.load()) return;
    certificate_->Reload(false).IgnoreError();
    ScheduleCertPoll();
  });
}

Status HttpServerImpl::Shutdown(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(state_mu_);
    if (!started_ || stopped_) return Status::Ok();
    stopped_ = true;
  }
  draining_.store(true);
  net::post(acceptor_->get_executor(), [this] {
    boost::system::error_code ec;
    acceptor_->close(ec);
  });
  net::post(cert_timer_->get_executor(), [this] { cert_timer_->cancel(); });
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(gate_mu_);
    for (auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) s->CloseIfIdle();
  live.clear();

  Status result;
  {
    std::unique_lock lock(gate_mu_);
    if (!gate_cv_.wait_for(lock, timeout, [this] { return sessions_.empty(); })) {
      result = Status(StatusCode::kTimeout, std::to_string(sessions_.size()) +
                                                " connection(s) still busy after " +
                                                std::to_string(timeout.count()) + "ms");
      for (auto& [id, weak] : sessions_) {
        if (auto s = weak.lock()) live.push_back(std::move(s));
      }
    }
  }
  for (auto& s : live) s->ForceClose();
  live.clear();
  work_.reset();
  if (!result.ok()) {
    // Handlers still running hold pool threads: do not wait for them here
    // (the destructor does), so that the caller's shutdown stays bounded.
    // The pool keeps running until the forced closes and those handlers end.
    logger_.Info("HTTP server stopped with requests in flight", {{"address", address_}});
    return result;
  }
  ioc_->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  logger_.V(2).Info("HTTP server stopped", {{"address", address_}});
  return result;
}

void HttpServerImpl::Teardown() {
  Shutdown(std::chrono::milliseconds(0)).IgnoreError();
  for (auto& t : threads_) t.join();
  threads_.clear();
  cert_timer_.reset();
  acceptor_.reset();
  ioc_.reset();  // destroys pending handlers (and their sessions) while members live
}

}  // namespace internal

using internal::HttpServerImpl;

// ---------------------------------------------------------------------------

HttpServer::HttpServer(HttpServerOptions options)
    : impl_(std::make_unique<HttpServerImpl>(std::move(options))) {}

HttpServer::~HttpServer() = default;

void HttpServer::Handle(std::string pattern, HttpHandler handler) {
  impl_->routes_.emplace_back(std::move(pattern), std::move(handler));
}

Status HttpServer::Start() {
  HttpServerImpl& d = *impl_;
  std::lock_guard lock(d.state_mu_);
  if (d.started_) return Status(StatusCode::kInvalidArgument, "HTTP server already started");
  CAPHV_ASSIGN_OR_RETURN(auto host_port, ParseBindAddress(d.options_.bind_address));
  auto& [host, port] = host_port;

  if (!d.options_.cert_dir.empty()) {
    d.certificate_.emplace(d.CertPath(), d.KeyPath(), d.logger_);
    CAPHV_RETURN_IF_ERROR(d.certificate_->Reload(true));
  } else if (!d.options_.cert_pem.empty()) {
    CAPHV_ASSIGN_OR_RETURN(d.fixed_tls_,
                           MakeServerTlsContext(d.options_.cert_pem, d.options_.key_pem));
  }

  boost::system::error_code ec;
  tcp::endpoint endpoint;
  if (host.empty()) {
    endpoint = tcp::endpoint(tcp::v4(), static_cast<unsigned short>(port));
  } else {
    auto addr = net::ip::make_address(host, ec);
    if (ec) {
      tcp::resolver resolver(*d.ioc_);
      auto results = resolver.resolve(host, std::to_string(port), ec);
      if (ec || results.empty()) {
        return Status(StatusCode::kInvalidArgument, "cannot resolve " + host + ": " + ec.message());
      }
      endpoint = results.begin()->endpoint();
    } else {
      endpoint = tcp::endpoint(addr, static_cast<unsigned short>(port));
    }
  }

  d.acceptor_.emplace(net::make_strand(*d.ioc_));
  auto fail = [&](std::string_view what) {
    return Status(StatusCode::kUnavailable,
                  std::string(what) + " " + d.options_.bind_address + ": " + ec.message());
  };
  d.acceptor_->open(endpoint.protocol(), ec);
  if (ec) return fail("open");
  d.acceptor_->set_option(net::socket_base::reuse_address(true), ec);
  d.acceptor_->bind(endpoint, ec);
  if (ec) return fail("bind");
  d.acceptor_->listen(net::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  auto local = d.acceptor_->local_endpoint(ec);
  d.port_ = local.port();
  std::string ip = local.address().to_string();
  d.address_ = (local.address().is_v6() ? "[" + ip + "]" : ip) + ":" + std::to_string(d.port_);

  d.cert_timer_.emplace(net::make_strand(*d.ioc_));
  d.work_.emplace(d.ioc_->get_executor());
  d.DoAccept();
  if (d.certificate_) d.ScheduleCertPoll();
  int n = d.options_.threads > 0 ? d.options_.threads : 1;
  for (int i = 0; i < n; ++i) {
    d.threads_.emplace_back([&d] {
      try {
        d.ioc_->run();
      } catch (const std::exception& e) {
        d.logger_.Error(e.what(), "HTTP server thread failed");
      }
    });
  }
  d.started_ = true;
  d.logger_.Info("Serving", {{"address", d.address_}, {"tls", d.tls()}});
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port_; }
std::string HttpServer::address() const { return impl_->address_; }
bool HttpServer::tls() const { return impl_->tls(); }
uint64_t HttpServer::requests_served() const { return impl_->served_.load(); }

Status HttpServer::Shutdown(std::chrono::milliseconds timeout) { return impl_->Shutdown(timeout); }

}  // namespace caphv::kube
