// File: sim/ipam.h
//
// The two allocators the simulator plays:
//  - Harvester's load-balancer IPPool bookkeeping (status.allocated,
//    allocatedHistory, lastAllocated, total, available), with owners
//    "<namespace>/<name>" exactly as harvester-load-balancer records them;
//  - DHCP-style leases from a plain address range.
//
// Thread safety: pure functions over values.

#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harvester/ipv4.h"
#include "kube/client.h"
#include "kube/status.h"

namespace caphv::sim {

// IP syntax and arithmetic are CAPHV's one module (harvester/ipv4.h), strict
// as Go's net.ParseIP and net.ParseCIDR are.
using harvester::FormatIpv4;
using harvester::ParseCidr;
using harvester::ParseIpv4;
// One range of an IPPool spec after Harvester's defaulting: start defaults to
// the first usable address, end to the last usable one, gateway to the first.
struct PoolRange {
  std::string subnet;
  int prefix = 0;
  uint32_t start = 0;
  uint32_t end = 0;
  uint32_t gateway = 0;
};
kube::StatusOr<std::vector<PoolRange>> PoolRanges(const kube::Object& pool);

// Addresses of the ranges, the gateways excluded.
int64_t PoolTotal(const std::vector<PoolRange>& ranges);

// The status block of an IPPool as plain values.
struct PoolStatus {
  int64_t total = 0;
  int64_t available = 0;
  std::string last_allocated;
  std::map<std::string, std::string> allocated;  // ip -> owner
  std::map<std::string, std::string> history;    // ip -> last owner
};
// Reads `pool.status`, recomputing total/available from the spec.
PoolStatus PoolStatusOf(const kube::Object& pool, const std::vector<PoolRange>& ranges);
kube::Object PoolStatusToJson(const PoolStatus& s);

// Reserves an address for `owner`: the one it already holds, else the one it
// held last (history) if free, else the next free address after
// lastAllocated (round robin), preferring addresses without history.
// ResourceExhausted-style kInvalidArgument when the pool is full.
kube::StatusOr<std::string> PoolReserve(const std::vector<PoolRange>& ranges, PoolStatus& status,
                                        const std::string& owner);
// Moves every address held by `owner` to the history. Returns true if any.
bool PoolRelease(PoolStatus& status, const std::string& owner);
// The range that holds `ip`, if any.
std::optional<PoolRange> RangeOf(const std::vector<PoolRange>& ranges, uint32_t ip);

// Harvester's IPPool admission (load-balancer-harvester v1.7.3
// pkg/webhook/ippool/validator.go, the network lookup of mutator.go and
// pkg/utils/vid.go), with its messages ("can't create IP pool <name>
// because ..."), the first problem only:
//  - selector.network, when set, is "<namespace>/<name>" of an existing
//    NetworkAttachmentDefinition, on every CREATE and UPDATE;
//  - ranges are not empty, parse, their explicit bounds are neither the
//    subnet's network nor its broadcast address, and they overlap neither
//    each other nor any range of another pool;
//  - on UPDATE every allocated address lies in a range;
//  - a pool whose scope is exactly one {project: *, namespace: *,
//    guestCluster: *} tuple is the global pool; there is at most one;
//  - a non-global pool's non-zero priority is not another's;
//  - DELETE is refused while the pool has allocated addresses.
// An UPDATE of a pool being deleted is not judged.
struct PoolAdmissionWorld {
  std::vector<kube::Object> other_pools;  // every IPPool but the one reviewed
  std::function<bool(const std::string& ns, const std::string& name)> network_exists;
};
bool IsGlobalPool(const kube::Object& pool);
// The messages Harvester refuses `pool` with ("" operation = CREATE);
// empty = allowed.
std::vector<std::string> ValidateIpPool(const std::string& operation, const kube::Object& pool,
                                        const PoolAdmissionWorld& world);

// The first address of [start, end] not in `used`.
std::optional<uint32_t> LeaseFrom(uint32_t start, uint32_t end, const std::set<uint32_t>& used);

}  // namespace caphv::sim
