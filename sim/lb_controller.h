// File: sim/lb_controller.h
//
// The load balancers' two controllers, as Harvester runs them:
//   - LoadBalancerController (harvester-load-balancer): a LoadBalancer gets
//     an address from its IPPool (recorded in the pool's status.allocated as
//     "<ns>/<name>") or from the LB network's DHCP server, released on
//     delete behind its finalizer; a `vm` LB gets (or adopts) its Service of
//     type LoadBalancer and reports the address kube-vip gives it;
//   - KubeVipController (kube-vip): a Service of type LoadBalancer gets
//     status.loadBalancer.ingress = spec.loadBalancerIP (or the
//     kube-vip.io/loadbalancerIPs annotation), a DHCP lease for "0.0.0.0".
// Decisions are sim/loadbalancer.h's and sim/ipam.h's; both share the LB
// network's leases (sim/addresses.h).
//
// Thread safety: Reconcile() from the controllers' workers.

#pragma once

#include <memory>
#include <string>

#include "kube/controller.h"
#include "sim/addresses.h"
#include "sim/context.h"

namespace caphv::sim {

class LoadBalancerController {
 public:
  LoadBalancerController(SimContext& ctx, LbLeases& leases) : ctx_(ctx), leases_(leases) {}

  // The controller with every watch it has.
  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  // The LB went (or is going): its pool address and lease go back.
  kube::Result Remove(const kube::Request& req, const kube::Object* lb);
  kube::Status ReleasePoolAddresses(const std::string& owner);
  // Creates or adopts the Service of a `vm` LB; returns its ingress address
  // ("" while kube-vip has given none).
  kube::StatusOr<std::string> EnsureService(const kube::Object& lb, const std::string& lb_ip);

  SimContext& ctx_;
  LbLeases& leases_;
};

class KubeVipController {
 public:
  KubeVipController(SimContext& ctx, LbLeases& leases) : ctx_(ctx), leases_(leases) {}

  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  SimContext& ctx_;
  LbLeases& leases_;
};

}  // namespace caphv::sim
