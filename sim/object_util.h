// File: sim/object_util.h
//
// Small helpers the simulator's controllers share for reading unstructured
// objects and deciding whether a write is needed. Internal to sim/.
//
// Thread safety: pure functions.

#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/store.h"

namespace caphv::sim::internal {

using kube::Object;
using kube::ObjectPtr;
using kube::Status;

inline constexpr char kVirtManager[] = "virt-controller";
inline constexpr char kLbManager[] = "harvester-load-balancer";
inline const std::set<std::string> kTimeKeys = {"lastTransitionTime", "lastHeartbeatTime",
                                                "lastProbeTime", "lastUpdateTime"};

// True when every field of `want` is present and equal in `have`, time stamps
// aside: the simulator writes only what differs.
inline bool Covers(const Object& want, const Object& have) {
  if (want.is_object()) {
    if (!have.is_object()) return false;
    for (auto it = want.begin(); it != want.end(); ++it) {
      if (kTimeKeys.contains(it.key())) continue;
      if (!have.contains(it.key())) {
        // The apiserver drops empty maps and lists; missing is the same.
        if ((it->is_object() || it->is_array()) && it->empty()) continue;
        return false;
      }
      if (!Covers(*it, have[it.key()])) return false;
    }
    return true;
  }
  if (want.is_array()) {
    if (!have.is_array() || have.size() != want.size()) return false;
    for (size_t i = 0; i < want.size(); ++i) {
      if (!Covers(want[i], have[i])) return false;
    }
    return true;
  }
  return want == have;
}

inline Status IgnoreNotFound(const Status& s) { return s.IsNotFound() ? Status() : s; }

// The value at `path` ({"metadata", "labels", "x"}), or null.
inline const Object* FindAt(const Object& o, std::initializer_list<const char*> path) {
  const Object* cur = &o;
  for (const char* k : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(k);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}
// The value at `path`, or an empty object.
inline const Object& ObjectAt(const Object& o, std::initializer_list<const char*> path) {
  static const Object kEmpty = Object::object();
  const Object* v = FindAt(o, path);
  return v != nullptr ? *v : kEmpty;
}
// The string at `path`, or "".
inline std::string StrAt(const Object& o, std::initializer_list<const char*> path) {
  const Object* v = FindAt(o, path);
  return v != nullptr && v->is_string() ? v->get<std::string>() : "";
}
inline std::string Ns(const Object& o) { return kube::NamespaceOf(o); }
inline std::string Name(const Object& o) { return kube::NameOf(o); }
inline const Object& StatusOf(const Object& o) {
  static const Object kEmpty = Object::object();
  return o.contains("status") ? o["status"] : kEmpty;
}
inline bool Deleting(const Object& o) {
  return o.contains("metadata") && o["metadata"].contains("deletionTimestamp") &&
         !o["metadata"]["deletionTimestamp"].is_null();
}
inline std::vector<std::string> Finalizers(const Object& o) {
  return o["metadata"].value("finalizers", std::vector<std::string>{});
}

inline Object Skeleton(const Object& o) {
  Object out = {{"apiVersion", o.value("apiVersion", "")},
                {"kind", o.value("kind", "")},
                {"metadata", {{"name", Name(o)}}}};
  if (!Ns(o).empty()) out["metadata"]["namespace"] = Ns(o);
  return out;
}

inline std::vector<Object> Values(const std::vector<ObjectPtr>& ptrs) {
  std::vector<Object> out;
  out.reserve(ptrs.size());
  for (const auto& p : ptrs) out.push_back(*p);
  return out;
}

}  // namespace caphv::sim::internal
