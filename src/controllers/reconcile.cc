// File: controllers/reconcile.cc

#include "controllers/reconcile.h"

#include "api/conditions.h"
#include "controllers/context.h"
#include "controllers/writes.h"

namespace caphv::controllers {

void EmitEvent(kube::EventRecorder* recorder, const kube::Object& object, const EventNote& e) {
  if (recorder == nullptr) return;
  recorder->Event(object, e.warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                  e.reason, e.message);
}

void ForgetEvents(Context& ctx, api::Kind kind, const kube::Request& req) {
  if (ctx.recorder) ctx.recorder->ForgetObject(api::InfoOf(kind).name, req.ns, req.name);
}

namespace {

// At most `max` bytes of `text`, cut at a UTF-8 character boundary ("..."
// marks a cut): a decode error quotes the offending value, which may be long.
std::string Clip(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t end = max;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "...";
}

constexpr size_t kMaxErrorInMessage = 2048;

}  // namespace

InvalidSpecReport ReportInvalidSpec(const kube::Object& object, api::Kind kind,
                                    std::string_view error, std::string_view now) {
  const api::KindInfo& info = api::InfoOf(kind);
  const std::string ns = kube::NamespaceOf(object);
  const std::string name = kube::NameOf(object);
  InvalidSpecReport report;
  report.message = "cannot read " + std::string(info.name) + " " + ns + "/" + name + ": " +
                   Clip(error, kMaxErrorInMessage) + "; fix the field(s) named (kubectl -n " + ns +
                   " edit " + std::string(info.singular) + " " + name +
                   "): until then CAPHV does nothing with this " + std::string(info.name);

  const kube::Object* meta =
      object.contains("metadata") && object["metadata"].is_object() ? &object["metadata"] : nullptr;
  int64_t generation = 0;
  if (meta != nullptr && meta->contains("generation") &&
      (*meta)["generation"].is_number_integer()) {
    generation = (*meta)["generation"].get<int64_t>();
  }
  kube::Object conditions = kube::Object::array();
  if (object.contains("status") && object["status"].is_object() &&
      object["status"].contains("conditions") && object["status"]["conditions"].is_array()) {
    conditions = object["status"]["conditions"];
  }
  // A field of a stored condition as text ("" when absent or not a string:
  // nothing here may assume the object is well-formed).
  auto text = [](const kube::Object* c, const char* key) {
    return c != nullptr && c->is_object() && c->contains(key) && (*c)[key].is_string()
               ? (*c)[key].get<std::string>()
               : std::string();
  };
  kube::Object* before = nullptr;
  for (auto& c : conditions) {
    if (text(&c, "type") == api::kReadyCondition) before = &c;
  }
  const bool was_false = text(before, "status") == api::kConditionFalse;
  report.warn = !was_false || text(before, "reason") != kInvalidSpec;

  kube::Object ready = {
      {"type", api::kReadyCondition},
      {"status", api::kConditionFalse},
      {"reason", kInvalidSpec},
      {"message", report.message},
  };
  if (generation > 0) ready["observedGeneration"] = generation;
  // The transition time changes with the status only (as SetCondition).
  const std::string since = text(before, "lastTransitionTime");
  ready["lastTransitionTime"] = was_false && !since.empty() ? since : std::string(now);
  if (before != nullptr) {
    auto generation_of = [](const kube::Object& c) {
      return c.contains("observedGeneration") ? c["observedGeneration"] : kube::Object();
    };
    if (!report.warn && text(before, "message") == report.message &&
        generation_of(*before) == generation_of(ready)) {
      return report;  // already said
    }
    *before = std::move(ready);
  } else {
    conditions.push_back(std::move(ready));
  }
  report.conditions = std::move(conditions);
  return report;
}

kube::Result ReportUndecodable(Context& ctx, kube::Informer& informer, api::Kind kind,
                               const kube::Object& object, const kube::Status& error) {
  InvalidSpecReport report = ReportInvalidSpec(object, kind, error.message(), api::NowRfc3339());
  if (report.warn) {
    EmitEvent(ctx.recorder.get(), object, {true, std::string(kInvalidSpec), report.message});
  }
  if (report.conditions) {
    auto written = ReplaceStatus(*ctx.mgmt, api::ResourceOf(kind), object,
                                 {{"conditions", std::move(*report.conditions)}});
    if (written.ok()) {
      informer.RecordWrite(*written);  // read-your-writes: the next reconcile writes nothing
    } else if (written.status().IsNotFound()) {
      return kube::Result::Done();
    } else {
      return kube::Result::Error(written.status());  // retried: the user must be told
    }
  }
  return kube::Result::Terminal(kube::Status(kube::StatusCode::kInvalidArgument,
                                             "cannot read " + std::string(api::InfoOf(kind).name) +
                                                 " " + kube::NamespaceOf(object) + "/" +
                                                 kube::NameOf(object) + ": " + error.message()));
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
