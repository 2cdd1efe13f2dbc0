// File: controllers/reconcile.h
//
// The pieces both reconcilers share, so that each reconcile is
// observe -> plan -> execute -> report with one set of rules:
//
//   * Head: every reconcile starts alike (ReconcileHead): the object read
//     from the cache and decoded; a deleted one forgotten; one that cannot
//     be decoded reported to the user (Ready False, InvalidSpec, and a
//     Warning Event) and not reconciled.
//   * Conditions: a planner sets conditions on a copy of the status last
//     reported (Conditions::Mark). A change of status or reason against that
//     report is a transition; a transition with a reason the planner flags as
//     a warning (a failure, or a True condition with a caveat) yields one
//     Warning Event, so repeating the same failure never floods the Event
//     stream.
//   * Ready: one summary rule for every kind (SummarizeReady).
//   * Wait: how a plan that has no more writes to make ends the reconcile —
//     an event will bring the object back (kEvent), or nothing can, so the
//     key is requeued after a delay (kRequeueAfter). A plan never blocks.
//   * Executors perform one API call per action and fold the result into the
//     observation; kMaxSteps bounds the observe-plan-execute loop.
//   * Status writes a user would not see are folded (StatusHold): a change
//     that only reports progress waits until it has been pending for
//     kStatusHold, and a later state replaces it meanwhile; failures,
//     readiness and deletion-critical fields are written at once.
//
// Thread safety: values and pure functions; StatusHold is thread-safe;
// ReconcileHead and ReportUndecodable over thread-safe clients, ReconcileHead
// as thread-safe as the reconciler's `forget`.

#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api/codec.h"
#include "api/common.h"
#include "kube/clock.h"
#include "kube/connection_pool.h"
#include "kube/controller.h"
#include "kube/credential_expiry.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kube/log.h"

namespace caphv::controllers {

struct Context;

// Plans executed per reconcile before it returns (every step makes progress;
// the bound only guards against a planner bug).
inline constexpr int kMaxSteps = 24;

struct EventNote {
  bool warning = false;
  std::string reason;
  std::string message;
  bool operator==(const EventNote&) const = default;
};

// Records `e` on `object` (nothing without a recorder).
void EmitEvent(kube::EventRecorder* recorder, const kube::Object& object, const EventNote& e);

// The loop of every reconcile, written once: plan; while the plan has an
// action, execute it (the executor folds its result into the observation the
// next plan reads) and plan again; then report. `plan()` returns a plan with
// an optional `action`; `execute(action, plan)` returns the action's status;
// `report(plan, failed action or nullptr, status)` ends the reconcile. At
// most kMaxSteps actions: a plan that never settles is a planner bug, logged
// and reported as it stands.
template <typename PlanFn, typename ExecuteFn, typename ReportFn>
kube::Result RunPlan(const kube::log::Logger& log, PlanFn&& plan, ExecuteFn&& execute,
                     ReportFn&& report) {
  for (int step = 0;; ++step) {
    auto p = plan();
    if (!p.action || step == kMaxSteps) {
      if (p.action) log.Error("the plan did not settle", "Stopping this reconcile");
      return report(std::move(p), nullptr, kube::Status::Ok());
    }
    const auto action = *p.action;
    log.V(2).Info("Executing",
                  {{"action", std::string(ActionName(action.kind))}, {"name", action.name}});
    if (kube::Status st = execute(action, p); !st.ok()) return report(std::move(p), &action, st);
  }
}

// What a reconcile starts from (ReconcileHead): the object its request
// names, as cached and decoded, or the result the reconcile returns at once.
template <typename T>
struct Head {
  std::optional<kube::Result> end;  // set: the reconcile returns it
  kube::ObjectPtr object;           // otherwise: the object as cached ...
  T value;                          // ... and decoded
};

// The object `kind` `req` is gone: forgets the aggregation memory of its
// Events (the recorder's).
void ForgetEvents(Context& ctx, api::Kind kind, const kube::Request& req);

// The reason of the report on an object CAPHV cannot read (a value its CRD
// schema admits but api::Decode does not, e.g. spec.cpu beyond 32 bits).
inline constexpr std::string_view kInvalidSpec = "InvalidSpec";

// What the user is told of `object`, a `kind` that api::Decode rejects with
// `error`: a message naming the object, the problem and what to do, set as
// the Ready condition (False, InvalidSpec; lastTransitionTime `now` unless
// Ready was False already) and, on a transition of Ready to that reason, as
// a Warning Event. Pure.
struct InvalidSpecReport {
  std::string message;
  // Ready was not False with reason InvalidSpec: a Warning Event.
  bool warn = false;
  // The status.conditions to write: those stored, kept as they are, with
  // Ready set (in its place, or appended); nullopt when they already say it.
  std::optional<kube::Object> conditions;
};
InvalidSpecReport ReportInvalidSpec(const kube::Object& object, api::Kind kind,
                                    std::string_view error, std::string_view now);

// Tells the user about `object` as ReportInvalidSpec says: the Warning
// Event, and the conditions by a merge patch of the status subresource (the
// object cannot be decoded, so its status is not re-encoded; everything but
// the conditions stays as stored). Terminal (only an edit of the object can
// help: its watch event brings the key back); Error when the status write
// failed, so that it is retried; Done when the object is gone meanwhile.
kube::Result ReportUndecodable(Context& ctx, kube::Informer& informer, api::Kind kind,
                               const kube::Object& object, const kube::Status& error);

// The head of every reconcile, written once: reads the object `req` names
// from `informer`'s cache and decodes it as T (api::Decode).
//   gone         nothing about it may outlive it: its Events' aggregation
//                memory is forgotten, then `forget()` drops what the
//                reconciler keeps of it (status hold, metric series,
//                per-object memory). Ends Done.
//   undecodable  reported on the object (ReportUndecodable), ends Terminal.
// Otherwise the object and its decoded value.
template <typename T, typename ForgetFn>
Head<T> ReconcileHead(Context& ctx, kube::Informer& informer, api::Kind kind,
                      const kube::Request& req, ForgetFn&& forget) {
  Head<T> head;
  head.object = informer.store().Get(req.ns, req.name);
  if (!head.object) {
    ForgetEvents(ctx, kind, req);
    forget();
    head.end = kube::Result::Done();
    return head;
  }
  auto decoded = api::Decode<T>(*head.object);
  if (!decoded.ok()) {
    head.end = ReportUndecodable(ctx, informer, kind, *head.object, decoded.status());
    return head;
  }
  head.value = std::move(decoded).value();
  return head;
}

// The condition both kinds report when their infrastructure is ready (the
// Cluster API contract's summary of the provider's own conditions).
inline constexpr std::string_view kInfrastructureReady = "InfrastructureReady";

// One row per action kind of a reconciler: what the action is called (logs,
// condition messages) and what its failure reports, the condition it turns
// False and the reason (an empty condition: none; the action is only
// retried). Each reconciler returns its rows from one switch without a
// default (RowOf), so an action added without its row does not compile
// (-Werror=switch). How a failure is marked is the row's alone: no action is
// special-cased beside its row.
struct ActionRow {
  std::string_view name;
  std::string_view failure_condition;
  std::string_view failure_reason;
  // Whether the failure's transition is also a Warning Event.
  bool failure_warns = true;
  // What the action does, for the condition's message: "cannot <this>
  // <action's object name>: <error>" ("": the error alone).
  std::string_view failure_what;
};

// Conditions being planned, compared with those last reported.
class Conditions {
 public:
  Conditions(std::vector<api::Condition> reported, int64_t generation)
      : reported_(reported), current_(std::move(reported)), generation_(generation) {}

  // Sets condition `type`. When `warn` and the condition transitioned
  // (status or reason differ from the report), a Warning Event with
  // `reason` and `message` is queued.
  void Mark(std::string_view type, bool status, std::string_view reason, std::string message,
            bool warn = false);
  void Remove(std::string_view type);

  const api::Condition* Find(std::string_view type) const;
  bool IsTrue(std::string_view type) const;

  const std::vector<api::Condition>& current() const { return current_; }
  std::vector<api::Condition>& mutable_current() { return current_; }
  const std::vector<EventNote>& warnings() const { return warnings_; }

 private:
  std::vector<api::Condition> reported_;
  std::vector<api::Condition> current_;
  int64_t generation_;
  std::vector<EventNote> warnings_;
};

// The Ready condition of every CAPHV kind:
//   deleting           False, Deleting
//   ready              True, Ready
//   otherwise          the first condition of `order` that is not True (its
//                      status, reason and message); left as it is when none
//                      of them is set yet.
void SummarizeReady(Conditions& conditions, bool ready, bool deleting,
                    std::span<const std::string_view> order);

// Conditions another writer left (the Go provider v0.2.x sets some without a
// reason, and types CAPHV does not have, e.g. InitMachineCreated) turned into
// CAPHV's shape: types not in `known` (nor Ready, Paused) dropped, a missing
// reason set to "NoReason". True when anything changed: the status must then
// be replaced, not merged into (ReplaceStatus).
bool ToOurConditions(std::vector<api::Condition>& conditions,
                     std::span<const std::string_view> known);

// The Paused condition: True while `paused`; False (NotPaused) once it was
// set before; absent otherwise.
void SyncPaused(Conditions& conditions, bool paused);

// A connection (to Harvester or to the workload cluster) as a planner sees it.
struct ConnectionView {
  bool ready = false;
  std::string reason;                                                 // when not ready
  std::string message;                                                // when not ready
  kube::Clock::Duration retry_after = kube::Clock::Duration::zero();  // 0: a waiter is woken
  std::string server;                                                 // when ready
  std::optional<kube::CredentialExpiry> identity_expiry;              // when ready and known

  // Not ready for a reason other than an attempt under way: worth a warning.
  bool failed() const { return !ready && reason != kube::kPoolReasonConnecting; }
};

struct Wait {
  enum class Kind {
    kEvent,         // an event brings the key back
    kRequeueAfter,  // nothing will: look again after `after`
  };
  Kind kind = Kind::kEvent;
  kube::Clock::Duration after = kube::Clock::Duration::zero();
  std::string why;  // for the log (V(1))

  static Wait ForEvent(std::string why) { return {Kind::kEvent, {}, std::move(why)}; }
  static Wait After(kube::Clock::Duration d, std::string why) {
    return {Kind::kRequeueAfter, d, std::move(why)};
  }
  bool operator==(const Wait&) const = default;
};

// The controller result of a plan that ended in `wait`.
kube::Result ResultOf(const Wait& wait);

// `result`, brought back after `d` at the latest (a result that retries
// with backoff already comes back).
kube::Result NoLaterThan(kube::Result result, kube::Clock::Duration d);

// What both planners share: the observation they read, the plan they write,
// the conditions being decided, and the outcomes other than an action: wait
// for an event or a time, mark a condition. Each planner derives from it and
// adds its own Act and phases.
template <typename Observation, typename Plan>
class PlannerBase {
 protected:
  PlannerBase(const Observation& obs, Plan& plan, Conditions conditions)
      : obs_(obs), plan_(plan), conditions_(std::move(conditions)) {}

  void WaitForEvent(std::string why) { plan_.wait = Wait::ForEvent(std::move(why)); }
  // Until the connection is woken (an attempt under way), else after its
  // backoff.
  void WaitFor(const ConnectionView& c, std::string why) {
    plan_.wait = c.retry_after > kube::Clock::Duration::zero()
                     ? Wait::After(c.retry_after, std::move(why))
                     : Wait::ForEvent(std::move(why));
  }
  void Mark(std::string_view type, bool status, std::string_view reason, std::string message,
            bool warn = false) {
    conditions_.Mark(type, status, reason, std::move(message), warn);
  }

  const Observation& obs_;
  Plan& plan_;
  Conditions conditions_;
};

// How long a progress-only status change may wait before it is written.
// Provisioning on Harvester passes through states (VM provisioning, waiting
// for its address) that last tens of seconds each, and those are published;
// on a fast path a machine goes from created to running within this time and
// writes its status once instead of once per state.
inline constexpr auto kStatusHold = std::chrono::seconds(10);

// Which status changes are held back, per object key. A reconciler asks
// Pending() for every planned status that differs from the reported one and
// writes it when that returns zero; it calls Settled() once the status is as
// planned (written, or unchanged), and when the object is gone.
class StatusHold {
 public:
  explicit StatusHold(kube::Clock& clock, kube::Clock::Duration hold = kStatusHold)
      : clock_(clock), hold_(hold) {}

  // Zero when the change is to be written now: `urgent`, or pending (since
  // the first call after the last Settled()) for `hold` already. Otherwise
  // the time left.
  kube::Clock::Duration Pending(const std::string& key, bool urgent);
  void Settled(const std::string& key);

 private:
  kube::Clock& clock_;
  const kube::Clock::Duration hold_;
  std::mutex mu_;
  std::map<std::string, kube::Clock::TimePoint> since_;  // guarded by mu_
};

// Seconds of a steady-clock interval, for the reconcile-duration histograms.
double SecondsSince(std::chrono::steady_clock::time_point start);

}  // namespace caphv::controllers
