// File: api/common.h
//
// Types shared by the CAPHV kinds: Cluster API contract shapes (conditions
// shaped like metav1.Condition, APIEndpoint, MachineAddress, failure domains,
// initialization) and the inline IP pool used by both the load balancer and
// the VM network configuration. Group/version constants live here too.
//
// Thread safety: plain values.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/fields.h"
#include "api/object_meta.h"

namespace caphv::api {

inline constexpr std::string_view kGroup = "infrastructure.cluster.x-k8s.io";
inline constexpr std::string_view kVersion = "v1alpha1";
// Every version the CRDs serve, oldest first. v1beta1 is the name upstream
// gave the same schema in its v0.5 (without status.failureReason and
// failureMessage, which CAPHV keeps in both): one schema under two names, so
// the apiserver converts by renaming (strategy None), nothing is lost either
// way, and no conversion webhook sits in front of every read. kVersion stays
// the storage version: objects stored by the Go provider v0.2.x and by
// CAPHV's earlier releases are read without migration.
inline constexpr std::string_view kServedVersions[] = {"v1alpha1", "v1beta1"};
inline constexpr std::string_view kApiVersion = "infrastructure.cluster.x-k8s.io/v1alpha1";

// Cluster API's label whose value --watch-filter selects: a manager started
// with a filter reconciles, and its webhook adds finalizers to, only objects
// that carry it with that value.
inline constexpr std::string_view kWatchFilterLabel = "cluster.x-k8s.io/watch-filter";

// Pattern of metav1.Condition.reason (PascalCase-like).
inline constexpr std::string_view kConditionReasonPattern =
    R"(^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$)";
// Pattern of metav1.Condition.type.
inline constexpr std::string_view kConditionTypePattern =
    R"(^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$)";

// metav1.Condition.
struct Condition {
  std::string type;
  std::string status;  // True, False, Unknown
  int64_t observed_generation = 0;
  std::string last_transition_time;  // RFC 3339
  std::string reason;
  std::string message;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.type, Field("type")
                     .Required()
                     .MaxLength(316)
                     .Pattern(kConditionTypePattern)
                     .Doc("Type of condition in CamelCase, e.g. Ready."));
    v(self.status, Field("status")
                       .Required()
                       .Enum({"True", "False", "Unknown"})
                       .Doc("Status of the condition: True, False or Unknown."));
    v(self.observed_generation, Field("observedGeneration")
                                    .Minimum(0)
                                    .Doc("The .metadata.generation the condition was set from."));
    v(self.last_transition_time, Field("lastTransitionTime")
                                     .Required()
                                     .Format("date-time")
                                     .Doc("Last time the condition changed status (RFC 3339)."));
    v(self.reason, Field("reason")
                       .Required()
                       .MinLength(1)
                       .MaxLength(1024)
                       .Pattern(kConditionReasonPattern)
                       .Doc("Programmatic identifier of the reason for the last transition."));
    v(self.message, Field("message").Required().MaxLength(32768).Doc(
                        "Human readable message with details about the transition."));
  }
  bool operator==(const Condition&) const = default;
};

// Cluster API APIEndpoint.
struct APIEndpoint {
  std::string host;
  int32_t port = 0;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.host, Field("host").Required().MaxLength(512).Doc(
                     "Hostname or IP address on which the API server is serving."));
    v(self.port, Field("port").Required().Minimum(0).Maximum(65535).Doc(
                     "Port on which the API server is serving."));
  }
  bool operator==(const APIEndpoint&) const = default;
};

// Cluster API MachineAddress.
struct MachineAddress {
  std::string type;
  std::string address;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.type, Field("type")
                     .Required()
                     .Enum({"Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"})
                     .Doc("Machine address type."));
    v(self.address, Field("address").Required().Doc("The machine address."));
  }
  bool operator==(const MachineAddress&) const = default;
};

// Cluster API (v1beta2 contract) FailureDomain: status.failureDomains of an
// infrastructure cluster is a list of these, keyed by name (the v1beta1
// contract's map from name to {controlPlane, attributes} is gone). Upstream's
// v0.3+ and Cluster API v1.11+ read this shape.
struct FailureDomain {
  std::string name;
  std::optional<bool> control_plane;
  std::map<std::string, std::string> attributes;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.name,
      Field("name").Required().MinLength(1).MaxLength(256).Doc("Name of the failure domain."));
    v(self.control_plane,
      Field("controlPlane")
          .Doc("Whether the failure domain is suitable for control plane machines."));
    v(self.attributes, Field("attributes").Doc("Free-form attributes of the failure domain."));
  }
  bool operator==(const FailureDomain&) const = default;
};

// Cluster API v1beta2 contract: status.initialization.
struct Initialization {
  std::optional<bool> provisioned;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.provisioned, Field("provisioned")
                            .Doc("True once the infrastructure is fully provisioned (Cluster API "
                                 "v1beta2 contract)."));
  }
  bool operator==(const Initialization&) const = default;
};

// A reference to a Secret by namespace and name.
struct SecretReference {
  std::string namespace_;
  std::string name;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.namespace_, Field("namespace").Required().Doc("Namespace of the Secret."));
    v(self.name, Field("name").Required().Doc("Name of the Secret."));
  }
  bool operator==(const SecretReference&) const = default;
};

// An IP pool described inline; CAPHV creates the Harvester IPPool from it.
struct IPPoolSpec {
  std::string vm_network;
  std::string subnet;
  std::string gateway;
  std::string range_start;
  std::string range_end;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.vm_network,
      Field("vmNetwork").Required().Doc("Harvester VM network (namespace/name) the pool serves."));
    v(self.subnet, Field("subnet").Required().Doc("Subnet in CIDR notation, e.g. 10.0.0.0/24."));
    v(self.gateway, Field("gateway").Required().Doc("Gateway IP of the subnet."));
    v(self.range_start, Field("rangeStart").Doc("First IP of the allocatable range."));
    v(self.range_end, Field("rangeEnd").Doc("Last IP of the allocatable range."));
  }
  bool operator==(const IPPoolSpec&) const = default;
};

// Static VM addressing from Harvester IP pools: the cluster's
// (HarvesterCluster spec.vmNetworkConfig) or one machine's, which replaces it
// for that machine (HarvesterMachine spec.vmNetworkConfig).
struct VMNetworkConfig {
  std::string ip_pool_ref;
  std::vector<std::string> ip_pool_refs;
  std::optional<IPPoolSpec> ip_pool;
  std::string gateway;
  std::string subnet_mask;
  std::vector<std::string> dns_servers;
  std::vector<std::string> dns_search;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.ip_pool_ref,
      Field("ipPoolRef").Doc("Harvester IPPool VM addresses come from (name or namespace/name)."));
    v(self.ip_pool_refs, Field("ipPoolRefs")
                             .Doc("Ordered IPPools to allocate from, with fallback; wins over "
                                  "ipPoolRef."));
    v(self.ip_pool, Field("ipPool").Doc("Inline IP pool CAPHV creates for VM addresses."));
    v(self.gateway, Field("gateway").Required().Doc("Default gateway of the VMs."));
    v(self.subnet_mask,
      Field("subnetMask").Required().Doc("Dotted subnet mask of the VMs, e.g. 255.255.255.0."));
    v(self.dns_servers, Field("dnsServers").Doc("DNS servers of the VMs."));
    v(self.dns_search, Field("dnsSearch").Doc("DNS search domains of the VMs."));
  }
  bool operator==(const VMNetworkConfig&) const = default;
};

}  // namespace caphv::api
