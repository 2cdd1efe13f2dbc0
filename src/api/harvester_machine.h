// File: api/harvester_machine.h
//
// HarvesterMachine and HarvesterMachineTemplate
// (infrastructure.cluster.x-k8s.io/v1alpha1): the Cluster API InfraMachine of
// CAPHV, one Harvester VM each. JSON names are those of the Go provider
// v0.2.x; the field tables also generate the CRD schemas (api/fields.h).
// Mended on purpose: `volumes[].volumeSize` is required in HarvesterMachines
// (the Go provider declared it optional and crashed without it), and
// `networkConfig` may carry its own `subnetMask`. What the Go provider's
// webhook refuses in its own words (cpu 0, an empty sshUser or volume list,
// an unknown volumeType, ...) the schema leaves to CAPHV's webhook, which
// answers with the same words (webhooks/validation.h). The
// template schema leaves unset values to ClusterClass patches (api/crd.h).
//
// Thread safety: plain values.

#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/affinity.h"
#include "api/common.h"
#include "api/envelope.h"
#include "api/fields.h"
#include "api/object_meta.h"

namespace caphv::api {

inline constexpr std::string_view kVolumeTypeImage = "image";
inline constexpr std::string_view kVolumeTypeStorageClass = "storageClass";
inline constexpr std::string_view kProviderIDPrefix = "harvester://";
// The finalizer CAPHV keeps on a HarvesterMachine while anything it created
// on Harvester may exist, and the Go provider v0.2.x's name for it (honoured
// the same way, so that a machine it made is still cleaned up).
inline constexpr std::string_view kMachineFinalizer =
    "harvestermachine.infrastructure.cluster.x-k8s.io/finalizer";
inline constexpr std::string_view kLegacyMachineFinalizer =
    "harvestermachine.infrastructure.cluster.x-k8s.io";

struct Volume {
  std::string volume_type;
  std::string image_name;
  std::string storage_class;
  std::string volume_size;  // a Kubernetes quantity, e.g. "40Gi"
  int32_t boot_order = 0;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.volume_type, Field("volumeType")
                            .Required()
                            .Doc("image: a disk cloned from a Harvester VM image; storageClass: a "
                                 "blank disk of a storage class."));
    v(self.image_name,
      Field("imageName").Doc("Harvester VM image (namespace/name or name) for image volumes."));
    v(self.storage_class,
      Field("storageClass").Doc("Storage class of a blank disk, for storageClass volumes."));
    v(self.volume_size, Field("volumeSize")
                            .Required()
                            .OptionalInTemplates()
                            .IntOrStringQuantity()
                            .Doc("Size of the disk as a Kubernetes quantity, e.g. 40Gi."));
    v(self.boot_order,
      Field("bootOrder").Doc("Boot priority, 1 boots first; 0 or absent: not in the boot order."));
  }
  bool operator==(const Volume&) const = default;
};

// Per-machine static address; wins over the cluster's IP pools.
struct NetworkConfig {
  std::string address;
  std::string subnet_mask;
  std::string gateway;
  std::vector<std::string> dns_servers;
  std::vector<std::string> dns_search;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.address, Field("address").Required().Doc("Static IP address of the first NIC."));
    v(self.subnet_mask, Field("subnetMask")
                            .Doc("Dotted subnet mask; defaults to the cluster's "
                                 "vmNetworkConfig.subnetMask."));
    v(self.gateway, Field("gateway").Required().Doc("Default gateway."));
    v(self.dns_servers, Field("dnsServers").Doc("DNS servers."));
    v(self.dns_search, Field("dnsSearch").Doc("DNS search domains."));
  }
  bool operator==(const NetworkConfig&) const = default;
};

// Firmware of the VM (the Go provider v0.8+): BIOS unless efi.
struct Firmware {
  bool efi = false;
  bool secure_boot = false;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.efi, Field("efi").Doc("Boot the VM with UEFI firmware instead of BIOS."));
    v(self.secure_boot,
      Field("secureBoot")
          .Doc("UEFI Secure Boot (the SMM CPU feature is turned on with it); requires efi. The "
               "image must carry a signed bootloader."));
  }
  bool operator==(const Firmware&) const = default;
};

// Emulated TPM of the VM (the Go provider v0.8+).
struct Tpm {
  bool enabled = false;
  bool persistent = false;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.enabled, Field("enabled").Doc("Attach an emulated TPM device to the VM."));
    v(self.persistent, Field("persistent").Doc("Keep the TPM state across reboots."));
  }
  bool operator==(const Tpm&) const = default;
};

struct HarvesterMachineSpec {
  std::string provider_id;
  std::string failure_domain;
  int32_t cpu = 0;
  std::string memory;  // a Kubernetes quantity, e.g. "4Gi"
  std::string ssh_user;
  std::string ssh_key_pair;
  std::vector<Volume> volumes;
  std::vector<std::string> networks;
  // Kept verbatim (copied into the VM); schema and checks from the typed view.
  JsonAs<NodeAffinity> node_affinity;
  JsonAs<PodAffinity> workload_affinity;
  std::optional<NetworkConfig> network_config;
  std::optional<VMNetworkConfig> vm_network_config;
  std::optional<Firmware> firmware;
  std::optional<Tpm> tpm;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.provider_id,
      Field("providerID").Doc("harvester://<VM UID>, set by CAPHV once the VM exists."));
    v(self.failure_domain,
      Field("failureDomain")
          .Doc("Failure domain the VM is pinned to, for a machine Cluster API places in none "
               "(Machine.spec.failureDomain wins): a zone or host name of "
               "HarvesterCluster status.failureDomains."));
    v(self.cpu, Field("cpu").Required().Doc("Number of vCPUs."));
    v(self.memory, Field("memory").Required().Doc("Memory as a Kubernetes quantity, e.g. 4Gi."));
    v(self.ssh_user, Field("sshUser").Required().Doc("SSH user of the VM."));
    v(self.ssh_key_pair, Field("sshKeyPair")
                             .Required()
                             .Doc("Harvester KeyPair (namespace/name or name in the target "
                                  "namespace)."));
    v(self.volumes,
      Field("volumes").Required().Doc("Disks of the VM; exactly one image volume boots first."));
    v(self.networks,
      Field("networks").Required().Doc("Harvester VM networks (namespace/name), one NIC each."));
    v(self.node_affinity,
      Field("nodeAffinity").Doc("Node affinity of the VM (core/v1 NodeAffinity)."));
    v(self.workload_affinity,
      Field("workloadAffinity").Doc("Pod affinity of the VM (core/v1 PodAffinity)."));
    v(self.network_config,
      Field("networkConfig").Doc("Static address of this machine; wins over IP pools."));
    v(self.vm_network_config,
      Field("vmNetworkConfig")
          .Doc("IP pools, gateway, mask and DNS of this machine, replacing the cluster's "
               "spec.vmNetworkConfig for it (e.g. workers on their own network); ipPoolRef or "
               "ipPoolRefs only. Excludes networkConfig."));
    v(self.firmware, Field("firmware").Doc("Firmware of the VM; BIOS when absent."));
    v(self.tpm, Field("tpm").Doc("Emulated TPM device of the VM."));
  }
  bool operator==(const HarvesterMachineSpec&) const = default;
};

struct HarvesterMachineStatus {
  std::optional<bool> ready;
  std::optional<Initialization> initialization;
  std::vector<Condition> conditions;
  std::vector<MachineAddress> addresses;
  std::string failure_reason;
  std::string failure_message;
  std::string allocated_ip_address;
  std::string allocated_pool_ref;
  std::string failure_domain;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.ready,
      Field("ready").Doc("True once the VM runs and has an address (Cluster API v1beta1 "
                         "contract)."));
    v(self.initialization,
      Field("initialization").Doc("Initialization state (Cluster API v1beta2 contract)."));
    v(self.conditions, Field("conditions")
                           .ListType("map")
                           .ListMapKeys({"type"})
                           .Doc("Observations of the machine state."));
    v(self.addresses, Field("addresses").Doc("Addresses of the VM."));
    v(self.failure_reason, Field("failureReason").Doc("Deprecated: terminal failure reason."));
    v(self.failure_message, Field("failureMessage").Doc("Deprecated: terminal failure message."));
    v(self.allocated_ip_address,
      Field("allocatedIPAddress").Doc("IP allocated to the VM from an IP pool."));
    v(self.allocated_pool_ref,
      Field("allocatedPoolRef").Doc("IP pool allocatedIPAddress came from."));
    v(self.failure_domain,
      Field("failureDomain")
          .Doc("Failure domain the machine was placed in (Cluster API v1beta2 contract; "
               "Machine.spec.failureDomain, else spec.failureDomain)."));
  }
  bool operator==(const HarvesterMachineStatus&) const = default;
};

using HarvesterMachine = KindObject<HarvesterMachineSpec, HarvesterMachineStatus>;
using HarvesterMachineTemplate = TemplateObject<
    TemplateResource<HarvesterMachineSpec, "Metadata given to the stamped HarvesterMachines.",
                     "Spec of the stamped HarvesterMachines.">>;

}  // namespace caphv::api
