// File: sim/guests.h
//
// Guests: what runs inside the simulator's running VMs, on the workload
// apiserver. Its kubelet registers the Node and renews its Lease in
// kube-node-lease every 10 s; when the user data (read once, at first boot,
// as cloud-init does) installs RKE2, RKE2 decides whether the node may join
// (the cluster's token and registration address, else a Warning Event on
// the VMI says why), labels and taints the Node, and on servers writes the
// mirror pods, kube-system/rke2-serving and runs the etcd member; the
// guest cluster's Harvester cloud provider sets providerID and lifts the
// uninitialized taint. Decisions are the pure functions of sim/rke2.h and
// sim/kubevirt.h; these files read the caches and write.
//   guests.cc      load, Node and Lease, removal
//   guest_rke2.cc  join, server objects, etcd members
//   guest_ccm.cc   the cloud provider's instance lookup
//
// The VM controller (sim/vm_controller.h) drives it: Sync() on each VM
// reconcile, Remove() when the VM goes.
//
// Thread safety: every method may be called from any worker; the guests'
// table has its own mutex, never held across a request.

#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/events.h"
#include "sim/addresses.h"
#include "sim/context.h"
#include "sim/etcd_members.h"
#include "sim/kubevirt.h"
#include "sim/rke2.h"

namespace caphv::sim {

// What the simulator knows of a VM's guest.
struct Guest {
  std::string uid;  // of the VM it was read for
  std::optional<Rke2Config> rke2;
  std::string error;                              // user data unreadable / RKE2 config invalid
  std::string node;                               // its Node's name
  bool server_objects = false;                    // mirror pods + rke2-serving written
  std::chrono::steady_clock::time_point renewed;  // last Lease renewal
  std::string refusal;                            // last join refusal reason
  std::string etcd_cluster;                       // its cluster's key, once its member started
  std::string etcd_member;                        // its etcd member's name, once started
  std::string etcd_wait;                          // why its member is not up (last said)
  bool guest_agent = false;                       // qemu-guest-agent runs (user data or image)
};

class Guests {
 public:
  Guests(SimContext& ctx, const VmAddresses& addresses);
  ~Guests();

  // The guest of `vm` (reading its user data the first time). NotFound
  // while its user-data Secret is not there.
  kube::StatusOr<Guest> Load(const kube::Object& vm);
  // The Node name of a VM's guest (the VM name until its config says otherwise).
  std::string NodeName(const std::string& vm_key, const std::string& vm_name) const;
  // One VM reconcile's worth of the guest at `stage`, with addresses `nics`:
  // powered off (its Node goes), booting, or running (Node, status, Lease,
  // RKE2's objects, the cloud provider). Lowers `requeue` to when it next
  // has something to do.
  kube::Status Sync(const kube::Object& vm, Stage stage, const std::vector<Nic>& nics,
                    std::chrono::milliseconds* requeue);
  // The VM no longer wants to run: the cloud provider's delay starts again
  // at its next boot.
  void PoweredOff(const std::string& vm_uid);
  // The VM `vm_key` (uid `vm_uid`, "" when unknown) and its disks are gone:
  // its Node (unless a VM of another namespace has it), its etcd data, and,
  // with the last server of its cluster, the finalizers of that cluster's
  // Nodes.
  kube::Status Remove(const std::string& vm_key, const std::string& vm_uid);
  // For the kubelet proxy: "" when `host` (a Node name or address) is a
  // running guest whose kubelet answers, else why it does not.
  std::string KubeletReachable(const std::string& host) const;

 private:
  // The cloud provider's answer for one Node (guest_ccm.cc).
  struct CcmLookup {
    std::string provider_id;
    std::string reason;
    std::string message;
  };
  // The guest cluster's Harvester cloud provider looking up the VM of Node
  // `node_name` as cloud-provider-harvester does
  // (pkg/cloud-controller-manager/instance.go): with the kubeconfig of the
  // workload Secret kube-system/cloud-config (key cloud-config), by the
  // Node's name, in that kubeconfig's context namespace, authenticated with
  // its token against this Harvester. Its providerID, or why not.
  CcmLookup CloudProviderLookup(const std::string& node_name);
  // True when one of the VM's image disks is an environment image that
  // ships qemu-guest-agent (EnvImage::guest_agent).
  bool ImageShipsGuestAgent(const kube::Object& vm) const;
  // The RKE2 cluster `vm` joins, as a joining node sees it.
  Rke2Cluster ClusterFor(const kube::Object& vm, bool* is_first);
  kube::Status RegisterNode(const kube::Object& vm, const Guest& guest,
                            const std::vector<Nic>& nics, std::chrono::milliseconds* requeue);
  kube::Status RenewLease(const std::string& vm_key, const kube::Object& node,
                          std::chrono::milliseconds* requeue);
  // providerID and the taints the node-lifecycle controller and the cloud
  // provider lift.
  kube::Status InitializeNode(const kube::Object& vm, const Guest& guest, const kube::Object& node,
                              bool running, std::chrono::milliseconds* requeue);
  kube::Status EnsureServerObjects(const std::string& vm_key, const Guest& guest,
                                   const kube::Object& node, const std::string& ip);
  // The guest's etcd member (servers with etcd): started or joined, and its
  // pod's PortForward; nothing once RKE2 removed it.
  kube::Status EnsureEtcd(const kube::Object& vm, const std::string& vm_key, const Guest& guest,
                          const kube::Object& node, std::chrono::milliseconds* requeue);
  // RKE2's member removal: `etcd.rke2.cattle.io/remove` on a server Node
  // removes its member (never the last voter) and records
  // `removed-node-name`. Runs on a live server, so also for a dead guest.
  kube::Status HandleEtcdRemoval(const kube::Object& vm, const kube::Object& node,
                                 std::chrono::milliseconds* requeue);
  // The member of a powered-off or dead guest stops.
  void KillEtcd(const std::string& vm_key, bool powered_off);
  // Drops the finalizers of orphaned_nodes_ (Nodes of clusters whose last
  // server went: in the real world they went with the cluster's datastore).
  kube::Status DropOrphanedNodeFinalizers();
  void Event(const kube::Object& vm, kube::EventType type, const std::string& reason,
             const std::string& message);

  SimContext& ctx_;
  const VmAddresses& addresses_;
  std::unique_ptr<EtcdMembers> etcd_;
  kube::EventRecorder workload_recorder_;  // the guests' cloud provider

  mutable std::mutex mu_;                // guards the members below
  std::map<std::string, Guest> guests_;  // vm key -> guest
  std::map<std::string, std::chrono::steady_clock::time_point> running_;  // vm uid -> Running
  // Per RKE2 cluster (Guest::etcd_cluster): the Nodes of its servers whose VMs
  // went; when its last server goes they move to orphaned_nodes_.
  std::map<std::string, std::set<std::string>> gone_server_nodes_;
  std::set<std::string> orphaned_nodes_;
  std::map<std::string, std::string> ccm_warned_;  // Node -> reason of its last Warning
};

}  // namespace caphv::sim
