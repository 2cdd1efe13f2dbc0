// File: sim/scheduling.cc

#include "sim/scheduling.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "sim/object_util.h"

namespace caphv::sim {

using internal::FindAt;
using internal::Name;
using internal::StrAt;
using kube::Object;

namespace {

// The reasons of kube-scheduler's filter plugins (v1.33
// pkg/scheduler/framework/plugins/nodeaffinity ErrReasonPod,
// nodeunschedulable ErrReasonUnschedulable).
constexpr char kReasonAffinity[] = "node(s) didn't match Pod's node affinity/selector";
constexpr char kReasonUnschedulable[] = "node(s) were unschedulable";
constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";
constexpr char kRegionLabel[] = "topology.kubernetes.io/region";

bool ParseInt(const std::string& s, long long* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtoll(s.c_str(), &end, 10);
  return end != nullptr && *end == '\0';
}

bool RequirementMatches(const Object& req, const std::map<std::string, std::string>& values) {
  const std::string key = StrAt(req, {"key"});
  const std::string op = StrAt(req, {"operator"});
  std::vector<std::string> want;
  if (const Object* v = FindAt(req, {"values"}); v != nullptr && v->is_array()) {
    for (const auto& s : *v) {
      if (s.is_string()) want.push_back(s.get<std::string>());
    }
  }
  const auto it = values.find(key);
  const bool has = it != values.end();
  const auto in = [&] {
    return has && std::find(want.begin(), want.end(), it->second) != want.end();
  };
  if (op == "In") return in();
  if (op == "NotIn") return !in();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (op == "Gt" || op == "Lt") {
    long long have = 0;
    long long bound = 0;
    if (!has || want.size() != 1 || !ParseInt(it->second, &have) || !ParseInt(want[0], &bound)) {
      return false;
    }
    return op == "Gt" ? have > bound : have < bound;
  }
  return false;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace

Host HostOfNode(const Object& node) {
  Host h;
  h.name = Name(node);
  if (const Object* l = FindAt(node, {"metadata", "labels"}); l != nullptr && l->is_object()) {
    for (const auto& [k, v] : l->items()) {
      if (v.is_string()) h.labels[k] = v.get<std::string>();
    }
  }
  if (const Object* u = FindAt(node, {"spec", "unschedulable"}); u != nullptr && u->is_boolean()) {
    h.unschedulable = u->get<bool>();
  }
  return h;
}

bool TermMatches(const Object& term, const Host& host) {
  const Object* exprs = FindAt(term, {"matchExpressions"});
  const Object* fields = FindAt(term, {"matchFields"});
  const bool no_exprs = exprs == nullptr || !exprs->is_array() || exprs->empty();
  const bool no_fields = fields == nullptr || !fields->is_array() || fields->empty();
  if (no_exprs && no_fields) return false;
  if (!no_exprs) {
    for (const auto& r : *exprs) {
      if (!RequirementMatches(r, host.labels)) return false;
    }
  }
  if (!no_fields) {
    const std::map<std::string, std::string> node_fields = {{"metadata.name", host.name}};
    for (const auto& r : *fields) {
      if (!RequirementMatches(r, node_fields)) return false;
    }
  }
  return true;
}

bool FitsNodeAffinity(const Object& spec, const Host& host) {
  if (const Object* sel = FindAt(spec, {"nodeSelector"}); sel != nullptr && sel->is_object()) {
    for (const auto& [k, v] : sel->items()) {
      const auto it = host.labels.find(k);
      if (it == host.labels.end() || !v.is_string() || it->second != v.get<std::string>()) {
        return false;
      }
    }
  }
  const Object* terms =
      FindAt(spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms"});
  if (terms == nullptr || !terms->is_array()) return true;
  return std::any_of(terms->begin(), terms->end(),
                     [&](const Object& t) { return TermMatches(t, host); });
}

Placement PlaceVm(const Object& vm, const std::vector<Host>& hosts, bool bound) {
  Placement p;
  p.node.clear();
  if (hosts.empty()) {
    p.unschedulable = "no nodes available to schedule pods";
    return p;
  }
  static const Object kEmpty = Object::object();
  const Object* spec = FindAt(vm, {"spec", "template", "spec"});
  if (spec == nullptr) spec = &kEmpty;
  std::vector<const Host*> fit;
  std::map<std::string, int> reasons;
  for (const auto& h : hosts) {
    const char* reason = nullptr;
    if (!bound && h.unschedulable) {
      reason = kReasonUnschedulable;
    } else if (!bound && !FitsNodeAffinity(*spec, h)) {
      reason = kReasonAffinity;
    }
    if (reason != nullptr) {
      ++reasons[reason];
    } else {
      fit.push_back(&h);
    }
  }
  if (!fit.empty()) {
    std::sort(fit.begin(), fit.end(),
              [](const Host* a, const Host* b) { return a->name < b->name; });
    const Host& chosen = *fit[Fnv1a(kube::UidOf(vm)) % fit.size()];
    p.node = chosen.name;
    if (auto z = chosen.labels.find(kZoneLabel); z != chosen.labels.end()) p.zone = z->second;
    if (auto r = chosen.labels.find(kRegionLabel); r != chosen.labels.end()) p.region = r->second;
    return p;
  }
  std::vector<std::string> parts;
  parts.reserve(reasons.size());
  for (const auto& [reason, n] : reasons) parts.push_back(std::to_string(n) + " " + reason);
  std::sort(parts.begin(), parts.end());
  const std::string total = std::to_string(hosts.size());
  std::string joined;
  for (const auto& part : parts) joined += (joined.empty() ? "" : ", ") + part;
  p.unschedulable = "0/" + total + " nodes are available: " + joined + ". preemption: 0/" + total +
                    " nodes are available: " + total + " Preemption is not helpful for scheduling.";
  return p;
}

}  // namespace caphv::sim
