// File: workload/node_init.h
//
// Node initialisation, the part the Harvester cloud provider does when it
// runs in the guest cluster: a Node registered by a kubelet started with
// `--cloud-provider=external` has no spec.providerID and carries the taint
// node.cloudprovider.kubernetes.io/uninitialized (NoSchedule) until the
// cloud provider sets the one and lifts the other. When it does not (not
// installed yet: its own pods, and the CNI's, wait on that taint), CAPHV
// does both from the management cluster, for the Node of its machine only.
//
// DecideNodeInit is pure: from the Node as cached and the providerID the
// machine expects (harvester://<VM uid>) it says whether the Node is
// initialised, belongs to something else, or needs one write, and builds
// that write: a JSON merge patch carrying metadata.resourceVersion, so the
// apiserver applies it only to the Node it was computed from (409 Conflict
// otherwise: the kubelet or the cloud provider wrote in between, and the
// decision is made again on the new version). spec.taints has no merge key
// (it is replaced whole by merge and strategic merge patches, and is an
// atomic list for server-side apply), so the patch lists every other taint
// as it was; the resourceVersion guard is what makes that safe.
//
// Thread safety: pure functions over values.

#pragma once

#include <string>
#include <string_view>

#include "kube/object.h"

namespace caphv::workload {

inline constexpr std::string_view kUninitializedTaint =
    "node.cloudprovider.kubernetes.io/uninitialized";

// A workload Node as node initialisation sees it.
struct NodeView {
  std::string name;
  std::string provider_id;                      // spec.providerID ("" when unset)
  bool uninitialized = false;                   // carries kUninitializedTaint (any effect)
  std::string resource_version;                 // metadata.resourceVersion
  kube::Object taints = kube::Object::array();  // spec.taints as stored
  bool operator==(const NodeView&) const = default;
};

NodeView ViewOfNode(const kube::Object& node);

struct NodeInitDecision {
  enum class Outcome {
    kInitialized,  // providerID is `provider_id` and the taint is gone
    kForeign,      // providerID is set to something else: never touched
    kWrite,        // `patch` sets what is missing
  };
  Outcome outcome = Outcome::kInitialized;
  kube::Object patch;   // kWrite: the merge patch
  std::string message;  // what was found or what the patch does
};

// `provider_id`: the machine's spec.providerID (harvester://<VM uid>).
NodeInitDecision DecideNodeInit(const NodeView& node, const std::string& provider_id);

}  // namespace caphv::workload
