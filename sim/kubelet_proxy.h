// File: sim/kubelet_proxy.h
//
// The network between the workload apiserver and the simulated guests'
// kubelets. The bed gives that apiserver an egress selector whose `cluster`
// traffic (pod port-forward, exec, logs, node proxy) goes as HTTP CONNECT
// over a Unix socket, which this proxy serves: a CONNECT to a live guest
// (its Node name or one of its addresses, port 10250) is tunnelled to the
// kubelet server that plays every guest's kubelet (kwok's, in the bed); a
// dead or unknown guest is refused at once (502), as an unreachable host
// would be, so callers move on to the next node instead of waiting. Loopback
// targets pass through unchanged. Guest addresses stay what they are; no
// traffic leaves 127.0.0.1.
//
// Thread safety: Start/Stop from one thread; `allow` is called from the
// proxy's thread.

#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "kube/status.h"

namespace caphv::sim {

struct KubeletProxyOptions {
  std::string socket_path;  // the Unix socket the apiserver connects to
  std::string kubelet_host = "127.0.0.1";
  int kubelet_port = 0;  // the kubelet server every live guest's CONNECT reaches
  // "" when `host` is a live guest; otherwise why it is unreachable.
  std::function<std::string(const std::string& host)> allow;
};

// The host and port of a CONNECT request's target in authority form
// ("host:port", "[v6]:port"); false when it is not one. (Beast's parser
// reads the request head.)
bool ParseConnectTarget(std::string_view target, std::string* host, std::string* port);

class KubeletProxy {
 public:
  explicit KubeletProxy(KubeletProxyOptions options);
  ~KubeletProxy();
  KubeletProxy(const KubeletProxy&) = delete;
  KubeletProxy& operator=(const KubeletProxy&) = delete;

  // Binds the socket (replacing a stale one) and serves on a thread.
  kube::Status Start();
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace caphv::sim
