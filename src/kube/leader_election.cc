// File: kube/leader_election.cc
//
// Lease-based leader election; see leader_election.h.

#include "kube/leader_election.h"

#include <prometheus/gauge.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <exception>
#include <random>
#include <thread>

#include "kube/log.h"
#include "kube/metrics.h"

namespace caphv::kube {
namespace {

prometheus::Family<prometheus::Gauge>& MasterStatusFamily() {
  static auto& family =
      prometheus::BuildGauge()
          .Name("leader_election_master_status")
          .Help(
              "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
              "backup, 1 indicates master. 'name' is the string used to identify the lease.")
          .Register(metrics::Registry());
  return family;
}

std::string StringAt(const Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int IntAt(const Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int>() : 0;
}

double Random01() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

// client-go wait.Jitter(d, 1.2).
Clock::Duration Jitter(std::chrono::milliseconds d, double factor) {
  auto extra = std::chrono::duration<double, std::milli>(Random01() * factor *
                                                         static_cast<double>(d.count()));
  return std::chrono::duration_cast<Clock::Duration>(d + extra);
}

}  // namespace

// --- LeaseRecord ------------------------------------------------------------

LeaseRecord LeaseRecord::FromLease(const Object& lease) {
  LeaseRecord r;
  auto spec = lease.find("spec");
  if (spec == lease.end() || !spec->is_object()) return r;
  r.holder_identity = StringAt(*spec, "holderIdentity");
  r.lease_duration_seconds = IntAt(*spec, "leaseDurationSeconds");
  r.acquire_time = StringAt(*spec, "acquireTime");
  r.renew_time = StringAt(*spec, "renewTime");
  r.lease_transitions = IntAt(*spec, "leaseTransitions");
  return r;
}

void LeaseRecord::ToLease(Object& lease) const {
  Object& spec = lease["spec"];
  if (!spec.is_object()) spec = Object::object();
  spec["holderIdentity"] = holder_identity;
  spec["leaseDurationSeconds"] = lease_duration_seconds;
  if (acquire_time.empty()) {
    spec.erase("acquireTime");
  } else {
    spec["acquireTime"] = acquire_time;
  }
  if (renew_time.empty()) {
    spec.erase("renewTime");
  } else {
    spec["renewTime"] = renew_time;
  }
  spec["leaseTransitions"] = lease_transitions;
}

// --- LeaseDecider -------------------------------------------------------------

void LeaseDecider::Observe(const LeaseRecord& record, Clock::TimePoint now) {
  if (!observed_ || !(*observed_ == record)) {
    observed_ = record;
    observed_time_ = now;
  }
}

void LeaseDecider::Wrote(const LeaseRecord& record, Clock::TimePoint now) {
  observed_ = record;
  observed_time_ = now;
}

bool LeaseDecider::IsLeader() const {
  return observed_ && !observed_->holder_identity.empty() &&
         observed_->holder_identity == identity_;
}

bool LeaseDecider::LeaseValid(Clock::TimePoint now) const {
  if (!observed_) return false;
  return observed_time_ + std::chrono::seconds(observed_->lease_duration_seconds) > now;
}

LeaseDecider::Action LeaseDecider::Decide(Clock::TimePoint now) const {
  if (!observed_) return Action::kAcquire;
  const bool expired =
      observed_time_ + std::chrono::seconds(observed_->lease_duration_seconds) < now;
  if (!observed_->holder_identity.empty() && !expired && !IsLeader()) return Action::kWait;
  return IsLeader() ? Action::kRenew : Action::kAcquire;
}

LeaseRecord LeaseDecider::Next(Action action, int lease_duration_seconds,
                               const std::string& wall_now) const {
  LeaseRecord r;
  r.holder_identity = identity_;
  r.lease_duration_seconds = lease_duration_seconds;
  r.acquire_time = wall_now;
  r.renew_time = wall_now;
  if (action == Action::kRenew && observed_) {
    r.acquire_time = observed_->acquire_time;
    r.lease_transitions = observed_->lease_transitions;
  } else if (observed_) {
    r.lease_transitions = observed_->lease_transitions + 1;
  }
  return r;
}

LeaseRecord LeaseDecider::Release(const std::string& wall_now) const {
  LeaseRecord r;
  r.lease_duration_seconds = 1;
  r.acquire_time = wall_now;
  r.renew_time = wall_now;
  r.lease_transitions = observed_ ? observed_->lease_transitions : 0;
  return r;
}

// --- LeaderElector ------------------------------------------------------------

StatusOr<std::unique_ptr<LeaderElector>> LeaderElector::New(std::shared_ptr<Client> client,
                                                            LeaderElectionConfig config) {
  using std::chrono::milliseconds;
  if (config.lease_name.empty() || config.lease_namespace.empty()) {
    return Status(StatusCode::kInvalidArgument, "leader election needs a lease name and namespace");
  }
  if (config.retry_period <= milliseconds(0) || config.renew_deadline <= milliseconds(0) ||
      config.lease_duration <= milliseconds(0)) {
    return Status(StatusCode::kInvalidArgument, "leader election durations must be positive");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return Status(StatusCode::kInvalidArgument, "leaseDuration must be greater than renewDeadline");
  }
  if (static_cast<double>(config.renew_deadline.count()) <=
      1.2 * static_cast<double>(config.retry_period.count())) {
    return Status(StatusCode::kInvalidArgument,
                  "renewDeadline must be greater than retryPeriod*1.2");
  }
  if (config.lease_duration < std::chrono::seconds(1)) {
    return Status(StatusCode::kInvalidArgument, "leaseDuration must be at least 1s");
  }
  if (config.identity.empty()) config.identity = DefaultIdentity();
  return std::unique_ptr<LeaderElector>(new LeaderElector(std::move(client), std::move(config)));
}

LeaderElector::LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config)
    : client_(std::move(client)),
      config_(std::move(config)),
      clock_(config_.clock ? config_.clock : &Clock::Real()),
      decider_(config_.identity) {}

int LeaderElector::LeaseSeconds() const {
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count());
}

std::string LeaderElector::Leader() const {
  std::lock_guard lock(mu_);
  return last_leader_;
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto& gvr = resources::kLeases;
  const std::string& ns = config_.lease_namespace;
  auto logger = log::Root()
                    .WithName("leaderelection")
                    .WithValues({{"lease", log::KRef(ns, config_.lease_name)}});
  std::unique_lock lock(mu_);
  Clock::TimePoint now = clock_->Now();
  const std::string wall = MicroTimeNow();

  // (1) Fast path: we lead and, by our own observation, the lease is valid.
  if (decider_.IsLeader() && decider_.LeaseValid(now) && lease_) {
    LeaseRecord record = decider_.Next(LeaseDecider::Action::kRenew, LeaseSeconds(), wall);
    Object obj = *lease_;
    record.ToLease(obj);
    lock.unlock();
    auto updated = client_->Update(gvr, ns, obj);
    lock.lock();
    if (updated.ok()) {
      lease_ = std::move(*updated);
      decider_.Wrote(record, clock_->Now());
      logger.V(5).Info("Renewed lease");
      return true;
    }
    logger.V(2).Info("Failed to update lease optimistically, falling back to slow path",
                     {{"err", updated.status().ToString()}});
  }

  // (2) Read, or create when absent.
  lock.unlock();
  auto got = client_->Get(gvr, ns, config_.lease_name);
  lock.lock();
  if (!got.ok()) {
    if (!got.status().IsNotFound()) {
      logger.Error(got.status(), "Error retrieving lease");
      return false;
    }
    LeaseRecord record;
    record.holder_identity = config_.identity;
    record.lease_duration_seconds = LeaseSeconds();
    record.acquire_time = wall;
    record.renew_time = wall;
    Object obj = {{"apiVersion", gvr.ApiVersion()},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lease_name}, {"namespace", ns}}}};
    record.ToLease(obj);
    lock.unlock();
    auto created = client_->Create(gvr, ns, obj);
    lock.lock();
    if (!created.ok()) {
      logger.Error(created.status(), "Error initially creating lease");
      return false;
    }
    lease_ = std::move(*created);
    decider_.Wrote(record, clock_->Now());
    last_leader_ = config_.identity;
    return true;
  }

  // (3) Observe; the observation time moves only when the record changed.
  LeaseRecord current = LeaseRecord::FromLease(*got);
  lease_ = *got;
  decider_.Observe(current, now);
  last_leader_ = current.holder_identity;

  // (4) Held by another and not expired: wait.
  LeaseDecider::Action action = decider_.Decide(now);
  if (action == LeaseDecider::Action::kWait) {
    logger.V(4).Info("Lease is held by another candidate and has not yet expired",
                     {{"holder", current.holder_identity}});
    return false;
  }

  // (5) Take or renew it with a full PUT carrying the read resourceVersion.
  LeaseRecord record = decider_.Next(action, LeaseSeconds(), wall);
  Object obj = *got;
  record.ToLease(obj);
  lock.unlock();
  auto updated = client_->Update(gvr, ns, obj);
  lock.lock();
  if (!updated.ok()) {
    logger.V(2).Info("Failed to update lease", {{"err", updated.status().ToString()}});
    return false;
  }
  lease_ = std::move(*updated);
  decider_.Wrote(record, clock_->Now());
  last_leader_ = config_.identity;
  return true;
}

void LeaderElector::NotifyLeader(const LeaderCallbacks& cb) {
  std::string leader = Leader();
  if (leader == reported_leader_) return;
  reported_leader_ = leader;
  if (!leader.empty()) {
    log::Root().WithName("leaderelection").V(2).Info("New leader elected", {{"leader", leader}});
  }
  if (cb.on_new_leader && !leader.empty()) cb.on_new_leader(leader);
}

bool LeaderElector::Acquire(const std::stop_token& stop, const LeaderCallbacks& callbacks) {
  log::Root()
      .WithName("leaderelection")
      .Info("Attempting to acquire leader lease",
            {{"lease", log::KRef(config_.lease_namespace, config_.lease_name)},
             {"identity", config_.identity}});
  while (!stop.stop_requested()) {
    const bool acquired = TryAcquireOrRenew();
    NotifyLeader(callbacks);
    if (acquired) return true;
    if (!clock_->SleepFor(Jitter(config_.retry_period, 1.2), stop)) break;
  }
  return false;
}

bool LeaderElector::Renew(const std::stop_token& stop) {
  while (!stop.stop_requested()) {
    const Clock::TimePoint deadline = clock_->Now() + config_.renew_deadline;
    bool renewed = false;
    for (;;) {
      if (stop.stop_requested()) return true;
      if (TryAcquireOrRenew()) {
        renewed = true;
        break;
      }
      if (clock_->Now() + config_.retry_period > deadline) break;
      if (!clock_->SleepFor(config_.retry_period, stop)) return true;
    }
    if (!renewed) {
      log::Root()
          .WithName("leaderelection")
          .Info("Failed to renew lease",
                {{"lease", log::KRef(config_.lease_namespace, config_.lease_name)}});
      return false;
    }
    if (!clock_->SleepFor(config_.retry_period, stop)) return true;
  }
  return true;
}

void LeaderElector::ReleaseLease() {
  auto logger =
      log::Root()
          .WithName("leaderelection")
          .WithValues({{"lease", log::KRef(config_.lease_namespace, config_.lease_name)}});
  const Clock::TimePoint deadline = clock_->Now() + config_.renew_deadline;
  std::unique_lock lock(mu_);
  if (!decider_.IsLeader() || !lease_) return;
  Object obj = *lease_;
  for (;;) {
    LeaseRecord record = decider_.Release(MicroTimeNow());
    record.ToLease(obj);
    lock.unlock();
    auto updated = client_->Update(resources::kLeases, config_.lease_namespace, obj);
    lock.lock();
    if (updated.ok()) {
      lease_ = std::move(*updated);
      decider_.Wrote(record, clock_->Now());
      last_leader_.clear();
      logger.Info("Released lease");
      return;
    }
    if (!updated.status().IsConflict() || clock_->Now() >= deadline) {
      logger.Error(updated.status(), "Failed to release lease");
      return;
    }
    // Someone wrote in between: release only if it is still ours.
    lock.unlock();
    auto got = client_->Get(resources::kLeases, config_.lease_namespace, config_.lease_name);
    lock.lock();
    if (!got.ok()) {
      logger.Error(got.status(), "Failed to release lease");
      return;
    }
    if (LeaseRecord::FromLease(*got).holder_identity != config_.identity) return;
    obj = *got;
  }
}

Status LeaderElector::Run(const std::stop_token& stop, LeaderCallbacks callbacks) {
  prometheus::Gauge& gauge = MasterStatusFamily().Add({{"name", config_.lease_name}});
  gauge.Set(0);
  auto logger =
      log::Root()
          .WithName("leaderelection")
          .WithValues({{"lease", log::KRef(config_.lease_namespace, config_.lease_name)}});

  if (!Acquire(stop, callbacks)) {
    if (callbacks.on_stopped_leading) callbacks.on_stopped_leading();
    return Status::Ok();
  }
  leading_.store(true);
  gauge.Set(1);
  logger.Info("Successfully acquired lease", {{"identity", config_.identity}});

  std::stop_source work_stop;
  std::thread work;
  if (callbacks.on_started_leading) {
    work = std::thread([&callbacks, &logger, token = work_stop.get_token()] {
      // A thread top: nothing may escape.
      try {
        callbacks.on_started_leading(token);
      } catch (const std::exception& e) {
        logger.Error(e.what(), "Leading work stopped by an exception");
      } catch (...) {
        logger.Error("unknown exception", "Leading work stopped by an exception");
      }
    });
  }
  const bool stopped = Renew(stop);
  leading_.store(false);
  gauge.Set(0);
  if (!stopped) {
    logger.Info("Leader election lost");
    if (callbacks.on_lost) callbacks.on_lost();
  }
  work_stop.request_stop();
  if (work.joinable()) work.join();
  if (stopped && config_.release_on_cancel) ReleaseLease();
  if (callbacks.on_stopped_leading) callbacks.on_stopped_leading();
  if (stopped) return Status::Ok();
  return Status(StatusCode::kUnavailable, "leader election lost");
}

std::string DefaultIdentity() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::snprintf(host, sizeof(host), "unknown");
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  uint64_t a = rng(), b = rng();
  a = (a & 0xFFFFFFFFFFFF0FFFULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3FFFFFFFFFFFFFFFULL) | 0x8000000000000000ULL;  // variant 1
  char uuid[40];
  std::snprintf(uuid, sizeof(uuid), "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xFFFF), static_cast<unsigned>(a & 0xFFFF),
                static_cast<unsigned>(b >> 48),
                static_cast<unsigned long long>(b & 0xFFFFFFFFFFFFULL));
  return std::string(host) + "_" + uuid;
}

std::string MicroTimeNow() {
  using namespace std::chrono;
  auto now = system_clock::now().time_since_epoch();
  auto secs = duration_cast<seconds>(now);
  auto micros = duration_cast<microseconds>(now - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(micros));
  return buf;
}

}  // namespace caphv::kube
