// File: sim/guest_rke2.cc
//
// What RKE2 does in a guest (see guests.h): the cluster a joining node sees,
// a server's mirror pods and kube-system/rke2-serving, its etcd member and
// the member's removal.

#include "kube/self_signed.h"
#include "sim/guest_support.h"
#include "sim/guests.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using std::chrono::milliseconds;

using namespace internal;  // NOLINT(google-build-using-namespace)

namespace {

const kube::GroupVersionResource kPods{"", "v1", "pods", true};
const kube::GroupVersionResource kPortForwards{"kwok.x-k8s.io", "v1alpha1", "portforwards", true};
constexpr char kEtcdHttpAnnotation[] = "sim.caphv.io/etcd-http";

}  // namespace

Rke2Cluster Guests::ClusterFor(const Object& vm, bool* is_first) {
  const std::string cluster = ClusterKey(vm);
  Rke2Cluster out;
  ObjectPtr first;
  std::string first_node, live_server, live_token;
  Rke2Config first_cfg;
  std::lock_guard lock(mu_);
  for (const auto& v : ctx_.cache.vms->store().List()) {
    if (Deleting(*v) || ClusterKey(*v) != cluster) continue;
    auto g = guests_.find(kube::KeyOf(*v));
    if (g == guests_.end() || !g->second.rke2 || g->second.rke2->role != "server") continue;
    const bool joined = ctx_.cache.nodes->store().Get(g->second.node) != nullptr;
    if (joined) {
      const auto ips = addresses_.Of(kube::KeyOf(*v));
      out.hosts.insert(ips.begin(), ips.end());
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
  for (const auto& lb : ctx_.cache.lbs->store().List()) {
    if (Ns(*lb) != Ns(vm)) continue;
    const std::string id = Label(*lb, kClusterIdLabel), mine = Label(vm, kClusterIdLabel);
    if (!id.empty() && !mine.empty() && id != mine) continue;
    const std::string address = StatusOf(*lb).value("address", "");
    if (!address.empty()) out.hosts.insert(address);
  }
  return out;
}

Status Guests::EnsureServerObjects(const std::string& vm_key, const Guest& guest,
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
    CAPHV_RETURN_IF_ERROR(ctx_.Fault("create mirror pod"));
    auto created = ctx_.w->Create(kPods, "kube-system", pod, {.field_manager = "kubelet"});
    if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
    auto p = ctx_.w->Patch(kPods, "kube-system", Name(pod), kube::PatchType::kMerge,
                           {{"status", status}}, {.subresource = "status"});
    if (!p.ok()) return p.status();
  }
  if (c.control_plane) {
    auto existing = ctx_.w->Get(kube::resources::kSecrets, "kube-system", kRke2ServingSecret);
    if (existing.status().IsNotFound()) {
      const auto names = ServingNames(guest.node, ip, c);
      auto pem = kube::GenerateSelfSignedCertificate(names);
      if (!pem.ok()) return pem.status();
      CAPHV_RETURN_IF_ERROR(ctx_.Fault("create rke2-serving"));
      auto created = ctx_.w->Create(
          kube::resources::kSecrets, "kube-system",
          BuildServingSecret(names, pem->cert_pem, pem->key_pem, guest.node, kube::UidOf(node)),
          {.field_manager = "rke2"});
      if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
      if (created.ok()) ctx_.log.Info("Wrote kube-system/rke2-serving", {{"node", guest.node}});
    } else if (!existing.ok()) {
      return existing.status();
    } else if (auto owners = ServingSecretOwnersWith(*existing, guest.node, kube::UidOf(node))) {
      // A further server: the Secret lives while any server of the cluster does.
      CAPHV_RETURN_IF_ERROR(ctx_.Fault("own rke2-serving"));
      auto p = ctx_.w->Patch(
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

Status Guests::EnsureEtcd(const Object& vm, const std::string& vm_key, const Guest& guest,
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
      ctx_.log.Info("etcd member not up yet",
                    {{"node", guest.node}, {"why", ep.status().message()}});
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
  auto existing = ctx_.w->Get(kPortForwards, "kube-system", pod);
  if (existing.ok() &&
      (*existing)["metadata"]
              .value("annotations", Object::object())
              .value(kEtcdHttpAnnotation, "") == http &&
      (*existing)["metadata"].value("ownerReferences", Object::array()) ==
          pf["metadata"]["ownerReferences"]) {
    return {};
  }
  if (existing.ok()) {
    auto d = ctx_.w->Delete(kPortForwards, "kube-system", pod);
    if (!d.ok() && !d.IsNotFound()) return d;
  } else if (!existing.status().IsNotFound()) {
    return existing.status();
  }
  auto created = ctx_.w->Create(kPortForwards, "kube-system", pf, {.field_manager = "rke2"});
  if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
  ctx_.log.Info("etcd member running",
                {{"node", guest.node},
                 {"member", member},
                 {"client", "https://127.0.0.1:" + std::to_string(ep->client_port)}});
  return {};
}

Status Guests::HandleEtcdRemoval(const Object& vm, const Object& node, milliseconds* requeue) {
  const Object annotations = node["metadata"].value("annotations", Object::object());
  if (annotations.value(kEtcdRemoveAnnotation, "") != "true" ||
      annotations.contains(kEtcdRemovedNodeNameAnnotation)) {
    return {};
  }
  const std::string member = annotations.value(kEtcdNodeNameAnnotation, "");
  if (!etcd_->enabled() || member.empty()) return {};
  Status s = etcd_->Remove(ClusterKey(vm), member);
  if (s.code() == kube::StatusCode::kConflict) {
    Event(vm, kube::EventType::kWarning, "RKE2EtcdMemberNotRemoved", s.message());
    *requeue = std::chrono::seconds(10);
    return {};
  }
  if (!s.ok()) {
    ctx_.log.Info("etcd member not removed yet", {{"node", Name(node)}, {"why", s.message()}});
    *requeue = std::chrono::seconds(1);
    return {};
  }
  CAPHV_RETURN_IF_ERROR(ctx_.Fault("record etcd member removal"));
  auto p = ctx_.w->Patch(kube::resources::kNodes, "", Name(node), kube::PatchType::kMerge,
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
    Status d = IgnoreNotFound(ctx_.w->Delete(gvr, "kube-system", "etcd-" + Name(node)));
    if (!d.ok()) return d;
  }
  ctx_.log.Info("Removed etcd member", {{"node", Name(node)}, {"member", member}});
  Event(vm, kube::EventType::kNormal, "RKE2EtcdMemberRemoved",
        "etcd member " + member + " of Node " + Name(node) + " removed");
  return {};
}

}  // namespace caphv::sim
