// File: sim/simulator.cc

#include "sim/simulator.h"

#include <algorithm>
#include <exception>
#include <thread>

#include "sim/ipam.h"
#include "sim/loadbalancer.h"
#include "sim/object_util.h"
#include "sim/vm_mutator.h"

namespace caphv::sim {

using kube::Object;
using kube::ObjectPtr;
using kube::Request;
using kube::Result;
using kube::Status;
using kube::StatusCode;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using namespace internal;  // NOLINT(google-build-using-namespace)

Simulator::Simulator(std::shared_ptr<kube::Client> harvester,
                     std::shared_ptr<kube::Client> workload, SimOptions options)
    : h_(std::move(harvester)),
      w_(std::move(workload)),
      opt_(std::move(options)),
      log_(kube::log::Root().WithName("sim")),
      rng_(std::random_device{}()) {
  etcd_ = std::make_unique<EtcdMembers>(opt_.etcd);
  recorder_ = std::make_unique<kube::EventRecorder>(
      h_, kube::EventRecorderOptions{.component = "caphv-sim"});
  workload_recorder_ = std::make_unique<kube::EventRecorder>(
      w_, kube::EventRecorderOptions{.component = "cloud-node-controller"});
  auto make = [&](const std::shared_ptr<kube::Client>& c, const kube::GroupVersionResource& gvr,
                  bool namespaced) {
    kube::InformerOptions o;
    o.gvr = gvr;
    if (namespaced) o.ns = opt_.ns;
    o.resync_period = std::chrono::seconds(30);
    return std::make_shared<kube::Informer>(c, std::move(o));
  };
  vms_ = make(h_, gvr::kVirtualMachines, true);
  vmis_ = make(h_, gvr::kVirtualMachineInstances, true);
  pvcs_ = make(h_, kube::resources::kPersistentVolumeClaims, true);
  lbs_ = make(h_, gvr::kLoadBalancers, true);
  pools_ = make(h_, gvr::kIPPools, false);
  images_ = make(h_, gvr::kImages, false);
  nads_ = make(h_, gvr::kNads, false);
  keypairs_ = make(h_, gvr::kKeyPairs, true);
  namespaces_ = make(h_, gvr::kNamespaces, false);
  nodes_ = make(w_, kube::resources::kNodes, false);
  hosts_ = make(h_, kube::resources::kNodes, false);
  services_ = make(h_, gvr::kServices, true);
  storage_classes_ = make(h_, gvr::kStorageClasses, false);
}

Simulator::~Simulator() = default;

bool Simulator::Synced() const {
  for (const auto& i : {vms_, vmis_, pvcs_, lbs_, pools_, images_, nads_, keypairs_, namespaces_,
                        nodes_, hosts_, services_, storage_classes_}) {
    if (!i->HasSynced()) return false;
  }
  return true;
}

bool Simulator::InScopeNs(const std::string& ns) const {
  if (!opt_.ns.empty()) return ns == opt_.ns;
  auto n = namespaces_->store().Get("", ns);
  if (!n) n = namespaces_->store().Get(ns);
  if (!n) return true;
  const Object labels = (*n)["metadata"].value("labels", Object::object());
  return labels.value(kDedicatedLabel, "") != "true";
}

bool Simulator::InScope(const Object& o) const { return InScopeNs(Ns(o)); }

Status Simulator::Fault(std::string_view what) {
  if (opt_.fault_rate <= 0) return {};
  std::lock_guard lock(mu_);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) >= opt_.fault_rate) return {};
  return Status(StatusCode::kUnavailable, "injected fault before " + std::string(what));
}

kube::Status Simulator::Run(std::stop_token stop) {
  using kube::Controller;
  auto opts = [](const char* name, int workers) {
    Controller::Options o;
    o.name = std::string("sim-") + name;
    o.max_concurrent_reconciles = workers;
    o.register_metrics = false;
    return o;
  };
  Controller vm(opts("vm", 4), [this](const Request& r) { return ReconcileVm(r); });
  vm.For(vms_);
  vm.Owns(vmis_, "kubevirt.io", "VirtualMachine");
  vm.Watch(nodes_, [this](const Object& node) {
    std::vector<Request> out;
    for (const auto& v : vms_->store().List()) {
      if (NodeNameFor(kube::KeyOf(*v), Name(*v)) == Name(node)) {
        out.push_back({Ns(*v), Name(*v)});
      }
    }
    return out;
  });
  // A host added, labelled or uncordoned may fit a VM none fitted.
  vm.Watch(hosts_, [this](const Object&) {
    std::vector<Request> out;
    for (const auto& v : vms_->store().List()) {
      auto vmi = vmis_->store().Get(Ns(*v), Name(*v));
      if (!vmi || StrAt(*vmi, {"status", "nodeName"}).empty()) out.push_back({Ns(*v), Name(*v)});
    }
    return out;
  });
  Controller lb(opts("lb", 2), [this](const Request& r) { return ReconcileLb(r); });
  lb.For(lbs_);
  auto all_lbs = [this](const Object& o) {
    std::vector<Request> out;
    for (const auto& l : lbs_->store().List()) {
      if (Ns(o).empty() || Ns(*l) == Ns(o)) out.push_back({Ns(*l), Name(*l)});
    }
    return out;
  };
  lb.Watch(vmis_, all_lbs);
  lb.Watch(pools_, all_lbs);
  // The Service of a `vm` LB has the LB's name; a Service without an LB (a
  // provider's placeholder) is no LB's business.
  lb.Watch(services_, [this](const Object& svc) {
    std::vector<Request> out;
    if (lbs_->store().Get(Ns(svc), Name(svc))) out.push_back({Ns(svc), Name(svc)});
    return out;
  });
  Controller vip(opts("kube-vip", 1), [this](const Request& r) { return ReconcileService(r); });
  vip.For(services_);
  Controller pool(opts("pool", 1), [this](const Request& r) { return ReconcilePool(r); });
  pool.For(pools_);
  Controller image(opts("image", 1), [this](const Request& r) { return ReconcileImage(r); });
  image.For(images_);
  Controller keypair(opts("keypair", 1), [this](const Request& r) { return ReconcileKeyPair(r); });
  keypair.For(keypairs_);
  // Caches read by reconcilers but watched by no controller.
  for (const auto& i : {namespaces_, pvcs_, nads_, storage_classes_}) i->Start();

  std::mutex err_mu;
  Status first_error;
  {
    std::vector<std::jthread> threads;
    for (Controller* c : {&vm, &lb, &vip, &pool, &image, &keypair}) {
      threads.emplace_back([c, stop, &err_mu, &first_error, this] {
        Status s;
        try {  // a thread top: nothing may escape
          s = c->Run(stop);
        } catch (const std::exception& e) {
          s = Status(kube::StatusCode::kInternal, std::string("exception: ") + e.what());
        }
        if (!s.ok() && !s.IsCancelled()) {
          log_.Error(s, "Controller stopped", {{"controller", c->name()}});
          std::lock_guard lock(err_mu);
          if (first_error.ok()) first_error = s;
        }
      });
    }
  }
  for (const auto& i : {namespaces_, pvcs_, nads_}) i->Stop();
  return first_error;
}

// ---------------------------------------------------------------- VMs

kube::StatusOr<std::string> Simulator::NetworkData(const Object& vm) {
  std::string inline_data = InlineNetworkData(vm);
  if (!inline_data.empty()) return inline_data;
  const std::string secret = NetworkDataSecretName(vm);
  if (secret.empty()) return std::string();
  auto s = h_->Get(kube::resources::kSecrets, Ns(vm), secret);
  if (!s.ok()) return s.status();
  return NetworkDataFromSecret(*s);
}

kube::StatusOr<std::vector<Nic>> Simulator::AssignAddresses(const std::string& key,
                                                            const Object& vm,
                                                            std::vector<Nic> nics) {
  std::lock_guard lock(mu_);
  std::set<uint32_t> used;
  for (const auto& [k, ips] : vm_ips_) {
    if (k == key) continue;
    for (const auto& ip : ips) {
      if (auto v = ParseIpv4(ip)) used.insert(*v);
    }
  }
  auto vmi = vmis_->store().Get(Ns(vm), Name(vm));
  auto& leases = leases_[key];
  std::set<std::string> mine;
  for (auto& nic : nics) {
    if (!nic.ip.empty()) {
      mine.insert(nic.ip);
      continue;
    }
    if (auto it = leases.find(nic.name); it != leases.end()) {
      nic.ip = it->second;
    } else if (vmi) {
      for (const auto& i : StatusOf(*vmi).value("interfaces", Object::array())) {
        if (i.value("name", "") == nic.name) nic.ip = i.value("ipAddress", "");
      }
    }
    if (nic.ip.empty()) {
      uint32_t start = *ParseIpv4("10.52.0.10"), end = *ParseIpv4("10.52.255.250");
      bool have_range = nic.network.empty();
      for (const auto& n : opt_.env.networks) {
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
  vm_ips_[key] = mine;
  return nics;
}

kube::StatusOr<std::optional<VolumeWait>> Simulator::EnsureClaims(const Object& vm) {
  CAPHV_ASSIGN_OR_RETURN(auto claims, ClaimsFromVm(vm));
  std::set<std::string> classes;
  std::string default_class;
  for (const auto& sc : storage_classes_->store().List()) {
    classes.insert(Name(*sc));
    if (StrAt(*sc, {"metadata", "annotations", "storageclass.kubernetes.io/is-default-class"}) ==
        "true") {
      default_class = Name(*sc);
    }
  }
  std::optional<VolumeWait> wait;
  auto hold = [&](VolumeWait w) {
    if (!wait) wait = std::move(w);
  };
  for (const auto& claim : claims) {
    const Object ann = claim["metadata"].value("annotations", Object::object());
    const std::string image = ann.value(kImageIdAnnotation, "");
    ObjectPtr image_obj;
    if (!image.empty()) {
      image_obj = images_->store().Get(image);
      if (!image_obj) image_obj = images_->store().Get(Ns(vm) + "/" + image);
      if (!image_obj) {
        // Harvester skips a template whose image is missing; KubeVirt then
        // finds no PVC for the volume.
        hold({"ErrorPvcNotFound", "FailedPvcNotFound",
              "PVC " + Ns(vm) + "/" + Name(claim) + " does not exist (its image " + image +
                  " was not found)"});
        continue;
      }
    }
    Object pvc;
    if (auto cached = pvcs_->store().Get(Ns(claim), Name(claim))) {
      pvc = *cached;
    } else {
      CAPHV_RETURN_IF_ERROR(Fault("create PVC"));
      auto created = h_->Create(kube::resources::kPersistentVolumeClaims, Ns(claim), claim,
                                {.field_manager = kVirtManager});
      if (created.status().IsAlreadyExists()) {  // the cache will bring it
        hold({"WaitingForVolumeBinding", "PvcNotBound",
              "PVC " + kube::KeyOf(claim) + " is not bound"});
        continue;
      }
      if (!created.ok()) return created.status();
      pvc = *created;
      log_.Info("Created PVC", {{"pvc", kube::KeyOf(pvc)}});
    }
    if (StatusOf(pvc).value("phase", "") == "Bound") continue;
    const std::string why = WhyClaimCannotBind(
        pvc["spec"].value("storageClassName", ""), default_class, classes,
        image_obj ? StrAt(*image_obj, {"status", "storageClassName"}) : std::string());
    if (!why.empty()) {
      // The PersistentVolume controller leaves it Pending and says so.
      if (StatusOf(pvc).value("phase", "") != "Pending") {
        recorder_->Event(pvc, kube::EventType::kWarning, "ProvisioningFailed", why);
        h_->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                  kube::PatchType::kMerge, {{"status", {{"phase", "Pending"}}}},
                  {.subresource = "status"})
            .status()
            .IgnoreError();
      }
      hold({"WaitingForVolumeBinding", "PvcNotBound",
            "PVC " + kube::KeyOf(pvc) + " is not bound: " + why});
      continue;
    }
    if (pvc["spec"].value("volumeName", "").empty()) {
      CAPHV_RETURN_IF_ERROR(Fault("bind PVC"));
      auto p = h_->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                         kube::PatchType::kMerge,
                         {{"spec", {{"volumeName", "pvc-" + kube::UidOf(pvc)}}}});
      if (!p.ok()) return p.status();
    }
    CAPHV_RETURN_IF_ERROR(Fault("bind PVC status"));
    auto p = h_->Patch(kube::resources::kPersistentVolumeClaims, Ns(pvc), Name(pvc),
                       kube::PatchType::kMerge, {{"status", BoundClaimStatus(pvc)}},
                       {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  return wait;
}

Status Simulator::DropOrphanedNodeFinalizers() {
  std::set<std::string> nodes;
  {
    std::lock_guard lock(mu_);
    nodes = orphaned_nodes_;
  }
  for (const auto& n : nodes) {
    auto held = nodes_->store().Get(n);
    if (held && !Finalizers(*held).empty()) {
      CAPHV_RETURN_IF_ERROR(Fault("drop Node finalizers"));
      auto p = w_->Patch(kube::resources::kNodes, "", n, kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}});
      if (!p.ok() && !p.status().IsNotFound()) return p.status();
      log_.Info("Dropped the finalizers of a Node of a cluster with no server left", {{"node", n}});
    }
    std::lock_guard lock(mu_);
    orphaned_nodes_.erase(n);
  }
  return Status::Ok();
}

Result Simulator::DeleteVm(const std::string& key, const Object* vm) {
  const auto req = Request::FromKey(key);
  if (auto vmi = vmis_->store().Get(req.ns, req.name)) {
    if (!Deleting(*vmi)) {
      if (Status s = Fault("delete VMI"); !s.ok()) return Result::Error(s);
      if (Status s =
              IgnoreNotFound(h_->Delete(gvr::kVirtualMachineInstances, req.ns, req.name, {}));
          !s.ok()) {
        return Result::Error(s);
      }
    }
    if (!Finalizers(*vmi).empty()) {
      auto p = h_->Patch(gvr::kVirtualMachineInstances, req.ns, req.name, kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
    return Result::RequeueAfter(milliseconds(200));
  }
  if (vm) {
    for (const auto& pvc : RemovedClaims(*vm)) {
      if (Status s = Fault("delete PVC"); !s.ok()) return Result::Error(s);
      Status s = IgnoreNotFound(h_->Delete(kube::resources::kPersistentVolumeClaims, req.ns, pvc));
      if (!s.ok()) return Result::Error(s);
    }
  }
  std::string etcd_cluster, etcd_member;
  {
    std::lock_guard lock(mu_);
    if (auto g = guests_.find(key); g != guests_.end()) {
      etcd_cluster = g->second.etcd_cluster;
      etcd_member = g->second.etcd_member;
    }
  }
  const std::string node = NodeNameFor(key, req.name);
  if (nodes_->store().Get(node)) {
    bool other = false;  // another VM (other namespace) still owns the Node
    for (const auto& v : vms_->store().List()) {
      if (NodeNameFor(kube::KeyOf(*v), Name(*v)) == node && Ns(*v) != req.ns && !Deleting(*v)) {
        other = true;
      }
    }
    if (!other) {
      Status s = IgnoreNotFound(w_->Delete(kube::resources::kNodes, "", node));
      if (!s.ok()) return Result::Error(s);
      log_.Info("Removed Node", {{"node", node}});
      if (!etcd_cluster.empty()) {
        std::lock_guard lock(mu_);
        gone_server_nodes_[etcd_cluster].insert(node);
      }
    }
  }
  // The VM's disks are gone: so is its etcd data (its membership stays
  // unless RKE2 removed it first).
  if (etcd_ && !etcd_member.empty()) etcd_->Discard(etcd_cluster, etcd_member);
  {
    std::lock_guard lock(mu_);
    guests_.erase(key);
    // The last server of its cluster gone: the cluster's datastore went with
    // its disks, and every Node object with it, finalizers or not (nobody can
    // lift one from a cluster that no longer answers). The bed's workload
    // apiserver outlives the guests: the finalizers of its servers' Nodes are
    // dropped (below).
    if (!etcd_cluster.empty() && std::none_of(guests_.begin(), guests_.end(), [&](const auto& g) {
          return g.second.etcd_cluster == etcd_cluster;
        })) {
      if (auto gone = gone_server_nodes_.extract(etcd_cluster)) {
        orphaned_nodes_.merge(gone.mapped());
      }
    }
    leases_.erase(key);
    vm_ips_.erase(key);
    if (vm) {
      started_.erase(kube::UidOf(*vm));
      running_.erase(kube::UidOf(*vm));
    }
  }
  if (Status s = DropOrphanedNodeFinalizers(); !s.ok()) return Result::Error(s);
  if (vm) {
    std::vector<std::string> keep;
    for (const auto& f : Finalizers(*vm)) {
      if (f != kVmFinalizer && f != kHarvesterVmFinalizer) keep.push_back(f);
    }
    if (keep.size() != Finalizers(*vm).size()) {
      if (Status s = Fault("remove VM finalizers"); !s.ok()) return Result::Error(s);
      auto p =
          h_->Patch(gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
                    {{"metadata",
                      {{"finalizers", keep}, {"resourceVersion", kube::ResourceVersionOf(*vm)}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
      log_.Info("Deleted VM", {{"vm", key}});
    }
  }
  return Result::Done();
}

Result Simulator::ReconcileVm(const Request& req) {
  const std::string key = req.Key();
  if (!InScopeNs(req.ns)) return Result::Done();
  auto cached = vms_->store().Get(req.ns, req.name);
  if (!cached) return DeleteVm(key, nullptr);
  const Object& vm = *cached;
  if (Deleting(vm)) return DeleteVm(key, &vm);

  auto fins = Finalizers(vm);
  std::vector<std::string> want = fins;
  for (const char* f : {kVmFinalizer, kHarvesterVmFinalizer}) {
    if (std::find(want.begin(), want.end(), f) == want.end()) want.push_back(f);
  }
  if (want.size() != fins.size()) {
    if (Status s = Fault("add VM finalizers"); !s.ok()) return Result::Error(s);
    auto p = h_->Patch(
        gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
        {{"metadata", {{"finalizers", want}, {"resourceVersion", kube::ResourceVersionOf(vm)}}}});
    if (!p.ok()) return Result::Error(p.status());
    return Result::Done();  // the update event brings us back
  }
  auto volume_wait = EnsureClaims(vm);
  if (!volume_wait.ok()) return Result::Error(volume_wait.status());
  if (*volume_wait && WantsRunning(vm) && !vmis_->store().Get(req.ns, req.name)) {
    // KubeVirt starts no guest before its volumes are there: the VMI stays
    // Pending, the VM says why; looked at again as the volumes change.
    const VolumeWait& w = **volume_wait;
    Object pending = BuildPendingVmi(vm, w);
    if (Status s = Fault("apply VMI"); !s.ok()) return Result::Error(s);
    auto a = h_->Apply(gvr::kVirtualMachineInstances, req.ns, pending,
                       {.field_manager = kVirtManager, .force = true});
    if (!a.ok()) return Result::Error(a.status());
    Object status = BuildWaitingVmStatus(vm, w);
    if (!Covers(status, StatusOf(vm))) {
      auto p = h_->Patch(gvr::kVirtualMachines, req.ns, req.name, kube::PatchType::kMerge,
                         {{"status", status}}, {.subresource = "status"});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
    return Result::RequeueAfter(std::chrono::seconds(2));
  }
  if (*volume_wait && WantsRunning(vm)) {
    if (auto vmi = vmis_->store().Get(req.ns, req.name);
        vmi && StatusOf(*vmi).value("phase", "") == "Pending") {
      return Result::RequeueAfter(std::chrono::seconds(2));  // still waiting
    }
  }

  auto network_data = NetworkData(vm);
  if (!network_data.ok()) {
    if (network_data.status().IsNotFound()) return Result::RequeueAfter(milliseconds(500));
    return Result::Error(network_data.status());
  }
  auto vmi = vmis_->store().Get(req.ns, req.name);
  const std::string uid = kube::UidOf(vm);
  milliseconds since{0};
  {
    std::lock_guard lock(mu_);
    if (!WantsRunning(vm)) {
      started_.erase(uid);
      running_.erase(uid);
    } else {
      auto now = Clock::now();
      auto start = now;
      if (vmi && StatusOf(*vmi).value("phase", "") == "Running") {
        start = now - opt_.boot_delay - opt_.ip_delay;  // already up (e.g. after a restart)
      }
      auto it = started_.try_emplace(uid, start).first;
      since = std::chrono::duration_cast<milliseconds>(now - it->second);
    }
  }
  const Placement where = PlacementOf(vm, vmi.get());
  if (!where.unschedulable.empty()) {
    std::lock_guard lock(mu_);
    started_.erase(uid);  // it boots once a host takes it
  }
  Stage stage = StageOf(vm, since, opt_.boot_delay, opt_.ip_delay);
  if (!where.unschedulable.empty() && stage != Stage::kStopped) stage = Stage::kScheduling;
  auto nics = AssignAddresses(key, vm, PlanNics(vm, *network_data));
  if (!nics.ok()) return Result::Error(nics.status());

  if (stage == Stage::kStopped) {
    if (vmi && !Deleting(*vmi)) {
      if (Status s = Fault("delete VMI"); !s.ok()) return Result::Error(s);
      Status s = IgnoreNotFound(h_->Delete(gvr::kVirtualMachineInstances, req.ns, req.name));
      if (!s.ok()) return Result::Error(s);
    }
    if (vmi && !Finalizers(*vmi).empty()) {
      auto p = h_->Patch(gvr::kVirtualMachineInstances, req.ns, req.name, kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
    std::lock_guard lock(mu_);
    leases_.erase(key);
    vm_ips_.erase(key);
  } else if (vmi && Deleting(*vmi)) {
    // Being deleted (e.g. by the garbage collector): let it go, then recreate.
    if (!Finalizers(*vmi).empty()) {
      auto p = h_->Patch(gvr::kVirtualMachineInstances, req.ns, req.name, kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}});
      if (!p.ok() && !p.status().IsNotFound()) return Result::Error(p.status());
    }
    return Result::RequeueAfter(milliseconds(200));
  } else {
    GuestAgentReport agent;
    if (stage == Stage::kRunning) {
      // The guest booted: what runs inside it is its user data's doing.
      if (auto guest = LoadGuest(vm); guest.ok()) {
        agent.runs = guest->guest_agent;
        agent.pod_network = guest->rke2.has_value();
      } else if (!guest.status().IsNotFound()) {
        return Result::Error(guest.status());
      }
    }
    Object desired = BuildVmi(vm, stage, *nics, agent, where);
    if (!vmi || !Covers(desired, *vmi)) {
      if (Status s = Fault("apply VMI"); !s.ok()) return Result::Error(s);
      auto a = h_->Apply(gvr::kVirtualMachineInstances, req.ns, desired,
                         {.field_manager = kVirtManager, .force = true});
      if (!a.ok()) return Result::Error(a.status());
    }
  }
  // Unschedulable: looked at again when a host changes (the hosts_ watch).
  milliseconds requeue = where.unschedulable.empty()
                             ? UntilNextStage(stage, since, opt_.boot_delay, opt_.ip_delay)
                             : milliseconds(0);
  milliseconds node_requeue{0};
  if (Status s = SyncNode(vm, stage, *nics, &node_requeue); !s.ok()) {
    return Result::Error(s);
  }
  if (node_requeue.count() > 0 && (requeue.count() == 0 || node_requeue < requeue)) {
    requeue = node_requeue;
  }

  Object status = BuildVmStatus(vm, stage, where);
  if (!Covers(status, StatusOf(vm))) {
    if (Status s = Fault("apply VM status"); !s.ok()) return Result::Error(s);
    Object body = Skeleton(vm);
    body["status"] = status;
    auto a = h_->Apply(gvr::kVirtualMachines, req.ns, body,
                       {.field_manager = kVirtManager, .force = true, .subresource = "status"});
    if (!a.ok()) return Result::Error(a.status());
  }
  return requeue.count() > 0 ? Result::RequeueAfter(requeue) : Result::Done();
}

Placement Simulator::PlacementOf(const Object& vm, const Object* vmi) const {
  std::vector<Host> hosts;
  for (const auto& n : hosts_->store().List()) hosts.push_back(HostOfNode(*n));
  // Required affinity is IgnoredDuringExecution: a VMI stays on its host.
  if (vmi != nullptr && !Deleting(*vmi)) {
    const std::string on = StrAt(*vmi, {"status", "nodeName"});
    for (const auto& h : hosts) {
      if (h.name == on) return PlaceVm(vm, {h}, /*bound=*/true);
    }
  }
  return PlaceVm(vm, hosts);
}

std::vector<std::string> Simulator::Admit(const Object& vm) {
  AdmissionWorld world;
  world.network_exists = [this](const std::string& ns, const std::string& name) {
    return nads_->store().Get(ns, name) != nullptr;
  };
  {
    std::lock_guard lock(mu_);
    for (const auto& [k, ips] : vm_ips_) {
      for (const auto& ip : ips) world.ips_in_use[ip] = k;
    }
  }
  auto data = NetworkData(vm);
  return ValidateVm(vm, data.ok() ? *data : "", world);
}

Object Simulator::MutateVm(const Object& vm) {
  return MutateVmPatch(vm, [this](const std::string& ns, const std::string& name) {
    auto nad = nads_->store().Get(ns, name);
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
    return nads_->store().Get(ns, name) != nullptr;
  };
  const std::string name = Name(pool);
  for (const auto& p : pools_->store().List()) {
    if (Name(*p) != name) world.other_pools.push_back(*p);
  }
  return ValidateIpPool(operation, pool, world);
}

}  // namespace caphv::sim
