// File: sim/vm_controller.cc

#include "sim/vm_controller.h"

#include <algorithm>

#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Request;
using kube::Result;
using kube::Status;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using namespace internal;  // NOLINT(google-build-using-namespace)

kube::StatusOr<std::string> ReadNetworkData(kube::Client& harvester, const Object& vm) {
  std::string inline_data = InlineNetworkData(vm);
  if (!inline_data.empty()) return inline_data;
  const std::string secret = NetworkDataSecretName(vm);
  if (secret.empty()) return std::string();
  auto s = harvester.Get(kube::resources::kSecrets, Ns(vm), secret);
  if (!s.ok()) return s.status();
  return NetworkDataFromSecret(*s);
}

std::unique_ptr<kube::Controller> VmController::Build() {
  auto c = NewSimController("vm", 4, [this](const Request& r) { return Reconcile(r); });
  const SimCaches& cache = ctx_.cache;
  c->For(cache.vms);
  c->Owns(cache.vmis, "kubevirt.io", "VirtualMachine");
  // A guest's Node changed: its VM looks again.
  c->Watch(cache.nodes, [this](const Object& node) {
    std::vector<Request> out;
    for (const auto& v : ctx_.cache.vms->store().List()) {
      if (guests_.NodeName(kube::KeyOf(*v), Name(*v)) == Name(node)) {
        out.push_back({Ns(*v), Name(*v)});
      }
    }
    return out;
  });
  // A host added, labelled or uncordoned may fit a VM none fitted.
  c->Watch(cache.hosts, [this](const Object&) {
    std::vector<Request> out;
    for (const auto& v : ctx_.cache.vms->store().List()) {
      auto vmi = ctx_.cache.vmis->store().Get(Ns(*v), Name(*v));
      if (!vmi || StrAt(*vmi, {"status", "nodeName"}).empty()) out.push_back({Ns(*v), Name(*v)});
    }
    return out;
  });
  return c;
}

Status VmController::ReleaseVmi(const Object& vmi) {
  if (Finalizers(vmi).empty()) return {};
  auto p = ctx_.h->Patch(gvr::kVirtualMachineInstances, Ns(vmi), Name(vmi), kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}});
  return p.ok() ? Status() : IgnoreNotFound(p.status());
}

Result VmController::Delete(const std::string& key, const Object* vm) {
  const auto req = Request::FromKey(key);
  if (auto vmi = ctx_.cache.vmis->store().Get(req.ns, req.name)) {
    if (!Deleting(*vmi)) {
      if (Status s = ctx_.Fault("delete VMI"); !s.ok()) return Result::Error(s);
      if (Status s =
              IgnoreNotFound(ctx_.h->Delete(gvr::kVirtualMachineInstances, req.ns, req.name, {}));
          !s.ok()) {
        return Result::Error(s);
      }
    }
    if (Status s = ReleaseVmi(*vmi); !s.ok()) return Result::Error(s);
    return Result::RequeueAfter(milliseconds(200));
  }
  if (vm) {
    for (const auto& pvc : RemovedClaims(*vm)) {
      if (Status s = ctx_.Fault("delete PVC"); !s.ok()) return Result::Error(s);
      Status s =
          IgnoreNotFound(ctx_.h->Delete(kube::resources::kPersistentVolumeClaims, req.ns, pvc));
      if (!s.ok()) return Result::Error(s);
    }
  }
  const std::string uid = vm ? kube::UidOf(*vm) : std::string();
  if (Status s = guests_.Remove(key, uid); !s.ok()) return Result::Error(s);
  addresses_.Release(key);
  {
    std::lock_guard lock(mu_);
    started_.erase(uid);
  }
  if (vm) {
    std::vector<std::string> keep;
    for (const auto& f : Finalizers(*vm)) {
      if (f != kVmFinalizer && f != kHarvesterVmFinalizer) keep.push_back(f);
    }
    if (keep.size() != Finalizers(*vm).size()) {
      if (Status s = ctx_.Fault("remove VM finalizers"); !s.ok()) return Result::Error(s);
      auto p = ctx_.h->Patch(
          gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
          {{"metadata",
            {{"finalizers", keep}, {"resourceVersion", kube::ResourceVersionOf(*vm)}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
      ctx_.log.Info("Deleted VM", {{"vm", key}});
    }
  }
  return Result::Done();
}

milliseconds VmController::SinceStart(const Object& vm, const Object* vmi) {
  const std::string uid = kube::UidOf(vm);
  if (!WantsRunning(vm)) {
    {
      std::lock_guard lock(mu_);
      started_.erase(uid);
    }
    guests_.PoweredOff(uid);
    return milliseconds(0);
  }
  const auto now = Clock::now();
  auto start = now;
  if (vmi != nullptr && StatusOf(*vmi).value("phase", "") == "Running") {
    start = now - ctx_.opt.boot_delay - ctx_.opt.ip_delay;  // already up (e.g. after a restart)
  }
  std::lock_guard lock(mu_);
  auto it = started_.try_emplace(uid, start).first;
  return std::chrono::duration_cast<milliseconds>(now - it->second);
}

Result VmController::Reconcile(const Request& req) {
  const std::string key = req.Key();
  if (!ctx_.InScopeNs(req.ns)) return Result::Done();
  auto cached = ctx_.cache.vms->store().Get(req.ns, req.name);
  if (!cached) return Delete(key, nullptr);
  const Object& vm = *cached;
  if (Deleting(vm)) return Delete(key, &vm);

  auto fins = Finalizers(vm);
  std::vector<std::string> want = fins;
  for (const char* f : {kVmFinalizer, kHarvesterVmFinalizer}) {
    if (std::find(want.begin(), want.end(), f) == want.end()) want.emplace_back(f);
  }
  if (want.size() != fins.size()) {
    if (Status s = ctx_.Fault("add VM finalizers"); !s.ok()) return Result::Error(s);
    auto p = ctx_.h->Patch(
        gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
        {{"metadata", {{"finalizers", want}, {"resourceVersion", kube::ResourceVersionOf(vm)}}}});
    if (!p.ok()) return Result::Error(p.status());
    return Result::Done();  // the update event brings us back
  }
  auto volume_wait = EnsureClaims(vm);
  if (!volume_wait.ok()) return Result::Error(volume_wait.status());
  if (*volume_wait && WantsRunning(vm) && !ctx_.cache.vmis->store().Get(req.ns, req.name)) {
    // KubeVirt starts no guest before its volumes are there: the VMI stays
    // Pending, the VM says why; looked at again as the volumes change.
    const VolumeWait& w = **volume_wait;
    Object pending = BuildPendingVmi(vm, w);
    if (Status s = ctx_.Fault("apply VMI"); !s.ok()) return Result::Error(s);
    auto a = ctx_.h->Apply(gvr::kVirtualMachineInstances, req.ns, pending,
                           {.field_manager = kVirtManager, .force = true});
    if (!a.ok()) return Result::Error(a.status());
    Object status = BuildWaitingVmStatus(vm, w);
    if (!Covers(status, StatusOf(vm))) {
      auto p = ctx_.h->Patch(gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
                             {{"status", status}}, {.subresource = "status"});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
    return Result::RequeueAfter(std::chrono::seconds(2));
  }
  if (*volume_wait && WantsRunning(vm)) {
    if (auto vmi = ctx_.cache.vmis->store().Get(req.ns, req.name);
        vmi && StatusOf(*vmi).value("phase", "") == "Pending") {
      return Result::RequeueAfter(std::chrono::seconds(2));  // still waiting
    }
  }

  auto network_data = ReadNetworkData(*ctx_.h, vm);
  if (!network_data.ok()) {
    if (network_data.status().IsNotFound()) return Result::RequeueAfter(milliseconds(500));
    return Result::Error(network_data.status());
  }
  auto vmi = ctx_.cache.vmis->store().Get(req.ns, req.name);
  const milliseconds since = SinceStart(vm, vmi.get());
  const Placement where = PlacementOf(vm, vmi.get());
  if (!where.unschedulable.empty()) {
    std::lock_guard lock(mu_);
    started_.erase(kube::UidOf(vm));  // it boots once a host takes it
  }
  Stage stage = StageOf(vm, since, ctx_.opt.boot_delay, ctx_.opt.ip_delay);
  if (!where.unschedulable.empty() && stage != Stage::kStopped) stage = Stage::kScheduling;
  const std::vector<Nic> nics = addresses_.Assign(key, vmi.get(), PlanNics(vm, *network_data));

  if (stage == Stage::kStopped) {
    if (vmi && !Deleting(*vmi)) {
      if (Status s = ctx_.Fault("delete VMI"); !s.ok()) return Result::Error(s);
      Status s = IgnoreNotFound(ctx_.h->Delete(gvr::kVirtualMachineInstances, req.ns, req.name));
      if (!s.ok()) return Result::Error(s);
    }
    if (vmi) {
      if (Status s = ReleaseVmi(*vmi); !s.ok()) return Result::Error(s);
    }
    addresses_.Release(key);
  } else if (vmi && Deleting(*vmi)) {
    // Being deleted (e.g. by the garbage collector): let it go, then recreate.
    if (Status s = ReleaseVmi(*vmi); !s.ok()) return Result::Error(s);
    return Result::RequeueAfter(milliseconds(200));
  } else {
    GuestAgentReport agent;
    if (stage == Stage::kRunning) {
      // The guest booted: what runs inside it is its user data's doing.
      if (auto guest = guests_.Load(vm); guest.ok()) {
        agent.runs = guest->guest_agent;
        agent.pod_network = guest->rke2.has_value();
      } else if (!guest.status().IsNotFound()) {
        return Result::Error(guest.status());
      }
    }
    Object desired = BuildVmi(vm, stage, nics, agent, where);
    if (!vmi || !Covers(desired, *vmi)) {
      if (Status s = ctx_.Fault("apply VMI"); !s.ok()) return Result::Error(s);
      auto a = ctx_.h->Apply(gvr::kVirtualMachineInstances, req.ns, desired,
                             {.field_manager = kVirtManager, .force = true});
      if (!a.ok()) return Result::Error(a.status());
    }
  }
  // Unschedulable: looked at again when a host changes (the hosts watch).
  milliseconds requeue = where.unschedulable.empty()
                             ? UntilNextStage(stage, since, ctx_.opt.boot_delay, ctx_.opt.ip_delay)
                             : milliseconds(0);
  milliseconds node_requeue{0};
  if (Status s = guests_.Sync(vm, stage, nics, &node_requeue); !s.ok()) return Result::Error(s);
  if (node_requeue.count() > 0 && (requeue.count() == 0 || node_requeue < requeue)) {
    requeue = node_requeue;
  }

  Object status = BuildVmStatus(vm, stage, where);
  if (!Covers(status, StatusOf(vm))) {
    if (Status s = ctx_.Fault("apply VM status"); !s.ok()) return Result::Error(s);
    Object body = Skeleton(vm);
    body["status"] = status;
    auto a = ctx_.h->Apply(gvr::kVirtualMachines, req.ns, body,
                           {.field_manager = kVirtManager, .force = true, .subresource = "status"});
    if (!a.ok()) return Result::Error(a.status());
  }
  return requeue.count() > 0 ? Result::RequeueAfter(requeue) : Result::Done();
}

Placement VmController::PlacementOf(const Object& vm, const Object* vmi) const {
  std::vector<Host> hosts;
  for (const auto& n : ctx_.cache.hosts->store().List()) hosts.push_back(HostOfNode(*n));
  // Required affinity is IgnoredDuringExecution: a VMI stays on its host.
  if (vmi != nullptr && !Deleting(*vmi)) {
    const std::string on = StrAt(*vmi, {"status", "nodeName"});
    for (const auto& h : hosts) {
      if (h.name == on) return PlaceVm(vm, {h}, /*bound=*/true);
    }
  }
  return PlaceVm(vm, hosts);
}

}  // namespace caphv::sim
