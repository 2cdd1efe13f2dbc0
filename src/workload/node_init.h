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
// that write: a JSON Patch (RFC 6902). providerID is added (the apiserver
// refuses to change a providerID once set, so a concurrent writer's value is
// never replaced); each uninitialized taint is removed by its index, after a
// `test` that the entry at that index is still the taint as read. The patch
// is guarded by exactly what it changes: a kubelet or anyone else writing
// the Node's status, labels or other taints meanwhile does not make it fail
// (a resourceVersion guard would, with 409 Conflicts), and a changed taint
// list makes the `test` fail (422; IsNodeChanged), so the decision is made
// again on the Node as it now is. spec.taints has no merge key (merge and
// strategic merge patches replace it whole; server-side apply holds it as an
// atomic list), which is why the entries are addressed one by one.
//
// Thread safety: pure functions over values.

#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include "kube/object.h"
#include "kube/status.h"

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
  // metadata.creationTimestamp; nullopt when absent or unreadable.
  std::optional<std::chrono::system_clock::time_point> created;
  bool operator==(const NodeView&) const = default;
};

NodeView ViewOfNode(const kube::Object& node);

// How long CAPHV leaves a new Node to the cloud provider before it
// initialises the Node itself. The Harvester cloud provider, where it runs,
// initialises a Node within a second or two of its registration; CAPHV is
// the stand-in for a cluster that has none yet, and writing at once would
// race it (two writers of one Node, one of them failing with 422). Shorter
// than the status hold (controllers/reconcile.h, 10 s), so that waiting
// costs no status write of its own.
inline constexpr std::chrono::seconds kCloudProviderGrace{5};

struct NodeInitDecision {
  enum class Outcome {
    kInitialized,  // providerID is `provider_id` and the taint is gone
    kForeign,      // providerID is set to something else: never touched
    kWrite,        // `patch` sets what is missing
  };
  Outcome outcome = Outcome::kInitialized;
  kube::Object patch;   // kWrite: the JSON Patch (an array of operations)
  std::string message;  // what was found or what the patch does
};

// `provider_id`: the machine's spec.providerID (harvester://<VM uid>).
NodeInitDecision DecideNodeInit(const NodeView& node, const std::string& provider_id);

// Whether a failed node-initialisation patch failed because the Node is no
// longer as it was read: decide again, as after a Conflict. Only two
// answers say so, both 422 Invalid: without causes and with the apiserver's
// generic message for a JSON Patch that does not apply (a `test` operation
// failed, an index is gone), or with a cause on spec.providerID (set by
// someone else meanwhile). Any other failure, any other 422 included, is an
// error.
bool IsNodeChanged(const kube::Status& patch_error);

}  // namespace caphv::workload
