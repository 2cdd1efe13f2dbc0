// File: harvester/cloud_init.h
//
// Cloud-init data of a CAPHV VM, as strings:
//
//   * MergeUserData adds what every CAPHV VM needs (qemu-guest-agent
//     installed and started — Harvester learns bridge-NIC addresses only from
//     it — and the SSH user with its authorized key) to the bootstrap
//     provider's `#cloud-config`. Lists are merged (the bootstrap's entries
//     are kept, ours added once), scalar keys of the bootstrap always win,
//     quoted scalars stay strings ('0644' is not turned into an octal
//     number). A `## template: jinja` header followed by `#cloud-config`
//     (what the RKE2 bootstrap provider writes) is merged the same way and
//     kept, its `{{ ... }}` expressions put back verbatim; Jinja statements
//     or comments (`{% %}`, `{# #}`) may change the YAML, so such data is
//     not merged. Any other format (`#!` scripts, MIME multipart,
//     `#include`, boothooks, Ignition JSON...) is returned untouched with
//     `merged == false` and `not_merged_because`, so the caller can report it.
//   * BuildNetworkData renders network-config version 1: one `physical`
//     entry per NIC, the first NIC static (address/netmask/gateway/DNS) or
//     DHCP, every other NIC DHCP, and a `nameserver` entry with the DNS.
//   * BuildCloudInitSecret is the Secret KubeVirt reads (keys `userdata` and
//     `networkdata`, lower case as every Harvester tool writes them).
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::harvester {

struct UserDataInputs {
  std::string bootstrap;         // bootstrap Secret key `value`
  std::string bootstrap_format;  // bootstrap Secret key `format` ("" = guess from content)
  std::string ssh_user;          // "" = no user entry
  std::string ssh_public_key;    // KeyPair spec.publicKey; "" = none
  bool install_guest_agent = true;
};

struct UserData {
  std::string text;
  bool merged = false;  // false: `text` is the bootstrap data, untouched
  std::string format;   // "cloud-config", "shellscript", "mime-multipart", "jinja",
                        // "ignition", "cloud-config-archive", "include", "boothook", "unknown"
  // When not merged (and not empty): why, as a phrase ("user data of format
  // shellscript, which is not #cloud-config").
  std::string not_merged_because;
};

// The format cloud-init would see in `data` (first line / first byte).
std::string DetectUserDataFormat(std::string_view data);

// kInvalidArgument when the bootstrap claims `#cloud-config` but is not a
// YAML mapping.
kube::StatusOr<UserData> MergeUserData(const UserDataInputs& in);

// One NIC as the guest sees it, in VM network order.
struct NicConfig {
  std::string name;         // guest interface name, e.g. eth0
  std::string mac_address;  // "" = match by name only
  // Static addressing; when `address` is empty the NIC uses DHCP.
  std::string address;  // "10.0.0.5" or "10.0.0.5/24"
  std::string netmask;  // dotted; required unless `address` carries a prefix
  std::string gateway;  // "" = no default route through this NIC
};

struct NetworkDataInputs {
  std::vector<NicConfig> nics;
  std::vector<std::string> dns_servers;
  std::vector<std::string> dns_search;
};

// NICs for `network_count` networks named eth0.. (the interface names of
// virtio NICs in VM order), NIC 0 static when `address` is non-empty.
NetworkDataInputs DefaultNics(size_t network_count, const std::string& address,
                              const std::string& netmask, const std::string& gateway,
                              std::vector<std::string> dns_servers,
                              std::vector<std::string> dns_search);

// The addressing of a machine, with the Go provider's precedence: the
// machine's own `networkConfig` (mask: its subnetMask, else the cluster's;
// DNS: its own, else the cluster's); else the cluster's `vmNetworkConfig`
// with `allocated_ip` from its pools; else DHCP on every NIC. A static
// address without any mask is an error (the Go provider silently used
// 255.255.0.0), as is pool mode before an address was allocated.
kube::StatusOr<NetworkDataInputs> EffectiveNetworkData(
    const api::HarvesterMachineSpec& machine, const std::optional<api::VMNetworkConfig>& cluster,
    const std::string& allocated_ip);

// network-config v1 YAML. kInvalidArgument on an unparsable address, mask or
// gateway, a gateway outside the static subnet, or no NIC.
kube::StatusOr<std::string> BuildNetworkData(const NetworkDataInputs& in);

struct CloudInitSecretInputs {
  std::string name;
  std::string namespace_;
  std::map<std::string, std::string> labels;
  std::string user_data;
  std::optional<std::string> network_data;
  // VM to own the Secret (garbage-collected with it); skipped when uid is "".
  std::string owner_vm_name;
  std::string owner_vm_uid;
};

kube::Object BuildCloudInitSecret(const CloudInitSecretInputs& in);

}  // namespace caphv::harvester
