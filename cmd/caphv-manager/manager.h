// File: cmd/caphv-manager/manager.h
//
// Manager: starts and stops the parts of caphv-manager in controller-runtime's
// order (pkg/manager/internal.go):
//
//   start: probe + metrics servers -> webhook server -> caches (every
//          replica; waits until they synced) -> leader election ->
//          leader-only runnables
//   stop:  leader-only runnables -> lease release -> caches -> webhook
//          server -> probe + metrics servers, all within `graceful_timeout`
//          (30 s).
//
// Caches (AddCache) start on every replica, leader or not, before leader
// election: a replica that wins the lease after a failover starts its
// reconcilers on warm caches. Leader election starts once every cache synced.
// The reconcilers plug in as leader-only runnables (AddLeaderRunnable): each
// runs on its own thread with a stop token that fires when the manager stops
// or leadership ends. Without --leader-elect they start right after the
// caches synced.
//
// Failures: a cache that does not sync (its start returns non-OK) or a
// leader-only runnable that returns non-OK fails readiness and stops the
// manager, which exits 1 after a graceful shutdown. A lost lease exits 1 AT
// ONCE (controller-runtime's "leader election lost" with zero graceful
// timeout): the reason is logged, the logger flushed, and the process leaves
// through std::_Exit without waiting for reconciles in flight.
//
// Metrics (/metrics on --metrics-bind-address) are served over HTTPS to
// clients whose bearer token the apiserver authenticates (TokenReview) and
// authorises for get on /metrics (SubjectAccessReview), decisions cached
// (kube/authn_authz.h); plain HTTP only with --metrics-secure=false.
//
// Every replica also runs a kube::HeapReleaser (kube/heap.h) for its whole
// life: after large deletions it gives the freed heap pages back.
//
// Readiness (/readyz): "ping"; "runnables" (fails until the caches synced and
// from the moment any cache or runnable failed); with webhooks enabled
// "webhook" (OK once the webhook server serves); all fail from the start of
// shutdown. Liveness (/healthz) has "ping" and never depends on leadership.
//
// Exit codes of Run(): 0 after a requested stop; 1 when start-up failed, a
// cache or runnable failed, or shutdown overran the graceful timeout (then
// at once); a lost lease ends the process with 1 without returning.
//
// Thread safety: AddCache() and AddLeaderRunnable() before Run(); Run() once.

#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/health.h"
#include "kube/http_server.h"
#include "kube/leader_election.h"
#include "kube/log.h"
#include "kube/status.h"
#include "options.h"

namespace caphv::manager {

// A leader-only task: runs until `stop` is requested; a non-OK result stops
// the manager with exit code 1.
using Runnable = std::function<kube::Status(std::stop_token stop)>;

// Starts a cache and blocks until it synced (OK), cannot sync (non-OK: the
// manager fails) or `stop` came first (Cancelled). The cache keeps running
// afterwards, until its stop function is called.
using CacheStart = std::function<kube::Status(std::stop_token stop)>;

class Manager {
 public:
  // `client` may be null only when leader election is off and metrics are
  // not secure (or disabled).
  Manager(Options options, std::shared_ptr<kube::Client> client);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

  // A cache started on every replica before leader election; `stop` (may be
  // empty) runs during shutdown, after the leader-only runnables returned.
  void AddCache(std::string name, CacheStart start, std::function<void()> stop);
  void AddLeaderRunnable(std::string name, Runnable runnable);

  // Starts everything, blocks until `stop` (or a fatal error), then shuts
  // down. Returns the process exit code.
  int Run(std::stop_token stop);

  std::chrono::seconds graceful_timeout{30};

 private:
  struct Named {
    std::string name;
    Runnable run;
  };
  struct Cache {
    std::string name;
    CacheStart start;
    std::function<void()> stop;
  };

  kube::Status StartServers();
  // /metrics: HTTPS behind TokenReview + SubjectAccessReview (certificate
  // from --metrics-cert-path, else self-signed), or plain HTTP when
  // --metrics-secure=false.
  kube::Status StartMetricsServer(kube::HttpHandler handler);
  // Starts every cache and waits until all synced; false when one failed or
  // `stop` came first.
  bool StartCaches(std::stop_token stop);
  void StopCaches();
  // Caches, then (with `elector`) leader election and, while leading, the
  // leader-only runnables; without `elector` the runnables at once. Blocks
  // until `stop`, a failure or the end of the election.
  void RunLifecycle(std::stop_token stop, kube::LeaderElector* elector);
  // Runs every leader-only runnable until `stop`; blocks.
  void RunLeaderRunnables(std::stop_token stop);
  // Records that `what` failed (readiness fails from now on) and wakes Run().
  void Fail(const std::string& what);
  // The lease is lost: logs, flushes the logger and exits 1 at once.
  [[noreturn]] void ExitLeaseLost();
  void ShutdownServers(std::chrono::steady_clock::time_point deadline);

  Options options_;
  std::shared_ptr<kube::Client> client_;
  kube::log::Logger log_;
  std::vector<Cache> caches_;
  std::vector<Named> runnables_;

  kube::health::Probes probes_;
  std::unique_ptr<kube::HttpServer> probe_server_;
  std::unique_ptr<kube::HttpServer> metrics_server_;
  std::unique_ptr<kube::HttpServer> webhook_server_;
  std::atomic<bool> webhook_serving_{false};
  std::atomic<bool> caches_synced_{false};

  std::mutex mu_;
  std::condition_variable_any cv_;
  std::string failed_;  // guarded by mu_: what failed first ("" = nothing)
};

}  // namespace caphv::manager
