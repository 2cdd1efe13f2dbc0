// File: sim/simulator.cc

#include "sim/simulator.h"

#include <exception>
#include <mutex>
#include <thread>

#include "sim/ipam.h"
#include "sim/loadbalancer.h"
#include "sim/object_util.h"
#include "sim/vm_mutator.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;

using namespace internal;  // NOLINT(google-build-using-namespace)

Simulator::Simulator(std::shared_ptr<kube::Client> harvester,
                     std::shared_ptr<kube::Client> workload, SimOptions options)
    : ctx_(std::move(harvester), std::move(workload), std::move(options)),
      vm_addresses_(ctx_),
      lb_leases_(ctx_),
      guests_(ctx_, vm_addresses_),
      vms_(ctx_, vm_addresses_, guests_),
      lbs_(ctx_, lb_leases_),
      kube_vip_(ctx_, lb_leases_),
      pools_(ctx_),
      images_(ctx_),
      keypairs_(ctx_) {}

Simulator::~Simulator() = default;

kube::Status Simulator::Run(const std::stop_token& stop) {
  std::vector<std::unique_ptr<kube::Controller>> controllers;
  controllers.push_back(vms_.Build());
  controllers.push_back(lbs_.Build());
  controllers.push_back(kube_vip_.Build());
  controllers.push_back(pools_.Build());
  controllers.push_back(images_.Build());
  controllers.push_back(keypairs_.Build());
  // Caches read by reconcilers but watched by no controller.
  const auto read_only = {ctx_.cache.namespaces, ctx_.cache.pvcs, ctx_.cache.nads,
                          ctx_.cache.storage_classes};
  for (const auto& i : read_only) i->Start();

  std::mutex err_mu;
  Status first_error;
  {
    std::vector<std::jthread> threads;
    for (const auto& controller : controllers) {
      kube::Controller* c = controller.get();
      threads.emplace_back([c, stop, &err_mu, &first_error, this] {
        Status s;
        try {  // a thread top: nothing may escape
          s = c->Run(stop);
        } catch (const std::exception& e) {
          s = Status(kube::StatusCode::kInternal, std::string("exception: ") + e.what());
        }
        if (!s.ok() && !s.IsCancelled()) {
          ctx_.log.Error(s, "Controller stopped", {{"controller", c->name()}});
          std::lock_guard lock(err_mu);
          if (first_error.ok()) first_error = s;
        }
      });
    }
  }
  for (const auto& i : read_only) i->Stop();
  return first_error;
}

std::vector<std::string> Simulator::Admit(const Object& vm) {
  AdmissionWorld world;
  world.network_exists = [this](const std::string& ns, const std::string& name) {
    return ctx_.cache.nads->store().Get(ns, name) != nullptr;
  };
  world.ips_in_use = vm_addresses_.InUse();
  auto data = ReadNetworkData(*ctx_.h, vm);
  return ValidateVm(vm, data.ok() ? *data : "", world);
}

Object Simulator::MutateVm(const Object& vm) {
  return MutateVmPatch(vm, [this](const std::string& ns, const std::string& name) {
    auto nad = ctx_.cache.nads->store().Get(ns, name);
    return nad ? StrAt(*nad, {"metadata", "labels", "network.harvesterhci.io/clusternetwork"})
               : std::string();
  });
}

std::vector<std::string> Simulator::AdmitLb(const Object& lb, const Object* old_lb) {
  return ValidateLb(lb, old_lb);
}

std::vector<std::string> Simulator::AdmitPool(const std::string& operation, const Object& pool) {
  PoolAdmissionWorld world;
  world.network_exists = [this](const std::string& ns, const std::string& name) {
    return ctx_.cache.nads->store().Get(ns, name) != nullptr;
  };
  const std::string name = Name(pool);
  for (const auto& p : ctx_.cache.pools->store().List()) {
    if (Name(*p) != name) world.other_pools.push_back(*p);
  }
  return ValidateIpPool(operation, pool, world);
}

}  // namespace caphv::sim
