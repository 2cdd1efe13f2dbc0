// File: kube/transport.h
//
// Transport: HTTP(S) to one apiserver over libcurl, with the TLS material and
// credentials of a RestConfig. Keeps a small pool of easy handles so
// connections are reused across calls: at most 16 idle, each closed once it
// has been idle for RestConfig::idle_connection_timeout (90 s, as client-go's
// transport), when the transport is next used or CloseIdle() is called. An idle connection
// holds its TLS state (tens of KiB). Used only by Client.
//
// Thread safety: all methods may be called concurrently.

#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "kube/config.h"
#include "kube/status.h"

namespace caphv::kube {

// What an apiserver may send at most (the server may be anyone's: an
// identity kubeconfig names it). A whole answer: 128 MiB (a LIST page of
// the largest objects etcd stores is far below); one watch event: 64 MiB;
// an error answer is kept up to 1 MiB. Beyond, the request fails
// (Unavailable: the server misbehaves) instead of the manager's memory.
inline constexpr size_t kMaxResponseBytes = size_t{128} << 20;
inline constexpr size_t kMaxWatchEventBytes = size_t{64} << 20;
inline constexpr size_t kMaxErrorBodyBytes = size_t{1} << 20;

struct TransportResponse {
  int status = 0;
  std::string body;
};

class Transport {
 public:
  explicit Transport(RestConfig config);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // One request/response. A transport failure (connection refused, TLS) is an
  // Unavailable status; any HTTP status is returned in the response.
  StatusOr<TransportResponse> Do(std::string_view method, const std::string& path_and_query,
                                 const std::string& body, std::string_view content_type,
                                 std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // A streaming GET. For a 200 response each newline-terminated line of the
  // body goes to `on_line` (return false to stop). For any other status the
  // body is collected and returned. Stops with Cancelled when `stop` fires,
  // and with Timeout when no byte arrives for `idle_timeout`.
  StatusOr<TransportResponse> Stream(const std::string& path_and_query,
                                     const std::function<bool(std::string_view)>& on_line,
                                     std::stop_token stop, std::chrono::seconds idle_timeout);

  // Closes the pooled connections idle for at least `idle_for` (all of them
  // with zero); returns how many.
  size_t CloseIdle(std::chrono::steady_clock::duration idle_for);

 private:
  void* Acquire();             // CURL*
  void Release(void* handle);  // CURL*
  Status Prepare(void* handle, std::string_view method, const std::string& path_and_query,
                 const std::string& body, std::string_view content_type, void** headers);

  RestConfig config_;
  // With tls-server-name: requests go to https://<tls name>:<port><prefix>
  // (so SNI and the certificate check use that name), connected to the
  // server's address (CURLOPT_CONNECT_TO `connect_to_`) with the server's
  // Host header, as client-go's TLSClientConfig.ServerName does.
  std::string base_url_;             // "" = config_.server
  std::string connect_to_;           // "<tls name>:<port>:<host>:<port>"
  std::string host_header_;          // "Host: <host>:<port>"
  void* connect_to_list_ = nullptr;  // curl_slist* holding connect_to_
  struct IdleHandle {
    void* handle;  // CURL*
    std::chrono::steady_clock::time_point since;
  };
  // Removes the handles idle since before `cutoff` (the oldest are first);
  // the caller cleans them up outside mu_.
  std::vector<void*> TakeIdleBefore(std::chrono::steady_clock::time_point cutoff);

  std::mutex mu_;
  std::vector<IdleHandle> idle_;  // ready for reuse, oldest first
};

}  // namespace caphv::kube
