// File: cmd/caphv-manager/manager.cc
//
// Start-up and shutdown sequencing of caphv-manager. See manager.h.

#include "manager.h"

#include <cstdlib>
#include <exception>
#include <thread>
#include <utility>

#include "controllers/metrics.h"
#include "kube/authn_authz.h"
#include "kube/heap.h"
#include "kube/leader_election.h"
#include "kube/metrics.h"
#include "kube/self_signed.h"
#include "webhooks/admission.h"

namespace caphv::manager {
namespace {

std::chrono::milliseconds Remaining(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

// Runs `f` (a cache start or a runnable) turning an exception into an error.
kube::Status Guarded(const std::function<kube::Status(std::stop_token)>& f, std::stop_token stop) {
  try {
    return f(stop);
  } catch (const std::exception& e) {
    return kube::Status(kube::StatusCode::kInternal, std::string("exception: ") + e.what());
  } catch (...) {
    return kube::Status(kube::StatusCode::kInternal, "unknown exception");
  }
}

}  // namespace

Manager::Manager(Options options, std::shared_ptr<kube::Client> client)
    : options_(std::move(options)),
      client_(std::move(client)),
      log_(kube::log::Root().WithName("manager")) {}

Manager::~Manager() = default;

void Manager::AddCache(std::string name, CacheStart start, std::function<void()> stop) {
  caches_.push_back({std::move(name), std::move(start), std::move(stop)});
}

void Manager::AddLeaderRunnable(std::string name, Runnable runnable) {
  runnables_.push_back({std::move(name), std::move(runnable)});
}

void Manager::Fail(const std::string& what) {
  log_.Error(what, "Stopping the manager");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.empty()) failed_ = what;
  }
  cv_.notify_all();
}

void Manager::ExitLeaseLost() {
  log_.Error("leader election lost", "Exiting at once without a graceful shutdown",
             {{"lease",
               kube::log::KRef(options_.leader_election_namespace, options_.leader_election_id)}});
  kube::log::Flush();
  std::_Exit(1);
}

kube::Status Manager::StartServers() {
  controllers::metrics::Register();
  probes_.AddHealthzCheck("ping", kube::health::Ping());
  probes_.AddReadyzCheck("ping", kube::health::Ping());
  probes_.AddReadyzCheck("runnables", [this]() -> kube::Status {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!failed_.empty()) return kube::Status(kube::StatusCode::kUnavailable, failed_);
    }
    if (!caches_synced_.load()) {
      return kube::Status(kube::StatusCode::kUnavailable, "caches not synced");
    }
    return {};
  });
  if (options_.enable_webhooks) {
    probes_.AddReadyzCheck("webhook", [this]() -> kube::Status {
      if (webhook_serving_.load()) return {};
      return kube::Status(kube::StatusCode::kUnavailable, "webhook server not started");
    });
  }

  auto metrics_handler = [](const kube::HttpRequest&) {
    return kube::HttpResponse{.status = 200,
                              .content_type = kube::metrics::kContentType,
                              .body = controllers::metrics::SerializeAll()};
  };
  if (options_.health_probe_bind_address != "0") {
    probe_server_ = std::make_unique<kube::HttpServer>(kube::HttpServerOptions{
        .name = "health-probe", .bind_address = options_.health_probe_bind_address});
    probes_.Register(*probe_server_, /*with_metrics=*/false);
    CAPHV_RETURN_IF_ERROR(probe_server_->Start());
    log_.Info("Serving health probes", {{"address", probe_server_->address()}});
  }
  if (options_.metrics_bind_address != "0") {
    CAPHV_RETURN_IF_ERROR(StartMetricsServer(metrics_handler));
  }
  if (options_.enable_webhooks) {
    webhook_server_ = std::make_unique<kube::HttpServer>(
        kube::HttpServerOptions{.name = "webhook",
                                .bind_address = ":" + std::to_string(options_.webhook_port),
                                .threads = 2,
                                .body_limit = webhooks::kAdmissionBodyLimit,
                                .cert_dir = options_.webhook_cert_dir,
                                .cert_name = options_.webhook_cert_name,
                                .key_name = options_.webhook_key_name});
    webhooks::RegisterWebhooks(
        *webhook_server_, {.ns = options_.watch_namespace, .watch_filter = options_.watch_filter});
    CAPHV_RETURN_IF_ERROR(webhook_server_->Start());
    webhook_serving_.store(true);
    log_.Info("Serving webhooks",
              {{"address", webhook_server_->address()}, {"certDir", options_.webhook_cert_dir}});
  }
  return {};
}

kube::Status Manager::StartMetricsServer(kube::HttpHandler handler) {
  kube::HttpServerOptions server{.name = "metrics", .bind_address = options_.metrics_bind_address};
  std::string certificate = "none";
  if (options_.metrics_secure) {
    if (client_ == nullptr) {
      return kube::Status(kube::StatusCode::kInvalidArgument,
                          "secure metrics need a client of the apiserver");
    }
    if (!options_.metrics_cert_path.empty()) {
      server.cert_dir = options_.metrics_cert_path;
      server.cert_name = options_.metrics_cert_name;
      server.key_name = options_.metrics_cert_key;
      certificate = options_.metrics_cert_path;
    } else {
      // controller-runtime's metrics server does the same without a CertDir.
      CAPHV_ASSIGN_OR_RETURN(auto pem,
                             kube::GenerateSelfSignedCertificate({"localhost", "127.0.0.1"}));
      server.cert_pem = std::move(pem.cert_pem);
      server.key_pem = std::move(pem.key_pem);
      certificate = "self-signed";
    }
    auto filter = std::make_shared<kube::AccessFilter>(kube::NewApiServerAccessReviewer(client_));
    handler = kube::AccessFilter::Wrap(std::move(filter), std::move(handler));
  }
  metrics_server_ = std::make_unique<kube::HttpServer>(std::move(server));
  metrics_server_->Handle("/metrics", std::move(handler));
  CAPHV_RETURN_IF_ERROR(metrics_server_->Start());
  log_.Info("Serving metrics", {{"address", metrics_server_->address()},
                                {"secure", options_.metrics_secure},
                                {"certificate", certificate}});
  return {};
}

bool Manager::StartCaches(std::stop_token stop) {
  for (const auto& c : caches_) {
    log_.Info("Starting cache and waiting for it to sync", {{"cache", c.name}});
    kube::Status s = Guarded(c.start, stop);
    if (s.IsCancelled() || stop.stop_requested()) return false;
    if (!s.ok()) {
      log_.Error(s, "Cache did not sync", {{"cache", c.name}});
      Fail("cache " + c.name + " did not sync: " + s.message());
      return false;
    }
  }
  caches_synced_.store(true);
  log_.Info("Caches synced", {{"count", caches_.size()}});
  return true;
}

void Manager::StopCaches() {
  for (auto it = caches_.rbegin(); it != caches_.rend(); ++it) {
    if (!it->stop) continue;
    try {
      it->stop();
    } catch (const std::exception& e) {
      log_.Error(e.what(), "Cache did not stop cleanly", {{"cache", it->name}});
    }
  }
}

void Manager::RunLeaderRunnables(std::stop_token stop) {
  if (runnables_.empty()) {
    log_.V(1).Info("No leader-only runnables registered");
  }
  std::vector<std::jthread> threads;
  threads.reserve(runnables_.size());
  for (const auto& r : runnables_) {
    threads.emplace_back([this, &r, stop] {
      auto logger = log_.WithValues({{"runnable", r.name}});
      logger.Info("Starting runnable");
      kube::Status s = Guarded(r.run, stop);
      if (!s.ok() && !s.IsCancelled()) {
        logger.Error(s, "Runnable failed");
        Fail("runnable " + r.name + " failed: " + s.message());
        return;
      }
      logger.Info("Stopped runnable");
    });
  }
  // Wait for stop, then join every runnable (jthread joins on destruction
  // without requesting its own stop: `stop` is the shared token).
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, stop, [] { return false; });
  lock.unlock();
  threads.clear();
}

void Manager::ShutdownServers(std::chrono::steady_clock::time_point deadline) {
  if (webhook_server_) {
    webhook_serving_.store(false);
    if (auto s = webhook_server_->Shutdown(Remaining(deadline)); !s.ok()) {
      log_.Error(s, "Webhook server did not stop cleanly");
    }
  }
  for (auto* server : {metrics_server_.get(), probe_server_.get()}) {
    if (server == nullptr) continue;
    if (auto s = server->Shutdown(Remaining(deadline)); !s.ok()) {
      log_.Error(s, "HTTP server did not stop cleanly");
    }
  }
}

void Manager::RunLifecycle(std::stop_token stop, kube::LeaderElector* elector) {
  if (!StartCaches(stop)) return;
  if (elector == nullptr) {
    RunLeaderRunnables(stop);
    return;
  }
  kube::LeaderCallbacks callbacks;
  callbacks.on_started_leading = [this](std::stop_token leading) {
    log_.Info("Successfully acquired lease; starting leader-only runnables");
    RunLeaderRunnables(leading);
  };
  callbacks.on_stopped_leading = [this] { log_.Info("Stopped leading"); };
  callbacks.on_new_leader = [this](const std::string& id) {
    log_.V(1).Info("New leader elected", {{"identity", id}});
  };
  callbacks.on_lost = [this] { ExitLeaseLost(); };
  kube::Status s = elector->Run(stop, std::move(callbacks));
  if (!s.ok()) ExitLeaseLost();  // on_lost already left; never lead again
}

int Manager::Run(std::stop_token stop) {
  std::stop_source internal;  // ends caches start, elections and runnables
  if (auto st = StartServers(); !st.ok()) {
    log_.Error(st, "Unable to start the manager's servers");
    ShutdownServers(std::chrono::steady_clock::now() + std::chrono::seconds(5));
    return 1;
  }

  // Gives freed heap pages back after large deletions, leader or not (every
  // replica's caches shrink), after closing the management connections idle
  // for 90 s (a quiet manager makes no request that would); stopped and
  // joined when Run() returns.
  std::jthread heap_releaser([logger = kube::log::Root().WithName("heap"),
                              client = client_](std::stop_token s) {
    kube::HeapReleaser().Run(std::move(s), logger, [&client] { client->CloseIdleConnections(); });
  });

  std::shared_ptr<kube::LeaderElector> elector;
  if (options_.leader_elect) {
    kube::LeaderElectionConfig config{.lease_namespace = options_.leader_election_namespace,
                                      .lease_name = options_.leader_election_id,
                                      .identity = kube::DefaultIdentity(),
                                      .lease_duration = options_.lease_duration,
                                      .renew_deadline = options_.renew_deadline,
                                      .retry_period = options_.retry_period,
                                      .release_on_cancel = true};
    auto created = kube::LeaderElector::New(client_, config);
    if (!created.ok()) {
      log_.Error(created.status(), "Invalid leader election configuration");
      ShutdownServers(std::chrono::steady_clock::now() + std::chrono::seconds(5));
      return 1;
    }
    elector = std::move(*created);
  }

  // Caches on every replica, then leader election, then the leader-only
  // runnables, all on one thread so that each step waits for the one before.
  std::jthread lifecycle([this, elector, token = internal.get_token()] {
    try {
      RunLifecycle(token, elector.get());
    } catch (const std::exception& e) {  // a thread top: nothing may escape
      Fail(std::string("manager lifecycle: exception: ") + e.what());
    } catch (...) {
      Fail("manager lifecycle: unknown exception");
    }
  });
  log_.Info("Manager started");

  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, stop, [this] { return !failed_.empty(); });
  }
  std::string failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed = failed_;
  }
  log_.Info("Stopping and waiting for runnables, leader election, caches and servers",
            {{"timeout", std::to_string(graceful_timeout.count()) + "s"}});
  probes_.SetShuttingDown();

  // Bound the whole shutdown: past the timeout, exit at once.
  auto deadline = std::chrono::steady_clock::now() + graceful_timeout;
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog([&, this] {
    std::unique_lock<std::mutex> lock(done_mu);
    if (!done_cv.wait_until(lock, deadline, [&] { return done; })) {
      log_.Error("graceful shutdown timed out", "Exiting without a clean shutdown",
                 {{"timeout", std::to_string(graceful_timeout.count()) + "s"}});
      kube::log::Flush();
      std::_Exit(1);
    }
  });

  internal.request_stop();
  lifecycle.join();  // leader-only runnables returned, lease released
  StopCaches();
  ShutdownServers(deadline);
  {
    std::lock_guard<std::mutex> lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  watchdog.join();

  if (!failed.empty()) {
    log_.Error(failed, "Manager stopped");
    return 1;
  }
  log_.Info("Manager stopped");
  return 0;
}

}  // namespace caphv::manager
