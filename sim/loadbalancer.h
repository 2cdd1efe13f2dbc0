// File: sim/loadbalancer.h
//
// Decisions of Harvester's load-balancer controller, as pure functions: which
// IPPool serves a LoadBalancer (spec.ipPool, else the highest-priority pool
// whose selector matches the LB's network/project/namespace/cluster hints,
// else the global pool), the owner string it is recorded under
// ("<namespace>/<name>"), the backend servers (VMIs matched by
// backendServerSelector) and the LB status.
//
// Thread safety: pure functions over values.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kube/client.h"
#include "sim/ipam.h"

namespace caphv::sim {

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

}  // namespace caphv::sim
