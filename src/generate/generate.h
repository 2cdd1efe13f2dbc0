// File: generate/generate.h
//
// `caphv generate`: every object a Cluster of the ClusterClass harvester-rke2
// needs, from the flags of the Go provider's caphv-generate, built by pure
// functions (no I/O): the Namespace, the identity Secret holding the Harvester
// kubeconfig, the topology Cluster, the cloud provider's ConfigMap and
// ClusterResourceSet, the CSI driver's and the CNI's (or, with a Fleet
// repository, a Fleet GitRepo instead of those two), the MachineHealthChecks
// and, unless told otherwise, the ClusterClass and its templates. The
// templates of the repository (templates/) are rendered where they exist, so
// the Cluster's variables are the class's.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/fields.h"
#include "kube/resource.h"
#include "kube/status.h"

namespace caphv::generate {

inline constexpr char kDefaultClass[] = "harvester-rke2";
inline constexpr char kIdentitySecretName[] = "hv-identity-secret";
inline constexpr char kFieldManager[] = "caphv";

// The flags, with the Go script's defaults.
struct Options {
  std::string name;
  std::string ns;  // empty: the name
  std::string cls = kDefaultClass;
  std::string image;        // namespace/name of a Harvester VM image
  std::string ssh_keypair;  // namespace/name of a Harvester KeyPair
  std::string ssh_user = "sles";
  std::string network;  // namespace/name of a Harvester VM network
  std::string gateway;
  std::string subnet_mask;
  std::string dns;           // comma-separated IPv4 addresses
  std::string ip_pool;       // one pool
  std::string ip_pool_refs;  // comma-separated pools (instead of ip_pool)
  std::string extra_disk;    // SIZE[:STORAGECLASS]
  std::string harvester_kubeconfig;
  std::string target_namespace = "default";  // Harvester namespace of the VMs
  int cp_replicas = 3;
  int worker_replicas = 2;
  int cpu = 2;
  std::string memory = "4Gi";
  std::string disk_size = "40Gi";
  std::string k8s_version = "v1.31.14";
  std::string cni = "calico";
  int cni_mtu = 1500;
  std::string cni_encapsulation = "VXLANCrossSubnet";
  std::string cni_bgp = "Disabled";
  std::string pod_cidr = "10.42.0.0/16";
  std::string fleet_addon_repo;
  std::string fleet_addon_branch = "main";
  // The class's compliance variables, set on the Cluster only when not
  // their defaults ("", false), so a Cluster of another class (--class)
  // that lacks them stays valid.
  std::string cis_profile;  // "", cis, cis-1.23, cis-1.5, cis-1.6
  bool fips_required = false;
  bool with_class = true;  // the ClusterClass and its templates too
  // The RKE2 providers' API the ClusterClass refers to: v1beta1 (RKE2
  // providers up to v0.21, Cluster API up to v1.10) or v1beta2 (v0.22 and
  // later, with Cluster API v1.11 and later).
  std::string rke2_api_version = "v1beta1";

  std::string Namespace() const { return ns.empty() ? name : ns; }
};

// Rewrites the ClusterClass harvester-rke2 and its templates (as parsed from
// its template) to refer to the RKE2 providers' API `version` ("v1beta1" or
// "v1beta2"): the class's refs, its patches' selectors and the RKE2 template
// objects. Cluster API matches a patch's selector by apiVersion, so a class
// must name the version Cluster API reads the templates at.
void UseRke2ApiVersion(std::vector<api::Json>& class_docs, std::string_view version);

// The API versions of the RKE2 providers ("v1beta1", "v1beta2") that `doc`
// (a ClusterClass or template) refers to or is at.
std::set<std::string> Rke2ApiVersionsIn(const api::Json& doc);

// OK, or kInvalidArgument with one line naming the flag and what is wrong
// ("--gateway: \"10.0.0\" is not an IPv4 address"). Does not read files.
kube::Status Validate(const Options& options);

// The Kubernetes version of the topology: "v1.31.14" -> "v1.31.14+rke2r1".
std::string RkeVersion(std::string_view version);

// ${VAR} and ${VAR:=default} of clusterctl generate yaml; a variable missing
// from `vars` without a default is kInvalidArgument.
kube::StatusOr<std::string> Substitute(std::string_view text,
                                       const std::map<std::string, std::string>& vars);

// The objects, in the order they are applied (Namespace first, the class
// before the Cluster). `kubeconfig` is the Harvester kubeconfig's content.
// Validate first: an invalid `options` gives kInvalidArgument.
kube::StatusOr<std::vector<api::Json>> Build(const Options& options, std::string_view kubeconfig);

// The objects as one YAML stream ("---" between documents).
std::string ToYamlStream(const std::vector<api::Json>& objects);

// The resource of an object Build makes (by apiVersion and kind);
// kInvalidArgument for another kind.
kube::StatusOr<kube::GroupVersionResource> ResourceOf(const api::Json& object);

}  // namespace caphv::generate
