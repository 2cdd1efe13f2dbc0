// File: sim/loadbalancer.h
//
// Decisions of Harvester's load-balancer controller, as pure functions: which
// IPPool serves a LoadBalancer (spec.ipPool, else the highest-priority pool
// whose selector matches the LB's network/project/namespace/cluster hints,
// else the global pool), the owner string it is recorded under
// ("<namespace>/<name>"), the backend servers (VMIs matched by
// backendServerSelector) and the LB status.
//
// A `vm` load balancer (workloadType vm or empty) is served, as in
// harvester-load-balancer's servicelb manager, by a Service of type
// LoadBalancer of the LB's name and namespace: created with an owner
// reference to the LB, or adopted when it exists already (a provider may
// have made it as a placeholder); its spec.loadBalancerIP is the pool
// address, or "0.0.0.0" (ask DHCP) for ipam dhcp. kube-vip gives such a
// Service its address in status.loadBalancer.ingress, and the LB's
// status.address is that ingress address.
//
// Thread safety: pure functions over values.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "sim/ipam.h"

namespace caphv::sim {

// The load balancer controller's finalizer (wrangler's OnRemove handler of
// load-balancer-harvester): the address is released before the LB goes.
inline constexpr char kLbFinalizer[] = "wrangler.cattle.io/harvester-lb-controller";

std::string LbOwner(const kube::Object& lb);
bool LbUsesPool(const kube::Object& lb);  // spec.ipam == "pool"

// The name of the pool to allocate from, or nullopt when none matches.
std::optional<std::string> SelectPool(const kube::Object& lb,
                                      const std::vector<kube::Object>& pools);

// Addresses of the running VMIs (in the LB namespace) that match the selector.
std::vector<std::string> BackendServers(const kube::Object& lb,
                                        const std::vector<kube::Object>& vmis);

// Status for an address from `pool` (mask/gateway from the range holding it).
kube::Object LbPoolStatus(const std::string& pool, const PoolRange& range, const std::string& ip,
                          const std::vector<std::string>& backends);
// Status for a DHCP-mode address.
kube::Object LbDhcpStatus(const std::string& ip, const std::vector<std::string>& backends);
// Status when no address could be found.
kube::Object LbErrorStatus(const std::string& message);

// Harvester's LoadBalancer admission (load-balancer-harvester v1.7.3
// pkg/webhook/loadbalancer/validator.go), with its messages: at least one
// listener, names unique, "<protocol>:<port>" and
// "<protocol>:<backendPort>" unique, ports in 1..65535, a health check's
// port a TCP backend port (none of that for workloadType cluster); on UPDATE
// no switch between dhcp and pool IPAM, nor between cluster and vm. Like
// Harvester it reports the first problem only. `old_lb` is null for CREATE;
// empty = allowed.
std::vector<std::string> ValidateLb(const kube::Object& lb, const kube::Object* old_lb);

// ---------------------------------------------------------------- vm load balancers

// True for workloadType `vm` (or empty, the default); `cluster` LBs only get an address.
bool LbServesVms(const kube::Object& lb);
// The Service of a `vm` LB with loadBalancerIP `lb_ip` (the pool address, or
// "0.0.0.0"): a complete object to create (label
// loadbalancer.harvesterhci.io/servicelb, owner reference to the LB).
kube::Object LbService(const kube::Object& lb, const std::string& lb_ip);
// The merge patch that makes an existing Service serve the LB (its
// loadBalancerIP and ports), or an empty object when it already does.
kube::Object LbServicePatch(const kube::Object& lb, const std::string& lb_ip,
                            const kube::Object& service);
// status.loadBalancer.ingress[0].ip of a Service, or "".
std::string ServiceIngressIp(const kube::Object& service);
// Status of a `vm` LB: `allocated` is its allocatedAddress, `ingress_ip` the
// address kube-vip gave its Service ("" = not yet: Ready False, no address).
// Ready is False too while no backend VM runs (the address is reported).
kube::Object LbVmStatus(const kube::Object& allocated, const std::string& ingress_ip,
                        const std::vector<std::string>& backends);

// ---------------------------------------------------------------- kube-vip

inline constexpr char kDhcpAddress[] = "0.0.0.0";
inline constexpr char kKubeVipIpsAnnotation[] = "kube-vip.io/loadbalancerIPs";
inline constexpr char kKubeVipRequestedIpAnnotation[] = "kube-vip.io/requestedIP";
// The address kube-vip is asked to announce for a Service: the first of the
// `kube-vip.io/loadbalancerIPs` annotation, else spec.loadBalancerIP; "" when
// none (a Service kube-vip leaves pending: Harvester runs no cloud provider
// that would pick one) and "0.0.0.0" for an address leased by DHCP. Only
// Services of type LoadBalancer; "" for any other.
std::string KubeVipRequestedAddress(const kube::Object& service);
// status.loadBalancer of a Service announced at `ip`.
kube::Object KubeVipServiceStatus(const std::string& ip);

}  // namespace caphv::sim
