// File: harvester/load_balancer.h
//
// The Harvester LoadBalancer (loadbalancer.harvesterhci.io/v1beta1) in front
// of a cluster's control plane, and the endpoint read back from it.
//
// The name is the Go provider's, "<HarvesterCluster ns>-<name>-lb" cut to 63
// characters (so a cluster moved from the Go provider keeps its load
// balancer and address); OwnedBy() tells a same-named object of another
// management cluster apart by the cluster id label. The backend selector is
// the cluster id + control-plane role labels VmLabels() puts on the VMs
// (matched against VMI labels), listeners are api-server 6443/TCP first,
// then the user's extra listeners.
//
// Thread safety: pure functions.

#pragma once

#include <optional>
#include <string>

#include "api/harvester_cluster.h"
#include "harvester/naming.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::harvester {

inline constexpr int32_t kApiServerPort = 6443;

std::string LoadBalancerName(const std::string& harvester_cluster_namespace,
                             const std::string& harvester_cluster_name);

struct LoadBalancerInputs {
  ClusterIdentity cluster;
  std::string harvester_cluster_namespace;
  std::string harvester_cluster_name;
  std::string target_namespace;
  api::LoadBalancerConfig config;
  // Pool to allocate from when ipamType is pool: config.ipPoolRef, or the
  // pool CAPHV created from config.ipPool; "" lets Harvester pick by its
  // selectors.
  std::string ip_pool;
};

// kInvalidArgument on an unknown ipamType or bad / duplicate listeners.
kube::StatusOr<kube::Object> BuildLoadBalancer(const LoadBalancerInputs& in);

struct Endpoint {
  std::string host;
  int32_t port = 0;
  bool operator==(const Endpoint&) const = default;
};

// {status.address, 6443} once Harvester has given the load balancer an
// address (not empty, not 0.0.0.0: a DHCP load balancer before its lease);
// nullopt before.
std::optional<Endpoint> EndpointFromLoadBalancer(const kube::Object& lb);

}  // namespace caphv::harvester
