// File: harvester/ipam.cc

#include "harvester/ipam.h"

#include <algorithm>
#include <set>

#include "harvester/naming.h"

namespace caphv::harvester {
namespace {

using kube::Status;
using kube::StatusCode;

Status Invalid(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }

std::string StringAt(const kube::Object& obj, const char* key) {
  auto it = obj.find(key);
  return (it != obj.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

std::map<std::string, std::string> StringMapAt(const kube::Object& obj, const char* key) {
  std::map<std::string, std::string> out;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) return out;
  for (const auto& [k, v] : it->items()) {
    if (v.is_string()) out[k] = v.get<std::string>();
  }
  return out;
}

int64_t Available(const IpPool& pool, const std::map<std::string, std::string>& allocated) {
  // Only addresses inside the pool's ranges use up its capacity.
  int64_t used = 0;
  for (const auto& [ip, owner] : allocated) {
    auto parsed = ParseIpv4(ip);
    if (!parsed) continue;
    for (const auto& r : pool.ranges) {
      if (Assignable(r, *parsed)) {
        ++used;
        break;
      }
    }
  }
  return TotalAddresses(pool) - used;
}

bool AssignableInPool(const IpPool& pool, Ipv4 ip) {
  return std::any_of(pool.ranges.begin(), pool.ranges.end(),
                     [&](const PoolRange& r) { return Assignable(r, ip); });
}

}  // namespace

std::string IpOwnerId(std::string_view management_cluster_id, std::string_view namespace_,
                      std::string_view name) {
  return std::string(namespace_) + "/" + std::string(name) + "@" +
         HexHash(management_cluster_id, 12);
}

bool SameOwner(std::string_view entry_owner, std::string_view owner_id) {
  if (entry_owner == owner_id) return true;
  const size_t at = owner_id.rfind('@');
  return at != std::string_view::npos && entry_owner == owner_id.substr(0, at);
}

std::vector<std::string> OrderedPoolRefs(const api::VMNetworkConfig& config) {
  std::vector<std::string> refs = config.ip_pool_refs.empty()
                                      ? std::vector<std::string>{config.ip_pool_ref}
                                      : config.ip_pool_refs;
  std::vector<std::string> out;
  for (std::string& r : refs) {
    size_t slash = r.find('/');
    if (slash != std::string::npos) r = r.substr(slash + 1);
    if (r.empty() || std::find(out.begin(), out.end(), r) != out.end()) continue;
    out.push_back(r);
  }
  return out;
}

kube::StatusOr<IpPool> ParseIpPool(const kube::Object& obj) {
  IpPool pool;
  if (!obj.is_object()) return Invalid("IPPool is not an object");
  const kube::Object empty = kube::Object::object();
  const kube::Object& meta = obj.contains("metadata") ? obj["metadata"] : empty;
  const kube::Object& spec = obj.contains("spec") ? obj["spec"] : empty;
  const kube::Object& status =
      obj.contains("status") && obj["status"].is_object() ? obj["status"] : empty;
  pool.name = StringAt(meta, "name");
  pool.resource_version = StringAt(meta, "resourceVersion");
  if (spec.contains("selector") && spec["selector"].is_object()) {
    pool.network = StringAt(spec["selector"], "network");
  }
  const std::string where = "IPPool " + pool.name + ": ";
  if (!spec.contains("ranges") || !spec["ranges"].is_array() || spec["ranges"].empty()) {
    return Invalid(where + "spec.ranges is empty");
  }
  for (size_t i = 0; i < spec["ranges"].size(); ++i) {
    const kube::Object& r = spec["ranges"][i];
    const std::string field = where + "spec.ranges[" + std::to_string(i) + "].";
    if (!r.is_object()) return Invalid(field + " is not an object");
    PoolRange range;
    auto subnet = ParseCidr(StringAt(r, "subnet"));
    if (!subnet) {
      return Invalid(field + "subnet " + StringAt(r, "subnet") + " is not an IPv4 CIDR");
    }
    range.subnet = *subnet;
    range.start = FirstHost(*subnet);
    range.end = LastHost(*subnet);
    for (auto [key, target] : {std::pair{"rangeStart", &range.start}, {"rangeEnd", &range.end}}) {
      std::string text = StringAt(r, key);
      if (text.empty()) continue;
      auto ip = ParseIpv4(text);
      if (!ip || !Contains(*subnet, *ip)) {
        return Invalid(field + key + " " + text + " is not an address of " + StringAt(r, "subnet"));
      }
      *target = *ip;
    }
    if (range.start > range.end) std::swap(range.start, range.end);
    std::string gw = StringAt(r, "gateway");
    if (gw.empty()) {
      range.gateway = FirstHost(*subnet);
    } else {
      auto ip = ParseIpv4(gw);
      if (!ip) return Invalid(field + "gateway " + gw + " is not an IPv4 address");
      range.gateway = *ip;
    }
    pool.ranges.push_back(range);
  }
  pool.allocated = StringMapAt(status, "allocated");
  pool.allocated_history = StringMapAt(status, "allocatedHistory");
  pool.last_allocated = StringAt(status, "lastAllocated");
  return pool;
}

bool Assignable(const PoolRange& range, Ipv4 ip) {
  if (ip < range.start || ip > range.end || !Contains(range.subnet, ip)) return false;
  if (range.subnet.prefix < 31 &&
      (ip == NetworkAddress(range.subnet) || ip == BroadcastAddress(range.subnet))) {
    return false;
  }
  return !(range.gateway && *range.gateway == ip);
}

int64_t TotalAddresses(const IpPool& pool) {
  // Ranges never overlap (Harvester's validator refuses it); count per range.
  int64_t total = 0;
  for (const auto& r : pool.ranges) {
    total += static_cast<int64_t>(r.end) - static_cast<int64_t>(r.start) + 1;
    std::set<Ipv4> excluded;
    if (r.subnet.prefix < 31) {
      excluded.insert(NetworkAddress(r.subnet));
      excluded.insert(BroadcastAddress(r.subnet));
    }
    if (r.gateway) excluded.insert(*r.gateway);
    for (Ipv4 ip : excluded) {
      if (ip >= r.start && ip <= r.end) --total;
    }
  }
  return total;
}

std::vector<std::string> AddressesOf(const IpPool& pool, std::string_view owner_id) {
  std::vector<std::string> out;
  for (const auto& [ip, owner] : pool.allocated) {
    if (SameOwner(owner, owner_id)) out.push_back(ip);
  }
  return out;
}

namespace {

// Next free address, scanning round-robin after lastAllocated (as the
// host-local allocator does, so a just-released address is not reused at
// once); a free address this owner held before (allocatedHistory) wins.
std::optional<Ipv4> NextFree(const IpPool& pool, std::string_view owner_id) {
  auto is_free = [&](Ipv4 ip) {
    return AssignableInPool(pool, ip) && !pool.allocated.count(FormatIpv4(ip));
  };
  for (const auto& [ip, owner] : pool.allocated_history) {
    auto parsed = ParseIpv4(ip);
    if (SameOwner(owner, owner_id) && parsed && is_free(*parsed)) return parsed;
  }
  std::vector<PoolRange> ranges = pool.ranges;
  std::sort(ranges.begin(), ranges.end(),
            [](const PoolRange& a, const PoolRange& b) { return a.start < b.start; });
  // Addresses after lastAllocated first, then from the beginning.
  std::optional<Ipv4> last = ParseIpv4(pool.last_allocated);
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& r : ranges) {
      uint64_t from = r.start;
      uint64_t to = r.end;
      if (last && pass == 0) from = std::max<uint64_t>(from, uint64_t{*last} + 1);
      if (last && pass == 1) to = std::min<uint64_t>(to, *last);
      for (uint64_t ip = from; ip <= to; ++ip) {
        if (is_free(static_cast<Ipv4>(ip))) return static_cast<Ipv4>(ip);
      }
    }
    if (!last) break;
  }
  return std::nullopt;
}

}  // namespace

AllocationDecision DecideAllocation(const std::vector<PoolCandidate>& pools,
                                    std::string_view owner_id,
                                    const std::vector<std::string>& machine_networks,
                                    std::string_view configured_by) {
  AllocationDecision d;
  // Adoption first, over every pool: after a crash between the pool write
  // and recording the address, the retry must find the address it took.
  for (const auto& c : pools) {
    if (!c.pool) continue;
    auto mine = AddressesOf(*c.pool, owner_id);
    if (!mine.empty()) {
      d.outcome = AllocationDecision::Outcome::kAdopt;
      d.pool = c.ref;
      d.ip = mine.front();
      return d;
    }
  }
  std::vector<std::string> reasons;
  for (const auto& c : pools) {
    if (!c.pool) {
      reasons.push_back(c.ref + ": not found");
      continue;
    }
    const IpPool& p = *c.pool;
    if (!machine_networks.empty() && !p.network.empty() &&
        std::find(machine_networks.begin(), machine_networks.end(), p.network) ==
            machine_networks.end()) {
      reasons.push_back(c.ref + ": serves network " + p.network +
                        ", which is not one of the machine's networks");
      continue;
    }
    if (auto ip = NextFree(p, owner_id)) {
      d.outcome = AllocationDecision::Outcome::kAllocate;
      d.pool = c.ref;
      d.ip = FormatIpv4(*ip);
      return d;
    }
    reasons.push_back(c.ref + ": all " + std::to_string(TotalAddresses(p)) +
                      " addresses are in use");
  }
  d.outcome = AllocationDecision::Outcome::kExhausted;
  if (pools.empty()) {
    d.message =
        "no IP pool is configured: set spec.vmNetworkConfig.ipPoolRefs (or ipPoolRef) of the " +
        std::string(configured_by);
    return d;
  }
  d.message =
      "no address available in the " + std::to_string(pools.size()) + " configured IP pool(s) (";
  for (size_t i = 0; i < reasons.size(); ++i) {
    d.message += (i ? "; " : "") + reasons[i];
  }
  d.message += "); widen a pool's ranges, add a pool to spec.vmNetworkConfig.ipPoolRefs of the " +
               std::string(configured_by) +
               ", or free addresses listed in the pools' status.allocated";
  return d;
}

kube::StatusOr<kube::Object> ReservePatch(const IpPool& pool, const std::string& ip,
                                          const std::string& owner_id) {
  auto parsed = ParseIpv4(ip);
  if (!parsed || !AssignableInPool(pool, *parsed)) {
    return Invalid("IPPool " + pool.name + ": " + ip + " is not an assignable address");
  }
  if (auto it = pool.allocated.find(ip); it != pool.allocated.end()) {
    return Invalid("IPPool " + pool.name + ": " + ip + " is already allocated to " + it->second);
  }
  auto allocated = pool.allocated;
  allocated[ip] = owner_id;
  kube::Object patch = {{"metadata", {{"resourceVersion", pool.resource_version}}},
                        {"status",
                         {{"allocated", {{ip, owner_id}}},
                          {"lastAllocated", ip},
                          {"total", TotalAddresses(pool)},
                          {"available", Available(pool, allocated)}}}};
  if (pool.allocated_history.count(ip)) {
    patch["status"]["allocatedHistory"] = {{ip, nullptr}};
  }
  return patch;
}

std::optional<kube::Object> ReleasePatch(const IpPool& pool, const std::string& owner_id) {
  auto mine = AddressesOf(pool, owner_id);
  if (mine.empty()) return std::nullopt;
  auto allocated = pool.allocated;
  kube::Object released = kube::Object::object();
  kube::Object history = kube::Object::object();
  for (const auto& ip : mine) {
    allocated.erase(ip);
    released[ip] = nullptr;
    history[ip] = owner_id;
  }
  return kube::Object{{"metadata", {{"resourceVersion", pool.resource_version}}},
                      {"status",
                       {{"allocated", released},
                        {"allocatedHistory", history},
                        {"lastAllocated", pool.last_allocated},
                        {"total", TotalAddresses(pool)},
                        {"available", Available(pool, allocated)}}}};
}

kube::StatusOr<kube::Object> BuildIpPool(const std::string& name, const api::IPPoolSpec& spec,
                                         const std::map<std::string, std::string>& labels,
                                         const std::string& description) {
  if (name.empty()) return Invalid("ipPool: the IPPool name is empty");
  auto subnet = ParseCidr(spec.subnet);
  if (!subnet) {
    return Invalid("ipPool.subnet: \"" + spec.subnet +
                   "\" is not an IPv4 CIDR (for example 192.168.100.0/24)");
  }
  // Each address must be IPv4 and inside the subnet; `required` fields may
  // not be empty, optional ones are left out of the range when empty.
  auto check_address = [&](const char* field, const std::string& text,
                           bool required) -> kube::Status {
    if (text.empty() && !required) return kube::Status();
    auto ip = ParseIpv4(text);
    if (!ip) {
      return Invalid(std::string("ipPool.") + field + ": \"" + text + "\" is not an IPv4 address");
    }
    if (!Contains(*subnet, *ip)) {
      return Invalid(std::string("ipPool.") + field + ": " + text + " is outside subnet " +
                     spec.subnet);
    }
    return kube::Status();
  };
  CAPHV_RETURN_IF_ERROR(check_address("gateway", spec.gateway, true));
  CAPHV_RETURN_IF_ERROR(check_address("rangeStart", spec.range_start, false));
  CAPHV_RETURN_IF_ERROR(check_address("rangeEnd", spec.range_end, false));

  kube::Object range = {{"subnet", spec.subnet}, {"gateway", spec.gateway}};
  if (!spec.range_start.empty()) range["rangeStart"] = spec.range_start;
  if (!spec.range_end.empty()) range["rangeEnd"] = spec.range_end;
  // No scope: a scope of one {*,*,*} tuple makes the pool Harvester's one
  // global pool (load-balancer-harvester v1.7.3 pkg/webhook/ippool/
  // validator.go), refused when another exists and otherwise the fallback of
  // every load balancer. CAPHV names its pools explicitly (spec.ipPool of the
  // load balancer, status.allocated for VMs), as the Go provider did.
  kube::Object selector = kube::Object::object();
  if (!spec.vm_network.empty()) selector["network"] = spec.vm_network;
  kube::Object metadata = {{"name", name}};
  if (!labels.empty()) metadata["labels"] = labels;
  return kube::Object{{"apiVersion", "loadbalancer.harvesterhci.io/v1beta1"},
                      {"kind", "IPPool"},
                      {"metadata", metadata},
                      {"spec",
                       {{"description", description},
                        {"ranges", kube::Object::array({range})},
                        {"selector", selector}}}};
}

std::vector<std::string> VmPoolRefs(const api::HarvesterCluster& hc) {
  std::vector<std::string> refs;
  if (!hc.spec.vm_network_config) return refs;
  refs = OrderedPoolRefs(*hc.spec.vm_network_config);
  if (refs.empty() && hc.spec.vm_network_config->ip_pool) {
    refs.push_back(VmPoolName(hc.metadata.namespace_, hc.metadata.name));
  }
  return refs;
}

const std::optional<api::VMNetworkConfig>& MachineVmNetwork(const api::HarvesterMachine& hm,
                                                            const api::HarvesterCluster& hc) {
  return hm.spec.vm_network_config ? hm.spec.vm_network_config : hc.spec.vm_network_config;
}

std::vector<std::string> VmPoolRefs(const api::HarvesterCluster& hc,
                                    const api::HarvesterMachine& hm) {
  if (hm.spec.vm_network_config) return OrderedPoolRefs(*hm.spec.vm_network_config);
  return VmPoolRefs(hc);
}

}  // namespace caphv::harvester
