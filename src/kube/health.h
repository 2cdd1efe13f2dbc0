// File: kube/health.h
//
// Health probes in controller-runtime's style (pkg/healthz) and the /metrics
// handler, as HttpServer handlers.
//
//   health::Probes probes;
//   probes.AddHealthzCheck("ping", health::Ping());
//   probes.AddReadyzCheck("webhook", [&] { return webhook_started ? Status() : ...; });
//   probes.Register(server);   // /healthz, /healthz/, /readyz, /readyz/, /metrics
//   ...
//   probes.SetShuttingDown();  // /readyz fails from now on; /healthz unaffected
//
// GET /healthz -> 200 "ok" or 500; /healthz/<check> runs one check (404 if
// unknown); ?verbose lists "[+]name ok" / "[-]name failed: reason withheld";
// ?exclude=<name> (repeatable) skips checks. With no checks, "ping" is used.
//
// Thread safety: all methods may be called concurrently; checks run on the
// HTTP server's threads and must be cheap and thread-safe.

#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "kube/http_server.h"
#include "kube/status.h"

namespace caphv::kube::health {

// OK = healthy; the message of a failure is logged, never served.
using Checker = std::function<Status()>;

// Always healthy.
Checker Ping();

// A named set of checks behind one endpoint ("healthz" or "readyz").
class CheckSet {
 public:
  explicit CheckSet(std::string name) : name_(std::move(name)) {}

  void Add(std::string name, Checker check);

  // Serves `req` whose path is "/<name>" or "/<name>/<check>".
  HttpResponse Serve(const HttpRequest& req) const;

  const std::string& name() const { return name_; }

 private:
  std::string name_;
  mutable std::mutex mu_;
  std::map<std::string, Checker> checks_;  // sorted by name, as served
};

class Probes {
 public:
  Probes();

  void AddHealthzCheck(std::string name, Checker check) {
    healthz_.Add(std::move(name), std::move(check));
  }
  void AddReadyzCheck(std::string name, Checker check) {
    readyz_.Add(std::move(name), std::move(check));
  }

  // From now on the "shutdown" readiness check fails.
  void SetShuttingDown() { shutting_down_.store(true); }
  bool shutting_down() const { return shutting_down_.load(); }

  HttpResponse ServeHealthz(const HttpRequest& req) const { return healthz_.Serve(req); }
  HttpResponse ServeReadyz(const HttpRequest& req) const { return readyz_.Serve(req); }

  // Registers /healthz, /readyz (and their sub-paths) and, if `with_metrics`,
  // /metrics on `server` (before it starts).
  void Register(HttpServer& server, bool with_metrics = true);

 private:
  CheckSet healthz_{"healthz"};
  CheckSet readyz_{"readyz"};
  std::atomic<bool> shutting_down_{false};
};

// Serves metrics::Serialize() as text/plain; version=0.0.4.
HttpResponse ServeMetrics(const HttpRequest& req);

}  // namespace caphv::kube::health
