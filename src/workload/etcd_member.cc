// File: workload/etcd_member.cc

#include "workload/etcd_member.h"

namespace caphv::workload {

using kube::Object;

namespace {

// o[key] when it is a mapping, else an empty one.
Object MapAt(const Object& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_object() ? *it : Object::object();
}

}  // namespace

EtcdNodeView ViewOfEtcdNode(const Object& node) {
  EtcdNodeView v;
  const Object meta = MapAt(node, "metadata");
  v.name = meta.value("name", "");
  v.etcd = MapAt(meta, "labels").value(std::string(kEtcdRoleLabel), "") == "true";
  const Object ann = MapAt(meta, "annotations");
  v.member = ann.value(std::string(kEtcdNodeNameAnnotation), "");
  v.removal_requested = ann.value(std::string(kEtcdRemoveAnnotation), "") == "true";
  v.removed_member = ann.value(std::string(kEtcdRemovedNodeNameAnnotation), "");
  if (auto f = meta.find("finalizers"); f != meta.end() && f->is_array()) v.finalizers = *f;
  for (const auto& f : v.finalizers) {
    if (f.is_string() && f.get<std::string>() == kEtcdNodeFinalizer) v.has_finalizer = true;
  }
  v.deleting = meta.contains("deletionTimestamp");
  v.resource_version = meta.value("resourceVersion", "");
  return v;
}

bool HoldsEtcdMember(const EtcdNodeView& node) { return node.etcd && node.removed_member.empty(); }

EtcdRemovalDecision DecideEtcdRemoval(const EtcdNodeView& node, int other_members) {
  EtcdRemovalDecision d;
  if (!node.etcd) {
    d.message = "Node " + node.name + " runs no etcd member";
    return d;
  }
  if (!node.removed_member.empty()) {
    d.outcome = EtcdRemovalDecision::Outcome::kRemoved;
    d.message = "etcd member " + node.removed_member + " of Node " + node.name + " removed";
    return d;
  }
  const std::string member = node.member.empty() ? "of Node " + node.name : node.member;
  if (other_members <= 0) {
    d.outcome = EtcdRemovalDecision::Outcome::kLastVoter;
    d.message = "etcd member " + member + " is the cluster's last: kept";
    return d;
  }
  if (node.removal_requested) {
    d.outcome = EtcdRemovalDecision::Outcome::kWaiting;
    d.message = "waiting for RKE2 to remove etcd member " + member + " (Node " + node.name +
                " annotated " + std::string(kEtcdRemoveAnnotation) + ")";
    return d;
  }
  d.outcome = EtcdRemovalDecision::Outcome::kRequest;
  d.message = "asking RKE2 to remove etcd member " + member;
  d.patch = {{"metadata",
              {{"resourceVersion", node.resource_version},
               {"annotations", {{std::string(kEtcdRemoveAnnotation), "true"}}}}}};
  return d;
}

std::optional<Object> AddEtcdNodeFinalizer(const EtcdNodeView& node) {
  if (node.has_finalizer || node.deleting || !HoldsEtcdMember(node)) return std::nullopt;
  Object finalizers = node.finalizers;
  finalizers.push_back(std::string(kEtcdNodeFinalizer));
  return Object{
      {"metadata", {{"resourceVersion", node.resource_version}, {"finalizers", finalizers}}}};
}

std::optional<Object> RemoveEtcdNodeFinalizer(const EtcdNodeView& node) {
  if (!node.has_finalizer) return std::nullopt;
  Object finalizers = Object::array();
  for (const auto& f : node.finalizers) {
    if (!(f.is_string() && f.get<std::string>() == kEtcdNodeFinalizer)) finalizers.push_back(f);
  }
  return Object{
      {"metadata", {{"resourceVersion", node.resource_version}, {"finalizers", finalizers}}}};
}

}  // namespace caphv::workload
