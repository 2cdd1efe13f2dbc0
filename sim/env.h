// File: sim/env.h
//
// The simulated Harvester environment: images, keypairs, VM networks and
// load-balancer IP pools, read from a small YAML file (format documented in
// config/harvester-sim/env/default.yaml), and the Harvester objects that seed
// it, built the way Harvester's own controllers leave them (image
// status.storageClassName "longhorn-<name>" and its StorageClass, keypair
// fingerprint and `validated` condition, NAD labels and route annotation).
//
// Thread safety: values and pure functions.

#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube/client.h"
#include "kube/resource.h"
#include "kube/status.h"

namespace caphv::sim {

struct EnvImage {
  std::string ns = "default", name, display_name, url;
  int64_t size = 0, virtual_size = 0;
  // The image ships qemu-guest-agent enabled (`guestAgent: true`): its VMs
  // report addresses whatever their user data says. Cloud images of Ubuntu,
  // Debian and openSUSE do not.
  bool guest_agent = false;
  // The image boots in FIPS mode (`fips: true`): /proc/sys/crypto/fips_enabled
  // is 1 in its VMs.
  bool fips = false;
};
struct EnvKeyPair {
  std::string ns = "default", name, public_key;
};
struct EnvRange {
  std::string subnet, range_start, range_end, gateway;
};
struct EnvNetwork {
  std::string ns = "default", name, cluster_network = "mgmt", cidr, gateway;
  int vlan = 0;
  std::optional<EnvRange> dhcp;  // leases for NICs without static network data
};
struct EnvPool {
  std::string name;
  kube::Object labels = kube::Object::object();
  kube::Object spec;  // IPPool spec verbatim
};
// A Harvester host: a Node of the Harvester cluster, labelled as Harvester
// labels its hosts (hostname, management role, one
// network.harvesterhci.io/<cluster network> per cluster network of the
// environment) plus `zone` as topology.kubernetes.io/zone and any `labels`.
// VMs are scheduled among them (sim/scheduling.h).
struct EnvHost {
  std::string name, zone;
  kube::Object labels = kube::Object::object();
};
struct Environment {
  // Without a `hosts` key: one host, kDefaultHostName, in no zone.
  std::vector<EnvHost> hosts;
  std::vector<EnvImage> images;
  std::vector<EnvKeyPair> keypairs;
  std::vector<EnvNetwork> networks;
  std::vector<EnvPool> pools;
  std::optional<EnvRange> lb_dhcp;  // addresses for DHCP-mode load balancers
  // The cluster's virtual IP, which Harvester announces through the
  // kube-system/ingress-expose Service (kube-vip.io/loadbalancerIPs); ""
  // leaves that Service out.
  std::string vip;
};

kube::StatusOr<Environment> ParseEnvironment(const std::string& yaml);
// The file at `path`, or the embedded default when `path` is empty.
kube::StatusOr<Environment> LoadEnvironment(const std::string& path);

// Resources the simulator writes beyond the core ones in kube/resource.h.
namespace gvr {
inline const kube::GroupVersionResource kVirtualMachines{"kubevirt.io", "v1", "virtualmachines",
                                                         true};
inline const kube::GroupVersionResource kVirtualMachineInstances{"kubevirt.io", "v1",
                                                                 "virtualmachineinstances", true};
inline const kube::GroupVersionResource kImages{"harvesterhci.io", "v1beta1",
                                                "virtualmachineimages", true};
inline const kube::GroupVersionResource kKeyPairs{"harvesterhci.io", "v1beta1", "keypairs", true};
inline const kube::GroupVersionResource kSettings{"harvesterhci.io", "v1beta1", "settings", false};
inline const kube::GroupVersionResource kNads{"k8s.cni.cncf.io", "v1",
                                              "network-attachment-definitions", true};
inline const kube::GroupVersionResource kIPPools{"loadbalancer.harvesterhci.io", "v1beta1",
                                                 "ippools", false};
inline const kube::GroupVersionResource kLoadBalancers{"loadbalancer.harvesterhci.io", "v1beta1",
                                                       "loadbalancers", true};
inline const kube::GroupVersionResource kStorageClasses{"storage.k8s.io", "v1", "storageclasses",
                                                        false};
inline const kube::GroupVersionResource kPersistentVolumes{"", "v1", "persistentvolumes", false};
inline const kube::GroupVersionResource kNamespaces{"", "v1", "namespaces", false};
inline const kube::GroupVersionResource kServices{"", "v1", "services", true};
}  // namespace gvr

// The GVR of a manifest object (apiVersion + kind) among those the simulator
// installs; NotFound for anything else.
kube::StatusOr<kube::GroupVersionResource> GvrOf(const kube::Object& object);

// Harvester's image storage class name for v1.2-v1.7 backing images.
std::string ImageStorageClassName(const std::string& image_name);

// Legacy MD5 fingerprint of an OpenSSH public key ("aa:bb:…"); InvalidArgument
// when the key does not parse.
kube::StatusOr<std::string> KeyFingerprint(const std::string& public_key);

// Seed objects. Each returned object is complete (spec and status) and meant
// for server-side apply; objects without /status carry status inline.
kube::Object ImageObject(const EnvImage& image);
kube::Object ImageStorageClass(const EnvImage& image);
kube::Object KeyPairObject(const EnvKeyPair& keypair);
kube::Object NadObject(const EnvNetwork& network);
// kube-system/ingress-expose: Harvester's VIP as kube-vip announces it (the
// Go provider reads the cloud provider's server address from it).
kube::Object IngressExposeService(const std::string& vip);
kube::StatusOr<kube::Object> PoolObject(const EnvPool& pool);
// The host's Node, status Ready; `cluster_networks` label it as Harvester's
// network controller does for the cluster networks it is part of.
kube::Object HostNode(const EnvHost& host, const std::set<std::string>& cluster_networks);
// Every seed object of the environment, namespaces first.
kube::StatusOr<std::vector<kube::Object>> SeedObjects(const Environment& env);

}  // namespace caphv::sim
