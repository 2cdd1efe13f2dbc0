// File: workload/node_init.cc

#include "workload/node_init.h"

#include "api/conditions.h"

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
  const kube::Object meta = node.value("metadata", kube::Object::object());
  if (auto created = meta.find("creationTimestamp");
      created != meta.end() && created->is_string()) {
    v.created = api::ParseTime(created->get<std::string>());
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
  d.patch = kube::Object::array();
  std::string what;
  if (node.provider_id.empty()) {
    d.patch.push_back({{"op", "add"}, {"path", "/spec/providerID"}, {"value", provider_id}});
    what = "set providerID " + provider_id;
  }
  if (node.uninitialized) {
    // From the last index down, so that each removal leaves the indices of
    // the ones before it as they were read.
    for (size_t i = node.taints.size(); i-- > 0;) {
      const kube::Object& t = node.taints[i];
      if (!t.is_object() || t.value("key", "") != kUninitializedTaint) continue;
      const std::string path = "/spec/taints/" + std::to_string(i);
      d.patch.push_back({{"op", "test"}, {"path", path}, {"value", t}});
      d.patch.push_back({{"op", "remove"}, {"path", path}});
    }
    what += std::string(what.empty() ? "" : ", ") + "removed the taint " +
            std::string(kUninitializedTaint);
  }
  d.message = "Node " + node.name + ": " + what;
  return d;
}

namespace {

// The message of the apiserver's 422 for a JSON Patch that does not apply to
// the object as stored: applyJSPatch (k8s.io/apiserver endpoints/handlers/
// patch.go) answers NewGenericServerResponse(422, ...), which keeps its
// generic message for the code and drops json-patch's own text ("testing
// value ... failed" never reaches the client), with no causes.
constexpr std::string_view kPatchNotApplicable =
    "the server rejected our request due to an error in our request";

}  // namespace

bool IsNodeChanged(const kube::Status& patch_error) {
  if (patch_error.code() != kube::StatusCode::kInvalid) return false;
  // A `test` that fails, or an index that is gone: the generic answer
  // without causes. This patch is well-formed by construction, so that
  // answer means the Node changed.
  if (patch_error.causes().empty()) return patch_error.message() == kPatchNotApplicable;
  // A providerID someone else set meanwhile: 422 on that field (it may not
  // change once set).
  for (const auto& cause : patch_error.causes()) {
    if (cause.field == "spec.providerID") return true;
  }
  // Any other 422 (a Node the apiserver refuses for another field, a
  // webhook's denial) is an error.
  return false;
}

}  // namespace caphv::workload
