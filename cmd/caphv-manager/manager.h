// File: cmd/caphv-manager/manager.h
//
// Manager: starts and stops the parts of caphv-manager in controller-runtime's
// order (pkg/manager/internal.go):
//
//   start: probe + metrics servers -> webhook server -> (caches) ->
//          leader election -> leader-only runnables
//   stop:  leader-only runnables -> lease release -> webhook server ->
//          probe + metrics servers, all within `graceful_timeout` (30 s).
//
// The reconcilers plug in as leader-only runnables (AddLeaderRunnable): each
// runs on its own thread with a stop token that fires when the manager stops
// or leadership ends; returning a non-OK status stops the manager with an
// error. Without --leader-elect they start as soon as the servers are up.
//
// Readiness (/readyz) has "ping" and, with webhooks enabled, "webhook" (OK
// once the webhook server serves); it fails from the start of shutdown.
// Liveness (/healthz) has "ping" and never depends on leadership.
//
// Exit codes of Run(): 0 after a requested stop, 1 when start-up failed, a
// runnable failed or the lease was lost. If shutdown overruns the graceful
// timeout the process exits 1 at once.
//
// Thread safety: AddLeaderRunnable() before Run(); Run() once.

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
#include "kube/log.h"
#include "kube/status.h"
#include "options.h"

namespace caphv::manager {

// A leader-only task: runs until `stop` is requested; a non-OK result stops
// the manager with exit code 1.
using Runnable = std::function<kube::Status(std::stop_token stop)>;

class Manager {
 public:
  // `client` may be null only when leader election is off.
  Manager(Options options, std::shared_ptr<kube::Client> client);
  ~Manager();
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;

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

  kube::Status StartServers();
  // Runs every leader-only runnable until `stop`; blocks.
  void RunLeaderRunnables(std::stop_token stop);
  // Marks the manager failed and wakes Run().
  void Fail(const std::string& why);
  void ShutdownServers(std::chrono::steady_clock::time_point deadline);

  Options options_;
  std::shared_ptr<kube::Client> client_;
  kube::log::Logger log_;
  std::vector<Named> runnables_;

  kube::health::Probes probes_;
  std::unique_ptr<kube::HttpServer> probe_server_;
  std::unique_ptr<kube::HttpServer> metrics_server_;
  std::unique_ptr<kube::HttpServer> webhook_server_;
  std::atomic<bool> webhook_serving_{false};

  std::mutex mu_;
  std::condition_variable_any cv_;
  bool failed_ = false;  // guarded by mu_
};

}  // namespace caphv::manager
