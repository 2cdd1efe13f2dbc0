// File: test/support/silent_server.h
//
// SilentServer: a TCP listener on 127.0.0.1 that accepts every connection
// and never sends a byte (a Harvester that hangs: the TCP handshake succeeds,
// the TLS handshake never completes). Connections are held open until the
// server is destroyed. For tests of timeouts and of callers that must not
// stall on such an endpoint.
//
// Thread safety: construct and destroy on one thread; connections() from any.

#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace caphv::testing {

class SilentServer {
 public:
  SilentServer();  // listens on an ephemeral port; port() == 0 on failure
  ~SilentServer();
  SilentServer(const SilentServer&) = delete;
  SilentServer& operator=(const SilentServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  // Connections accepted so far.
  int connections() const { return accepted_.load(); }

 private:
  void Run(std::stop_token stop);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::vector<int> held_;  // accepted sockets; the accept thread only
  std::jthread thread_;
};

// `kubeconfig` with the server of its clusters replaced by `server`.
std::string WithServer(const std::string& kubeconfig, const std::string& server);

}  // namespace caphv::testing
