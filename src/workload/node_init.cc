// File: workload/node_init.cc

#include "workload/node_init.h"

namespace caphv::workload {

NodeView ViewOfNode(const kube::Object& node) {
  NodeView v;
  v.name = kube::NameOf(node);
  v.resource_version = kube::ResourceVersionOf(node);
  const kube::Object spec = node.value("spec", kube::Object::object());
  if (auto id = spec.find("providerID"); id != spec.end() && id->is_string()) {
    v.provider_id = id->get<std::string>();
  }
  if (auto taints = spec.find("taints"); taints != spec.end() && taints->is_array()) {
    v.taints = *taints;
  }
  for (const auto& t : v.taints) {
    if (t.is_object() && t.value("key", "") == kUninitializedTaint) v.uninitialized = true;
  }
  return v;
}

NodeInitDecision DecideNodeInit(const NodeView& node, const std::string& provider_id) {
  NodeInitDecision d;
  if (!node.provider_id.empty() && node.provider_id != provider_id) {
    d.outcome = NodeInitDecision::Outcome::kForeign;
    d.message = "Node " + node.name + " has providerID " + node.provider_id + ", not " +
                provider_id + ": it is left untouched";
    return d;
  }
  if (!node.provider_id.empty() && !node.uninitialized) {
    d.outcome = NodeInitDecision::Outcome::kInitialized;
    d.message = "Node " + node.name + " has providerID " + provider_id;
    return d;
  }
  d.outcome = NodeInitDecision::Outcome::kWrite;
  kube::Object spec = kube::Object::object();
  std::string what;
  if (node.provider_id.empty()) {
    spec["providerID"] = provider_id;
    what = "set providerID " + provider_id;
  }
  if (node.uninitialized) {
    kube::Object kept = kube::Object::array();
    for (const auto& t : node.taints) {
      if (!t.is_object() || t.value("key", "") != kUninitializedTaint) kept.push_back(t);
    }
    // null removes the field, as an empty list would leave `taints: []`.
    spec["taints"] = kept.empty() ? kube::Object(nullptr) : kept;
    what += std::string(what.empty() ? "" : ", ") + "removed the taint " +
            std::string(kUninitializedTaint);
  }
  d.patch = {{"metadata", {{"resourceVersion", node.resource_version}}}, {"spec", spec}};
  d.message = "Node " + node.name + ": " + what;
  return d;
}

}  // namespace caphv::workload
