// File: harvester/ipam.h
//
// VM address allocation from Harvester IPPools
// (ippools.loadbalancer.harvesterhci.io, cluster-scoped, status in the main
// object). Pure decisions over IPPool objects the caller has read:
//
//   * DecideAllocation walks the pools in the configured order (ipPoolRefs,
//     else ipPoolRef) and returns either an address this owner already holds
//     in any of them (adoption after a crash: a retry never takes a second
//     address), or the next free address of the first pool with room, or
//     Exhausted with a message naming each pool and why it could not serve.
//   * ReservePatch / ReleasePatch give JSON merge patches of the pool that
//     carry metadata.resourceVersion, so a concurrent writer (the Harvester
//     load-balancer controller, another management cluster) turns the write
//     into a 409 Conflict instead of a lost update. Release removes only the
//     entries of this owner.
//
// Owner ids keep the "<namespace>/<name>" shape Harvester uses and add the
// management cluster's id, so two management clusters never share an entry.
// An entry owned by "<namespace>/<name>" alone (the Go provider v0.2.x's
// format) is the same machine's: taking over its clusters never reserves a
// second address.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"
#include "harvester/ipv4.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::harvester {

// "<namespace>/<name>@<12 hex of the management cluster id>".
std::string IpOwnerId(std::string_view management_cluster_id, std::string_view namespace_,
                      std::string_view name);

// Whether a pool entry's owner is `owner_id`: the same id, or the id without
// its "@<hex>" suffix (the Go provider's "<namespace>/<name>").
bool SameOwner(std::string_view entry_owner, std::string_view owner_id);
// Pool names to try, in order: ipPoolRefs when non-empty, else ipPoolRef,
// duplicates dropped. A "ns/name" ref is reduced to name (pools are
// cluster-scoped; the Go provider's examples write "default/pool").
std::vector<std::string> OrderedPoolRefs(const api::VMNetworkConfig& config);

// The pools a cluster's machines take addresses from, in order:
// OrderedPoolRefs of spec.vmNetworkConfig, else the pool CAPHV creates from
// its inline ipPool (VmPoolName); empty without vmNetworkConfig.
std::vector<std::string> VmPoolRefs(const api::HarvesterCluster& hc);

// The VM network of one machine: its own spec.vmNetworkConfig, which replaces
// the cluster's for it (control planes and workers on different networks),
// else the cluster's; nullopt-valued when neither is set.
const std::optional<api::VMNetworkConfig>& MachineVmNetwork(const api::HarvesterMachine& hm,
                                                            const api::HarvesterCluster& hc);
// The pools one machine takes its address from: OrderedPoolRefs of its own
// vmNetworkConfig, else VmPoolRefs of the cluster.
std::vector<std::string> VmPoolRefs(const api::HarvesterCluster& hc,
                                    const api::HarvesterMachine& hm);

struct PoolRange {
  Ipv4Subnet subnet;
  Ipv4 start = 0;  // inclusive
  Ipv4 end = 0;    // inclusive
  std::optional<Ipv4> gateway;
};

// The parts of an IPPool allocation needs.
struct IpPool {
  std::string name;
  std::string resource_version;
  std::vector<PoolRange> ranges;
  std::string network;                           // spec.selector.network ("" = any)
  std::map<std::string, std::string> allocated;  // ip -> owner
  std::map<std::string, std::string> allocated_history;
  std::string last_allocated;
};

// Reads an IPPool object. Range defaults as Harvester: rangeStart = first
// host, rangeEnd = last host, gateway = first host; bounds given in reverse
// are swapped; a range start/end outside its subnet is an error
// (kInvalidArgument naming the pool and field).
kube::StatusOr<IpPool> ParseIpPool(const kube::Object& ippool);

// Whether `ip` may ever be handed out by `range` (inside start..end, not the
// network or broadcast address of a /30 or larger, not the gateway).
bool Assignable(const PoolRange& range, Ipv4 ip);

// Number of assignable addresses over all ranges (IPPool status.total).
int64_t TotalAddresses(const IpPool& pool);

struct PoolCandidate {
  std::string ref;             // the name as configured
  std::optional<IpPool> pool;  // nullopt: not found on Harvester
};

struct AllocationDecision {
  enum class Outcome {
    kAdopt,      // `ip` in `pool` already belongs to the owner: record it, write nothing
    kAllocate,   // reserve `ip` in `pool` (ReservePatch), then record it
    kExhausted,  // no pool can serve; `message` says why, per pool
  };
  Outcome outcome = Outcome::kExhausted;
  std::string pool;
  std::string ip;
  std::string message;
};

// `machine_networks`: the machine's networks ("ns/name"); when non-empty,
// pools whose selector.network is set to another network are skipped.
// `configured_by`: the kind whose spec.vmNetworkConfig names the pools
// (HarvesterCluster, or HarvesterMachine for a machine's own), for messages.
AllocationDecision DecideAllocation(const std::vector<PoolCandidate>& pools,
                                    std::string_view owner_id,
                                    const std::vector<std::string>& machine_networks = {},
                                    std::string_view configured_by = "HarvesterCluster");

// Merge patch reserving `ip` for `owner_id`: allocated[ip] = owner,
// allocatedHistory[ip] removed, lastAllocated = ip, total and available
// recomputed; guarded by the pool's resourceVersion. kInvalidArgument if the
// ip is not assignable or already allocated (to anyone).
kube::StatusOr<kube::Object> ReservePatch(const IpPool& pool, const std::string& ip,
                                          const std::string& owner_id);

// Merge patch releasing every entry of `owner_id` (moved to
// allocatedHistory, available recomputed), guarded by resourceVersion;
// nullopt when the owner holds nothing in this pool.
std::optional<kube::Object> ReleasePatch(const IpPool& pool, const std::string& owner_id);

// The addresses `owner_id` holds in `pool` (SameOwner), sorted.
std::vector<std::string> AddressesOf(const IpPool& pool, std::string_view owner_id);

// The IPPool (loadbalancer.harvesterhci.io/v1beta1, cluster-scoped) CAPHV
// creates from an inline api::IPPoolSpec: metadata.name = `name`,
// metadata.labels = `labels` (omitted when empty), spec.description =
// `description`, one range {subnet, gateway, rangeStart, rangeEnd} (range
// bounds omitted when empty, so Harvester's defaults apply),
// spec.selector.network = vm_network (omitted when empty: any network) and
// scope [{project: "*", namespace: "*", guestCluster: "*"}]. No status:
// Harvester's controller fills it. The result reads back through ParseIpPool.
// kInvalidArgument, the message naming the field ("ipPool.subnet: ..."), when
// the name is empty, the subnet is not an IPv4 CIDR, or the gateway or a
// range bound is not an IPv4 address of the subnet (the gateway is required).
kube::StatusOr<kube::Object> BuildIpPool(const std::string& name, const api::IPPoolSpec& spec,
                                         const std::map<std::string, std::string>& labels,
                                         const std::string& description);

}  // namespace caphv::harvester
