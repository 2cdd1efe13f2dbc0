// File: kube/controller.cc
//
// Watches -> queue -> workers. See controller.h for the contract and the
// thread model.

#include "kube/controller.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <algorithm>
#include <exception>
#include <thread>

#include "kube/log.h"
#include "kube/metrics.h"

namespace caphv::kube {

std::string Request::Key() const { return ns.empty() ? name : ns + "/" + name; }

Request Request::FromKey(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return {"", std::string(key)};
  return {std::string(key.substr(0, slash)), std::string(key.substr(slash + 1))};
}

MapFunc MapToSelf() {
  return [](const Object& o) { return std::vector<Request>{{NamespaceOf(o), NameOf(o)}}; };
}

MapFunc MapToOwner(std::string group, std::string kind, bool controller_only) {
  return [group = std::move(group), kind = std::move(kind),
          controller_only](const Object& o) -> std::vector<Request> {
    std::vector<Request> out;
    auto md = o.find("metadata");
    if (md == o.end() || !md->is_object()) return out;
    auto refs = md->find("ownerReferences");
    if (refs == md->end() || !refs->is_array()) return out;
    for (const auto& ref : *refs) {
      if (!ref.is_object()) continue;
      if (controller_only && !ref.value("controller", false)) continue;
      if (ref.value("kind", "") != kind) continue;
      const std::string api_version = ref.value("apiVersion", "");
      const size_t slash = api_version.find('/');
      const std::string ref_group = slash == std::string::npos ? "" : api_version.substr(0, slash);
      if (ref_group != group) continue;
      out.push_back({NamespaceOf(o), ref.value("name", "")});
    }
    return out;
  };
}

namespace {
std::string GenerationOf(const Object& o) {
  auto md = o.find("metadata");
  if (md == o.end() || !md->is_object()) return {};
  auto g = md->find("generation");
  return g == md->end() ? std::string() : g->dump();
}
}  // namespace

Predicates GenerationChanged() {
  Predicates p;
  p.update = [](const Object& old_obj, const Object& new_obj) {
    return GenerationOf(old_obj) != GenerationOf(new_obj);
  };
  return p;
}

Predicates ResourceVersionChanged() {
  Predicates p;
  p.update = [](const Object& old_obj, const Object& new_obj) {
    return ResourceVersionOf(old_obj) != ResourceVersionOf(new_obj);
  };
  return p;
}

Predicates IgnoreStatusOnlyChanges() {
  Predicates p;
  p.update = [](const Object& old_obj, const Object& new_obj) {
    if (ResourceVersionOf(old_obj) == ResourceVersionOf(new_obj)) return true;
    return !SameBut(old_obj, new_obj, {"metadata", "status"});
  };
  return p;
}

// Prometheus children for one controller; the families live in the
// process-wide registry (same name => same family, same labels => same child).
struct Controller::Metrics {
  prometheus::Counter* success;
  prometheus::Counter* error;
  prometheus::Counter* requeue;
  prometheus::Counter* requeue_after;
  prometheus::Counter* errors;
  prometheus::Counter* terminal_errors;
  prometheus::Histogram* reconcile_time;
  prometheus::Gauge* active_workers;
  prometheus::Gauge* depth;
  prometheus::Counter* adds;
  prometheus::Counter* retries;

  explicit Metrics(const std::string& name, int max_workers) {
    auto& reg = metrics::Registry();
    auto& total = prometheus::BuildCounter()
                      .Name("controller_runtime_reconcile_total")
                      .Help("Total number of reconciliations per controller")
                      .Register(reg);
    success = &total.Add({{"controller", name}, {"result", "success"}});
    error = &total.Add({{"controller", name}, {"result", "error"}});
    requeue = &total.Add({{"controller", name}, {"result", "requeue"}});
    requeue_after = &total.Add({{"controller", name}, {"result", "requeue_after"}});
    errors = &prometheus::BuildCounter()
                  .Name("controller_runtime_reconcile_errors_total")
                  .Help("Total number of reconciliation errors per controller")
                  .Register(reg)
                  .Add({{"controller", name}});
    terminal_errors = &prometheus::BuildCounter()
                           .Name("controller_runtime_terminal_reconcile_errors_total")
                           .Help("Total number of terminal reconciliation errors per controller")
                           .Register(reg)
                           .Add({{"controller", name}});
    reconcile_time = &prometheus::BuildHistogram()
                          .Name("controller_runtime_reconcile_time_seconds")
                          .Help("Length of time per reconciliation per controller")
                          .Register(reg)
                          .Add({{"controller", name}},
                               prometheus::Histogram::BucketBoundaries{
                                   0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3,  0.35,
                                   0.4,   0.45, 0.5,   0.6,  0.7, 0.8,  0.9, 1.0,  1.25, 1.5,
                                   1.75,  2.0,  2.5,   3.0,  3.5, 4.0,  4.5, 5,    6,    7,
                                   8,     9,    10,    15,   20,  25,   30,  40,   50,   60});
    prometheus::BuildGauge()
        .Name("controller_runtime_max_concurrent_reconciles")
        .Help("Maximum number of concurrent reconciles per controller")
        .Register(reg)
        .Add({{"controller", name}})
        .Set(max_workers);
    active_workers = &prometheus::BuildGauge()
                          .Name("controller_runtime_active_workers")
                          .Help("Number of currently used workers per controller")
                          .Register(reg)
                          .Add({{"controller", name}});
    const prometheus::Labels q{{"name", name}, {"controller", name}};
    depth = &prometheus::BuildGauge()
                 .Name("workqueue_depth")
                 .Help("Current depth of workqueue")
                 .Register(reg)
                 .Add(q);
    adds = &prometheus::BuildCounter()
                .Name("workqueue_adds_total")
                .Help("Total number of adds handled by workqueue")
                .Register(reg)
                .Add(q);
    retries = &prometheus::BuildCounter()
                   .Name("workqueue_retries_total")
                   .Help("Total number of retries handled by workqueue")
                   .Register(reg)
                   .Add(q);
  }
};

Controller::Controller(Options options, ReconcileFunc reconcile)
    : name_(std::move(options.name)),
      workers_(std::max(1, options.max_concurrent_reconciles)),
      clock_(options.clock ? *options.clock : Clock::Real()),
      cache_sync_timeout_(options.cache_sync_timeout),
      reconcile_(std::move(reconcile)) {
  WorkQueue::Options q;
  q.name = name_;
  q.clock = &clock_;
  q.rate_limiter =
      options.rate_limiter ? std::move(options.rate_limiter) : DefaultControllerRateLimiter(clock_);
  if (options.register_metrics) {
    metrics_ = std::make_shared<Metrics>(name_, workers_);
    q.metrics.set_depth = [m = metrics_](int64_t d) { m->depth->Set(static_cast<double>(d)); };
    q.metrics.inc_adds = [m = metrics_] { m->adds->Increment(); };
    q.metrics.inc_retries = [m = metrics_] { m->retries->Increment(); };
  }
  queue_ = std::make_unique<WorkQueue>(std::move(q));
}

Controller::~Controller() {
  queue_->ShutDown();
  for (auto& w : watched_) w.informer->RemoveEventHandler(w.handler);
}

void Controller::EnqueueAll(const std::vector<Request>& requests) {
  for (const Request& r : requests) {
    if (!r.name.empty()) queue_->Add(r.Key());
  }
}

void Controller::Watch(std::shared_ptr<Informer> informer, MapFunc map, Predicates predicates) {
  EventHandler h;
  h.on_add = [this, map, p = predicates](const ObjectPtr& obj, bool) {
    if (p.create && !p.create(*obj)) return;
    EnqueueAll(map(*obj));
  };
  h.on_update = [this, map, p = predicates](const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
    if (p.update && !p.update(*old_obj, *new_obj)) return;
    // Both states: an owner reference or label may have moved. Duplicates
    // are dropped first so one event adds a key once.
    std::vector<Request> requests = map(*new_obj);
    if (old_obj != new_obj) {
      for (Request& r : map(*old_obj)) {
        if (std::find(requests.begin(), requests.end(), r) == requests.end()) {
          requests.push_back(std::move(r));
        }
      }
    }
    EnqueueAll(requests);
  };
  h.on_delete = [this, map = std::move(map), p = std::move(predicates)](const DeletedObject& d) {
    if (!d.object) return;
    if (p.del && !p.del(*d.object)) return;
    EnqueueAll(map(*d.object));
  };
  Informer::HandlerId id = informer->AddEventHandler(std::move(h));
  watched_.push_back({std::move(informer), id});
}

void Controller::For(std::shared_ptr<Informer> informer, Predicates predicates) {
  Watch(std::move(informer), MapToSelf(), std::move(predicates));
}

void Controller::Owns(std::shared_ptr<Informer> informer, std::string owner_group,
                      std::string owner_kind, Predicates predicates) {
  Watch(std::move(informer), MapToOwner(std::move(owner_group), std::move(owner_kind), true),
        std::move(predicates));
}

Status Controller::Run(const std::stop_token& stop) {
  if (started_.exchange(true)) {
    return Status(StatusCode::kInvalidArgument, "controller " + name_ + " already started");
  }
  const log::Logger logger = log::Root().WithName(name_);
  for (auto& w : watched_) w.informer->Start();
  for (auto& w : watched_) {
    if (!w.informer->WaitForSync(cache_sync_timeout_, stop)) {
      queue_->ShutDown();
      if (stop.stop_requested()) {
        return Status(StatusCode::kCancelled, "controller " + name_ + " stopped before sync");
      }
      Status s(StatusCode::kTimeout,
               "timed out waiting for cache of " + w.informer->options().gvr.String() + " to sync");
      logger.Error(s, "Could not wait for caches to sync");
      return s;
    }
  }
  logger.Info("Starting workers", {{"workerCount", workers_}});
  {
    std::vector<std::jthread> threads;
    threads.reserve(workers_);
    for (int i = 0; i < workers_; ++i) threads.emplace_back([this] { Worker(); });
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, stop, [] { return false; });
    logger.Info("Shutdown signal received, waiting for all workers to finish");
    queue_->ShutDown();
  }  // joins: each worker finishes its current reconcile first
  logger.Info("All workers finished");
  return Status::Ok();
}

void Controller::Worker() {
  try {
    while (std::optional<std::string> key = queue_->Get()) {
      if (metrics_) metrics_->active_workers->Increment();
      ProcessOne(*key);
      if (metrics_) metrics_->active_workers->Decrement();
      queue_->Done(*key);
    }
  } catch (const std::exception& e) {
    log::Root().WithName(name_).Error(e.what(), "Worker stopped by an exception");
  }
}

void Controller::ProcessOne(const std::string& key) {
  const Request req = Request::FromKey(key);
  const auto started = std::chrono::steady_clock::now();
  Result result;
  try {
    result = reconcile_(req);
  } catch (const std::exception& e) {
    result =
        Result::Error(Status(StatusCode::kInternal, std::string("reconcile threw: ") + e.what()));
  }
  if (metrics_) {
    metrics_->reconcile_time->Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  }
  const log::Logger logger = log::Root().WithName(name_);
  if (!result.error.ok()) {
    if (metrics_) {
      metrics_->error->Increment();
      metrics_->errors->Increment();
    }
    if (result.terminal) {
      if (metrics_) metrics_->terminal_errors->Increment();
      queue_->Forget(key);
      logger.Error(result.error, "Reconciler error", {{"request", key}, {"terminal", true}});
      return;
    }
    // A 409 is only retried (the object changed since the cache saw it; the
    // retry decides again on the new version): debug level, not an error.
    // Someone else's write made it, so its retry backs off as any failure
    // does but never longer than kConflictRetryMax: machines contending for
    // one IPPool would otherwise double each other's delays into minutes.
    if (result.error.IsConflict()) {
      logger.V(1).Info("Conflict; retrying",
                       {{"request", key}, {"err", std::string(result.error.message())}});
      // A conflict raises the key's backoff only as far as kConflictRetryMax
      // (the queue stops counting there): counted on, 30 machines contending
      // for one IPPool took a key past 5 ms x 2^16, and the 429 Harvester
      // answered next kept that machine waiting 9 min 53 s.
      queue_->AddRateLimited(key, kConflictRetryMax);
      return;
    }
    logger.Error(result.error, "Reconciler error", {{"request", key}});
    queue_->AddRateLimited(key);
    return;
  }
  if (result.requeue_after > Clock::Duration::zero()) {
    if (metrics_) metrics_->requeue_after->Increment();
    queue_->Forget(key);
    queue_->AddAfter(key, result.requeue_after);
    return;
  }
  if (result.requeue) {
    if (metrics_) metrics_->requeue->Increment();
    queue_->AddRateLimited(key);
    return;
  }
  if (metrics_) metrics_->success->Increment();
  queue_->Forget(key);
}

}  // namespace caphv::kube
