// File: sim/simulator.h
//
// Simulator: the controllers that make a plain kube-apiserver behave like
// Harvester v1.7 for a provider, plus the guest cluster's kubelet and cloud
// provider on the workload apiserver:
//   - vm:    VirtualMachine -> VMI (Scheduling, Running, IPs), VM status,
//            Bound PVCs from volumeClaimTemplates, finalizer-driven cleanup
//            (VMI, removedPersistentVolumeClaims, Node), guest Node
//            registration and providerID;
//   - guest: the guest's kubelet and RKE2 (sim/guests.h): reads the VM's
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
// Layout, as a controller manager: sim/context.h holds the clients, the
// caches and the options every controller shares; each controller is a
// class with its own state and lock, all its watches in its Build():
//   VmController (sim/vm_controller.h)       vm, with the disks
//   Guests (sim/guests.h)                    guest
//   LoadBalancerController,
//   KubeVipController (sim/lb_controller.h)  lb, kube-vip
//   PoolController, ImageController,
//   KeyPairController (sim/status_controllers.h)  pool, image, keypair
// and the two DHCP servers (sim/addresses.h) are shared tables with their
// own locks. Simulator wires them and answers the webhooks.
//
// Scope: with `namespace_` set only that namespace is handled; otherwise every
// namespace except those labelled sim.caphv.io/dedicated=true (which belong
// to a simulator of their own, e.g. in tests).
//
// Thread safety: Run() once; Admit() from any thread (webhook threads).

#pragma once

#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "kube/client.h"
#include "sim/addresses.h"
#include "sim/context.h"
#include "sim/guests.h"
#include "sim/lb_controller.h"
#include "sim/status_controllers.h"
#include "sim/vm_controller.h"

namespace caphv::sim {

class Simulator {
 public:
  Simulator(std::shared_ptr<kube::Client> harvester, std::shared_ptr<kube::Client> workload,
            SimOptions options);
  ~Simulator();

  // Runs every controller until `stop`; returns the first controller error.
  kube::Status Run(const std::stop_token& stop);
  // True once every cache has synced.
  bool Synced() const { return ctx_.Synced(); }

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
  std::string KubeletReachable(const std::string& host) const {
    return guests_.KubeletReachable(host);
  }

 private:
  SimContext ctx_;
  VmAddresses vm_addresses_;
  LbLeases lb_leases_;
  Guests guests_;
  VmController vms_;
  LoadBalancerController lbs_;
  KubeVipController kube_vip_;
  PoolController pools_;
  ImageController images_;
  KeyPairController keypairs_;
};

}  // namespace caphv::sim
