// File: kube/leader_election.h
//
// Leader election on a coordination.k8s.io/v1 Lease, following client-go's
// tools/leaderelection algorithm:
//  - acquire: tryAcquireOrRenew every RetryPeriod with jitter 1.2;
//  - lead: renew every RetryPeriod, retrying for at most RenewDeadline per
//    round; past it, leadership is lost;
//  - expiry is measured from when this process last saw the record change,
//    on its own monotonic clock (never from spec.renewTime);
//  - every write is a full PUT carrying the read resourceVersion, so a racing
//    writer gets a 409;
//  - on stop, the lease is released (empty holder, leaseDurationSeconds 1).
//
//   LeaderElector elector(client, {.lease_namespace = "ns", .lease_name = "caphv",
//                                  .identity = DefaultIdentity()});
//   Status s = elector.Run(stop, {.on_started_leading = [&](std::stop_token t) { ... },
//                                 .on_stopped_leading = [&] { ... }});
//   if (!s.ok()) return 1;   // leadership lost: exit, never re-acquire
//
// Run() returns OK when `stop` ended the election (whether or not it led),
// and a kUnavailable "leader election lost" status when the lease was lost.
// on_started_leading runs on its own thread with a token that is stopped
// when leadership ends; Run() waits for it to return before releasing the
// lease, so the old leader's work is over before a new leader can start.
// on_stopped_leading always runs (once) before Run() returns. on_lost, when
// set, runs on Run()'s thread the moment renewal fails, before the leading
// work is stopped and joined: a process that follows controller-runtime
// ("leader election lost", zero graceful timeout) exits there.
//
// Metric: leader_election_master_status{name=<lease name>} is 1 while leading.
//
// Thread safety: Run() once per LeaderElector; IsLeader() and Leader() from
// any thread. LeaseDecider is a plain value (no locking).

#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/status.h"

namespace caphv::kube {

// The spec of a Lease as the algorithm sees it.
struct LeaseRecord {
  std::string holder_identity;
  int lease_duration_seconds = 0;
  std::string acquire_time;  // MicroTime, RFC 3339 with microseconds
  std::string renew_time;
  int lease_transitions = 0;

  bool operator==(const LeaseRecord&) const = default;

  static LeaseRecord FromLease(const Object& lease);
  // Writes this record into `lease.spec` (other spec fields are kept).
  void ToLease(Object& lease) const;
};

// The pure part of tryAcquireOrRenew: what this candidate has observed and
// what it should do next. Times are on the local monotonic clock.
class LeaseDecider {
 public:
  enum class Action {
    kWait,     // held by another and not expired: try again later
    kAcquire,  // free or expired: take it (transitions + 1)
    kRenew,    // we hold it: renew (keep acquireTime and transitions)
  };

  explicit LeaseDecider(std::string identity) : identity_(std::move(identity)) {}

  // Records a lease read from the server; the observation time only moves
  // when the record differs from the last one observed.
  void Observe(const LeaseRecord& record, Clock::TimePoint now);
  // Records a lease this candidate wrote (always resets the observation time).
  void Wrote(const LeaseRecord& record, Clock::TimePoint now);
  // Forgets the observation (e.g. after a failed write of our own).
  bool has_observed() const { return observed_.has_value(); }

  // The observed holder is us.
  bool IsLeader() const;
  // observedTime + leaseDurationSeconds > now (the fast-path test).
  bool LeaseValid(Clock::TimePoint now) const;
  // Decision after Observe(): step (4)/(5) of tryAcquireOrRenew.
  Action Decide(Clock::TimePoint now) const;

  // The record to write for `action` (kAcquire or kRenew); `wall_now` is the
  // MicroTime string for acquireTime/renewTime.
  LeaseRecord Next(Action action, int lease_duration_seconds, const std::string& wall_now) const;
  // The release record: empty holder, duration 1 s, same transitions.
  LeaseRecord Release(const std::string& wall_now) const;

  const std::optional<LeaseRecord>& observed() const { return observed_; }
  Clock::TimePoint observed_time() const { return observed_time_; }
  const std::string& identity() const { return identity_; }

 private:
  std::string identity_;
  std::optional<LeaseRecord> observed_;
  Clock::TimePoint observed_time_{};
};

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // DefaultIdentity() when empty
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  bool release_on_cancel = true;
  Clock* clock = nullptr;  // Clock::Real() when null
};

struct LeaderCallbacks {
  std::function<void(std::stop_token)> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string&)> on_new_leader;  // optional
  // Optional: the lease was lost (not called on a requested stop).
  std::function<void()> on_lost;
};

class LeaderElector {
 public:
  // Validates LeaseDuration > RenewDeadline > 1.2 * RetryPeriod > 0 and
  // lease_duration being whole seconds >= 1 on the wire.
  static StatusOr<std::unique_ptr<LeaderElector>> New(std::shared_ptr<Client> client,
                                                      LeaderElectionConfig config);

  Status Run(const std::stop_token& stop, LeaderCallbacks callbacks);

  bool IsLeader() const { return leading_.load(); }
  // The last observed holder identity.
  std::string Leader() const;
  const std::string& identity() const { return config_.identity; }

 private:
  LeaderElector(std::shared_ptr<Client> client, LeaderElectionConfig config);

  // One tryAcquireOrRenew; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  bool Acquire(const std::stop_token& stop, const LeaderCallbacks& callbacks);
  // Returns when the lease was lost (false) or stop was requested (true).
  bool Renew(const std::stop_token& stop);
  void ReleaseLease();
  int LeaseSeconds() const;
  void NotifyLeader(const LeaderCallbacks& cb);

  std::shared_ptr<Client> client_;
  LeaderElectionConfig config_;
  Clock* clock_;

  mutable std::mutex mu_;  // guards decider_, lease_, last_leader_
  LeaseDecider decider_;
  std::optional<Object> lease_;  // last object read or written
  std::string last_leader_;
  std::string reported_leader_;
  std::atomic<bool> leading_{false};
};

// "<hostname>_<random uuid>", client-go's usual identity.
std::string DefaultIdentity();

// MicroTime for now: "2026-11-22T16:04:05.123456Z".
std::string MicroTimeNow();

}  // namespace caphv::kube
