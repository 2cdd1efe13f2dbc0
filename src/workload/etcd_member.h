// File: workload/etcd_member.h
//
// The etcd member of a control-plane machine, removed through RKE2's own
// path: RKE2 runs a controller on its servers that, for a Node annotated
// `etcd.rke2.cattle.io/remove: "true"`, removes that Node's etcd member
// (matched by name and peer address, never the last voter) and records
// `etcd.rke2.cattle.io/removed-node-name`. The RKE2 control-plane provider
// uses the same annotation in its pre-terminate hook. CAPHV asks for it too,
// for its own machine's Node only, before the VM goes: when the hook did not
// run (another control-plane provider, a Machine deleted by hand, a hook
// removed) the member would otherwise stay behind, stale, counting against
// quorum. That is safer than running `etcdctl member remove` in a pod (the
// Go provider's way): no exec, no hard-coded paths, RKE2 itself guards
// against removing the last voter or another node's member.
//
// The Node finalizer: a control-plane provider waits for
// `removed-node-name` on the Node of a deleting machine; if that Node was
// deleted first (`kubectl delete node`, a cloud provider that deletes the
// Nodes of dead VMs), the annotation can never appear and the machine's
// deletion hangs. CAPHV keeps the Nodes of its etcd members with the
// finalizer kEtcdNodeFinalizer until the machine's VM is gone, so the Node
// can always carry the removal through.
//
// Thread safety: pure functions over values.

#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kube/object.h"

namespace caphv::workload {

inline constexpr std::string_view kEtcdRoleLabel = "node-role.kubernetes.io/etcd";
inline constexpr std::string_view kEtcdNodeNameAnnotation = "etcd.rke2.cattle.io/node-name";
inline constexpr std::string_view kEtcdRemoveAnnotation = "etcd.rke2.cattle.io/remove";
inline constexpr std::string_view kEtcdRemovedNodeNameAnnotation =
    "etcd.rke2.cattle.io/removed-node-name";
inline constexpr std::string_view kEtcdNodeFinalizer =
    "harvester.infrastructure.cluster.x-k8s.io/etcd-member";

// A workload Node as etcd membership sees it.
struct EtcdNodeView {
  std::string name;
  bool etcd = false;               // labelled node-role.kubernetes.io/etcd=true
  std::string member;              // etcd.rke2.cattle.io/node-name
  bool removal_requested = false;  // etcd.rke2.cattle.io/remove=true
  std::string removed_member;      // etcd.rke2.cattle.io/removed-node-name
  bool has_finalizer = false;      // kEtcdNodeFinalizer
  bool deleting = false;
  std::string resource_version;
  kube::Object finalizers = kube::Object::array();
  bool operator==(const EtcdNodeView&) const = default;
};

EtcdNodeView ViewOfEtcdNode(const kube::Object& node);

// True for a Node whose member is still in the cluster (an etcd Node RKE2
// has not recorded as removed).
bool HoldsEtcdMember(const EtcdNodeView& node);

struct EtcdRemovalDecision {
  enum class Outcome {
    kNothing,    // no etcd member on this Node (or never one)
    kRemoved,    // RKE2 recorded the removal
    kLastVoter,  // the only member left: never removed (the cluster goes with it)
    kRequest,    // `patch` asks RKE2 to remove it
    kWaiting,    // asked; RKE2 has not recorded it yet
  };
  Outcome outcome = Outcome::kNothing;
  kube::Object patch;
  std::string message;
};

// `other_members`: Nodes of the same cluster's other machines that still
// hold a member (HoldsEtcdMember).
EtcdRemovalDecision DecideEtcdRemoval(const EtcdNodeView& node, int other_members);

// The merge patch adding (or removing) kEtcdNodeFinalizer, guarded by the
// Node's resourceVersion; nullopt when there is nothing to change. Adding
// is for a Node that holds a member and is not being deleted.
std::optional<kube::Object> AddEtcdNodeFinalizer(const EtcdNodeView& node);
std::optional<kube::Object> RemoveEtcdNodeFinalizer(const EtcdNodeView& node);

}  // namespace caphv::workload
