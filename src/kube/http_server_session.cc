// File: kube/http_server_session.cc
//
// The connections of an HttpServer (see http_server.h): accepting them
// (within max_connections) and, per connection, a Session on its own strand
// that runs the TLS handshake when the server serves TLS, reads one request
// at a time (the header first, the body only within the buffered-bytes
// budget, all within read_timeout), refuses what passes the limits
// (408, 413, 429, 431), hands the request to the router and writes the
// response, keeping the connection alive or closing it.

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <cctype>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "kube/http_server_impl.h"

namespace caphv::kube {

namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

namespace internal {

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

}  // namespace internal
}  // namespace caphv::kube
