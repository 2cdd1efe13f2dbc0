// File: kube/http_server.cc
//
// HttpServer on Boost.Beast/Asio: one io_context run by a fixed pool, one
// strand per connection, an acceptor strand, a certificate poll timer, and a
// session registry that doubles as the shutdown gate.

#include "kube/http_server.h"

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "kube/log.h"
#include "kube/serving_certificate.h"

namespace caphv::kube {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------

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

template <class Stream>
class Session final : public SessionBase {
 public:
  Session(HttpServerImpl* server, Stream stream, std::shared_ptr<ssl::context> ctx)
      : server_(server),
        stream_(std::move(stream)),
        ctx_(std::move(ctx)),
        read_timer_(stream_.get_executor()) {}
  ~Session() override {
    Unreserve();
    server_->Unregister(id_);
  }

  void set_id(uint64_t id) { id_ = id; }

  void Run() override {
    net::dispatch(stream_.get_executor(), [self = Self()] { self->Begin(); });
  }

  void CloseIfIdle() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (!self->busy_) self->Close();
    });
  }

  void ForceClose() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Close(); });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  void Begin() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(server_->options_.read_timeout);
      stream_.async_handshake(
          ssl::stream_base::server, [self = Self()](boost::system::error_code ec) {
            if (ec) {
              self->server_->logger_.V(4).Info("TLS handshake failed", {{"err", ec.message()}});
              return;
            }
            self->Read();
          });
    } else {
      Read();
    }
  }

  void Unreserve() {
    if (reserved_ > 0) server_->ReleaseBuffered(reserved_);
    reserved_ = 0;
  }

  // A refusal before the request was read whole; the connection closes.
  void Refuse(int status, std::string body, std::vector<std::pair<std::string, std::string>> hdrs) {
    read_timer_.cancel();
    busy_ = true;
    Unreserve();
    HttpResponse res;
    res.status = status;
    res.body = std::move(body);
    res.headers = std::move(hdrs);
    Write(res, 11, false);
  }

  // A read that failed: 413/431 for limits; 408 when read_timeout passed
  // with part of a request received (an idle keep-alive connection is just
  // closed, as Go's net/http does); otherwise (closed, cancelled) the
  // session ends and its reservation is freed.
  void RefuseFailedRead(boost::system::error_code ec) {
    read_timer_.cancel();
    if (ec == bhttp::error::body_limit || ec == bhttp::error::header_limit) {
      const bool body = ec == bhttp::error::body_limit;
      Refuse(body ? 413 : 431,
             body ? "request body too large\n" : "request header fields too large\n", {});
      return;
    }
    if (read_timed_out_ && !closed_ && (buffer_.size() > 0 || (parser_ && parser_->got_some()))) {
      server_->logger_.V(1).Info("Request not received in time: 408",
                                 {{"readTimeout", server_->options_.read_timeout.count()}});
      Refuse(408, "request not received in time\n", {});
      return;
    }
    Unreserve();
    if (read_timed_out_) Close();
  }

  // read_timeout bounds the whole request (header and body). The stream's
  // own expiry would close the socket; this timer only cancels the read, so
  // that a 408 can still be written.
  void ArmReadTimer() {
    beast::get_lowest_layer(stream_).expires_never();
    read_timed_out_ = false;
    read_timer_.expires_after(server_->options_.read_timeout);
    read_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (ec) return;  // cancelled: the request arrived, or the session ended
      auto self = std::static_pointer_cast<Session>(weak.lock());
      if (!self || self->closed_) return;
      self->read_timed_out_ = true;
      boost::system::error_code ignored;
      beast::get_lowest_layer(self->stream_).socket().cancel(ignored);
    });
  }

  void Read() {
    busy_ = false;
    Unreserve();
    if (server_->draining_.load() || closed_) {
      Close();
      return;
    }
    parser_.emplace();
    parser_->body_limit(server_->options_.body_limit);
    ArmReadTimer();
    // The header first: the body is read only once it fits the budget.
    bhttp::async_read_header(
        stream_, buffer_, *parser_,
        [self = Self()](boost::system::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(boost::system::error_code ec) {
    if (ec) {
      RefuseFailedRead(ec);
      return;  // closed, idle timeout, cancelled: the session ends
    }
    size_t want = server_->options_.body_limit;  // chunked: up to the limit
    if (auto length = parser_->content_length()) {
      if (*length > server_->options_.body_limit) {
        Refuse(413, "request body too large\n", {});
        return;
      }
      want = static_cast<size_t>(*length);
    } else if (!parser_->chunked()) {
      want = 0;  // no body
    }
    if (want > 0 && !server_->Reserve(want)) {
      server_->logger_.V(1).Info("Too many request bytes buffered: 429", {{"contentLength", want}});
      Refuse(429, "too many requests are being read; retry\n", {{"Retry-After", "1"}});
      return;
    }
    reserved_ = want;
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = Self()](boost::system::error_code read_ec, size_t) { self->OnRead(read_ec); });
  }

  void OnRead(boost::system::error_code ec) {
    if (ec) {
      RefuseFailedRead(ec);
      return;  // closed, cancelled: the session ends
    }
    read_timer_.cancel();
    busy_ = true;
    const auto& msg = parser_->get();
    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    auto q = req.target.find('?');
    req.path = req.target.substr(0, q);
    if (q != std::string::npos) req.query = req.target.substr(q + 1);
    for (const auto& field : msg) {
      req.headers.emplace_back(Lower(field.name_string()), std::string(field.value()));
    }
    req.body = msg.body();
    boost::system::error_code rec;
    auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(rec);
    if (!rec) req.remote_address = ep.address().to_string() + ":" + std::to_string(ep.port());
    HttpResponse res = server_->Dispatch(req);
    bool keep_alive = msg.keep_alive() && !server_->draining_.load();
    Write(res, msg.version(), keep_alive);
  }

  void Write(const HttpResponse& r, unsigned version, bool keep_alive) {
    res_.emplace();
    res_->version(version);
    res_->result(static_cast<unsigned>(r.status));
    res_->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res_->set(k, v);
    res_->body() = r.body;
    res_->keep_alive(keep_alive);
    res_->prepare_payload();
    beast::get_lowest_layer(stream_).expires_after(server_->options_.write_timeout);
    bhttp::async_write(stream_, *res_,
                       [self = Self(), keep_alive](boost::system::error_code ec, size_t) {
                         self->server_->served_.fetch_add(1);
                         self->busy_ = false;
                         if (ec || !keep_alive) {
                           self->Close();
                           return;
                         }
                         self->Read();
                       });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    read_timer_.cancel();
    boost::system::error_code ec;
    auto& sock = beast::get_lowest_layer(stream_).socket();
    sock.shutdown(tcp::socket::shutdown_both, ec);
    sock.close(ec);
  }

  HttpServerImpl* server_;
  Stream stream_;
  std::shared_ptr<ssl::context> ctx_;  // keeps the context of this connection alive
  net::steady_timer read_timer_;       // read_timeout of the request being read
  bool read_timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::string_body>> res_;
  bool busy_ = false;
  bool closed_ = false;
  uint64_t id_ = 0;
  size_t reserved_ = 0;  // body bytes reserved on the server for the current request
};

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

void HttpServerImpl::DoAccept() {
  acceptor_->async_accept(net::make_strand(*ioc_),
                          [this](boost::system::error_code ec, tcp::socket socket) {
                            OnAccept(ec, std::move(socket));
                          });
}

void HttpServerImpl::OnAccept(boost::system::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_->is_open() || draining_.load()) return;
  size_t live = 0;
  {
    std::lock_guard lock(gate_mu_);
    live = sessions_.size();
  }
  if (ec) {
    logger_.V(2).Info("Accept failed", {{"err", ec.message()}});
  } else if (live >= options_.max_connections) {
    logger_.V(1).Info("Too many connections: closing a new one",
                      {{"connections", live}, {"limit", options_.max_connections}});
    boost::system::error_code ignored;
    socket.close(ignored);
  } else {
    std::shared_ptr<SessionBase> session;
    if (tls()) {
      auto ctx = CurrentTls();
      auto s = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
          this, beast::ssl_stream<beast::tcp_stream>(beast::tcp_stream(std::move(socket)), *ctx),
          ctx);
      s->set_id(Register(s));
      session = s;
    } else {
      auto s = std::make_shared<Session<beast::tcp_stream>>(
          this, beast::tcp_stream(std::move(socket)), nullptr);
      s->set_id(Register(s));
      session = s;
    }
    session->Run();
  }
  DoAccept();
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
