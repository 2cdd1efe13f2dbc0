// File: sim/kubelet_proxy.cc

#include "sim/kubelet_proxy.h"

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <filesystem>

#include "kube/log.h"

namespace caphv::sim {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;
using Unix = asio::local::stream_protocol;

bool ParseConnectTarget(std::string_view target, std::string* host, std::string* port) {
  const size_t colon = target.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == target.size()) return false;
  std::string_view h = target.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  const std::string_view p = target.substr(colon + 1);
  if (h.empty() || p.find_first_not_of("0123456789") != std::string_view::npos) return false;
  *host = std::string(h);
  *port = std::string(p);
  return true;
}

namespace {

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// One CONNECT: the head, the decision, then bytes both ways until either side
// closes.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Unix::socket client, const KubeletProxyOptions& opt, kube::log::Logger log)
      : client_(std::move(client)), upstream_(client_.get_executor()), opt_(opt), log_(log) {}

  void Run() {
    auto self = shared_from_this();
    parser_.header_limit(16 * 1024);
    http::async_read_header(client_, buffer_, parser_,
                            [self](boost::system::error_code ec, size_t) { self->OnHead(ec); });
  }

 private:
  void OnHead(boost::system::error_code ec) {
    if (ec == http::error::end_of_stream || ec == asio::error::eof) return;
    if (ec) return Refuse("400 Bad Request", ec.message());
    const auto& req = parser_.get();
    std::string host, port;
    if (req.method() != http::verb::connect ||
        !ParseConnectTarget(std::string_view(req.target().data(), req.target().size()), &host,
                            &port)) {
      return Refuse("400 Bad Request", "not a CONNECT to host:port");
    }
    std::string target_host = opt_.kubelet_host, target_port = std::to_string(opt_.kubelet_port);
    if (IsLoopback(host)) {
      target_host = host;
      target_port = port;
    } else if (const std::string why = opt_.allow(host); !why.empty()) {
      return Refuse("502 Bad Gateway", why);
    }
    auto self = shared_from_this();
    auto resolver = std::make_shared<tcp::resolver>(client_.get_executor());
    resolver->async_resolve(
        target_host, target_port,
        [self, resolver](boost::system::error_code rec, const tcp::resolver::results_type& r) {
          if (rec) return self->Refuse("502 Bad Gateway", rec.message());
          asio::async_connect(self->upstream_, r,
                              [self](boost::system::error_code cec, const tcp::endpoint&) {
                                if (cec) return self->Refuse("502 Bad Gateway", cec.message());
                                self->Established();
                              });
        });
  }

  void Refuse(const std::string& status, const std::string& why) {
    auto self = shared_from_this();
    auto reply = std::make_shared<std::string>("HTTP/1.1 " + status +
                                               "\r\nContent-Type: text/plain\r\nContent-Length: " +
                                               std::to_string(why.size()) + "\r\n\r\n" + why);
    asio::async_write(client_, asio::buffer(*reply),
                      [self, reply](boost::system::error_code, size_t) {
                        boost::system::error_code ignored;
                        self->client_.close(ignored);
                      });
  }

  void Established() {
    auto self = shared_from_this();
    static const std::string kOk = "HTTP/1.1 200 Connection established\r\n\r\n";
    asio::async_write(client_, asio::buffer(kOk), [self](boost::system::error_code ec, size_t) {
      if (ec) return self->Close();
      // Bytes the client sent after the head go first.
      if (self->buffer_.size() > 0) {
        asio::async_write(self->upstream_, self->buffer_.data(),
                          [self](boost::system::error_code wec, size_t) {
                            if (wec) return self->Close();
                            self->buffer_.consume(self->buffer_.size());
                            self->PumpUp();
                          });
      } else {
        self->PumpUp();
      }
      self->PumpDown();
    });
  }

  // client -> upstream
  void PumpUp() {
    auto self = shared_from_this();
    client_.async_read_some(asio::buffer(up_), [self](boost::system::error_code ec, size_t n) {
      if (ec) return self->Close();
      asio::async_write(self->upstream_, asio::buffer(self->up_.data(), n),
                        [self](boost::system::error_code wec, size_t) {
                          if (wec) return self->Close();
                          self->PumpUp();
                        });
    });
  }

  // upstream -> client
  void PumpDown() {
    auto self = shared_from_this();
    upstream_.async_read_some(asio::buffer(down_), [self](boost::system::error_code ec, size_t n) {
      if (ec) return self->Close();
      asio::async_write(self->client_, asio::buffer(self->down_.data(), n),
                        [self](boost::system::error_code wec, size_t) {
                          if (wec) return self->Close();
                          self->PumpDown();
                        });
    });
  }

  void Close() {
    boost::system::error_code ignored;
    client_.close(ignored);
    upstream_.close(ignored);
  }

  Unix::socket client_;
  tcp::socket upstream_;
  const KubeletProxyOptions& opt_;
  kube::log::Logger log_;
  boost::beast::flat_buffer buffer_;  // the head, then what came after it
  http::request_parser<http::empty_body> parser_;
  std::array<char, 16384> up_{};
  std::array<char, 16384> down_{};
};

}  // namespace

struct KubeletProxy::Impl {
  explicit Impl(KubeletProxyOptions o)
      : opt(std::move(o)), acceptor(io), log(kube::log::Root().WithName("kubelet-proxy")) {}

  void Accept() {
    acceptor.async_accept([this](boost::system::error_code ec, Unix::socket s) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
      } else {
        std::make_shared<Session>(std::move(s), opt, log)->Run();
      }
      Accept();
    });
  }

  KubeletProxyOptions opt;
  asio::io_context io;
  Unix::acceptor acceptor;
  kube::log::Logger log;
  std::thread thread;
};

KubeletProxy::KubeletProxy(KubeletProxyOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}

KubeletProxy::~KubeletProxy() { Stop(); }

kube::Status KubeletProxy::Start() {
  std::error_code fec;
  std::filesystem::remove(impl_->opt.socket_path, fec);
  boost::system::error_code ec;
  Unix::endpoint ep(impl_->opt.socket_path);
  impl_->acceptor.open(ep.protocol(), ec);
  if (!ec) impl_->acceptor.bind(ep, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return kube::Status(kube::StatusCode::kInternal,
                        "kubelet proxy: listen on " + impl_->opt.socket_path + ": " + ec.message());
  }
  impl_->Accept();
  impl_->thread = std::thread([this] {
    try {  // a thread top: nothing may escape
      impl_->io.run();
    } catch (const std::exception& e) {
      impl_->log.Error(e.what(), "Kubelet proxy stopped");
    }
  });
  impl_->log.Info(
      "Serving kubelet connections",
      {{"socket", impl_->opt.socket_path},
       {"kubelet", impl_->opt.kubelet_host + ":" + std::to_string(impl_->opt.kubelet_port)}});
  return {};
}

void KubeletProxy::Stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->io.stop();
  impl_->thread.join();
}

}  // namespace caphv::sim
