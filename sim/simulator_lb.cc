// File: sim/simulator_lb.cc
//
// The Simulator's load-balancer, IPPool, image and keypair reconcilers (see
// simulator.h).

#include <set>

#include "sim/ipam.h"
#include "sim/loadbalancer.h"
#include "sim/object_util.h"
#include "sim/simulator.h"

namespace caphv::sim {

using kube::Request;
using kube::Result;
using kube::StatusCode;
using namespace internal;  // NOLINT(google-build-using-namespace)

// ---------------------------------------------------------------- LBs and pools

Status Simulator::ReleasePoolAddresses(const std::string& owner) {
  for (const auto& p : pools_->store().List()) {
    auto ranges = PoolRanges(*p);
    if (!ranges.ok()) continue;
    PoolStatus st = PoolStatusOf(*p, *ranges);
    if (!PoolRelease(st, owner)) continue;
    CAPHV_RETURN_IF_ERROR(Fault("release pool address"));
    Object updated = *p;
    updated["status"] = PoolStatusToJson(st);
    auto u = h_->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
    if (!u.ok()) return u.status();
    log_.Info("Released pool address", {{"pool", Name(*p)}, {"owner", owner}});
  }
  return {};
}

std::string Simulator::LeaseLbAddress(const std::string& owner, const std::string& current) {
  // Caller holds mu_. One DHCP range serves both: LB-held leases and Service leases.
  std::set<uint32_t> used;
  for (const auto* leases : {&lb_leases_, &vip_leases_}) {
    for (const auto& [o, l] : *leases) {
      if (o != owner) used.insert(ParseIpv4(l).value_or(0));
    }
  }
  for (const auto& other : lbs_->store().List()) {
    if (kube::KeyOf(*other) == owner || LbUsesPool(*other) || LbServesVms(*other)) continue;
    if (auto v = ParseIpv4(StatusOf(*other).value("address", ""))) used.insert(*v);
  }
  for (const auto& svc : services_->store().List()) {
    if (kube::KeyOf(*svc) == owner || KubeVipRequestedAddress(*svc) != kDhcpAddress) continue;
    if (auto v = ParseIpv4(ServiceIngressIp(*svc))) used.insert(*v);
  }
  if (!opt_.env.lb_dhcp) return "";
  const auto start = ParseIpv4(opt_.env.lb_dhcp->range_start);
  const auto end = ParseIpv4(opt_.env.lb_dhcp->range_end);
  if (!start || !end) return "";
  // Renew the current lease when it is of the range and nobody else holds it.
  if (auto ip = ParseIpv4(current); ip && *ip >= *start && *ip <= *end && !used.contains(*ip)) {
    return current;
  }
  auto lease = LeaseFrom(*start, *end, used);
  return lease ? FormatIpv4(*lease) : "";
}

kube::StatusOr<std::string> Simulator::EnsureLbService(const Object& lb, const std::string& lb_ip) {
  auto svc = services_->store().Get(Ns(lb), Name(lb));
  if (!svc) {
    CAPHV_RETURN_IF_ERROR(Fault("create LB Service"));
    auto created =
        h_->Create(gvr::kServices, Ns(lb), LbService(lb, lb_ip), {.field_manager = kLbManager});
    if (created.status().IsAlreadyExists()) return std::string();  // the cache will bring it
    if (!created.ok()) return created.status();
    log_.Info("Created LB Service", {{"service", kube::KeyOf(*created)}, {"ip", lb_ip}});
    return ServiceIngressIp(*created);
  }
  const Object patch = LbServicePatch(lb, lb_ip, *svc);
  if (!patch.empty()) {
    CAPHV_RETURN_IF_ERROR(Fault("update LB Service"));
    auto p = h_->Patch(gvr::kServices, Ns(lb), Name(lb), kube::PatchType::kMerge, patch,
                       {.field_manager = kLbManager});
    if (!p.ok()) return p.status();
    log_.Info("Updated LB Service", {{"service", kube::KeyOf(*svc)}, {"ip", lb_ip}});
    return ServiceIngressIp(*p);
  }
  return ServiceIngressIp(*svc);
}

Result Simulator::ReconcileLb(const Request& req) {
  const std::string owner = req.ns + "/" + req.name;
  auto cached = lbs_->store().Get(req.ns, req.name);
  if (!cached || Deleting(*cached)) {
    if (!InScopeNs(req.ns)) return Result::Done();
    // The controller's finalizer: the address goes back to its pool before
    // the LoadBalancer does (load-balancer-harvester's OnRemove).
    if (Status s = ReleasePoolAddresses(owner); !s.ok()) return Result::Error(s);
    {
      std::lock_guard lock(mu_);
      lb_leases_.erase(owner);
    }
    if (cached) {
      auto fins = Finalizers(*cached);
      if (std::erase(fins, std::string(kLbFinalizer)) > 0) {
        auto p = h_->Patch(
            gvr::kLoadBalancers, req.ns, req.name, kube::PatchType::kMerge,
            {{"metadata",
              {{"finalizers", fins}, {"resourceVersion", kube::ResourceVersionOf(*cached)}}}});
        if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
      }
    }
    return Result::Done();
  }
  const Object& lb = *cached;
  if (!InScope(lb)) return Result::Done();
  if (auto fins = Finalizers(lb); std::find(fins.begin(), fins.end(), kLbFinalizer) == fins.end()) {
    fins.push_back(kLbFinalizer);
    if (Status s = Fault("add LB finalizer"); !s.ok()) return Result::Error(s);
    auto p = h_->Patch(
        gvr::kLoadBalancers, req.ns, req.name, kube::PatchType::kMerge,
        {{"metadata", {{"finalizers", fins}, {"resourceVersion", kube::ResourceVersionOf(lb)}}}});
    if (!p.ok()) return Result::Error(p.status());
    return Result::Done();  // the update event brings us back
  }
  const auto backends = BackendServers(lb, Values(vmis_->store().List(req.ns)));
  const bool vm = LbServesVms(lb);
  Object status;
  std::string lb_ip;  // what the LB's Service asks kube-vip for
  if (LbUsesPool(lb)) {
    const auto pools = Values(pools_->store().List());
    auto name = SelectPool(lb, pools);
    auto pool = name ? pools_->store().Get(*name) : nullptr;
    if (!pool) {
      status = LbErrorStatus("no matched IPPool");
    } else {
      auto ranges = PoolRanges(*pool);
      if (!ranges.ok()) return Result::Terminal(ranges.status());
      PoolStatus st = PoolStatusOf(*pool, *ranges);
      const Object before = PoolStatusToJson(st);
      auto ip = PoolReserve(*ranges, st, owner);
      if (!ip.ok()) {
        status = LbErrorStatus(ip.status().message());
      } else {
        if (!Covers(PoolStatusToJson(st), StatusOf(*pool)) || PoolStatusToJson(st) != before) {
          if (Status s = Fault("allocate pool address"); !s.ok()) return Result::Error(s);
          Object updated = *pool;
          updated["status"] = PoolStatusToJson(st);
          auto u = h_->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
          if (!u.ok()) return Result::Error(u.status());
          log_.Info("Allocated pool address", {{"pool", *name}, {"ip", *ip}, {"owner", owner}});
        }
        status = LbPoolStatus(*name, *RangeOf(*ranges, *ParseIpv4(*ip)), *ip, backends);
        lb_ip = *ip;
      }
    }
  } else if (vm) {
    // DHCP: the LB only records "ask DHCP"; kube-vip leases for its Service.
    status = {{"allocatedAddress", {{"ip", kDhcpAddress}}}};
    lb_ip = kDhcpAddress;
  } else {
    std::lock_guard lock(mu_);
    std::string ip;
    if (auto it = lb_leases_.find(owner); it != lb_leases_.end()) ip = it->second;
    if (ip.empty()) ip = StatusOf(lb).value("address", "");
    ip = LeaseLbAddress(owner, ip);
    if (ip.empty()) {
      status = LbErrorStatus("no DHCP lease available");
    } else {
      lb_leases_[owner] = ip;
      status = LbDhcpStatus(ip, backends);
    }
  }
  if (vm && !lb_ip.empty()) {
    auto ingress = EnsureLbService(lb, lb_ip);
    if (!ingress.ok()) return Result::Error(ingress.status());
    status = LbVmStatus(status["allocatedAddress"], *ingress, backends);
  }
  if (!Covers(status, StatusOf(lb))) {
    if (Status s = Fault("update LB status"); !s.ok()) return Result::Error(s);
    Object body = Skeleton(lb);
    body["status"] = status;
    auto a =
        h_->Apply(gvr::kLoadBalancers, req.ns, body, {.field_manager = kLbManager, .force = true});
    if (!a.ok()) return Result::Error(a.status());
  }
  return Result::Done();
}

// kube-vip on Harvester: announces the address a Service of type
// LoadBalancer asks for, or leases one by DHCP for "0.0.0.0", and reports it
// in status.loadBalancer.ingress.
Result Simulator::ReconcileService(const Request& req) {
  const std::string key = req.ns + "/" + req.name;
  if (!InScopeNs(req.ns)) return Result::Done();
  auto svc = services_->store().Get(req.ns, req.name);
  const std::string wanted = svc && !Deleting(*svc) ? KubeVipRequestedAddress(*svc) : "";
  std::string ip = wanted;
  {
    std::lock_guard lock(mu_);
    if (wanted != kDhcpAddress) {
      vip_leases_.erase(key);
    } else {
      std::string current;
      if (auto it = vip_leases_.find(key); it != vip_leases_.end()) current = it->second;
      if (current.empty()) current = ServiceIngressIp(*svc);
      ip = LeaseLbAddress(key, current);
      if (!ip.empty()) vip_leases_[key] = ip;
    }
  }
  if (ip.empty() || !ParseIpv4(ip) || ServiceIngressIp(*svc) == ip) return Result::Done();
  if (Status s = Fault("update Service status"); !s.ok()) return Result::Error(s);
  auto p = h_->Patch(gvr::kServices, req.ns, req.name, kube::PatchType::kMerge,
                     {{"status", {{"loadBalancer", KubeVipServiceStatus(ip)}}}},
                     {.subresource = "status"});
  if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
  log_.Info("Announced Service address", {{"service", key}, {"ip", ip}});
  return Result::Done();
}

Result Simulator::ReconcilePool(const Request& req) {
  auto pool = pools_->store().Get(req.name);
  if (!pool) return Result::Done();
  auto ranges = PoolRanges(*pool);
  if (!ranges.ok()) return Result::Terminal(ranges.status());
  const Object want = PoolStatusToJson(PoolStatusOf(*pool, *ranges));
  const Object& have = StatusOf(*pool);
  if (have.value("total", int64_t{-1}) == want["total"] &&
      have.value("available", int64_t{-1}) == want["available"] && have.contains("lastAllocated")) {
    return Result::Done();
  }
  if (Status s = Fault("initialize pool status"); !s.ok()) return Result::Error(s);
  Object updated = *pool;
  updated["status"] = want;
  auto u = h_->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
  return u.ok() ? Result::Done() : Result::Error(u.status());
}

Result Simulator::ReconcileImage(const Request& req) {
  auto image = images_->store().Get(req.ns, req.name);
  if (!image || !StatusOf(*image).value("storageClassName", "").empty()) return Result::Done();
  const Object spec = image->value("spec", Object::object());
  EnvImage im{req.ns, req.name, spec.value("displayName", req.name), spec.value("url", ""), 0, 0};
  if (Status s = Fault("create image StorageClass"); !s.ok()) return Result::Error(s);
  auto sc = h_->Create(gvr::kStorageClasses, "", ImageStorageClass(im));
  if (!sc.ok() && !sc.status().IsAlreadyExists()) return Result::Error(sc.status());
  auto p = h_->Patch(gvr::kImages, req.ns, req.name, kube::PatchType::kMerge,
                     {{"status", ImageObject(im)["status"]}});
  return p.ok() ? Result::Done() : Result::Error(p.status());
}

Result Simulator::ReconcileKeyPair(const Request& req) {
  auto kp = keypairs_->store().Get(req.ns, req.name);
  if (!kp || !StatusOf(*kp).value("fingerPrint", "").empty()) return Result::Done();
  const std::string key = (*kp)["spec"].value("publicKey", "");
  if (key.empty()) return Result::Done();
  const Object status = KeyPairObject({req.ns, req.name, key})["status"];
  if (Covers(status, StatusOf(*kp))) return Result::Done();
  auto p =
      h_->Patch(gvr::kKeyPairs, req.ns, req.name, kube::PatchType::kMerge, {{"status", status}});
  return p.ok() ? Result::Done() : Result::Error(p.status());
}

}  // namespace caphv::sim
