// File: controllers/reconcile.cc

#include "controllers/reconcile.h"

#include "api/conditions.h"
#include "controllers/context.h"

namespace caphv::controllers {

void EmitEvent(kube::EventRecorder* recorder, const kube::Object& object, const EventNote& e) {
  if (recorder == nullptr) return;
  recorder->Event(object, e.warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                  e.reason, e.message);
}

void ForgetEvents(Context& ctx, api::Kind kind, const kube::Request& req) {
  if (ctx.recorder) ctx.recorder->ForgetObject(api::InfoOf(kind).name, req.ns, req.name);
}

void Conditions::Mark(std::string_view type, bool status, std::string_view reason,
                      std::string message, bool warn) {
  const api::Condition* before = api::FindCondition(reported_, type);
  const std::string status_text(status ? api::kConditionTrue : api::kConditionFalse);
  const bool transition =
      before == nullptr || before->status != status_text || before->reason != reason;
  if (warn && transition) {
    warnings_.push_back({true, std::string(reason), message});
  }
  api::Condition c;
  c.type = std::string(type);
  c.status = status_text;
  c.reason = std::string(reason);
  c.message = std::move(message);
  c.observed_generation = generation_;
  if (const api::Condition* now = api::FindCondition(current_, type);
      now != nullptr && now->status == c.status && now->reason == c.reason &&
      now->message == c.message && now->observed_generation == c.observed_generation) {
    return;  // unchanged: keep the timestamps as reported
  }
  api::SetCondition(current_, std::move(c), api::NowRfc3339());
}

void Conditions::Remove(std::string_view type) { api::RemoveCondition(current_, type); }

const api::Condition* Conditions::Find(std::string_view type) const {
  return api::FindCondition(current_, type);
}

bool Conditions::IsTrue(std::string_view type) const {
  return api::IsConditionTrue(current_, type);
}

void SummarizeReady(Conditions& conditions, bool ready, bool deleting,
                    std::span<const std::string_view> order) {
  if (deleting) {
    conditions.Mark(api::kReadyCondition, false, "Deleting", "the object is being deleted");
    return;
  }
  if (ready) {
    conditions.Mark(api::kReadyCondition, true, "Ready", "");
    return;
  }
  for (std::string_view type : order) {
    const api::Condition* c = conditions.Find(type);
    if (c != nullptr && c->status != api::kConditionTrue) {
      conditions.Mark(api::kReadyCondition, false, c->reason, c->message);
      return;
    }
  }
}

bool ToOurConditions(std::vector<api::Condition>& conditions,
                     std::span<const std::string_view> known) {
  const size_t before = conditions.size();
  std::erase_if(conditions, [&](const api::Condition& c) {
    return c.type != api::kReadyCondition && c.type != api::kPausedCondition &&
           std::find(known.begin(), known.end(), c.type) == known.end();
  });
  bool changed = conditions.size() != before;
  for (auto& c : conditions) {
    if (c.reason.empty()) {
      c.reason = "NoReason";
      changed = true;
    }
  }
  return changed;
}

void SyncPaused(Conditions& conditions, bool paused) {
  if (paused) {
    conditions.Mark(api::kPausedCondition, true, "Paused",
                    "reconciliation is paused (Cluster.spec.paused or the cluster.x-k8s.io/paused "
                    "annotation)");
  } else if (conditions.Find(api::kPausedCondition) != nullptr) {
    conditions.Mark(api::kPausedCondition, false, "NotPaused", "");
  }
}

kube::Result ResultOf(const Wait& wait) {
  if (wait.kind == Wait::Kind::kRequeueAfter) return kube::Result::RequeueAfter(wait.after);
  return kube::Result::Done();
}

kube::Result NoLaterThan(kube::Result result, kube::Clock::Duration d) {
  if (!result.error.ok() || result.requeue) return result;
  if (result.requeue_after == kube::Clock::Duration::zero() || result.requeue_after > d) {
    result.requeue_after = d;
  }
  return result;
}

kube::Clock::Duration StatusHold::Pending(const std::string& key, bool urgent) {
  std::lock_guard lock(mu_);
  if (urgent) {
    since_.erase(key);
    return kube::Clock::Duration::zero();
  }
  const kube::Clock::TimePoint now = clock_.Now();
  const kube::Clock::TimePoint since = since_.try_emplace(key, now).first->second;
  if (now - since >= hold_) {
    since_.erase(key);
    return kube::Clock::Duration::zero();
  }
  return hold_ - (now - since);
}

void StatusHold::Settled(const std::string& key) {
  std::lock_guard lock(mu_);
  since_.erase(key);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace caphv::controllers
