// File: test/support/fault_proxy.h
//
// FaultProxy: an HTTPS proxy on 127.0.0.1 in front of one apiserver that
// answers a configurable share of requests with a fault instead of the
// apiserver's answer, as a misbehaving Harvester (or the network in front of
// it) would:
//
//   error500   500 InternalError (a metav1.Status body)
//   throttle   429 TooManyRequests with Retry-After: 1 (a metav1.Status body)
//   reset      the connection reset (RST) before any answer
//   slow       forwarded after `slow_delay`
//   cut_watch  a watch forwarded, then cut mid-stream after `cut_after`
//
//   FaultProxy proxy("https://127.0.0.1:6443", upstream_ca_pem,
//                    {.error500 = 0.03, .throttle = 0.03, .reset = 0.02, .seed = 7});
//   CAPHV_RETURN_IF_ERROR(proxy.Start());
//   std::string kubeconfig = proxy.Kubeconfig(token);  // what clients use instead
//
// Each request draws one number from a generator seeded with `seed`; the
// shares are cumulative in the order above (their sum at most 1). cut_watch
// applies to watch requests only (`watch=true`/`watch=1`), the others to any.
// A forwarded request is sent upstream with `Connection: close` and the
// upstream bytes are relayed as they come (watch streams included); the
// client's connection is closed after each forwarded answer. The client's
// Authorization header goes upstream unchanged. The proxy serves TLS with a
// self-signed certificate for 127.0.0.1 (ca_pem()) and verifies the
// upstream against `upstream_ca_pem`.
//
// Thread safety: set_rates() and counts() from any thread; Start() and the
// destructor (which closes every connection and joins) on one thread.

#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "kube/status.h"

namespace caphv::testing {

struct FaultRates {
  double error500 = 0;
  double throttle = 0;
  double reset = 0;
  double slow = 0;
  double cut_watch = 0;
  std::chrono::milliseconds slow_delay{1500};
  std::chrono::milliseconds cut_after{2000};
  uint64_t seed = 1;
  // The first watch is cut whatever the draw: a run with few watches may
  // otherwise draw none (0.75^8 = 10 % at cut_watch 0.25 over 8 watches).
  bool cut_first_watch = false;
};

struct FaultCounts {
  uint64_t requests = 0;
  uint64_t forwarded = 0;
  uint64_t error500 = 0;
  uint64_t throttle = 0;
  uint64_t reset = 0;
  uint64_t slow = 0;
  uint64_t cut_watch = 0;
  uint64_t faults() const { return error500 + throttle + reset + slow + cut_watch; }
};

class FaultProxy {
 public:
  FaultProxy(std::string upstream_url, std::string upstream_ca_pem, FaultRates rates);
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Makes the certificate, binds 127.0.0.1:0 and starts accepting.
  kube::Status Start();

  int port() const;
  std::string url() const;  // https://127.0.0.1:<port>
  const std::string& ca_pem() const;

  // A kubeconfig for the proxy: its CA inline, the bearer `token`.
  std::string Kubeconfig(const std::string& token) const;

  // New shares (the generator goes on); e.g. all zero to stop injecting.
  void set_rates(const FaultRates& rates);
  FaultCounts counts() const;

  // The counts as one line ("412 requests, 41 faults: 12 500s, ...").
  static std::string Describe(const FaultCounts& c);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace caphv::testing
