// File: harvester/load_balancer.cc

#include "harvester/load_balancer.h"

#include <set>

#include "harvester/ipv4.h"
#include "harvester/vm_builder.h"

namespace caphv::harvester {
namespace {

kube::Status Invalid(std::string field, std::string msg) {
  return kube::Status(kube::StatusCode::kInvalidArgument, field + ": " + msg, 0, "Invalid",
                      {{"FieldValueInvalid", msg, field}});
}

}  // namespace

std::string LoadBalancerName(const std::string& harvester_cluster_namespace,
                             const std::string& harvester_cluster_name) {
  return Rfc1035Name({harvester_cluster_namespace, harvester_cluster_name, "lb"});
}

kube::StatusOr<kube::Object> BuildLoadBalancer(const LoadBalancerInputs& in) {
  const api::LoadBalancerConfig& c = in.config;
  if (c.ipam_type != api::kIpamDhcp && c.ipam_type != api::kIpamPool) {
    return Invalid("spec.loadBalancerConfig.ipamType",
                   "\"" + c.ipam_type + "\" is neither dhcp nor pool");
  }
  if (in.target_namespace.empty()) return Invalid("spec.targetNamespace", "must not be empty");
  kube::Object listeners = kube::Object::array({{{"name", "api-server"},
                                                 {"port", kApiServerPort},
                                                 {"protocol", "TCP"},
                                                 {"backendPort", kApiServerPort}}});
  std::set<std::string> names = {"api-server"};
  std::set<std::pair<int32_t, std::string>> ports = {{kApiServerPort, "TCP"}};
  for (size_t i = 0; i < c.listeners.size(); ++i) {
    const api::Listener& l = c.listeners[i];
    const std::string field = "spec.loadBalancerConfig.listeners[" + std::to_string(i) + "]";
    std::string protocol = l.protocol.empty() ? "TCP" : l.protocol;
    int32_t backend = l.backend_port == 0 ? l.port : l.backend_port;
    if (l.name.empty()) return Invalid(field + ".name", "must not be empty");
    if (l.port < 1 || l.port > 65535) return Invalid(field + ".port", "must be 1..65535");
    if (backend < 1 || backend > 65535) return Invalid(field + ".backendPort", "must be 1..65535");
    if (protocol != "TCP" && protocol != "UDP") {
      return Invalid(field + ".protocol", "must be TCP or UDP");
    }
    if (!names.insert(l.name).second) {
      return Invalid(field + ".name", "listener name \"" + l.name +
                                          "\" is used twice (the "
                                          "api-server listener is built in)");
    }
    if (!ports.insert({l.port, protocol}).second) {
      return Invalid(field + ".port", std::to_string(l.port) + "/" + protocol +
                                          " is used twice (6443/TCP is the built-in api-server)");
    }
    listeners.push_back(
        {{"name", l.name}, {"port", l.port}, {"protocol", protocol}, {"backendPort", backend}});
  }
  kube::Object selector = kube::Object::object();
  for (const auto& [k, v] : RoleSelector(in.cluster, /*control_plane=*/true)) {
    selector[k] = kube::Object::array({v});
  }
  kube::Object spec = {
      {"description", c.description.empty() ? "Kubernetes API of cluster " + in.cluster.namespace_ +
                                                  "/" + in.cluster.name + " (CAPHV)"
                                            : c.description},
      {"workloadType", "vm"},
      {"ipam", c.ipam_type},
      {"listeners", listeners},
      {"backendServerSelector", selector},
      {"healthCheck",
       {{"port", kApiServerPort},
        {"successThreshold", 1},
        {"failureThreshold", 3},
        {"periodSeconds", 5},
        {"timeoutSeconds", 3}}},
  };
  if (c.ipam_type == api::kIpamPool && !in.ip_pool.empty()) spec["ipPool"] = in.ip_pool;
  return kube::Object{
      {"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
      {"kind", "LoadBalancer"},
      {"metadata",
       {{"name", LoadBalancerName(in.harvester_cluster_namespace, in.harvester_cluster_name)},
        {"namespace", in.target_namespace},
        {"labels", ClusterLabels(in.cluster)}}},
      {"spec", spec},
  };
}

std::optional<Endpoint> EndpointFromLoadBalancer(const kube::Object& lb) {
  if (!lb.is_object() || !lb.contains("status") || !lb["status"].is_object()) return std::nullopt;
  const auto& status = lb["status"];
  if (!status.contains("address") || !status["address"].is_string()) return std::nullopt;
  std::string address = status["address"].get<std::string>();
  auto ip = ParseIpv4(address);
  bool ipv6 = !ip && address.find(':') != std::string::npos && address != "::";
  if ((!ip || *ip == 0) && !ipv6) return std::nullopt;
  return Endpoint{address, kApiServerPort};
}

}  // namespace caphv::harvester
