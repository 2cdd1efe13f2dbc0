// File: harvester/naming.h
//
// Names, owner ids and labels of every object CAPHV creates on Harvester.
// Everything here is deterministic: the same inputs give the same names, so a
// reconcile that crashed half-way and runs again finds (and does not
// duplicate) what it already created. Objects of one cluster are found by
// the labels of ClusterLabels(); the cluster id label is a hash of the
// management cluster id, the Cluster namespace and the Cluster name, so two
// management clusters sharing one Harvester never see each other's objects.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace caphv::harvester {

// Label and annotation keys.
inline constexpr std::string_view kLabelClusterName = "cluster.x-k8s.io/cluster-name";
inline constexpr std::string_view kLabelClusterId =
    "harvester.infrastructure.cluster.x-k8s.io/cluster-id";
inline constexpr std::string_view kLabelRole = "harvester.infrastructure.cluster.x-k8s.io/role";
inline constexpr std::string_view kLabelManagedBy = "app.kubernetes.io/managed-by";
inline constexpr std::string_view kManagedByValue = "caphv";
inline constexpr std::string_view kRoleControlPlane = "control-plane";
inline constexpr std::string_view kRoleWorker = "worker";
// Read by the Go provider's load balancers (backend selector); kept on
// control-plane VMs so load balancers it created still find our VMs.
inline constexpr std::string_view kLabelLegacyMachineType = "harvestercluster/machinetype";
inline constexpr std::string_view kLabelGuestCluster = "guestcluster.harvesterhci.io/name";
inline constexpr std::string_view kLabelCreator = "harvesterhci.io/creator";
inline constexpr std::string_view kLabelVmName = "harvesterhci.io/vmName";

// On a HarvesterCluster: the management cluster id its Harvester objects
// were made under (ClusterIdentity.management_cluster_id), recorded the first
// time CAPHV reconciles it. It travels with the object (clusterctl move, a
// backup re-applied to a new management cluster), so the cluster keeps its
// identity, and its objects on Harvester stay its own, wherever it is moved.
inline constexpr std::string_view kAnnotationManagementClusterId =
    "harvester.infrastructure.cluster.x-k8s.io/management-cluster-id";

// The CAPI Cluster a Harvester object belongs to, seen from its management
// cluster. `management_cluster_id` is any stable id of the management
// cluster (e.g. the uid of its kube-system namespace).
struct ClusterIdentity {
  std::string management_cluster_id;
  std::string namespace_;
  std::string name;
};

// Lower-case hex SHA-256 of `data`, cut to `hex_chars` (<= 64).
std::string HexHash(std::string_view data, size_t hex_chars);

// Id of a cluster unique across management clusters: 20 hex characters
// (80 bits), usable as a label value.
std::string ClusterId(const ClusterIdentity& cluster);

// Like the Go provider's GenerateRFC1035Name: joins with '-', lower-cases,
// maps [^a-z0-9-] to '-', trims dashes, prefixes "a-" unless it starts with a
// letter, and cuts to 63 characters (trailing dashes trimmed again).
std::string Rfc1035Name(const std::vector<std::string>& parts);

// `base` cut so that base + "-" + HexHash(seed, 5) fits in `max_len`, then
// that suffix appended. Distinct seeds give (almost surely) distinct names.
std::string NameWithHash(std::string_view base, std::string_view seed, size_t max_len = 63);

// Labels put on every Harvester object of `cluster`.
std::map<std::string, std::string> ClusterLabels(const ClusterIdentity& cluster);

// Label selector string ("k=v,k2=v2") matching every object of `cluster`.
std::string ClusterSelector(const ClusterIdentity& cluster);

// True when `labels` carry `cluster`'s id label.
bool OwnedBy(const std::map<std::string, std::string>& labels, const ClusterIdentity& cluster);

// The management cluster id of a HarvesterCluster with `annotations`: the
// recorded one (kAnnotationManagementClusterId), else `current` (the
// management cluster reconciling it now).
std::string ManagementClusterIdOf(const std::map<std::string, std::string>& annotations,
                                  const std::string& current);

// Names of the IPPools CAPHV creates from a HarvesterCluster's inline pools
// (the Go provider's names): "<ns>-<name>-lb-ippool" / "-vm-ippool".
std::string LbPoolName(const std::string& hc_namespace, const std::string& hc_name);
// The Go provider v0.2.x's name for the inline load-balancer pool
// ("<ns>-<name>-ippool"), which it writes into loadBalancerConfig.ipPoolRef.
std::string LegacyLbPoolName(const std::string& hc_namespace, const std::string& hc_name);
std::string VmPoolName(const std::string& hc_namespace, const std::string& hc_name);

// Name of the Secret holding a VM's cloud-init data (as the Go provider).
std::string CloudInitSecretName(std::string_view vm_name);

// "ns/name" for a reference written as "name" or "ns/name".
std::string QualifiedName(std::string_view ref, std::string_view default_namespace);

// Splits "ns/name" (or "name", namespace = default_namespace).
std::pair<std::string, std::string> SplitQualifiedName(std::string_view ref,
                                                       std::string_view default_namespace);

// True for a DNS-1123 label (lower-case alphanumerics and '-', <= 63, starts
// and ends alphanumeric): namespaces, label values of that form.
bool IsDns1123Label(std::string_view s);
// True for a DNS-1123 subdomain (most object names): labels joined by '.',
// <= 253.
bool IsDns1123Subdomain(std::string_view s);

}  // namespace caphv::harvester
