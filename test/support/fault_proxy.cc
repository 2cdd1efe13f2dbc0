#include "support/fault_proxy.h"

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stop_token>
#include <thread>
#include <vector>

#include "kube/base64.h"
#include "kube/self_signed.h"

namespace caphv::testing {

namespace net = boost::asio;
namespace ssl = net::ssl;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

enum class Fault { kNone, kError500, kThrottle, kReset, kSlow, kCutWatch };

bool IsWatch(std::string_view target) {
  return target.find("watch=true") != std::string_view::npos ||
         target.find("watch=1") != std::string_view::npos;
}

// A metav1.Status as an apiserver words a failure.
std::string StatusBody(int code, const std::string& reason, const std::string& message) {
  return R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":")" +
         message + R"(","reason":")" + reason + R"(","details":{},"code":)" + std::to_string(code) +
         "}";
}

}  // namespace

class FaultProxy::Impl {
 public:
  Impl(std::string upstream_url, std::string upstream_ca_pem, FaultRates rates)
      : upstream_url_(std::move(upstream_url)),
        upstream_ca_(std::move(upstream_ca_pem)),
        rates_(rates),
        rng_(rates.seed) {}

  ~Impl() { Stop(); }

  kube::Status Start() {
    // Upstream "https://host:port".
    const std::string prefix = "https://";
    if (upstream_url_.rfind(prefix, 0) != 0) {
      return kube::Status(kube::StatusCode::kInvalidArgument, "upstream must be https://host:port");
    }
    const std::string hostport = upstream_url_.substr(prefix.size());
    const auto colon = hostport.rfind(':');
    if (colon == std::string::npos) {
      return kube::Status(kube::StatusCode::kInvalidArgument, "upstream has no port");
    }
    upstream_host_ = hostport.substr(0, colon);
    upstream_port_ = static_cast<uint16_t>(std::stoi(hostport.substr(colon + 1)));

    auto pem = kube::GenerateSelfSignedCertificate({"127.0.0.1", "localhost"});
    if (!pem.ok()) return pem.status();
    cert_ = *pem;
    boost::system::error_code ec;
    server_ctx_.use_certificate_chain(net::buffer(cert_.cert_pem), ec);
    if (!ec) server_ctx_.use_private_key(net::buffer(cert_.key_pem), ssl::context::pem, ec);
    if (!ec) client_ctx_.add_certificate_authority(net::buffer(upstream_ca_), ec);
    if (ec) return kube::Status(kube::StatusCode::kInternal, "TLS set-up: " + ec.message());
    client_ctx_.set_verify_mode(ssl::verify_peer);

    acceptor_.emplace(ioc_);
    tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor_->open(ep.protocol(), ec);
    if (!ec) acceptor_->bind(ep, ec);
    if (!ec) acceptor_->listen(net::socket_base::max_listen_connections, ec);
    if (ec) return kube::Status(kube::StatusCode::kInternal, "listen: " + ec.message());
    port_ = acceptor_->local_endpoint().port();
    accept_thread_ = std::thread([this] { AcceptLoop(); });
    return kube::Status::Ok();
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    if (acceptor_) ::shutdown(acceptor_->native_handle(), SHUT_RDWR);
    if (accept_thread_.joinable()) accept_thread_.join();
    std::vector<Worker> workers;
    {
      std::lock_guard lock(mu_);
      workers.swap(workers_);
    }
    for (auto& w : workers) w.thread.join();
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
  }

  int port() const { return port_; }
  const std::string& ca_pem() const { return cert_.cert_pem; }

  void set_rates(const FaultRates& r) {
    std::lock_guard lock(mu_);
    rates_ = r;
  }
  FaultCounts counts() const {
    std::lock_guard lock(mu_);
    return counts_;
  }

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  void AcceptLoop() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket sock(ioc_);
      acceptor_->accept(sock, ec);
      std::lock_guard lock(mu_);
      if (stopping_) return;
      if (ec) continue;
      // Reap the connections that ended.
      for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->done->load()) {
          it->thread.join();
          it = workers_.erase(it);
        } else {
          ++it;
        }
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      open_fds_.insert(sock.native_handle());
      workers_.push_back({std::thread([this, s = std::move(sock), done]() mutable {
                            Serve(std::move(s));
                            done->store(true);
                          }),
                          done});
    }
  }

  // Registers `fd` so that Stop() can shut it down; false when stopping.
  bool Track(int fd) {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    open_fds_.insert(fd);
    return true;
  }
  void Untrack(int fd) {
    std::lock_guard lock(mu_);
    open_fds_.erase(fd);
  }

  Fault Draw(bool watch) {
    std::lock_guard lock(mu_);
    ++counts_.requests;
    if (watch && rates_.cut_first_watch && rates_.cut_watch > 0 && counts_.cut_watch == 0) {
      return ++counts_.cut_watch, Fault::kCutWatch;
    }
    const double x = std::uniform_real_distribution<double>(0, 1)(rng_);
    double edge = rates_.error500;
    if (x < edge) return ++counts_.error500, Fault::kError500;
    if (x < (edge += rates_.throttle)) return ++counts_.throttle, Fault::kThrottle;
    if (x < (edge += rates_.reset)) return ++counts_.reset, Fault::kReset;
    if (x < (edge += rates_.slow)) return ++counts_.slow, Fault::kSlow;
    if (watch && x < (edge += rates_.cut_watch)) return ++counts_.cut_watch, Fault::kCutWatch;
    return Fault::kNone;
  }

  template <class Stream>
  static bool Answer(Stream& down, unsigned version, bool keep_alive, int code,
                     const std::string& reason, const std::string& message) {
    http::response<http::string_body> res{static_cast<http::status>(code), version};
    res.set(http::field::content_type, "application/json");
    if (code == 429) res.set(http::field::retry_after, "1");
    res.body() = StatusBody(code, reason, message);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    boost::system::error_code ec;
    http::write(down, res, ec);
    return !ec && keep_alive;
  }

  void Serve(tcp::socket sock) {
    const int fd = sock.native_handle();
    ssl::stream<tcp::socket> down(std::move(sock), server_ctx_);
    boost::system::error_code ec;
    down.handshake(ssl::stream_base::server, ec);
    beast::flat_buffer buffer;
    while (!ec) {
      http::request<http::string_body> req;
      http::read(down, buffer, req, ec);
      if (ec) break;
      const Fault fault = Draw(IsWatch(req.target()));
      if (fault == Fault::kReset) {
        down.lowest_layer().set_option(net::socket_base::linger(true, 0), ec);
        break;
      }
      if (fault == Fault::kError500) {
        if (!Answer(down, req.version(), req.keep_alive(), 500, "InternalError",
                    "Internal error occurred: injected by the test bed's fault proxy")) {
          break;
        }
        continue;
      }
      if (fault == Fault::kThrottle) {
        if (!Answer(down, req.version(), req.keep_alive(), 429, "TooManyRequests",
                    "the server has received too many requests and has asked us to try again "
                    "later")) {
          break;
        }
        continue;
      }
      if (fault == Fault::kSlow) std::this_thread::sleep_for(SlowDelay());
      Forward(down, fd, std::move(req), fault == Fault::kCutWatch);
      break;
    }
    Untrack(fd);
    down.lowest_layer().close(ec);
  }

  std::chrono::milliseconds SlowDelay() const {
    std::lock_guard lock(mu_);
    return rates_.slow_delay;
  }
  std::chrono::milliseconds CutAfter() const {
    std::lock_guard lock(mu_);
    return rates_.cut_after;
  }

  // Sends `req` upstream (Connection: close) and relays the answer until the
  // upstream closes; with `cut`, both sides are shut down after cut_after.
  void Forward(ssl::stream<tcp::socket>& down, int down_fd, http::request<http::string_body> req,
               bool cut) {
    boost::system::error_code ec;
    tcp::socket up_sock(ioc_);
    up_sock.connect({net::ip::make_address(upstream_host_, ec), upstream_port_}, ec);
    if (ec) return;
    const int up_fd = up_sock.native_handle();
    if (!Track(up_fd)) return;
    ssl::stream<tcp::socket> up(std::move(up_sock), client_ctx_);
    up.handshake(ssl::stream_base::client, ec);
    if (!ec) {
      std::lock_guard lock(mu_);
      ++counts_.forwarded;
    }
    req.keep_alive(false);
    if (!ec) http::write(up, req, ec);
    std::jthread cutter;
    if (!ec && cut) {
      cutter = std::jthread([this, up_fd, down_fd](std::stop_token stop) {
        std::mutex m;
        std::unique_lock lock(m);
        std::condition_variable_any cv;
        if (!cv.wait_for(lock, stop, CutAfter(), [] { return false; }) && !stop.stop_requested()) {
          ::shutdown(up_fd, SHUT_RDWR);
          ::shutdown(down_fd, SHUT_RDWR);
        }
      });
    }
    std::vector<char> chunk(16384);
    while (!ec) {
      const size_t n = up.read_some(net::buffer(chunk), ec);
      if (n > 0) {
        boost::system::error_code wec;
        net::write(down, net::buffer(chunk.data(), n), wec);
        if (wec) break;
      }
    }
    if (cutter.joinable()) {
      cutter.request_stop();
      cutter.join();
    }
    Untrack(up_fd);
    up.lowest_layer().close(ec);
  }

  const std::string upstream_url_;
  const std::string upstream_ca_;
  std::string upstream_host_;
  uint16_t upstream_port_ = 0;
  kube::PemCertificate cert_;
  net::io_context ioc_;
  ssl::context server_ctx_{ssl::context::tls_server};
  ssl::context client_ctx_{ssl::context::tls_client};
  std::optional<tcp::acceptor> acceptor_;
  int port_ = 0;
  std::thread accept_thread_;

  mutable std::mutex mu_;
  FaultRates rates_;
  std::mt19937_64 rng_;
  FaultCounts counts_;
  bool stopping_ = false;
  std::set<int> open_fds_;
  std::vector<Worker> workers_;
};

FaultProxy::FaultProxy(std::string upstream_url, std::string upstream_ca_pem, FaultRates rates)
    : impl_(std::make_unique<Impl>(std::move(upstream_url), std::move(upstream_ca_pem), rates)) {}

FaultProxy::~FaultProxy() = default;

kube::Status FaultProxy::Start() { return impl_->Start(); }
int FaultProxy::port() const { return impl_->port(); }
std::string FaultProxy::url() const { return "https://127.0.0.1:" + std::to_string(port()); }
const std::string& FaultProxy::ca_pem() const { return impl_->ca_pem(); }
void FaultProxy::set_rates(const FaultRates& rates) { impl_->set_rates(rates); }
FaultCounts FaultProxy::counts() const { return impl_->counts(); }

std::string FaultProxy::Kubeconfig(const std::string& token) const {
  return "apiVersion: v1\nkind: Config\nclusters:\n- name: harvester\n  cluster:\n    server: " +
         url() + "\n    certificate-authority-data: " + kube::Base64Encode(ca_pem()) +
         "\nusers:\n- name: harvester\n  user:\n    token: " + token +
         "\ncontexts:\n- name: harvester\n  context:\n    cluster: harvester\n    user: "
         "harvester\ncurrent-context: harvester\n";
}

std::string FaultProxy::Describe(const FaultCounts& c) {
  return std::to_string(c.requests) + " requests, " + std::to_string(c.forwarded) + " forwarded, " +
         std::to_string(c.faults()) + " faults: " + std::to_string(c.error500) + " 500s, " +
         std::to_string(c.throttle) + " 429s, " + std::to_string(c.reset) + " resets, " +
         std::to_string(c.slow) + " slow, " + std::to_string(c.cut_watch) + " cut watches";
}

}  // namespace caphv::testing
