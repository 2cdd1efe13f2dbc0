// File: kube/http_server.h
//
// HttpServer: the one HTTP/1.1 server of the runtime (probes, metrics,
// admission webhooks), built on Boost.Beast/Asio and kept out of this header.
//
//   HttpServer server({.name = "webhook", .bind_address = ":9443",
//                      .cert_dir = "/tmp/k8s-webhook-server/serving-certs",
//                      .body_limit = 7 << 20});
//   server.Handle("/validate-x", [](const HttpRequest& r) { return HttpResponse{...}; });
//   CAPHV_RETURN_IF_ERROR(server.Start());   // binds; server.port() is the real port
//   ...
//   server.Shutdown(std::chrono::seconds(30)).IgnoreError();
//
// Serving: plain HTTP, or TLS (>= 1.2) when `cert_dir` is set. The
// certificate and key files are polled every `cert_poll_interval`; when
// either changes, a new TLS context is built and used for connections
// accepted afterwards (existing connections keep the old one). A bad new pair
// is logged and the old one kept. Without `cert_dir`, a `cert_pem`/`key_pem`
// pair given in memory (e.g. kube/self_signed.h) serves TLS too, unchanged
// for the life of the server.
//
// Routing: an exact path match wins; otherwise the longest registered
// pattern ending in '/' that prefixes the path; otherwise 404. Routes must be
// registered before Start().
//
// Threads: a fixed pool of `threads` runs all connections and handlers;
// handlers are synchronous and should be short. Shutdown() stops accepting,
// closes idle keep-alive connections, waits (the gate) for requests in
// flight to be answered, and returns kTimeout if `timeout` passes first (then
// closes every connection). Shutdown() does not wait for a handler still
// running at the timeout; the destructor does.
//
// Thread safety: Handle() before Start() only; Start(), Shutdown(), port()
// and address() may be called from any thread.

#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kube/status.h"

namespace caphv::kube {

namespace internal {
class HttpServerImpl;
}  // namespace internal

namespace http {

struct Request {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // "/readyz/ping?verbose=1"
  std::string path;                                          // "/readyz/ping" (not percent-decoded)
  std::string query;                                         // "verbose=1" (without '?')
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;
  std::string remote_address;  // "127.0.0.1:51234"

  // First value of a header (name case-insensitive), or "".
  std::string Header(std::string_view name) const;
  // True when the query string has `key` (with or without a value).
  bool HasQueryParam(std::string_view key) const;
  // All values of a query parameter, percent-decoded.
  std::vector<std::string> QueryParams(std::string_view key) const;
};

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

using Handler = std::function<Response(const Request&)>;

}  // namespace http

// The names used across the code base.
using HttpRequest = http::Request;
using HttpResponse = http::Response;
using HttpHandler = http::Handler;

struct HttpServerOptions {
  std::string name = "http";           // for logs
  std::string bind_address = ":8080";  // ":port", "host:port", "[v6]:port"; port 0 = any
  int threads = 2;                     // pool size
  size_t body_limit = 1 << 20;         // bytes; larger requests get 413
  // Request bodies buffered at once over all connections: a request whose
  // Content-Length (a chunked one: body_limit) would pass it is answered 429
  // with Retry-After before its body is read. 0 = 4 x body_limit.
  size_t buffered_limit = 0;
  // Connections at once; one more is closed as soon as it is accepted.
  size_t max_connections = 256;
  // Per request (headers + body) and keep-alive idle: a connection that
  // has sent part of a request but not all of it by then is answered 408
  // and closed; an idle one is closed (its reservation freed either way).
  std::chrono::seconds read_timeout{30};
  std::chrono::seconds write_timeout{30};
  // TLS: empty cert_dir and cert_pem = plain HTTP.
  std::string cert_dir;
  std::string cert_name = "tls.crt";
  std::string key_name = "tls.key";
  std::chrono::milliseconds cert_poll_interval{10000};
  // TLS from memory, used when cert_dir is empty: PEM chain and key.
  std::string cert_pem;
  std::string key_pem;
};

class HttpServer {
 public:
  explicit HttpServer(HttpServerOptions options);
  ~HttpServer();  // Shutdown(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // `pattern` is an exact path, or a prefix when it ends with '/'.
  void Handle(std::string pattern, HttpHandler handler);

  // Loads TLS material (if any), binds, listens and starts the pool.
  Status Start();

  // The bound port (after Start()), e.g. the one chosen for port 0.
  int port() const;
  // "127.0.0.1:40123" (after Start()).
  std::string address() const;
  bool tls() const;

  // Graceful stop; see the file comment. Idempotent.
  Status Shutdown(std::chrono::milliseconds timeout);

  // Requests answered so far (tests and debugging).
  uint64_t requests_served() const;

 private:
  std::unique_ptr<internal::HttpServerImpl> impl_;
};

// Splits "host:port" / ":port" / "[v6]:port" into host ("" = any) and port.
StatusOr<std::pair<std::string, int>> ParseBindAddress(std::string_view address);

// True when `address` ("host:port") listens on a loopback address only:
// 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) or "localhost". ":port" (every
// interface) and any other host are not.
bool IsLoopbackBindAddress(std::string_view address);

}  // namespace caphv::kube
