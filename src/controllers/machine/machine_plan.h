// File: controllers/machine/machine_plan.h
//
// The HarvesterMachine planner: a pure function from what the reconciler
// observed (MachineObservation, a plain value built from caches and the few
// live reads the planner asked for) to the next write and the conditions to
// report (MachinePlan). The reconciler executes the plan's action (one API
// call), folds the result into the observation and plans again, until a plan
// has no action; then it reports status once and returns the plan's Wait.
//
// Normal path (each step returns while it waits; waiting never blocks
// deletion):
//   owner Machine -> finalizer -> the Cluster's infrastructure is ready ->
//   Machine.spec.bootstrap.dataSecretName is set -> Harvester connection ->
//   [an address: one this machine already holds in the cluster's pools, else
//   the next free one, in pool order] -> creation inputs (bootstrap data,
//   KeyPair, images: live reads) -> cloud-init Secret -> VirtualMachine
//   (POST; AlreadyExists is read back and adopted only if it carries this
//   cluster's id) -> spec.providerID = harvester://<VM uid> -> addresses from
//   the VMI -> ready -> NodeRegistered from the workload cluster's Node ->
//   node initialisation (NodeInitialized): the Node of the machine's name
//   gets spec.providerID and loses the uninitialized taint when the cloud
//   provider has not done it (workload/node_init.h), once per machine.
// Control-plane machines keep their etcd Node with a finalizer while their
// VM lives (kGuardEtcdNode; workload/etcd_member.h).
// Delete path, strictly in this order: [control plane: its etcd member
// removed through RKE2 (kRequestEtcdRemoval, then wait for
// removed-node-name; never the last member; not when the Cluster goes;
// after kEtcdRemovalTimeout the VM goes anyway, with EtcdMemberRemoved
// False and a Warning)] -> VM (PVCs marked for removal, then the VM
// deleted; wait for it to go) -> PVCs -> cloud-init Secret -> a live read
// confirming the VM is gone -> the address back to its pool -> [the etcd
// Node's finalizer; while the workload cluster does not answer, a wait of
// up to kEtcdRemovalTimeout since the deletion began, then a Warning
// (EtcdNodeFinalizerLeft); not when the Cluster goes] -> finalizer.
// Adoption (docs/adoption.md): a VM of this machine's name belongs to it when
// it carries this cluster's id label, or when spec.providerID names its uid
// (made by the Go provider v0.2.x, or by this provider under another
// management cluster id): then its cloud-init Secret, the VM and its running
// VMI are relabelled first (a VM the cache cannot see because it lacks the
// labels is looked up live when spec.providerID is set). Any other VM of the
// name is another cluster's and is never touched (VMNameConflict). Pool
// entries of the Go provider's owner format are this machine's
// (harvester::SameOwner).
// Paused (Cluster.spec.paused or the paused annotation): no action at all,
// deletion included (clusterctl move deletes paused objects it has copied).
//
// Every step the planner can take is a case of PlanMachine, unit-tested in
// test/unit/controllers/machine_plan_test.cc.
//
// Thread safety: pure functions over values.

#pragma once

#include <array>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"
#include "controllers/reconcile.h"
#include "harvester/ipam.h"
#include "harvester/naming.h"
#include "harvester/vm_builder.h"
#include "kube/object.h"
#include "workload/etcd_member.h"
#include "workload/node_init.h"

namespace caphv::controllers {

// Condition types of a HarvesterMachine (and kInfrastructureReady).
inline constexpr std::string_view kBootstrapDataReady = "BootstrapDataReady";
inline constexpr std::string_view kVmProvisioningReady = "VMProvisioningReady";
inline constexpr std::string_view kVmIpAllocated = "VMIPAllocated";
inline constexpr std::string_view kMachineCreated = "MachineCreated";
inline constexpr std::string_view kNodeRegistered = "NodeRegistered";
inline constexpr std::string_view kNodeInitialized = "NodeInitialized";
// Deleting a control-plane machine: its etcd member (workload/etcd_member.h).
inline constexpr std::string_view kEtcdMemberRemoved = "EtcdMemberRemoved";
// Every condition type a HarvesterMachine reports (with Ready and Paused).
inline constexpr std::array<std::string_view, 8> kMachineConditionTypes = {
    kInfrastructureReady, kBootstrapDataReady, kVmProvisioningReady, kVmIpAllocated,
    kMachineCreated,      kNodeRegistered,     kNodeInitialized,     kEtcdMemberRemoved};
// How long a deleting control-plane machine waits for its etcd member's
// removal (or for the workload cluster, to ask for it) before its VM goes
// anyway, with a Warning.
inline constexpr std::chrono::minutes kEtcdRemovalTimeout{5};

// Annotation on the cloud-init Secret: a hash of its content, so an
// unchanged Secret is never written again.
inline constexpr std::string_view kAnnotationContentHash =
    "harvester.infrastructure.cluster.x-k8s.io/content-hash";

struct VmView {
  std::string uid;
  std::string created;   // metadata.creationTimestamp (caphv_machine_creation_duration_seconds)
  bool ours = false;     // carries this cluster's id label
  bool adopted = false;  // kAnnotationAdopted
  bool running = false;  // its status says a VMI runs (status.ready)
  // KubeVirt's word on a VM that does not start (status.printableStatus,
  // e.g. ErrorPvcNotFound, WaitingForVolumeBinding, and the message of its
  // Synchronized=False condition); "" when it has none.
  std::string printable_status;
  std::string not_synchronized;
  std::string unschedulable;      // the message of its PodScheduled=False condition
  std::string cloud_init_secret;  // the Secret its cloud-init volume names
  bool deleting = false;
  bool pvcs_marked_for_removal = false;  // or it lists no PVC
  std::optional<kube::Object> remove_pvcs_patch;
};

struct VmiView {
  std::string phase;
  std::vector<api::MachineAddress> addresses;
  // When it started running (status.phaseTransitionTimestamps, else its Ready
  // condition's lastTransitionTime): caphv_node_init_duration_seconds.
  std::string running_since;
};

struct PvcView {
  std::string name;
  bool deleting = false;
};

// Annotation on the cloud-init Secret when the bootstrap data could not be
// merged (harvester::UserData::not_merged_because): the machine keeps
// saying so after the VM was created.
inline constexpr std::string_view kAnnotationUserDataNotMerged =
    "harvester.infrastructure.cluster.x-k8s.io/user-data-not-merged";

struct SecretView {
  bool ours = false;
  std::string content_hash;
  std::string not_merged_because;  // kAnnotationUserDataNotMerged
};

// What creating a VM needs beyond the caches: live reads, made once the
// planner asks for them (ActionKind::kReadCreationInputs).
struct CreationInputs {
  // Set when an input is missing: the condition reason and message, and when
  // to look again.
  std::string error_reason;
  std::string error_message;
  kube::Clock::Duration retry_after = kube::Clock::Duration::zero();

  std::string bootstrap_data;                              // bootstrap Secret key `value`
  std::string bootstrap_format;                            // key `format`
  std::string ssh_public_key;                              // KeyPair spec.publicKey
  std::map<std::string, harvester::ResolvedImage> images;  // by Volume.image_name
};

struct MachineObservation {
  api::HarvesterMachine hm;  // hm.status is the status last reported
  // The reported status had conditions in another shape (ToOurConditions;
  // hm.status has them in ours): the status is replaced, not applied.
  bool status_foreign = false;
  std::string key;  // "<namespace>/<name>"
  bool deleting = false;
  bool has_finalizer = false;  // ours or the Go provider's name
  bool paused = false;

  // Cluster API.
  bool machine_found = false;
  bool control_plane = false;          // the machine or its Machine is labelled control plane
  std::string bootstrap_secret;        // Machine.spec.bootstrap.dataSecretName
  std::string machine_failure_domain;  // Machine.spec.failureDomain
  bool machine_has_node_ref = false;
  std::string cluster_name;
  bool cluster_found = false;
  bool infrastructure_ready = false;
  bool control_plane_initialized = false;           // Cluster API watches Nodes itself
  std::shared_ptr<const api::HarvesterCluster> hc;  // shared by the cluster's machines
  // The id recorded on the HarvesterCluster, else the current management
  // cluster's (harvester::ManagementClusterIdOf).
  std::string management_cluster_id;

  // Harvester: meaningful only when `harvester.ready`.
  ConnectionView harvester;
  std::optional<VmView> vm;
  bool vm_absence_confirmed = false;  // a live read found no VM
  // Adoption (a VM spec.providerID names that lacks this cluster's labels):
  // set by the executor once the Secret / VMI patch was made (or found
  // nothing) in this reconcile.
  bool cloud_init_secret_adopted = false;
  bool vmi_adopted = false;
  std::optional<VmiView> vmi;
  std::vector<PvcView> pvcs;  // of the target namespace named "<vm>-disk-..."
  std::optional<SecretView> cloud_init_secret;
  // The pools named by the cluster (in order) and the one in
  // status.allocatedPoolRef; pool == nullopt when not found.
  std::vector<harvester::PoolCandidate> pools;
  std::optional<CreationInputs> inputs;

  // Workload cluster: looked at once the VM runs, while NodeInitialized is
  // not True, and for a control-plane machine while the Machine has no
  // nodeRef and the control plane is not initialized.
  ConnectionView workload;
  std::optional<workload::NodeView> node;  // the Node of this name exists
  bool node_initialized_here = false;      // this reconcile wrote the Node (kInitializeNode)
  // Control-plane machines (workload/etcd_member.h): their Node as etcd
  // membership sees it, and how many Nodes of the cluster's other machines
  // still hold a member. Looked at while the VM runs and while it is
  // deleted.
  std::optional<workload::EtcdNodeView> etcd_node;
  int other_etcd_members = 0;
  bool cluster_deleting = false;  // the Cluster is being deleted: etcd goes with it
  std::chrono::system_clock::time_point now{};
};

enum class ActionKind {
  kAddFinalizer,
  kReadCreationInputs,
  kReserveAddress,        // pool, ip; body: the pool merge patch
  kApplyCloudInitSecret,  // body: the Secret; create = POST (not cached) or apply
  kCreateVm,              // body: the VirtualMachine
  kAdoptCloudInitSecret,  // name; body: the Secret merge patch (NotFound is fine)
  kAdoptVm,               // body: the VM merge patch; event: VMAdopted
  kAdoptVmi,              // body: the VMI merge patch (NotFound is fine)
  kSetProviderID,         // value: harvester://<uid>
  kMarkPvcsForRemoval,    // body: the VM merge patch
  kDeleteVm,
  kDeletePvc,  // name
  kDeleteCloudInitSecret,
  kConfirmVmGone,   // live GET of the VM
  kReleaseAddress,  // pool; body: the pool merge patch
  kRemoveFinalizer,
  kInitializeNode,      // name: the workload Node; value: providerID; body: the Node merge patch
  kGuardEtcdNode,       // name: the Node; body: the merge patch adding kEtcdNodeFinalizer
  kRequestEtcdRemoval,  // name: the Node; body: the merge patch setting the remove annotation
  kReleaseEtcdNode,     // name: the Node; body: the merge patch dropping kEtcdNodeFinalizer
};

ActionRow RowOf(ActionKind kind);
inline std::string_view ActionName(ActionKind kind) { return RowOf(kind).name; }

struct MachineAction {
  ActionKind kind;
  std::string name;   // PVC, pool, or Harvester object name
  std::string value;  // ip, providerID
  kube::Object body;
  bool create = false;  // kApplyCloudInitSecret: POST rather than apply
  bool operator==(const MachineAction&) const = default;
};

struct MachinePlan {
  std::optional<MachineAction> action;     // the next write (or live read)
  Wait wait;                               // when there is no action
  api::HarvesterMachineStatus status;      // to report
  std::vector<EventNote> events;           // Warning Events of condition transitions
  bool wait_for_pool = false;              // wake on the next IPPool change
  std::vector<std::string> wait_for_pvcs;  // wake when one of these is deleted
  // The VM goes with its etcd member perhaps left behind (the timeout, or an
  // unreachable workload cluster): true in the plan that first decides it.
  bool etcd_member_left = false;
  // The machine's VM was found gone from Harvester: true in the plan that
  // first says so (caphv_machine_vm_lost_total).
  bool vm_lost = false;
};

// The owner id this machine's pool entries carry.
std::string MachineOwnerId(const MachineObservation& obs);
// The cluster identity of the machine's Cluster.
harvester::ClusterIdentity MachineIdentity(const MachineObservation& obs);

// The conditions the Ready summary looks at, in order.
inline constexpr std::array<std::string_view, 4> kMachineReadyOrder = {
    kInfrastructureReady, kBootstrapDataReady, kVmIpAllocated, kVmProvisioningReady};

MachinePlan PlanMachine(const MachineObservation& obs);

// `action` of `plan` failed with `error`: the condition and Warning Event
// that report it (its RowOf; none for a 409 Conflict, which is only retried,
// nor for an action without a failure condition).
void MarkActionFailed(const MachineObservation& obs, const MachineAction& action,
                      const kube::Status& error, MachinePlan& plan);

// Whether a planned status that differs from `reported` must be written at
// once rather than held (StatusHold): it turns a condition into a failure
// (`plan.events` has its Warning) or changes the failure fields; and, unless
// the machine is `deleting` (it goes, and Cluster API reads none of it
// then), it changes readiness, addresses, the IPPool record, pauses, or
// completes the machine (ready, its Node registered and initialised: the
// registration is what makes Cluster API look for the first control plane's
// Node). Otherwise it only reports progress.
bool StatusChangeIsUrgent(const api::HarvesterMachineStatus& reported, const MachinePlan& plan,
                          bool deleting);

}  // namespace caphv::controllers
