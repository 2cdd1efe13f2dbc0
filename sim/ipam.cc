// File: sim/ipam.cc

#include "sim/ipam.h"

#include <cstdio>

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

kube::StatusOr<std::vector<PoolRange>> PoolRanges(const Object& pool) {
  std::vector<PoolRange> out;
  const Object ranges = pool.value("/spec/ranges"_json_pointer, Object::array());
  if (!ranges.is_array() || ranges.empty()) {
    return Status(StatusCode::kInvalidArgument, "IPPool has no ranges");
  }
  for (const auto& r : ranges) {
    auto cidr = ParseCidr(r.value("subnet", ""));
    if (!cidr || cidr->prefix > 30) {
      return Status(StatusCode::kInvalidArgument, "invalid subnet " + r.value("subnet", ""));
    }
    PoolRange pr{r.value("subnet", ""), cidr->prefix, harvester::NetworkAddress(*cidr) + 1,
                 harvester::BroadcastAddress(*cidr) - 1, harvester::NetworkAddress(*cidr) + 1};
    for (auto [key, field] : {std::pair{"rangeStart", &pr.start}, std::pair{"rangeEnd", &pr.end},
                              std::pair{"gateway", &pr.gateway}}) {
      const std::string v = r.value(key, "");
      if (v.empty()) continue;
      auto ip = ParseIpv4(v);
      if (!ip || *ip < harvester::NetworkAddress(*cidr) ||
          *ip > harvester::BroadcastAddress(*cidr)) {
        return Status(StatusCode::kInvalidArgument, std::string("invalid ") + key + " " + v);
      }
      *field = *ip;
    }
    if (pr.start > pr.end) return Status(StatusCode::kInvalidArgument, "rangeStart > rangeEnd");
    out.push_back(pr);
  }
  return out;
}

int64_t PoolTotal(const std::vector<PoolRange>& ranges) {
  int64_t total = 0;
  for (const auto& r : ranges) {
    total += int64_t{r.end} - r.start + 1;
    if (r.gateway >= r.start && r.gateway <= r.end) --total;
  }
  return total;
}

PoolStatus PoolStatusOf(const Object& pool, const std::vector<PoolRange>& ranges) {
  PoolStatus s;
  const Object st = pool.value("status", Object::object());
  s.last_allocated = st.value("lastAllocated", "");
  for (auto [key, map] :
       {std::pair{"allocated", &s.allocated}, std::pair{"allocatedHistory", &s.history}}) {
    if (st.contains(key) && st[key].is_object()) {
      for (auto it = st[key].begin(); it != st[key].end(); ++it) {
        if (it->is_string()) (*map)[it.key()] = it->get<std::string>();
      }
    }
  }
  s.total = PoolTotal(ranges);
  s.available = s.total - static_cast<int64_t>(s.allocated.size());
  return s;
}

Object PoolStatusToJson(const PoolStatus& s) {
  Object out = {
      {"total", s.total}, {"available", s.available}, {"lastAllocated", s.last_allocated}};
  if (!s.allocated.empty()) out["allocated"] = s.allocated;
  if (!s.history.empty()) out["allocatedHistory"] = s.history;
  out["conditions"] = Object::array({{{"type", "Ready"}, {"status", "True"}}});
  return out;
}

std::optional<PoolRange> RangeOf(const std::vector<PoolRange>& ranges, uint32_t ip) {
  for (const auto& r : ranges) {
    if (ip >= r.start && ip <= r.end) return r;
  }
  return std::nullopt;
}

kube::StatusOr<std::string> PoolReserve(const std::vector<PoolRange>& ranges, PoolStatus& status,
                                        const std::string& owner) {
  for (const auto& [ip, who] : status.allocated) {
    if (who == owner) return ip;
  }
  // By value: `ip` may be a key of `status.history`, which take() erases.
  auto take = [&](std::string ip) {
    status.allocated[ip] = owner;
    status.history.erase(ip);
    status.last_allocated = ip;
    status.available = status.total - static_cast<int64_t>(status.allocated.size());
    return ip;
  };
  for (const auto& [ip, who] : status.history) {
    if (who == owner && !status.allocated.contains(ip)) return take(ip);
  }
  // Candidates in range order, starting after lastAllocated.
  std::vector<uint32_t> order;
  for (const auto& r : ranges) {
    for (uint64_t ip = r.start; ip <= r.end; ++ip) {
      if (ip != r.gateway) order.push_back(static_cast<uint32_t>(ip));
    }
  }
  size_t begin = 0;
  if (auto last = ParseIpv4(status.last_allocated)) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] == *last) begin = i + 1;
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t n = 0; n < order.size(); ++n) {
      const std::string ip = FormatIpv4(order[(begin + n) % order.size()]);
      if (status.allocated.contains(ip)) continue;
      if (pass == 0 && status.history.contains(ip)) continue;
      return take(ip);
    }
  }
  return Status(StatusCode::kInvalidArgument, "no available IP in the pool");
}

bool PoolRelease(PoolStatus& status, const std::string& owner) {
  bool any = false;
  for (auto it = status.allocated.begin(); it != status.allocated.end();) {
    if (it->second == owner) {
      status.history[it->first] = owner;
      it = status.allocated.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  status.available = status.total - static_cast<int64_t>(status.allocated.size());
  return any;
}

std::optional<uint32_t> LeaseFrom(uint32_t start, uint32_t end, const std::set<uint32_t>& used) {
  for (uint64_t ip = start; ip <= end; ++ip) {
    if (!used.contains(static_cast<uint32_t>(ip))) return static_cast<uint32_t>(ip);
  }
  return std::nullopt;
}

bool IsGlobalPool(const Object& pool) {
  const Object scope = pool.value("/spec/selector/scope"_json_pointer, Object::array());
  if (!scope.is_array() || scope.size() != 1 || !scope[0].is_object()) return false;
  for (const char* key : {"project", "namespace", "guestCluster"}) {
    if (scope[0].value(key, "") != "*") return false;
  }
  return true;
}

namespace {

// A range as the Go validator prints it (`%+v` of allocator.Range).
std::string GoRange(const PoolRange& r) {
  auto cidr = ParseCidr(r.subnet);
  char mask[16];
  std::snprintf(mask, sizeof mask, "%08x", cidr ? harvester::MaskFromPrefix(cidr->prefix) : 0u);
  return "{RangeStart:" + FormatIpv4(r.start) + " RangeEnd:" + FormatIpv4(r.end) +
         " Subnet:{IP:" + FormatIpv4(cidr ? harvester::NetworkAddress(*cidr) : 0) +
         " Mask:" + mask + "} Gateway:" + FormatIpv4(r.gateway) + "}";
}

// parseIP of pkg/ipam/allocator.go for one explicit range bound, or "".
std::string CheckBound(const Object& range, const char* key, const char* what) {
  const std::string text = range.value(key, "");
  if (text.empty()) return "";
  auto cidr = ParseCidr(range.value("subnet", ""));
  auto ip = ParseIpv4(text);
  std::string why;
  if (!ip) {
    why = "invalid IP " + text;
  } else if (!cidr) {
    return "";
  } else if (*ip < harvester::NetworkAddress(*cidr) || *ip > harvester::BroadcastAddress(*cidr)) {
    why = "IP " + text + " is out of subnet " + range.value("subnet", "");
  } else if (*ip == harvester::NetworkAddress(*cidr)) {
    why = "IP " + text + " is the network address";
  } else if (*ip == harvester::BroadcastAddress(*cidr)) {
    why = "IP " + text + " is the broadcast address";
  } else {
    return "";
  }
  return std::string("invalid ") + what + " " + text + ": " + why;
}

}  // namespace

std::vector<std::string> ValidateIpPool(const std::string& operation, const Object& pool,
                                        const PoolAdmissionWorld& world) {
  const std::string name = pool.value("/metadata/name"_json_pointer, "");
  const Object status = pool.value("status", Object::object());
  const Object allocated =
      status.is_object() ? status.value("allocated", Object::object()) : Object::object();
  if (operation == "DELETE") {
    if (allocated.is_object() && !allocated.empty()) {
      return {"can't delete pool before releasing all the allocated IP"};
    }
    return {};
  }
  const Object meta = pool.value("metadata", Object::object());
  if (operation == "UPDATE" && meta.contains("deletionTimestamp") &&
      !meta["deletionTimestamp"].is_null()) {
    return {};
  }
  const std::string prefix = std::string(operation == "UPDATE" ? "can't update" : "can't create") +
                             " IP pool " + name + " because ";

  // The mutator's network lookup (pkg/utils/vid.go) comes first.
  const std::string network = pool.value("/spec/selector/network"_json_pointer, "");
  if (!network.empty()) {
    const size_t slash = network.find('/');
    if (slash == std::string::npos || network.find('/', slash + 1) != std::string::npos) {
      return {prefix + "invalid network " + network};
    }
    if (world.network_exists &&
        !world.network_exists(network.substr(0, slash), network.substr(slash + 1))) {
      return {prefix + "network-attachment-definitions.k8s.cni.cncf.io \"" +
              network.substr(slash + 1) + "\" not found"};
    }
  }

  const Object raw = pool.value("/spec/ranges"_json_pointer, Object::array());
  if (!raw.is_array() || raw.empty()) return {prefix + "range can't be empty"};
  for (const auto& r : raw) {
    if (!ParseCidr(r.value("subnet", ""))) {
      return {prefix + "invalid CIDR address: " + r.value("subnet", "") +
              ", a valid example is 192.168.1.0/24"};
    }
    for (auto [key, what] : {std::pair{"rangeStart", "range start"},
                             std::pair{"rangeEnd", "range end"}, std::pair{"gateway", "gateway"}}) {
      if (std::string e = CheckBound(r, key, what); !e.empty()) return {prefix + e};
    }
  }
  auto ranges = PoolRanges(pool);
  if (!ranges.ok()) return {prefix + ranges.status().message()};
  for (size_t i = 0; i < ranges->size(); ++i) {
    for (size_t j = i + 1; j < ranges->size(); ++j) {
      const PoolRange &a = (*ranges)[i], &b = (*ranges)[j];
      if (a.start <= b.end && b.start <= a.end) {
        return {prefix + "there are overlaps between range " + GoRange(a) + " and " + GoRange(b)};
      }
    }
  }
  for (const auto& other : world.other_pools) {
    if (other.value("/metadata/name"_json_pointer, "") == name) continue;
    auto theirs = PoolRanges(other);
    if (!theirs.ok()) continue;
    for (const auto& a : *ranges) {
      for (const auto& b : *theirs) {
        if (a.start > b.end || b.start > a.end) continue;
        std::string set;
        for (const auto& r : *ranges) set += (set.empty() ? "" : " ") + GoRange(r);
        return {prefix + "the ranges [" + set + "] overlap with other pools"};
      }
    }
  }
  if (operation == "UPDATE" && allocated.is_object()) {
    for (auto it = allocated.begin(); it != allocated.end(); ++it) {
      auto ip = ParseIpv4(it.key());
      if (!ip) return {prefix + "invalid ip string " + it.key()};
      if (!RangeOf(*ranges, *ip)) return {prefix + "allocated IP " + it.key() + " is excluded"};
    }
  }
  // Selector checks (checkSelector): one global pool; a non-global pool's
  // non-zero priority is its own.
  const bool global = IsGlobalPool(pool);
  const int64_t priority = pool.value("/spec/selector/priority"_json_pointer, int64_t{0});
  for (const auto& other : world.other_pools) {
    const std::string other_name = other.value("/metadata/name"_json_pointer, "");
    if (other_name == name) continue;
    if (global) {
      if (IsGlobalPool(other)) return {prefix + "there is already a global IP pool: " + other_name};
      continue;
    }
    if (IsGlobalPool(other)) continue;
    if (priority != 0 &&
        other.value("/spec/selector/priority"_json_pointer, int64_t{0}) == priority) {
      return {prefix + "the priority can't be the same as the pool " + other_name};
    }
  }
  return {};
}

}  // namespace caphv::sim
