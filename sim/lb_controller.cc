// File: sim/lb_controller.cc

#include "sim/lb_controller.h"

#include <algorithm>

#include "sim/ipam.h"
#include "sim/loadbalancer.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Request;
using kube::Result;
using kube::Status;

using namespace internal;  // NOLINT(google-build-using-namespace)

std::unique_ptr<kube::Controller> LoadBalancerController::Build() {
  auto c = NewSimController("lb", 2, [this](const Request& r) { return Reconcile(r); });
  const SimCaches& cache = ctx_.cache;
  c->For(cache.lbs);
  auto all_lbs = [this](const Object& o) {
    std::vector<Request> out;
    for (const auto& l : ctx_.cache.lbs->store().List()) {
      if (Ns(o).empty() || Ns(*l) == Ns(o)) out.push_back({Ns(*l), Name(*l)});
    }
    return out;
  };
  c->Watch(cache.vmis, all_lbs);
  c->Watch(cache.pools, all_lbs);
  // The Service of a `vm` LB has the LB's name; a Service without an LB (a
  // provider's placeholder) is no LB's business.
  c->Watch(cache.services, [this](const Object& svc) {
    std::vector<Request> out;
    if (ctx_.cache.lbs->store().Get(Ns(svc), Name(svc))) out.push_back({Ns(svc), Name(svc)});
    return out;
  });
  return c;
}

Status LoadBalancerController::ReleasePoolAddresses(const std::string& owner) {
  for (const auto& p : ctx_.cache.pools->store().List()) {
    auto ranges = PoolRanges(*p);
    if (!ranges.ok()) continue;
    PoolStatus st = PoolStatusOf(*p, *ranges);
    if (!PoolRelease(st, owner)) continue;
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("release pool address"));
    Object updated = *p;
    updated["status"] = PoolStatusToJson(st);
    auto u = ctx_.h->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
    if (!u.ok()) return u.status();
    ctx_.log.Info("Released pool address", {{"pool", Name(*p)}, {"owner", owner}});
  }
  return {};
}

kube::StatusOr<std::string> LoadBalancerController::EnsureService(const Object& lb,
                                                                  const std::string& lb_ip) {
  auto svc = ctx_.cache.services->store().Get(Ns(lb), Name(lb));
  if (!svc) {
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("create LB Service"));
    auto created =
        ctx_.h->Create(gvr::kServices, Ns(lb), LbService(lb, lb_ip), {.field_manager = kLbManager});
    if (created.status().IsAlreadyExists()) return std::string();  // the cache will bring it
    if (!created.ok()) return created.status();
    ctx_.log.Info("Created LB Service", {{"service", kube::KeyOf(*created)}, {"ip", lb_ip}});
    return ServiceIngressIp(*created);
  }
  const Object patch = LbServicePatch(lb, lb_ip, *svc);
  if (!patch.empty()) {
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("update LB Service"));
    auto p = ctx_.h->Patch(gvr::kServices, Ns(lb), Name(lb), kube::PatchType::kMerge, patch,
                           {.field_manager = kLbManager});
    if (!p.ok()) return p.status();
    ctx_.log.Info("Updated LB Service", {{"service", kube::KeyOf(*svc)}, {"ip", lb_ip}});
    return ServiceIngressIp(*p);
  }
  return ServiceIngressIp(*svc);
}

Result LoadBalancerController::Remove(const Request& req, const Object* lb) {
  const std::string owner = req.ns + "/" + req.name;
  if (!ctx_.InScopeNs(req.ns)) return Result::Done();
  // The controller's finalizer: the address goes back to its pool before
  // the LoadBalancer does (load-balancer-harvester's OnRemove).
  if (Status s = ReleasePoolAddresses(owner); !s.ok()) return Result::Error(s);
  leases_.Release(LbLeases::Holder::kLoadBalancer, owner);
  if (lb != nullptr) {
    auto fins = Finalizers(*lb);
    if (std::erase(fins, std::string(kLbFinalizer)) > 0) {
      auto p = ctx_.h->Patch(
          gvr::kLoadBalancers, req.ns, req.name, kube::PatchType::kMerge,
          {{"metadata",
            {{"finalizers", fins}, {"resourceVersion", kube::ResourceVersionOf(*lb)}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
  }
  return Result::Done();
}

Result LoadBalancerController::Reconcile(const Request& req) {
  const std::string owner = req.ns + "/" + req.name;
  auto cached = ctx_.cache.lbs->store().Get(req.ns, req.name);
  if (!cached || Deleting(*cached)) return Remove(req, cached.get());
  const Object& lb = *cached;
  if (!ctx_.InScope(lb)) return Result::Done();
  if (auto fins = Finalizers(lb); std::find(fins.begin(), fins.end(), kLbFinalizer) == fins.end()) {
    fins.emplace_back(kLbFinalizer);
    if (Status s = ctx_.Fault("add LB finalizer"); !s.ok()) return Result::Error(s);
    auto p = ctx_.h->Patch(
        gvr::kLoadBalancers, req.ns, req.name, kube::PatchType::kMerge,
        {{"metadata", {{"finalizers", fins}, {"resourceVersion", kube::ResourceVersionOf(lb)}}}});
    if (!p.ok()) return Result::Error(p.status());
    return Result::Done();  // the update event brings us back
  }
  const auto backends = BackendServers(lb, Values(ctx_.cache.vmis->store().List(req.ns)));
  const bool vm = LbServesVms(lb);
  Object status;
  std::string lb_ip;  // what the LB's Service asks kube-vip for
  if (LbUsesPool(lb)) {
    const auto pools = Values(ctx_.cache.pools->store().List());
    auto name = SelectPool(lb, pools);
    auto pool = name ? ctx_.cache.pools->store().Get(*name) : nullptr;
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
          if (Status s = ctx_.Fault("allocate pool address"); !s.ok()) return Result::Error(s);
          Object updated = *pool;
          updated["status"] = PoolStatusToJson(st);
          auto u = ctx_.h->Update(gvr::kIPPools, "", updated, {.field_manager = kLbManager});
          if (!u.ok()) return Result::Error(u.status());
          ctx_.log.Info("Allocated pool address", {{"pool", *name}, {"ip", *ip}, {"owner", owner}});
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
    const std::string ip =
        leases_.Lease(LbLeases::Holder::kLoadBalancer, owner, StatusOf(lb).value("address", ""));
    status = ip.empty() ? LbErrorStatus("no DHCP lease available") : LbDhcpStatus(ip, backends);
  }
  if (vm && !lb_ip.empty()) {
    auto ingress = EnsureService(lb, lb_ip);
    if (!ingress.ok()) return Result::Error(ingress.status());
    status = LbVmStatus(status["allocatedAddress"], *ingress, backends);
  }
  if (!Covers(status, StatusOf(lb))) {
    if (Status s = ctx_.Fault("update LB status"); !s.ok()) return Result::Error(s);
    Object body = Skeleton(lb);
    body["status"] = status;
    auto a = ctx_.h->Apply(gvr::kLoadBalancers, req.ns, body,
                           {.field_manager = kLbManager, .force = true});
    if (!a.ok()) return Result::Error(a.status());
  }
  return Result::Done();
}

std::unique_ptr<kube::Controller> KubeVipController::Build() {
  auto c = NewSimController("kube-vip", 1, [this](const Request& r) { return Reconcile(r); });
  c->For(ctx_.cache.services);
  return c;
}

// kube-vip on Harvester: announces the address a Service of type
// LoadBalancer asks for, or leases one by DHCP for "0.0.0.0", and reports it
// in status.loadBalancer.ingress.
Result KubeVipController::Reconcile(const Request& req) {
  const std::string key = req.ns + "/" + req.name;
  if (!ctx_.InScopeNs(req.ns)) return Result::Done();
  auto svc = ctx_.cache.services->store().Get(req.ns, req.name);
  const std::string wanted = svc && !Deleting(*svc) ? KubeVipRequestedAddress(*svc) : "";
  std::string ip = wanted;
  if (wanted != kDhcpAddress) {
    leases_.Release(LbLeases::Holder::kService, key);
  } else {
    ip = leases_.Lease(LbLeases::Holder::kService, key, ServiceIngressIp(*svc));
  }
  if (ip.empty() || !ParseIpv4(ip) || ServiceIngressIp(*svc) == ip) return Result::Done();
  if (Status s = ctx_.Fault("update Service status"); !s.ok()) return Result::Error(s);
  auto p = ctx_.h->Patch(gvr::kServices, req.ns, req.name, kube::PatchType::kMerge,
                         {{"status", {{"loadBalancer", KubeVipServiceStatus(ip)}}}},
                         {.subresource = "status"});
  if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
  ctx_.log.Info("Announced Service address", {{"service", key}, {"ip", ip}});
  return Result::Done();
}

}  // namespace caphv::sim
