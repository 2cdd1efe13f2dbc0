// File: sim/addresses.cc

#include "sim/addresses.h"

#include "sim/ipam.h"
#include "sim/loadbalancer.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;

using namespace internal;  // NOLINT(google-build-using-namespace)

std::vector<Nic> VmAddresses::Assign(const std::string& vm_key, const Object* vmi,
                                     std::vector<Nic> nics) {
  std::lock_guard lock(mu_);
  std::set<uint32_t> used;
  for (const auto& [k, ips] : vm_ips_) {
    if (k == vm_key) continue;
    for (const auto& ip : ips) {
      if (auto v = ParseIpv4(ip)) used.insert(*v);
    }
  }
  auto& leases = leases_[vm_key];
  std::set<std::string> mine;
  for (auto& nic : nics) {
    if (!nic.ip.empty()) {
      mine.insert(nic.ip);
      continue;
    }
    if (auto it = leases.find(nic.name); it != leases.end()) {
      nic.ip = it->second;
    } else if (vmi != nullptr) {
      for (const auto& i : StatusOf(*vmi).value("interfaces", Object::array())) {
        if (i.value("name", "") == nic.name) nic.ip = i.value("ipAddress", "");
      }
    }
    if (nic.ip.empty()) {
      uint32_t start = *ParseIpv4("10.52.0.10"), end = *ParseIpv4("10.52.255.250");
      bool have_range = nic.network.empty();
      for (const auto& n : ctx_.opt.env.networks) {
        if (n.ns + "/" + n.name == nic.network && n.dhcp) {
          auto s = ParseIpv4(n.dhcp->range_start), e = ParseIpv4(n.dhcp->range_end);
          if (s && e) start = *s, end = *e, have_range = true;
        }
      }
      if (!have_range) continue;  // no DHCP server on this network: no address
      auto lease = LeaseFrom(start, end, used);
      if (!lease) continue;
      nic.ip = FormatIpv4(*lease);
    }
    leases[nic.name] = nic.ip;
    if (auto v = ParseIpv4(nic.ip)) used.insert(*v);
    mine.insert(nic.ip);
  }
  vm_ips_[vm_key] = mine;
  return nics;
}

void VmAddresses::Release(const std::string& vm_key) {
  std::lock_guard lock(mu_);
  leases_.erase(vm_key);
  vm_ips_.erase(vm_key);
}

std::map<std::string, std::string> VmAddresses::InUse() const {
  std::lock_guard lock(mu_);
  std::map<std::string, std::string> out;
  for (const auto& [k, ips] : vm_ips_) {
    for (const auto& ip : ips) out[ip] = k;
  }
  return out;
}

std::set<std::string> VmAddresses::Of(const std::string& vm_key) const {
  std::lock_guard lock(mu_);
  auto it = vm_ips_.find(vm_key);
  return it == vm_ips_.end() ? std::set<std::string>() : it->second;
}

std::string LbLeases::Lease(Holder holder, const std::string& owner, const std::string& current) {
  std::lock_guard lock(mu_);
  auto& table = Table(holder);
  std::string want = current;
  if (auto it = table.find(owner); it != table.end() && !it->second.empty()) want = it->second;
  std::set<uint32_t> used;
  for (const auto* leases : {&lb_leases_, &vip_leases_}) {
    for (const auto& [o, l] : *leases) {
      if (o != owner) used.insert(ParseIpv4(l).value_or(0));
    }
  }
  for (const auto& other : ctx_.cache.lbs->store().List()) {
    if (kube::KeyOf(*other) == owner || LbUsesPool(*other) || LbServesVms(*other)) continue;
    if (auto v = ParseIpv4(StatusOf(*other).value("address", ""))) used.insert(*v);
  }
  for (const auto& svc : ctx_.cache.services->store().List()) {
    if (kube::KeyOf(*svc) == owner || KubeVipRequestedAddress(*svc) != kDhcpAddress) continue;
    if (auto v = ParseIpv4(ServiceIngressIp(*svc))) used.insert(*v);
  }
  if (!ctx_.opt.env.lb_dhcp) return "";
  const auto start = ParseIpv4(ctx_.opt.env.lb_dhcp->range_start);
  const auto end = ParseIpv4(ctx_.opt.env.lb_dhcp->range_end);
  if (!start || !end) return "";
  std::string ip;
  // Renew the current lease when it is of the range and nobody else holds it.
  if (auto v = ParseIpv4(want); v && *v >= *start && *v <= *end && !used.contains(*v)) {
    ip = want;
  } else if (auto lease = LeaseFrom(*start, *end, used)) {
    ip = FormatIpv4(*lease);
  }
  if (!ip.empty()) table[owner] = ip;
  return ip;
}

void LbLeases::Release(Holder holder, const std::string& owner) {
  std::lock_guard lock(mu_);
  Table(holder).erase(owner);
}

}  // namespace caphv::sim
