// File: sim/guest.cc
//
// The guest of a running VM, on the workload apiserver: its kubelet (Node
// registration and status, Lease heartbeats) and, when its user data
// installs RKE2, what RKE2 does (join decision, labels and taints, mirror
// pods and kube-system/rke2-serving on servers). Decisions are the pure
// functions of sim/rke2.h; this file reads the caches and writes.

#include <algorithm>
#include <utility>

#include "kube/base64.h"
#include "kube/config.h"
#include "kube/self_signed.h"
#include "sim/object_util.h"
#include "sim/simulator.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

using namespace internal;  // NOLINT(google-build-using-namespace)

namespace {

const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kPortForwards{"kwok.x-k8s.io", "v1alpha1", "portforwards", true};
constexpr char kEtcdHttpAnnotation[] = "sim.caphv.io/etcd-http";
constexpr auto kHeartbeat = std::chrono::seconds(10);
constexpr char kClusterIdLabel[] = "harvester.infrastructure.cluster.x-k8s.io/cluster-id";
constexpr char kGuestClusterLabel[] = "guestcluster.harvesterhci.io/name";

std::string Label(const Object& o, const char* key) {
  return o["metadata"].value("labels", Object::object()).value(key, "");
}

// The guest cluster a VM belongs to (its namespace and CAPHV's cluster labels).
std::string ClusterKey(const Object& vm) {
  std::string id = Label(vm, kClusterIdLabel);
  if (id.empty()) id = Label(vm, kGuestClusterLabel);
  return Ns(vm) + "/" + id;
}

std::string FirstIp(const std::vector<Nic>& nics) {
  for (const auto& n : nics) {
    if (!n.ip.empty()) return n.ip;
  }
  return "";
}

// The images of the environment that `vm`'s disks are made from.
std::vector<const EnvImage*> ImagesOf(const std::vector<EnvImage>& images, const Object& vm) {
  std::vector<const EnvImage*> out;
  auto claims = ClaimsFromVm(vm);
  if (!claims.ok()) return out;
  for (const auto& pvc : *claims) {
    const std::string image = StrAt(pvc, {"metadata", "annotations", kImageIdAnnotation});
    if (image.empty()) continue;
    const auto slash = image.find('/');
    const std::string ins = slash == std::string::npos ? Ns(vm) : image.substr(0, slash);
    const std::string iname = slash == std::string::npos ? image : image.substr(slash + 1);
    for (const auto& im : images) {
      if (im.ns == ins && im.name == iname) out.push_back(&im);
    }
  }
  return out;
}

}  // namespace

std::string Simulator::NodeNameFor(const std::string& vm_key, const std::string& vm_name) {
  std::lock_guard lock(mu_);
  auto it = guests_.find(vm_key);
  return it != guests_.end() && !it->second.node.empty() ? it->second.node : vm_name;
}

void Simulator::GuestEvent(const Object& vm, kube::EventType type, const std::string& reason,
                           const std::string& message) {
  auto vmi = vmis_->store().Get(Ns(vm), Name(vm));
  recorder_->Event(vmi ? *vmi : vm, type, reason, message);
}

kube::StatusOr<Simulator::Guest> Simulator::LoadGuest(const Object& vm) {
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
      auto s = h_->Get(kube::resources::kSecrets, Ns(vm), secret);
      if (!s.ok()) return s.status();  // NotFound: the provider has not written it yet
      user_data = UserDataFromSecret(*s).value_or("");
    }
  }
  Guest g;
  g.uid = kube::UidOf(vm);
  g.node = Name(vm);
  bool stripped = false;
  if (auto n = namespaces_->store().Get("", Ns(vm)); n != nullptr) {
    stripped = StrAt(*n, {"metadata", "labels", kStripGuestAgentLabel}) == "true";
  }
  g.guest_agent =
      ImageShipsGuestAgent(vm) || (!stripped && UserDataRunsGuestAgent(user_data, Name(vm)));
  if (!g.guest_agent) {
    log_.Info("Guest runs no qemu-guest-agent: its addresses stay unknown to KubeVirt",
              {{"vm", key}});
  }
  auto rke2 = Rke2FromUserData(user_data, Name(vm));
  if (!rke2.ok()) {
    g.error = rke2.status().message();
    log_.Info("Guest cannot install RKE2", {{"vm", key}, {"error", g.error}});
    GuestEvent(vm, kube::EventType::kWarning, "RKE2ConfigInvalid", g.error);
  } else if (*rke2) {
    g.rke2 = **rke2;
    if (!g.rke2->node_name.empty()) g.node = g.rke2->node_name;
    // The kernel of an image booted without FIPS mode has fips_enabled 0:
    // the guard before the install ends cloud-init's runcmd script there.
    // FIPS mode when the images of the VM's disks all boot in it.
    const auto images = ImagesOf(opt_.env.images, vm);
    const bool fips = !images.empty() && std::all_of(images.begin(), images.end(),
                                                     [](const EnvImage* im) { return im->fips; });
    if (!g.rke2->fips_gate.empty() && !fips) {
      g.error =
          "cloud-init stopped before installing RKE2: the image does not boot in FIPS mode "
          "(/proc/sys/crypto/fips_enabled is 0), and `" +
          g.rke2->fips_gate + "` exits" +
          (g.rke2->fips_gate_message.empty() ? "" : ": " + g.rke2->fips_gate_message);
      log_.Info("Guest stops before RKE2", {{"vm", key}, {"error", g.error}});
      GuestEvent(vm, kube::EventType::kWarning, "RKE2NotInstalled", g.error);
      g.rke2.reset();  // no RKE2 on it: no server for others to join either
    } else {
      log_.Info(
          "Guest installs RKE2",
          {{"vm", key}, {"role", g.rke2->role}, {"version", KubeletVersionFor(g.rke2->version)}});
    }
  }
  std::lock_guard lock(mu_);
  guests_[key] = g;
  return g;
}

namespace {

// "host:port" of an https:// URL ("" when it is not one).
std::string HostPortOf(const std::string& url) {
  constexpr std::string_view kScheme = "https://";
  if (!url.starts_with(kScheme)) return "";
  std::string rest = url.substr(kScheme.size());
  return rest.substr(0, rest.find('/'));
}

}  // namespace

Simulator::CcmLookup Simulator::CloudProviderLookup(const std::string& node_name) {
  constexpr char kSecret[] = "kube-system/cloud-config";
  auto secret = w_->Get(kube::resources::kSecrets, "kube-system", "cloud-config");
  if (!secret.ok()) {
    return {"", "CloudConfigMissing",
            std::string("the Harvester cloud provider cannot read ") + kSecret + ": " +
                secret.status().message()};
  }
  const std::string encoded = StrAt(*secret, {"data", "cloud-config"});
  auto text = kube::Base64Decode(encoded);
  if (encoded.empty() || !text) {
    return {"", "CloudConfigMissing",
            std::string("the Secret ") + kSecret + " has no key cloud-config"};
  }
  auto config = kube::LoadInlineKubeconfig(*text);
  if (!config.ok()) {
    return {"", "CloudConfigInvalid",
            std::string("the kubeconfig in ") + kSecret +
                " does not load: " + config.status().message()};
  }
  // Its server must be this Harvester: its own address, or its VIP.
  const std::string ours = HostPortOf(h_->config().server);
  const std::string theirs = HostPortOf(config->server);
  const bool vip = !opt_.env.vip.empty() && theirs.substr(0, theirs.rfind(':')) == opt_.env.vip;
  if (theirs != ours && !vip) {
    return {"", "HarvesterUnreachable",
            "the kubeconfig in " + std::string(kSecret) + " names server " + config->server +
                ", which is not this Harvester (" + h_->config().server +
                (opt_.env.vip.empty() ? "" : ", VIP " + opt_.env.vip) + ")"};
  }
  kube::RestConfig as_ccm;
  as_ccm.server = h_->config().server;
  as_ccm.ca_pem = config->ca_pem;
  as_ccm.token = config->token;
  as_ccm.client_cert_pem = config->client_cert_pem;
  as_ccm.client_key_pem = config->client_key_pem;
  as_ccm.insecure_skip_tls_verify = config->insecure_skip_tls_verify;
  as_ccm.user_agent = "harvester-cloud-provider";
  as_ccm.request_timeout = std::chrono::seconds(10);
  auto client = kube::Client::New(std::move(as_ccm));
  if (!client.ok()) {
    return {"", "CloudConfigInvalid",
            "the kubeconfig in " + std::string(kSecret) + ": " + client.status().message()};
  }
  const std::string ns = config->default_namespace;
  auto vm = (*client)->Get(gvr::kVirtualMachines, ns, node_name);
  if (vm.ok()) return {ProviderIdFor(*vm), "", ""};
  const kube::Status& s = vm.status();
  std::string reason = "InstanceLookupFailed";
  std::string why = s.message();
  if (s.IsNotFound()) {
    reason = "InstanceNotFound";
    why = "no VirtualMachine " + ns + "/" + node_name +
          " (the cloud provider looks the VM up by the Node's name, in the namespace of its "
          "kubeconfig's context)";
  } else if (s.code() == kube::StatusCode::kUnauthorized) {
    reason = "Unauthorized";
    why = "Harvester does not accept the token of the kubeconfig: " + s.message();
  } else if (s.code() == kube::StatusCode::kForbidden) {
    reason = "Forbidden";
    why = "the token of the kubeconfig may not read VirtualMachines in " + ns + ": " + s.message();
  }
  return {
      "", reason,
      "the Harvester cloud provider cannot find the instance of Node " + node_name + ": " + why};
}

bool Simulator::ImageShipsGuestAgent(const Object& vm) const {
  for (const EnvImage* im : ImagesOf(opt_.env.images, vm)) {
    if (im->guest_agent) return true;
  }
  return false;
}

Rke2Cluster Simulator::ClusterFor(const Object& vm, bool* is_first) {
  const std::string cluster = ClusterKey(vm);
  Rke2Cluster out;
  ObjectPtr first;
  std::string first_node, live_server, live_token;
  Rke2Config first_cfg;
  std::lock_guard lock(mu_);
  for (const auto& v : vms_->store().List()) {
    if (Deleting(*v) || ClusterKey(*v) != cluster) continue;
    auto g = guests_.find(kube::KeyOf(*v));
    if (g == guests_.end() || !g->second.rke2 || g->second.rke2->role != "server") continue;
    const bool joined = nodes_->store().Get(g->second.node) != nullptr;
    if (joined) {
      if (auto ips = vm_ips_.find(kube::KeyOf(*v)); ips != vm_ips_.end()) {
        out.hosts.insert(ips->second.begin(), ips->second.end());
      }
      // Any live server that joined serves joins with the cluster's token
      // (the first one may be gone: replaced, scaled down).
      if (live_server.empty() && !GuestDied(*v)) {
        live_server = g->second.node;
        live_token = g->second.rke2->token;
      }
    }
    if (!g->second.rke2->server.empty()) continue;
    const auto older = [](const Object& a, const Object& b) {
      const std::string ta = a["metadata"].value("creationTimestamp", "");
      const std::string tb = b["metadata"].value("creationTimestamp", "");
      return ta != tb ? ta < tb : Name(a) < Name(b);
    };
    if (!first || older(*v, *first)) {
      first = v;
      first_node = joined ? g->second.node : "";
      first_cfg = *g->second.rke2;
    }
  }
  *is_first = first && kube::UidOf(*first) == kube::UidOf(vm);
  if (!first_node.empty()) {
    out.first_server = first_node;
    out.token = first_cfg.token;
  } else if (!live_server.empty()) {
    out.first_server = live_server;
    out.token = live_token;
  }
  for (const auto& lb : lbs_->store().List()) {
    if (Ns(*lb) != Ns(vm)) continue;
    const std::string id = Label(*lb, kClusterIdLabel), mine = Label(vm, kClusterIdLabel);
    if (!id.empty() && !mine.empty() && id != mine) continue;
    const std::string address = StatusOf(*lb).value("address", "");
    if (!address.empty()) out.hosts.insert(address);
  }
  return out;
}

Status Simulator::RegisterNode(const Object& vm, const Guest& guest, const std::vector<Nic>& nics,
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
      if (changed) log_.Info("RKE2 node not joined", {{"vm", kube::KeyOf(vm)}, {"why", d.message}});
      GuestEvent(vm, kube::EventType::kWarning, "RKE2" + d.reason, d.message);
      *requeue = std::chrono::seconds(5);  // RKE2 retries
      return {};
    }
    node = BuildRke2Node(guest.node, *guest.rke2, FirstIp(nics));
  } else {
    node = BuildNode(vm);
  }
  CAPHV_RETURN_IF_ERROR(Fault("register Node"));
  auto created = w_->Create(kube::resources::kNodes, "", node, {.field_manager = "kubelet"});
  if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
  if (created.ok()) {
    log_.Info("Registered Node", {{"node", guest.node}});
    if (guest.rke2) {
      GuestEvent(vm, kube::EventType::kNormal, "RKE2Joined",
                 "RKE2 " + guest.rke2->role + " " + KubeletVersionFor(guest.rke2->version) +
                     " registered Node " + guest.node);
    }
  }
  *requeue = milliseconds(100);
  return {};
}

Status Simulator::RenewLease(const std::string& vm_key, const Object& node, milliseconds* requeue) {
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
  CAPHV_RETURN_IF_ERROR(Fault("renew Lease"));
  const Object lease = BuildNodeLease(Name(node), kube::UidOf(node), MicroTimeNow());
  auto p = w_->Patch(kube::resources::kLeases, kNodeLeaseNamespace, Name(node),
                     kube::PatchType::kMerge, {{"spec", lease["spec"]}});
  if (p.status().IsNotFound()) {
    auto c = w_->Create(kube::resources::kLeases, kNodeLeaseNamespace, lease,
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

Status Simulator::EnsureServerObjects(const std::string& vm_key, const Guest& guest,
                                      const Object& node, const std::string& ip) {
  const Rke2Config& c = *guest.rke2;
  const bool etcd_removed = node["metadata"]
                                .value("annotations", Object::object())
                                .contains(kEtcdRemovedNodeNameAnnotation);
  for (const auto& component : StaticPodComponents(c)) {
    if (component == "etcd" && etcd_removed) continue;
    Object pod = BuildMirrorPod(component, guest.node, kube::UidOf(node), ip, c);
    const Object status = pod["status"];
    pod.erase("status");
    CAPHV_RETURN_IF_ERROR(Fault("create mirror pod"));
    auto created = w_->Create(kPods, "kube-system", pod, {.field_manager = "kubelet"});
    if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
    auto p = w_->Patch(kPods, "kube-system", Name(pod), kube::PatchType::kMerge,
                       {{"status", status}}, {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  if (c.control_plane) {
    auto existing = w_->Get(kube::resources::kSecrets, "kube-system", kRke2ServingSecret);
    if (existing.status().IsNotFound()) {
      const auto names = ServingNames(guest.node, ip, c);
      auto pem = kube::GenerateSelfSignedCertificate(names);
      if (!pem.ok()) return pem.status();
      CAPHV_RETURN_IF_ERROR(Fault("create rke2-serving"));
      auto created = w_->Create(
          kube::resources::kSecrets, "kube-system",
          BuildServingSecret(names, pem->cert_pem, pem->key_pem, guest.node, kube::UidOf(node)),
          {.field_manager = "rke2"});
      if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
      if (created.ok()) log_.Info("Wrote kube-system/rke2-serving", {{"node", guest.node}});
    } else if (!existing.ok()) {
      return existing.status();
    } else if (auto owners = ServingSecretOwnersWith(*existing, guest.node, kube::UidOf(node))) {
      // A further server: the Secret lives while any server of the cluster does.
      CAPHV_RETURN_IF_ERROR(Fault("own rke2-serving"));
      auto p = w_->Patch(
          kube::resources::kSecrets, "kube-system", kRke2ServingSecret, kube::PatchType::kMerge,
          {{"metadata",
            {{"ownerReferences", *owners},
             {"resourceVersion", (*existing)["metadata"].value("resourceVersion", "")}}}},
          {.field_manager = "rke2"});
      if (!p.ok()) return p.status();
    }
  }
  std::lock_guard lock(mu_);
  guests_[vm_key].server_objects = true;
  return {};
}

std::string Simulator::KubeletReachable(const std::string& host) {
  std::lock_guard lock(mu_);
  for (const auto& [key, g] : guests_) {
    bool match = g.node == host;
    if (auto ips = vm_ips_.find(key); !match && ips != vm_ips_.end())
      match = ips->second.contains(host);
    if (!match) continue;
    const auto req = kube::Request::FromKey(key);
    auto vm = vms_->store().Get(req.ns, req.name);
    if (!vm || Deleting(*vm)) return "guest " + host + " is gone";
    if (GuestDied(*vm)) return "guest " + host + " does not answer (dead)";
    auto vmi = vmis_->store().Get(req.ns, req.name);
    if (!vmi || StatusOf(*vmi).value("phase", "") != "Running")
      return "guest " + host + " is not running";
    return "";
  }
  return "no guest " + host;
}

Status Simulator::EnsureEtcd(const Object& vm, const std::string& vm_key, const Guest& guest,
                             const Object& node, milliseconds* requeue) {
  if (!etcd_->enabled()) return {};
  const Object annotations = node["metadata"].value("annotations", Object::object());
  if (annotations.contains(kEtcdRemovedNodeNameAnnotation)) return {};  // RKE2 stopped it
  const std::string member = annotations.value(kEtcdNodeNameAnnotation, "");
  if (member.empty()) return {};
  const std::string cluster = ClusterKey(vm);
  auto ep =
      etcd_->Ensure(cluster, member, guest.rke2->etcd_server_ca, guest.rke2->etcd_server_ca_key);
  if (!ep.ok()) {
    if (ep.status().code() == kube::StatusCode::kInternal) return ep.status();
    if (ep.status().code() == kube::StatusCode::kConflict) return {};  // removed: RKE2 stopped it
    bool changed = false;
    {
      std::lock_guard lock(mu_);
      auto& g = guests_[vm_key];
      changed = g.etcd_wait != ep.status().message();
      g.etcd_wait = ep.status().message();
    }
    if (changed) {
      log_.Info("etcd member not up yet", {{"node", guest.node}, {"why", ep.status().message()}});
    }
    *requeue = milliseconds(500);
    return {};
  }
  {
    std::lock_guard lock(mu_);
    auto& g = guests_[vm_key];
    g.etcd_cluster = cluster;
    g.etcd_member = member;
  }
  if (!ep->voter) *requeue = milliseconds(300);  // promote once caught up
  // kwok's kubelet server forwards the pod's port 2379 to the member.
  const std::string pod = "etcd-" + guest.node;
  const std::string http = "http://127.0.0.1:" + std::to_string(ep->http_port);
  Object pf = {
      {"apiVersion", "kwok.x-k8s.io/v1alpha1"},
      {"kind", "PortForward"},
      {"metadata",
       {{"name", pod},
        {"namespace", "kube-system"},
        {"annotations", {{kEtcdHttpAnnotation, http}}},
        {"ownerReferences", Object::array({{{"apiVersion", "v1"},
                                            {"kind", "Node"},
                                            {"name", Name(node)},
                                            {"uid", kube::UidOf(node)}}})}}},
      {"spec",
       {{"forwards",
         Object::array({{{"ports", Object::array({2379})},
                         {"target", {{"address", "127.0.0.1"}, {"port", ep->client_port}}}}})}}}};
  auto existing = w_->Get(kPortForwards, "kube-system", pod);
  if (existing.ok() &&
      (*existing)["metadata"]
              .value("annotations", Object::object())
              .value(kEtcdHttpAnnotation, "") == http &&
      (*existing)["metadata"].value("ownerReferences", Object::array()) ==
          pf["metadata"]["ownerReferences"]) {
    return {};
  }
  if (existing.ok()) {
    auto d = w_->Delete(kPortForwards, "kube-system", pod);
    if (!d.ok() && !d.IsNotFound()) return d;
  } else if (!existing.status().IsNotFound()) {
    return existing.status();
  }
  auto created = w_->Create(kPortForwards, "kube-system", pf, {.field_manager = "rke2"});
  if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
  log_.Info("etcd member running",
            {{"node", guest.node},
             {"member", member},
             {"client", "https://127.0.0.1:" + std::to_string(ep->client_port)}});
  return {};
}

Status Simulator::HandleEtcdRemoval(const Object& vm, const Object& node, milliseconds* requeue) {
  const Object annotations = node["metadata"].value("annotations", Object::object());
  if (annotations.value(kEtcdRemoveAnnotation, "") != "true" ||
      annotations.contains(kEtcdRemovedNodeNameAnnotation)) {
    return {};
  }
  const std::string member = annotations.value(kEtcdNodeNameAnnotation, "");
  if (!etcd_->enabled() || member.empty()) return {};
  Status s = etcd_->Remove(ClusterKey(vm), member);
  if (s.code() == kube::StatusCode::kConflict) {
    GuestEvent(vm, kube::EventType::kWarning, "RKE2EtcdMemberNotRemoved", s.message());
    *requeue = std::chrono::seconds(10);
    return {};
  }
  if (!s.ok()) {
    log_.Info("etcd member not removed yet", {{"node", Name(node)}, {"why", s.message()}});
    *requeue = std::chrono::seconds(1);
    return {};
  }
  CAPHV_RETURN_IF_ERROR(Fault("record etcd member removal"));
  auto p = w_->Patch(kube::resources::kNodes, "", Name(node), kube::PatchType::kMerge,
                     {{"metadata",
                       {{"annotations",
                         {{kEtcdRemovedNodeNameAnnotation, member},
                          {kEtcdNodeNameAnnotation, nullptr},
                          {kEtcdNodeAddressAnnotation, nullptr}}}}}},
                     {.field_manager = "rke2"});
  if (!p.ok() && !p.status().IsNotFound()) return p.status();
  // RKE2 stops the removed member's static pod: its mirror pod and the
  // port-forward to it go (a port-forward to it now fails at once).
  for (const auto& gvr : {kPods, kPortForwards}) {
    Status d = IgnoreNotFound(w_->Delete(gvr, "kube-system", "etcd-" + Name(node)));
    if (!d.ok()) return d;
  }
  log_.Info("Removed etcd member", {{"node", Name(node)}, {"member", member}});
  GuestEvent(vm, kube::EventType::kNormal, "RKE2EtcdMemberRemoved",
             "etcd member " + member + " of Node " + Name(node) + " removed");
  return {};
}

Status Simulator::SyncNode(const Object& vm, Stage stage, const std::vector<Nic>& nics,
                           milliseconds* requeue) {
  const std::string key = kube::KeyOf(vm);
  const std::string node_name = NodeNameFor(key, Name(vm));
  auto node = nodes_->store().Get(node_name);
  if (node) CAPHV_RETURN_IF_ERROR(HandleEtcdRemoval(vm, *node, requeue));
  if (stage == Stage::kStopped) {
    std::string etcd_cluster, etcd_member;
    {
      std::lock_guard lock(mu_);
      if (auto g = guests_.find(key); g != guests_.end()) {
        g->second.server_objects = false;
        g->second.renewed = {};
        etcd_cluster = g->second.etcd_cluster;
        etcd_member = g->second.etcd_member;
      }
    }
    if (!etcd_member.empty()) etcd_->Kill(etcd_cluster, etcd_member);  // powered off
    if (!node) return {};
    CAPHV_RETURN_IF_ERROR(Fault("delete Node"));
    return IgnoreNotFound(w_->Delete(kube::resources::kNodes, "", node_name));
  }
  if (stage == Stage::kScheduling) return {};
  if (GuestDied(vm)) {  // a dead guest's kubelet writes nothing; its etcd is gone
    std::string etcd_cluster, etcd_member;
    {
      std::lock_guard lock(mu_);
      if (auto g = guests_.find(key); g != guests_.end()) {
        etcd_cluster = g->second.etcd_cluster;
        etcd_member = g->second.etcd_member;
      }
    }
    if (!etcd_member.empty()) etcd_->Kill(etcd_cluster, etcd_member);
    return {};
  }
  auto guest = LoadGuest(vm);
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
    CAPHV_RETURN_IF_ERROR(Fault("update Node status"));
    auto p = w_->Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge,
                       {{"status", status}}, {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  // The node-lifecycle controller lifts the not-ready taint the apiserver put
  // on the new Node; the Harvester cloud provider sets providerID and lifts
  // its taint (for an RKE2 node only when RKE2 leaves that to it).
  const Object spec = node->value("spec", Object::object());
  std::set<std::string> drop;
  if (running) drop.insert("node.kubernetes.io/not-ready");
  std::string provider_id;
  const bool harvester_ccm = !guest->rke2 || (ExternalCloudProvider(*guest->rke2) &&
                                              (guest->rke2->cloud_provider_name == "harvester" ||
                                               guest->rke2->cloud_provider_name == "external"));
  if (opt_.cloud_provider && harvester_ccm && running && spec.value("providerID", "").empty()) {
    Clock::time_point since;
    {
      std::lock_guard lock(mu_);
      since = running_.try_emplace(kube::UidOf(vm), Clock::now()).first->second;
    }
    const auto wait = since + opt_.provider_id_delay - Clock::now();
    if (wait > Clock::duration::zero()) {
      *requeue = std::chrono::duration_cast<milliseconds>(wait) + milliseconds(1);
    } else if (!guest->rke2) {
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
        log_.Info("Cloud provider cannot initialize Node",
                  {{"node", node_name}, {"reason", found.reason}, {"message", found.message}});
        workload_recorder_->Event(*node, kube::EventType::kWarning, found.reason, found.message);
      }
      if (requeue->count() == 0 || *requeue > std::chrono::seconds(5)) {
        *requeue = std::chrono::seconds(5);
      }
    }
  }
  const Object patch = NodeSpecPatch(*node, drop, provider_id);
  if (!patch.empty()) {
    CAPHV_RETURN_IF_ERROR(Fault("initialize Node"));
    auto p = w_->Patch(kube::resources::kNodes, "", node_name, kube::PatchType::kMerge, patch);
    if (p.status().IsConflict()) {
      // Changed since the cache saw it: look again at the new Node.
      *requeue = milliseconds(100);
      return {};
    }
    if (!p.ok()) return p.status();
    if (!provider_id.empty()) {
      log_.Info("Initialized Node", {{"node", node_name}, {"providerID", provider_id}});
    }
  }
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

}  // namespace caphv::sim
