// File: sim/guests.cc
//
// The guests' kubelet: reading the user data at first boot, registering the
// Node, its status and Lease, and what goes with a VM (see guests.h).

#include "sim/guests.h"

#include <algorithm>
#include <utility>

#include "sim/guest_support.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using namespace internal;  // NOLINT(google-build-using-namespace)

namespace {

constexpr auto kHeartbeat = std::chrono::seconds(10);

}  // namespace

Guests::Guests(SimContext& ctx, const VmAddresses& addresses)
    : ctx_(ctx),
      addresses_(addresses),
      etcd_(std::make_unique<EtcdMembers>(ctx.opt.etcd)),
      workload_recorder_(ctx.w, kube::EventRecorderOptions{.component = "cloud-node-controller"}) {}

Guests::~Guests() = default;

std::string Guests::NodeName(const std::string& vm_key, const std::string& vm_name) const {
  std::lock_guard lock(mu_);
  auto it = guests_.find(vm_key);
  return it != guests_.end() && !it->second.node.empty() ? it->second.node : vm_name;
}

void Guests::Event(const Object& vm, kube::EventType type, const std::string& reason,
                   const std::string& message) {
  auto vmi = ctx_.cache.vmis->store().Get(Ns(vm), Name(vm));
  ctx_.recorder.Event(vmi ? *vmi : vm, type, reason, message);
}

bool Guests::ImageShipsGuestAgent(const Object& vm) const {
  for (const EnvImage* im : ImagesOf(ctx_.opt.env.images, vm)) {
    if (im->guest_agent) return true;
  }
  return false;
}

kube::StatusOr<Guest> Guests::Load(const Object& vm) {
  const std::string key = kube::KeyOf(vm);
  {
    std::lock_guard lock(mu_);
    auto it = guests_.find(key);
    if (it != guests_.end() && it->second.uid == kube::UidOf(vm)) return it->second;
  }
  std::string user_data = InlineUserData(vm);
  if (user_data.empty()) {
    const std::string secret = UserDataSecretName(vm);
    if (!secret.empty()) {
      auto s = ctx_.h->Get(kube::resources::kSecrets, Ns(vm), secret);
      if (!s.ok()) return s.status();  // NotFound: the provider has not written it yet
      user_data = UserDataFromSecret(*s).value_or("");
    }
  }
  Guest g;
  g.uid = kube::UidOf(vm);
  g.node = Name(vm);
  bool stripped = false;
  if (auto n = ctx_.cache.namespaces->store().Get("", Ns(vm)); n != nullptr) {
    stripped = StrAt(*n, {"metadata", "labels", kStripGuestAgentLabel}) == "true";
  }
  g.guest_agent =
      ImageShipsGuestAgent(vm) || (!stripped && UserDataRunsGuestAgent(user_data, Name(vm)));
  if (!g.guest_agent) {
    ctx_.log.Info("Guest runs no qemu-guest-agent: its addresses stay unknown to KubeVirt",
                  {{"vm", key}});
  }
  auto rke2 = Rke2FromUserData(user_data, Name(vm));
  if (!rke2.ok()) {
    g.error = rke2.status().message();
    ctx_.log.Info("Guest cannot install RKE2", {{"vm", key}, {"error", g.error}});
    Event(vm, kube::EventType::kWarning, "RKE2ConfigInvalid", g.error);
  } else if (*rke2) {
    g.rke2 = **rke2;
    if (!g.rke2->node_name.empty()) g.node = g.rke2->node_name;
    // The kernel of an image booted without FIPS mode has fips_enabled 0:
    // the guard before the install ends cloud-init's runcmd script there.
    // FIPS mode when the images of the VM's disks all boot in it.
    const auto images = ImagesOf(ctx_.opt.env.images, vm);
    const bool fips = !images.empty() && std::all_of(images.begin(), images.end(),
                                                     [](const EnvImage* im) { return im->fips; });
    if (!g.rke2->fips_gate.empty() && !fips) {
      g.error =
          "cloud-init stopped before installing RKE2: the image does not boot in FIPS mode "
          "(/proc/sys/crypto/fips_enabled is 0), and `" +
          g.rke2->fips_gate + "` exits" +
          (g.rke2->fips_gate_message.empty() ? "" : ": " + g.rke2->fips_gate_message);
      ctx_.log.Info("Guest stops before RKE2", {{"vm", key}, {"error", g.error}});
      Event(vm, kube::EventType::kWarning, "RKE2NotInstalled", g.error);
      g.rke2.reset();  // no RKE2 on it: no server for others to join either
    } else {
      ctx_.log.Info(
          "Guest installs RKE2",
          {{"vm", key}, {"role", g.rke2->role}, {"version", KubeletVersionFor(g.rke2->version)}});
    }
  }
  std::lock_guard lock(mu_);
  guests_[key] = g;
  return g;
}

Status Guests::RegisterNode(const Object& vm, const Guest& guest, const std::vector<Nic>& nics,
                            milliseconds* requeue) {
  Object node;
  if (guest.rke2) {
    bool is_first = false;
    const Rke2Cluster cluster = ClusterFor(vm, &is_first);
    const JoinDecision d = DecideJoin(*guest.rke2, cluster, is_first);
    if (!d.join) {
      bool changed = false;
      {
        std::lock_guard lock(mu_);
        auto& g = guests_[kube::KeyOf(vm)];
        changed = g.refusal != d.reason;
        g.refusal = d.reason;
      }
      if (changed) {
        ctx_.log.Info("RKE2 node not joined", {{"vm", kube::KeyOf(vm)}, {"why", d.message}});
      }
      Event(vm, kube::EventType::kWarning, "RKE2" + d.reason, d.message);
      *requeue = std::chrono::seconds(5);  // RKE2 retries
      return {};
    }
    node = BuildRke2Node(guest.node, *guest.rke2, FirstIp(nics));
  } else {
    node = BuildNode(vm);
  }
  CAPHV_RETURN_IF_ERROR(ctx_.Fault("register Node"));
  auto created = ctx_.w->Create(kube::resources::kNodes, "", node, {.field_manager = "kubelet"});
  if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
  if (created.ok()) {
    ctx_.log.Info("Registered Node", {{"node", guest.node}});
    if (guest.rke2) {
      Event(vm, kube::EventType::kNormal, "RKE2Joined",
            "RKE2 " + guest.rke2->role + " " + KubeletVersionFor(guest.rke2->version) +
                " registered Node " + guest.node);
    }
  }
  *requeue = milliseconds(100);
  return {};
}

Status Guests::RenewLease(const std::string& vm_key, const Object& node, milliseconds* requeue) {
  const auto now = Clock::now();
  {
    std::lock_guard lock(mu_);
    auto& g = guests_[vm_key];
    const auto due = g.renewed + kHeartbeat;
    if (g.renewed != Clock::time_point() && due > now) {
      *requeue = std::chrono::duration_cast<milliseconds>(due - now) + milliseconds(1);
      return {};
    }
  }
  CAPHV_RETURN_IF_ERROR(ctx_.Fault("renew Lease"));
  const Object lease = BuildNodeLease(Name(node), kube::UidOf(node), MicroTimeNow());
  auto p = ctx_.w->Patch(kube::resources::kLeases, kNodeLeaseNamespace, Name(node),
                         kube::PatchType::kMerge, {{"spec", lease["spec"]}});
  if (p.status().IsNotFound()) {
    auto c = ctx_.w->Create(kube::resources::kLeases, kNodeLeaseNamespace, lease,
                            {.field_manager = "kubelet"});
    if (!c.ok() && !c.status().IsAlreadyExists()) return c.status();
  } else if (!p.ok()) {
    return p.status();
  }
  std::lock_guard lock(mu_);
  guests_[vm_key].renewed = now;
  *requeue = kHeartbeat;
  return {};
}

std::string Guests::KubeletReachable(const std::string& host) const {
  // The guest answering at `host`, found under the lock; the caches are read
  // after it.
  std::string key;
  {
    std::lock_guard lock(mu_);
    for (const auto& [vm_key, g] : guests_) {
      if (g.node == host || addresses_.Of(vm_key).contains(host)) {
        key = vm_key;
        break;
      }
    }
  }
  if (key.empty()) return "no guest " + host;
  const auto req = kube::Request::FromKey(key);
  auto vm = ctx_.cache.vms->store().Get(req.ns, req.name);
  if (!vm || Deleting(*vm)) return "guest " + host + " is gone";
  if (GuestDied(*vm)) return "guest " + host + " does not answer (dead)";
  auto vmi = ctx_.cache.vmis->store().Get(req.ns, req.name);
  if (!vmi || StatusOf(*vmi).value("phase", "") != "Running") {
    return "guest " + host + " is not running";
  }
  return "";
}

void Guests::KillEtcd(const std::string& vm_key, bool powered_off) {
  std::string etcd_cluster, etcd_member;
  {
    std::lock_guard lock(mu_);
    if (auto g = guests_.find(vm_key); g != guests_.end()) {
      if (powered_off) {
        g->second.server_objects = false;
        g->second.renewed = {};
      }
      etcd_cluster = g->second.etcd_cluster;
      etcd_member = g->second.etcd_member;
    }
  }
  if (!etcd_member.empty()) etcd_->Kill(etcd_cluster, etcd_member);
}

void Guests::PoweredOff(const std::string& vm_uid) {
  std::lock_guard lock(mu_);
  running_.erase(vm_uid);
}

Status Guests::DropOrphanedNodeFinalizers() {
  std::set<std::string> nodes;
  {
    std::lock_guard lock(mu_);
    nodes = orphaned_nodes_;
  }
  for (const auto& n : nodes) {
    auto held = ctx_.cache.nodes->store().Get(n);
    if (held && !Finalizers(*held).empty()) {
      CAPHV_RETURN_IF_ERROR(ctx_.Fault("drop Node finalizers"));
      auto p = ctx_.w->Patch(kube::resources::kNodes, "", n, kube::PatchType::kMerge,
                             {{"metadata", {{"finalizers", nullptr}}}});
      if (!p.ok() && !p.status().IsNotFound()) return p.status();
      ctx_.log.Info("Dropped the finalizers of a Node of a cluster with no server left",
                    {{"node", n}});
    }
    std::lock_guard lock(mu_);
    orphaned_nodes_.erase(n);
  }
  return Status::Ok();
}

Status Guests::Remove(const std::string& vm_key, const std::string& vm_uid) {
  const auto req = kube::Request::FromKey(vm_key);
  std::string etcd_cluster, etcd_member;
  {
    std::lock_guard lock(mu_);
    if (auto g = guests_.find(vm_key); g != guests_.end()) {
      etcd_cluster = g->second.etcd_cluster;
      etcd_member = g->second.etcd_member;
    }
  }
  const std::string node = NodeName(vm_key, req.name);
  if (ctx_.cache.nodes->store().Get(node)) {
    bool other = false;  // another VM (other namespace) still owns the Node
    for (const auto& v : ctx_.cache.vms->store().List()) {
      if (NodeName(kube::KeyOf(*v), Name(*v)) == node && Ns(*v) != req.ns && !Deleting(*v)) {
        other = true;
      }
    }
    if (!other) {
      CAPHV_RETURN_IF_ERROR(IgnoreNotFound(ctx_.w->Delete(kube::resources::kNodes, "", node)));
      ctx_.log.Info("Removed Node", {{"node", node}});
      if (!etcd_cluster.empty()) {
        std::lock_guard lock(mu_);
        gone_server_nodes_[etcd_cluster].insert(node);
      }
    }
  }
  // The VM's disks are gone: so is its etcd data (its membership stays
  // unless RKE2 removed it first).
  if (!etcd_member.empty()) etcd_->Discard(etcd_cluster, etcd_member);
  {
    std::lock_guard lock(mu_);
    guests_.erase(vm_key);
    running_.erase(vm_uid);
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
  }
  return DropOrphanedNodeFinalizers();
}

Status Guests::Sync(const Object& vm, Stage stage, const std::vector<Nic>& nics,
                    milliseconds* requeue) {
  const std::string key = kube::KeyOf(vm);
  const std::string node_name = NodeName(key, Name(vm));
  auto node = ctx_.cache.nodes->store().Get(node_name);
  if (node) CAPHV_RETURN_IF_ERROR(HandleEtcdRemoval(vm, *node, requeue));
  if (stage == Stage::kStopped) {
    KillEtcd(key, /*powered_off=*/true);
    if (!node) return {};
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("delete Node"));
    return IgnoreNotFound(ctx_.w->Delete(kube::resources::kNodes, "", node_name));
  }
  if (stage == Stage::kScheduling) return {};
  if (GuestDied(vm)) {  // a dead guest's kubelet writes nothing; its etcd is gone
    KillEtcd(key, /*powered_off=*/false);
    return {};
  }
  auto guest = Load(vm);
  if (!guest.ok()) {
    if (!guest.status().IsNotFound()) return guest.status();
    *requeue = milliseconds(500);
    return {};
  }
  if (!guest->error.empty()) {
    *requeue = std::chrono::seconds(30);  // the guest sits there without a kubelet
    return {};
  }
  const bool running = stage == Stage::kRunning;
  if (!node) {
    // RKE2 starts once the guest has its address.
    if (guest->rke2 && !running) return {};
    return RegisterNode(vm, *guest, nics, requeue);
  }
  std::vector<Nic> reported = nics;
  if (!running) {
    for (auto& n : reported) n.ip.clear();
  }
  Object status = BuildNodeStatus(vm, reported, running);
  if (guest->rke2) {
    status["nodeInfo"]["kubeletVersion"] = KubeletVersionFor(guest->rke2->version);
    status["nodeInfo"]["kubeProxyVersion"] = KubeletVersionFor(guest->rke2->version);
    status["nodeInfo"]["containerRuntimeVersion"] = "containerd://2.0.5-k3s1";
  }
  // A kubelet patches its own condition types only (the strategic merge of
  // Node conditions goes by type): the conditions other writers set (node
  // problem detectors, a test marking a Node unhealthy for a
  // MachineHealthCheck) stay, after the kubelet's.
  {
    std::set<std::string> own;
    for (const auto& c : status["conditions"]) own.insert(c.value("type", ""));
    for (const auto& c : StatusOf(*node).value("conditions", Object::array())) {
      if (!own.contains(c.value("type", ""))) status["conditions"].push_back(c);
    }
  }
  // Compare what can change (capacity quantities may come back canonicalised).
  const Object check = {{"addresses", status["addresses"]},
                        {"conditions", status["conditions"]},
                        {"nodeInfo", {{"kubeletVersion", status["nodeInfo"]["kubeletVersion"]}}}};
  if (!Covers(check, StatusOf(*node))) {
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("update Node status"));
    auto p = ctx_.w->Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge,
                           {{"status", status}}, {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  CAPHV_RETURN_IF_ERROR(InitializeNode(vm, *guest, *node, running, requeue));
  if (guest->rke2 && guest->rke2->role == "server" && running && !guest->server_objects) {
    CAPHV_RETURN_IF_ERROR(EnsureServerObjects(key, *guest, *node, FirstIp(nics)));
  }
  if (guest->rke2 && guest->rke2->etcd && running) {
    CAPHV_RETURN_IF_ERROR(EnsureEtcd(vm, key, *guest, *node, requeue));
  }
  milliseconds lease_requeue{0};
  CAPHV_RETURN_IF_ERROR(RenewLease(key, *node, &lease_requeue));
  if (requeue->count() == 0 || lease_requeue < *requeue) *requeue = lease_requeue;
  return {};
}

// The node-lifecycle controller lifts the not-ready taint the apiserver put
// on the new Node; the Harvester cloud provider sets providerID and lifts its
// taint (for an RKE2 node only when RKE2 leaves that to it).
Status Guests::InitializeNode(const Object& vm, const Guest& guest, const Object& node,
                              bool running, milliseconds* requeue) {
  const std::string node_name = Name(node);
  const Object spec = node.value("spec", Object::object());
  std::set<std::string> drop;
  if (running) drop.insert("node.kubernetes.io/not-ready");
  std::string provider_id;
  const bool harvester_ccm = !guest.rke2 || (ExternalCloudProvider(*guest.rke2) &&
                                             (guest.rke2->cloud_provider_name == "harvester" ||
                                              guest.rke2->cloud_provider_name == "external"));
  if (ctx_.opt.cloud_provider && harvester_ccm && running && spec.value("providerID", "").empty()) {
    Clock::time_point since;
    {
      std::lock_guard lock(mu_);
      since = running_.try_emplace(kube::UidOf(vm), Clock::now()).first->second;
    }
    const auto wait = since + ctx_.opt.provider_id_delay - Clock::now();
    if (wait > Clock::duration::zero()) {
      *requeue = std::chrono::duration_cast<milliseconds>(wait) + milliseconds(1);
    } else if (!guest.rke2) {
      // A guest without RKE2 has no cloud-config of its own: the simulator
      // stands in for its cloud provider.
      drop.insert(kUninitializedTaint);
      provider_id = ProviderIdFor(vm);
    } else if (CcmLookup found = CloudProviderLookup(node_name); !found.provider_id.empty()) {
      drop.insert(kUninitializedTaint);
      provider_id = found.provider_id;
    } else {
      // The real cloud node controller retries; the Node keeps its taint.
      bool warn = false;
      {
        std::lock_guard lock(mu_);
        warn = std::exchange(ccm_warned_[node_name], found.reason) != found.reason;
      }
      if (warn) {
        ctx_.log.Info("Cloud provider cannot initialize Node",
                      {{"node", node_name}, {"reason", found.reason}, {"message", found.message}});
        workload_recorder_.Event(node, kube::EventType::kWarning, found.reason, found.message);
      }
      if (requeue->count() == 0 || *requeue > std::chrono::seconds(5)) {
        *requeue = std::chrono::seconds(5);
      }
    }
  }
  const Object patch = NodeSpecPatch(node, drop, provider_id);
  if (patch.empty()) return {};
  CAPHV_RETURN_IF_ERROR(ctx_.Fault("initialize Node"));
  auto p = ctx_.w->Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge, patch);
  if (p.status().IsConflict()) {
    // Changed since the cache saw it: look again at the new Node.
    *requeue = milliseconds(100);
    return {};
  }
  if (!p.ok()) return p.status();
  if (!provider_id.empty()) {
    ctx_.log.Info("Initialized Node", {{"node", node_name}, {"providerID", provider_id}});
  }
  return {};
}

}  // namespace caphv::sim
