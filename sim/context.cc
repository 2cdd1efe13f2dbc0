// File: sim/context.cc

#include "sim/context.h"

#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

using namespace internal;  // NOLINT(google-build-using-namespace)

std::vector<std::shared_ptr<kube::Informer>> SimCaches::All() const {
  return {vms,      vmis,       pvcs,  lbs,      pools,           images, nads,
          keypairs, namespaces, hosts, services, storage_classes, nodes};
}

SimContext::SimContext(std::shared_ptr<kube::Client> harvester,
                       std::shared_ptr<kube::Client> workload, SimOptions options)
    : h(std::move(harvester)),
      w(std::move(workload)),
      opt(std::move(options)),
      log(kube::log::Root().WithName("sim")),
      recorder(h, kube::EventRecorderOptions{.component = "caphv-sim"}),
      rng_(std::random_device{}()) {
  auto make = [&](const std::shared_ptr<kube::Client>& c, const kube::GroupVersionResource& gvr,
                  bool namespaced) {
    kube::InformerOptions o;
    o.gvr = gvr;
    if (namespaced) o.ns = opt.ns;
    o.resync_period = std::chrono::seconds(30);
    return std::make_shared<kube::Informer>(c, std::move(o));
  };
  cache.vms = make(h, gvr::kVirtualMachines, true);
  cache.vmis = make(h, gvr::kVirtualMachineInstances, true);
  cache.pvcs = make(h, kube::resources::kPersistentVolumeClaims, true);
  cache.lbs = make(h, gvr::kLoadBalancers, true);
  cache.pools = make(h, gvr::kIPPools, false);
  cache.images = make(h, gvr::kImages, false);
  cache.nads = make(h, gvr::kNads, false);
  cache.keypairs = make(h, gvr::kKeyPairs, true);
  cache.namespaces = make(h, gvr::kNamespaces, false);
  cache.hosts = make(h, kube::resources::kNodes, false);
  cache.services = make(h, gvr::kServices, true);
  cache.storage_classes = make(h, gvr::kStorageClasses, false);
  cache.nodes = make(w, kube::resources::kNodes, false);
}

bool SimContext::Synced() const {
  for (const auto& i : cache.All()) {
    if (!i->HasSynced()) return false;
  }
  return true;
}

bool SimContext::InScopeNs(const std::string& ns) const {
  if (!opt.ns.empty()) return ns == opt.ns;
  auto n = cache.namespaces->store().Get("", ns);
  if (!n) n = cache.namespaces->store().Get(ns);
  if (!n) return true;
  const Object labels = (*n)["metadata"].value("labels", Object::object());
  return labels.value(kDedicatedLabel, "") != "true";
}

bool SimContext::InScope(const Object& o) const { return InScopeNs(Ns(o)); }

Status SimContext::Fault(std::string_view what) {
  if (opt.fault_rate <= 0) return {};
  std::lock_guard lock(fault_mu_);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) >= opt.fault_rate) return {};
  return Status(StatusCode::kUnavailable, "injected fault before " + std::string(what));
}

std::unique_ptr<kube::Controller> NewSimController(const std::string& name, int workers,
                                                   kube::ReconcileFunc reconcile) {
  kube::Controller::Options o;
  o.name = "sim-" + name;
  o.max_concurrent_reconciles = workers;
  o.register_metrics = false;
  return std::make_unique<kube::Controller>(std::move(o), std::move(reconcile));
}

}  // namespace caphv::sim
