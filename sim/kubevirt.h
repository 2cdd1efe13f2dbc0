// File: sim/kubevirt.h
//
// What KubeVirt and Harvester decide about a VirtualMachine, as pure
// functions: admission rules of Harvester's VM webhook, the PVCs Harvester
// makes from `harvesterhci.io/volumeClaimTemplates` (named exactly as the
// template names them), NIC addresses (static from the cloud-init network
// data, else leased), and the VirtualMachineInstance / VM status / guest Node
// objects the simulator writes at each stage of a VM's life.
//
// The decisions are implemented in kubevirt.cc, the objects written in
// kubevirt_vmi.cc.
//
// Thread safety: pure functions over values.

#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/status.h"
#include "sim/scheduling.h"

namespace caphv::sim {

inline constexpr char kFailAnnotation[] = "sim.caphv.io/fail";
// "true": the guest dies (power cut): the VMI fails, and the guest's kubelet
// stops writing anything (no Node status, no Lease renewals), so the Node goes
// Unknown when the node lifecycle controller notices, as with a real kubelet.
inline constexpr char kDeadAnnotation[] = "sim.caphv.io/dead";
inline constexpr char kVmFinalizer[] = "kubevirt.io/virtualMachineControllerFinalize";
inline constexpr char kHarvesterVmFinalizer[] =
    "wrangler.cattle.io/VMController.CleanupPVCAndSnapshot";
inline constexpr char kVmiForegroundFinalizer[] = "foregroundDeleteVirtualMachine";
inline constexpr char kClaimTemplatesAnnotation[] = "harvesterhci.io/volumeClaimTemplates";
inline constexpr char kRemovedClaimsAnnotation[] = "harvesterhci.io/removedPersistentVolumeClaims";
inline constexpr char kImageIdAnnotation[] = "harvesterhci.io/imageId";
inline constexpr char kUninitializedTaint[] = "node.cloudprovider.kubernetes.io/uninitialized";

// One NIC of a VM: spec names, and the address the guest will report.
struct Nic {
  std::string name;     // spec.template.spec.networks[].name
  std::string network;  // "<ns>/<nad>" for Multus, "" for the pod network
  std::string mac;
  std::string ip;  // static address from network data, or "" (lease)
};

// The network data the VM's cloud-init volume carries inline (plain or
// base64), or "" when it references a Secret or has none.
std::string InlineNetworkData(const kube::Object& vm);
// The Secret named by cloudInitNoCloud.networkDataSecretRef, or "".
std::string NetworkDataSecretName(const kube::Object& vm);
// The network data of a cloud-init Secret (key `networkdata`, else `networkData`).
std::string NetworkDataFromSecret(const kube::Object& secret);

// The static IPv4 address network data (config v1 or v2) gives interface
// eth<index>, without its prefix length.
std::optional<std::string> StaticAddress(const std::string& network_data, size_t index);

// A stable locally administered MAC for NIC `index` of the VM with `uid`.
std::string GeneratedMac(const std::string& uid, size_t index);

// The VM's NICs in spec order, with MACs (spec macAddress, else generated)
// and static addresses from `network_data`.
std::vector<Nic> PlanNics(const kube::Object& vm, const std::string& network_data);

// What the validating webhook needs to know about the cluster.
struct AdmissionWorld {
  std::function<bool(const std::string& ns, const std::string& name)> network_exists;
  // Static or leased VM addresses in use: ip -> "<ns>/<vm name>".
  std::map<std::string, std::string> ips_in_use;
};
// The messages Harvester's webhooks would reject the VM with; empty = allowed.
std::vector<std::string> ValidateVm(const kube::Object& vm, const std::string& network_data,
                                    const AdmissionWorld& world);

// The PVCs of `volumeClaimTemplates`, in the VM namespace, without owner
// (PVCs outlive VMs); InvalidArgument when the annotation is not valid JSON.
kube::StatusOr<std::vector<kube::Object>> ClaimsFromVm(const kube::Object& vm);
// Names listed in `removedPersistentVolumeClaims` (comma separated).
std::vector<std::string> RemovedClaims(const kube::Object& vm);
// The status of `pvc` once bound (phase Bound, capacity and access modes of its spec).
kube::Object BoundClaimStatus(const kube::Object& pvc);

// Why a VM cannot start yet because of its volumes, as KubeVirt says it
// (kubevirt@v1.6.0 pkg/virt-controller/watch/vm.go: printableStatus
// ErrorPvcNotFound / WaitingForVolumeBinding, condition Synchronized=False).
struct VolumeWait {
  std::string printable_status;  // "ErrorPvcNotFound", "WaitingForVolumeBinding"
  std::string reason;            // "FailedPvcNotFound", "PvcNotBound"
  std::string message;
};

// Whether a PVC of storage class `class_name` ("" = the default class) can
// bind, given the classes that exist and, for an image disk, the class of
// its image ("" when not an image disk). "" = it binds; else why not.
std::string WhyClaimCannotBind(const std::string& class_name, const std::string& default_class,
                               const std::set<std::string>& classes,
                               const std::string& image_class);

// The VMI of a VM held back by `wait`: phase Pending, Synchronized False.
kube::Object BuildPendingVmi(const kube::Object& vm, const VolumeWait& wait);
// The VM's status while `wait` holds it.
kube::Object BuildWaitingVmStatus(const kube::Object& vm, const VolumeWait& wait);

// Where a VM is in its simulated life.
enum class Stage {
  kStopped,     // runStrategy Halted (or not running): no VMI
  kScheduling,  // VMI Scheduling, before the boot delay
  kBooting,     // VMI Running, interfaces without IPs (before the IP delay)
  kRunning,     // VMI Running with IPs, Ready
  kFailed,      // failure injected via kFailAnnotation or kDeadAnnotation
};
bool WantsRunning(const kube::Object& vm);
bool FailureInjected(const kube::Object& vm);
bool GuestDied(const kube::Object& vm);
Stage StageOf(const kube::Object& vm, std::chrono::milliseconds since_start,
              std::chrono::milliseconds boot_delay, std::chrono::milliseconds ip_delay);
// How long until the stage can next change (zero when it cannot by time).
std::chrono::milliseconds UntilNextStage(Stage stage, std::chrono::milliseconds since_start,
                                         std::chrono::milliseconds boot_delay,
                                         std::chrono::milliseconds ip_delay);

// What KubeVirt learns from inside a running guest. A bridge NIC's address
// reaches the VMI only through qemu-guest-agent (kubevirt v1.6.0
// pkg/virt-handler agent_poller.go, pkg/network/setup/netstat.go); the agent
// reports every interface but `lo` with all its addresses, link-local IPv6
// included, and interfaces the VMI spec does not name (an RKE2 node's cni0,
// flannel.1) unnamed.
struct GuestAgentReport {
  bool runs = false;         // qemu-guest-agent answers
  bool pod_network = false;  // the guest runs RKE2's CNI (cni0, flannel.1)
};

// The link-local IPv6 address (EUI-64) of a NIC with MAC `mac`; "" when the
// MAC is not six hex octets.
std::string LinkLocalAddress(const std::string& mac);

// The VMI for a VM at `stage` (complete object, status inline; for apply),
// on the host `where` chose. A VM no host fits (where.unschedulable) stays
// in phase Scheduling with PodScheduled=False, reason Unschedulable and the
// scheduler's message, whatever `stage` says.
kube::Object BuildVmi(const kube::Object& vm, Stage stage, const std::vector<Nic>& nics,
                      const GuestAgentReport& agent, const Placement& where = {});
// The VM's status at `stage` (for the status subresource); for an
// unschedulable VM, printableStatus ErrorUnschedulable and the VMI's
// PodScheduled condition.
kube::Object BuildVmStatus(const kube::Object& vm, Stage stage, const Placement& where = {});

// The guest Node as the kubelet registers it (name = VM name; tainted
// uninitialized, as with an external cloud provider).
kube::Object BuildNode(const kube::Object& vm);
// The kubelet-reported Node status.
kube::Object BuildNodeStatus(const kube::Object& vm, const std::vector<Nic>& nics, bool ready);
// The providerID the Harvester cloud provider sets.
std::string ProviderIdFor(const kube::Object& vm);
// The merge patch that drops `drop_taints` from `node` and, when
// `provider_id` is not empty, sets it; an empty object when nothing changes.
// It carries the resourceVersion of the `node` it was computed from, as the
// node-lifecycle controller and the cloud provider write taints: against a
// Node changed since (another writer lifted or added a taint) the apiserver
// answers 409 Conflict instead of the stale taint list overwriting it.
kube::Object NodeSpecPatch(const kube::Object& node, const std::set<std::string>& drop_taints,
                           const std::string& provider_id);

}  // namespace caphv::sim
