// File: api/harvester_cluster.h
//
// HarvesterCluster and HarvesterClusterTemplate
// (infrastructure.cluster.x-k8s.io/v1alpha1): the Cluster API InfraCluster of
// CAPHV. JSON names are those of the Go provider v0.2.x; the field tables
// below also generate the CRD schemas (see api/fields.h).
//
// Thread safety: plain values.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/common.h"
#include "api/envelope.h"
#include "api/fields.h"
#include "api/object_meta.h"

namespace caphv::api {

inline constexpr std::string_view kIpamDhcp = "dhcp";
inline constexpr std::string_view kIpamPool = "pool";

// An extra port exposed by the cluster's load balancer (e.g. RKE2's 9345).
struct Listener {
  std::string name;
  int32_t port = 0;
  std::string protocol;
  int32_t backend_port = 0;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.name, Field("name").Required().MinLength(1).Doc("Name of the listener."));
    v(self.port,
      Field("port").Required().Minimum(1).Maximum(65535).Doc("Port exposed by the load balancer."));
    v(self.protocol, Field("protocol")
                         .Enum({"TCP", "UDP"})
                         .Default("\"TCP\"")
                         .Doc("Protocol of the listener: TCP (default) or UDP."));
    v(self.backend_port, Field("backendPort")
                             .Required()
                             .Minimum(1)
                             .Maximum(65535)
                             .Doc("Port on the control plane VMs traffic is sent to."));
  }
  bool operator==(const Listener&) const = default;
};

struct LoadBalancerConfig {
  std::string ipam_type;
  std::string ip_pool_ref;
  std::optional<IPPoolSpec> ip_pool;
  std::vector<Listener> listeners;
  std::string description;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.ipam_type, Field("ipamType")
                          .Required()
                          .Enum({"dhcp", "pool"})
                          .Doc("How the load balancer gets its IP: dhcp or pool."));
    v(self.ip_pool_ref,
      Field("ipPoolRef").Doc("Name of an existing Harvester IPPool for the load balancer IP."));
    v(self.ip_pool, Field("ipPool").Doc("Inline IP pool CAPHV creates for the load balancer IP."));
    v(self.listeners, Field("listeners")
                          .ListType("map")
                          .ListMapKeys({"name"})
                          .Doc("Extra listeners; the api-server listener (6443) is always added."));
    v(self.description, Field("description").Doc("Free-form description (informational)."));
  }
  bool operator==(const LoadBalancerConfig&) const = default;
};

struct UpdateCloudProviderConfig {
  std::string manifests_config_map_namespace;
  std::string manifests_config_map_name;
  std::string manifests_config_map_key;
  std::string cloud_config_credentials_secret_name;
  std::string cloud_config_credentials_secret_key;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.manifests_config_map_namespace,
      Field("manifestsConfigMapNamespace")
          .Required()
          .Doc("Namespace of the ConfigMap holding the cloud provider manifests."));
    v(self.manifests_config_map_name, Field("manifestsConfigMapName")
                                          .Required()
                                          .Doc("Name of the ConfigMap holding the manifests."));
    v(self.manifests_config_map_key,
      Field("manifestsConfigMapKey").Required().Doc("Key of the ConfigMap holding the manifests."));
    v(self.cloud_config_credentials_secret_name,
      Field("cloudConfigCredentialsSecretName")
          .Required()
          .Doc("Name of the Secret, inside the manifests, that receives the cloud config."));
    v(self.cloud_config_credentials_secret_key,
      Field("cloudConfigCredentialsSecretKey")
          .Required()
          .Doc("Key of that Secret that receives the cloud config."));
  }
  bool operator==(const UpdateCloudProviderConfig&) const = default;
};

struct HarvesterClusterSpec {
  std::string server;
  SecretReference identity_secret;
  LoadBalancerConfig load_balancer_config;
  std::optional<APIEndpoint> control_plane_endpoint;
  std::string target_namespace;
  std::optional<UpdateCloudProviderConfig> update_cloud_provider_config;
  std::optional<VMNetworkConfig> vm_network_config;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.server,
      Field("server").Doc("Harvester API server URL (informational; the identity Secret's "
                          "kubeconfig is authoritative)."));
    v(self.identity_secret, Field("identitySecret")
                                .Required()
                                .Doc("Secret whose key `kubeconfig` gives access to Harvester."));
    v(self.load_balancer_config,
      Field("loadBalancerConfig").Required().Doc("Load balancer in front of the control plane."));
    v(self.control_plane_endpoint,
      Field("controlPlaneEndpoint").Doc("Endpoint of the workload API server (set by CAPHV)."));
    v(self.target_namespace,
      Field("targetNamespace")
          .Required()
          .Doc("Harvester namespace of the VMs, load balancer and secrets."));
    v(self.update_cloud_provider_config,
      Field("updateCloudProviderConfig")
          .Doc("Where to inject the generated Harvester cloud provider configuration."));
    v(self.vm_network_config, Field("vmNetworkConfig")
                                  .Doc("Static VM addresses from Harvester IP pools; DHCP when "
                                       "absent."));
  }
  bool operator==(const HarvesterClusterSpec&) const = default;
};

// True when spec.controlPlaneEndpoint was set by the user (or by CAPHV from
// the load balancer): a host that is neither empty nor an unspecified address
// (0.0.0.0, ::). ClusterClass templates carry {host: 0.0.0.0, port: 6443} as
// a placeholder, which means "not set": CAPHV makes the load balancer and
// writes its address over it.
inline bool PlaceholderHost(std::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::";
}
inline bool ControlPlaneEndpointSet(const HarvesterClusterSpec& spec) {
  return spec.control_plane_endpoint && !PlaceholderHost(spec.control_plane_endpoint->host);
}

// spec.controlPlaneEndpoint of an object read as JSON (a Cluster, a
// HarvesterCluster) when it is a real address: a host that is no
// placeholder and a port in 1..65535; nullopt otherwise, malformed included.
inline std::optional<APIEndpoint> RealControlPlaneEndpoint(const Json& obj) {
  static const Json::json_pointer kHost("/spec/controlPlaneEndpoint/host");
  static const Json::json_pointer kPort("/spec/controlPlaneEndpoint/port");
  if (!obj.is_object() || !obj.contains(kHost) || !obj.contains(kPort)) return std::nullopt;
  const Json& host = obj.at(kHost);
  const Json& port = obj.at(kPort);
  if (!host.is_string() || !port.is_number_integer()) return std::nullopt;
  const auto p = port.get<int64_t>();
  if (PlaceholderHost(host.get_ref<const std::string&>()) || p <= 0 || p > 65535) {
    return std::nullopt;
  }
  return APIEndpoint{host.get<std::string>(), static_cast<int32_t>(p)};
}

struct HarvesterClusterStatus {
  std::optional<bool> ready;
  std::optional<Initialization> initialization;
  std::vector<Condition> conditions;
  std::vector<FailureDomain> failure_domains;
  std::string failure_reason;
  std::string failure_message;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.ready,
      Field("ready").Doc("True once the infrastructure is ready (Cluster API v1beta1 contract)."));
    v(self.initialization,
      Field("initialization").Doc("Initialization state (Cluster API v1beta2 contract)."));
    v(self.conditions, Field("conditions")
                           .ListType("map")
                           .ListMapKeys({"type"})
                           .Doc("Observations of the cluster infrastructure state."));
    v(self.failure_domains,
      Field("failureDomains")
          .ListType("map")
          .ListMapKeys({"name"})
          .Doc("Failure domains of the Harvester hosts (their topology.kubernetes.io/zone "
               "values when every host has one, else their names; attribute topologyKey names "
               "the node label), published for Cluster API v1.11+ (v1beta2 contract: a list)."));
    v(self.failure_reason, Field("failureReason").Doc("Deprecated: terminal failure reason."));
    v(self.failure_message, Field("failureMessage").Doc("Deprecated: terminal failure message."));
  }
  bool operator==(const HarvesterClusterStatus&) const = default;
};

using HarvesterCluster = KindObject<HarvesterClusterSpec, HarvesterClusterStatus>;
using HarvesterClusterTemplate = TemplateObject<
    TemplateResource<HarvesterClusterSpec, "Metadata given to the stamped HarvesterCluster.",
                     "Spec of the stamped HarvesterCluster.">>;

}  // namespace caphv::api
