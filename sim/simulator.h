// File: sim/simulator.h
//
// Simulator: the controllers that make a plain kube-apiserver behave like
// Harvester v1.7 for a provider, plus the guest cluster's kubelet and cloud
// provider on the workload apiserver:
//   - vm:    VirtualMachine -> VMI (Scheduling, Running, IPs), VM status,
//            Bound PVCs from volumeClaimTemplates, finalizer-driven cleanup
//            (VMI, removedPersistentVolumeClaims, Node), guest Node
//            registration and providerID;
//   - guest: the guest's kubelet and RKE2 (sim/guest.cc): reads the VM's
//            user data once, at first boot; an RKE2 node joins only with
//            the cluster's token and registration address (else a Warning
//            Event on the VMI says why), registers its Node as RKE2 does
//            and renews its Lease in kube-node-lease every 10 s; servers
//            write their mirror pods and kube-system/rke2-serving. A guest
//            without RKE2 config registers a plain Node, with Lease too;
//   - lb:    LoadBalancer -> address from an IPPool (recorded in
//            status.allocated as "<ns>/<name>") or a DHCP range, released on
//            delete; a `vm` LB gets (or adopts) its Service of type
//            LoadBalancer and reports the address kube-vip gives it;
//   - kube-vip: Services of type LoadBalancer -> status.loadBalancer.ingress
//            = spec.loadBalancerIP (or the kube-vip.io/loadbalancerIPs
//            annotation), a lease from the DHCP range for "0.0.0.0";
//   - pool:  IPPool status totals; image and keypair status.
// Each reconcile reads the informers' caches, decides with the pure functions
// of kubevirt.h / loadbalancer.h / ipam.h, and writes only what differs.
//
// Scope: with `namespace_` set only that namespace is handled; otherwise every
// namespace except those labelled sim.caphv.io/dedicated=true (which belong
// to a simulator of their own, e.g. in tests).
//
// Thread safety: Run() once; Admit() from any thread (webhook threads).

#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <stop_token>
#include <string>

#include "kube/client.h"
#include "kube/controller.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kube/log.h"
#include "sim/env.h"
#include "sim/etcd_members.h"
#include "sim/kubevirt.h"
#include "sim/rke2.h"

namespace caphv::sim {

inline constexpr char kDedicatedLabel[] = "sim.caphv.io/dedicated";
// A test knob on a Harvester namespace: "true" makes its guests ignore
// qemu-guest-agent in their user data (as if a provider had left it out), so
// only an image that ships the agent reports addresses.
inline constexpr char kStripGuestAgentLabel[] = "sim.caphv.io/strip-guest-agent";

struct SimOptions {
  std::chrono::milliseconds boot_delay{0};
  std::chrono::milliseconds ip_delay{0};
  std::chrono::milliseconds provider_id_delay{300};
  double fault_rate = 0;  // probability that one of the simulator's writes fails
  bool cloud_provider = true;
  std::string ns;  // "" = all namespaces (minus dedicated ones)
  Environment env;
  // etcd of RKE2 servers (one process per member); no binary = none. With
  // it, each member's pod gets a kwok PortForward (kube-system/etcd-<node>)
  // to the member's client port.
  EtcdMembersOptions etcd;
};

class Simulator {
 public:
  Simulator(std::shared_ptr<kube::Client> harvester, std::shared_ptr<kube::Client> workload,
            SimOptions options);
  ~Simulator();

  // Runs every controller until `stop`; returns the first controller error.
  kube::Status Run(std::stop_token stop);
  // True once every cache has synced.
  bool Synced() const;

  // The webhook's decision for a VirtualMachine: rejection messages (empty =
  // allowed).
  std::vector<std::string> Admit(const kube::Object& vm);
  // Harvester's VM mutator on CREATE: the JSON patch (sim/vm_mutator.h),
  // cluster networks from the NADs' network.harvesterhci.io/clusternetwork.
  kube::Object MutateVm(const kube::Object& vm);
  // The decisions of Harvester's LoadBalancer and IPPool webhooks
  // (ValidateLb, ValidateIpPool) against the caches.
  std::vector<std::string> AdmitLb(const kube::Object& lb, const kube::Object* old_lb);
  std::vector<std::string> AdmitPool(const std::string& operation, const kube::Object& pool);

  // For the kubelet proxy: "" when `host` (a Node name or address) is a
  // running guest whose kubelet answers, else why it does not.
  std::string KubeletReachable(const std::string& host);

 private:
  kube::Result ReconcileVm(const kube::Request& req);
  kube::Result ReconcileLb(const kube::Request& req);
  kube::Result ReconcileService(const kube::Request& req);
  kube::Result ReconcilePool(const kube::Request& req);
  kube::Result ReconcileImage(const kube::Request& req);
  kube::Result ReconcileKeyPair(const kube::Request& req);

  kube::Result DeleteVm(const std::string& key, const kube::Object* vm);
  // Drops the finalizers of orphaned_nodes_ (Nodes of clusters whose last
  // server went: in the real world they went with the cluster's datastore).
  kube::Status DropOrphanedNodeFinalizers();
  // Creates the VM's PVCs from its claim templates (skipping those whose
  // image is missing, as Harvester does) and binds those whose storage class
  // exists (for an image disk: the image's class). nullopt when every volume
  // is bound; else why the VM cannot start.
  kube::StatusOr<std::optional<VolumeWait>> EnsureClaims(const kube::Object& vm);
  kube::Status SyncNode(const kube::Object& vm, Stage stage, const std::vector<Nic>& nics,
                        std::chrono::milliseconds* requeue);
  kube::StatusOr<std::string> NetworkData(const kube::Object& vm);
  // The Harvester host (hosts_: the Harvester cluster's Nodes) `vm` runs on:
  // the one its VMI is on, else the scheduler's choice (sim/scheduling.h).
  Placement PlacementOf(const kube::Object& vm, const kube::Object* vmi) const;

  // What the simulator knows of a VM's guest (read once, at first boot, as
  // cloud-init does).
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
  // True when one of the VM's image disks is an environment image that
  // ships qemu-guest-agent (EnvImage::guest_agent).
  bool ImageShipsGuestAgent(const kube::Object& vm) const;
  // The guest of `vm` (loading its user data the first time).
  kube::StatusOr<Guest> LoadGuest(const kube::Object& vm);
  // The Node name of a VM's guest (the VM name until its config says otherwise).
  std::string NodeNameFor(const std::string& vm_key, const std::string& vm_name);
  // The RKE2 cluster `vm` joins, as a joining node sees it.
  Rke2Cluster ClusterFor(const kube::Object& vm, bool* is_first);
  kube::Status RegisterNode(const kube::Object& vm, const Guest& guest,
                            const std::vector<Nic>& nics, std::chrono::milliseconds* requeue);
  kube::Status RenewLease(const std::string& vm_key, const kube::Object& node,
                          std::chrono::milliseconds* requeue);
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
  void GuestEvent(const kube::Object& vm, kube::EventType type, const std::string& reason,
                  const std::string& message);
  // The guest cluster's Harvester cloud provider looking up the VM of Node
  // `node_name` as cloud-provider-harvester does
  // (pkg/cloud-controller-manager/instance.go): with the kubeconfig of the
  // workload Secret kube-system/cloud-config (key cloud-config), by the
  // Node's name, in that kubeconfig's context namespace, authenticated with
  // its token against this Harvester. Its providerID, or why not (reason,
  // message).
  struct CcmLookup {
    std::string provider_id;
    std::string reason;
    std::string message;
  };
  CcmLookup CloudProviderLookup(const std::string& node_name);
  kube::StatusOr<std::vector<Nic>> AssignAddresses(const std::string& key, const kube::Object& vm,
                                                   std::vector<Nic> nics);
  kube::Status ReleasePoolAddresses(const std::string& owner);
  // Creates or adopts the Service of a `vm` LB; returns its ingress address
  // ("" while kube-vip has given none).
  kube::StatusOr<std::string> EnsureLbService(const kube::Object& lb, const std::string& lb_ip);
  // A DHCP lease from the LB range for `owner` (an LB or a Service key),
  // keeping `current` when it is free; "" when the range is exhausted.
  std::string LeaseLbAddress(const std::string& owner, const std::string& current);
  bool InScope(const kube::Object& o) const;
  bool InScopeNs(const std::string& ns) const;
  // Fails with probability fault_rate (the simulator's own write faults).
  kube::Status Fault(std::string_view what);

  std::shared_ptr<kube::Client> h_;
  std::shared_ptr<kube::Client> w_;
  SimOptions opt_;
  kube::log::Logger log_;

  std::unique_ptr<kube::EventRecorder> recorder_;
  std::unique_ptr<kube::EventRecorder> workload_recorder_;  // the guests' cloud provider
  std::unique_ptr<EtcdMembers> etcd_;
  std::shared_ptr<kube::Informer> vms_, vmis_, pvcs_, lbs_, pools_, images_, nads_, keypairs_,
      namespaces_, nodes_, hosts_, services_, storage_classes_;

  std::mutex mu_;  // guards the members below
  std::mt19937_64 rng_;
  std::map<std::string, std::chrono::steady_clock::time_point> started_;  // vm uid -> start
  std::map<std::string, std::chrono::steady_clock::time_point> running_;  // vm uid -> Running
  std::map<std::string, std::map<std::string, std::string>> leases_;      // vm key -> nic -> ip
  std::map<std::string, std::set<std::string>> vm_ips_;                   // vm key -> ips
  std::map<std::string, Guest> guests_;                                   // vm key -> guest
  // Per RKE2 cluster (Guest::etcd_cluster): the Nodes of its servers whose VMs
  // went; when its last server goes they move to orphaned_nodes_, whose
  // finalizers DeleteVm drops (DropOrphanedNodeFinalizers).
  std::map<std::string, std::set<std::string>> gone_server_nodes_;
  std::set<std::string> orphaned_nodes_;
  std::map<std::string, std::string> ccm_warned_;  // Node -> reason of its last Warning
  std::map<std::string, std::string> lb_leases_;   // "<ns>/<name>" of a cluster LB -> DHCP ip
  std::map<std::string, std::string> vip_leases_;  // "<ns>/<name>" of a Service -> DHCP ip
};

}  // namespace caphv::sim
