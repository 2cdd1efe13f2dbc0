// File: controllers/harvester_connection.cc

#include "controllers/harvester_connection.h"

#include <chrono>

#include "controllers/capi.h"
#include "harvester/identity_expiry.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "harvester/vm_builder.h"
#include "harvester/vm_events.h"
#include "kube/base64.h"
#include "kube/config.h"
#include "kube/controller.h"
#include "kube/log.h"

namespace caphv::controllers {

namespace {

std::string ManagedSelector() {
  return std::string(harvester::kLabelManagedBy) + "=" + std::string(harvester::kManagedByValue);
}

// The owner request named by the owner annotation, if any.
std::optional<kube::Request> OwnerOf(const kube::Object& o) {
  auto meta = o.find("metadata");
  if (meta == o.end()) return std::nullopt;
  auto ann = meta->find("annotations");
  if (ann == meta->end() || !ann->is_object()) return std::nullopt;
  auto it = ann->find(std::string(harvester::kAnnotationOwner));
  if (it == ann->end() || !it->is_string()) return std::nullopt;
  kube::Request r = kube::Request::FromKey(it->get<std::string>());
  if (r.ns.empty() || r.name.empty()) return std::nullopt;
  return r;
}

constexpr std::string_view kServiceAccountTokenType = "kubernetes.io/service-account-token";

// PVC index: "<namespace>/<vm>" of the VM a PVC is a disk of.
constexpr std::string_view kDiskOwnerIndex = "disk-owner";

kube::EventHandler MapHandler(const std::function<void(const kube::Object&)>& f) {
  kube::EventHandler h;
  h.on_add = [f](const kube::ObjectPtr& o, bool) { f(*o); };
  h.on_update = [f](const kube::ObjectPtr&, const kube::ObjectPtr& o) { f(*o); };
  h.on_delete = [f](const kube::DeletedObject& d) {
    if (d.object) f(*d.object);
  };
  return h;
}

}  // namespace

const kube::FieldMask& PvcFields() {
  static const kube::FieldMask mask({{"metadata", "name"},
                                     {"metadata", "namespace"},
                                     {"metadata", "uid"},
                                     {"metadata", "labels"},
                                     {"metadata", "annotations"},
                                     {"metadata", "deletionTimestamp"},
                                     {"metadata", "resourceVersion"}});
  return mask;
}

const kube::FieldMask& HostFields() {
  static const kube::FieldMask mask({{"metadata", "name"},
                                     {"metadata", "resourceVersion"},
                                     {"metadata", "labels", harvester::kZoneLabel}});
  return mask;
}

void CompactManagedSecret(kube::Object& secret) {
  if (secret.value("type", "") == kServiceAccountTokenType) return;
  secret.erase("data");
  secret.erase("stringData");
}

std::string KubeconfigServer(const std::string& kubeconfig) {
  auto config = kube::LoadInlineKubeconfig(kubeconfig);
  return config.ok() ? config->server : std::string();
}

Connection::Connection(std::shared_ptr<kube::Client> client, std::string kubeconfig,
                       const ConnectionCallbacks& callbacks)
    : client_(std::move(client)), kubeconfig_(std::move(kubeconfig)), callbacks_(callbacks) {
  // The collections with an object or more per machine are cached packed.
  // Updates are announced only when what the cache keeps changed (see the
  // transforms above): the rest (a VMI's guest agent, a Node's heartbeat)
  // would wake machines that plan nothing.
  auto make = [this](const kube::GroupVersionResource& gvr, std::string label,
                     const kube::FieldMask* keep = nullptr,
                     std::function<void(kube::Object&)> transform = {}, bool packed = false,
                     kube::Indexers indexers = {}) {
    kube::InformerOptions o;
    o.gvr = gvr;
    o.label_selector = std::move(label);
    o.keep = keep;
    o.transform = std::move(transform);
    o.packed = packed;
    o.indexers = std::move(indexers);
    o.drop_unchanged_updates = true;
    return std::make_shared<kube::Informer>(client_, std::move(o));
  };
  vms_ = make(harvester::kVirtualMachines, ManagedSelector(), &harvester::VmFields(), {}, true);
  vmis_ = make(harvester::kVirtualMachineInstances, ManagedSelector(), &harvester::VmiFields(), {},
               true);
  // Every LoadBalancer: the Go provider's carry no labels and are adopted.
  lbs_ = make(harvester::kLoadBalancers, "");
  secrets_ =
      make(kube::resources::kSecrets, ManagedSelector(), nullptr, CompactManagedSecret, true);
  pools_ = make(harvester::kIPPools, "");
  pvcs_ = make(kube::resources::kPersistentVolumeClaims, "", &PvcFields(), {}, true,
               {{std::string(kDiskOwnerIndex), [](const kube::Object& pvc) {
                   const std::string owner = harvester::DiskOwnerOf(kube::NameOf(pvc));
                   if (owner.empty()) return std::vector<std::string>{};
                   return std::vector<std::string>{kube::NamespaceOf(pvc) + "/" + owner};
                 }}});
  hosts_ = make(kube::resources::kNodes, "", &HostFields());

  auto machine = [this](const kube::Object& o) {
    if (auto r = OwnerOf(o); r && callbacks_.machine_event) callbacks_.machine_event(*r);
  };
  auto cluster = [this](const kube::Object& o) {
    if (auto r = OwnerOf(o); r && callbacks_.cluster_event) callbacks_.cluster_event(*r);
  };
  // A VM's and its VMI's writes while KubeVirt deletes them wake nobody:
  // the machine waits for the VM's delete event (harvester/vm_events.h).
  kube::EventHandler vm_changed = MapHandler(machine);
  vm_changed.on_update = [machine](const kube::ObjectPtr& before, const kube::ObjectPtr& now) {
    if (harvester::VmUpdateMatters(*before, *now)) machine(*now);
  };
  vms_->AddEventHandler(std::move(vm_changed));
  // A VMI carries its VM's template labels, not its annotations: map it
  // through the VM of the same name.
  vmis_->AddEventHandler(MapHandler([this, machine](const kube::Object& vmi) {
    const kube::ObjectPtr vm = vms_->store().Get(kube::NamespaceOf(vmi), kube::NameOf(vmi));
    if (harvester::VmiEventMatters(vm.get())) machine(*vm);
  }));
  lbs_->AddEventHandler(MapHandler(cluster));
  // A token Secret belongs to the cloud provider of a HarvesterCluster; every
  // other managed Secret (the cloud-init Secret) to a HarvesterMachine.
  secrets_->AddEventHandler(MapHandler([machine, cluster](const kube::Object& s) {
    if (s.value("type", "") == kServiceAccountTokenType) {
      cluster(s);
    } else {
      machine(s);
    }
  }));
  pools_->AddEventHandler(MapHandler([this](const kube::Object&) { WakePoolWaiters(); }));
  kube::EventHandler pvc_deleted;
  pvc_deleted.on_delete = [this](const kube::DeletedObject& d) { WakePvcWaiters(d.key); };
  pvcs_->AddEventHandler(std::move(pvc_deleted));
  kube::EventHandler hosts_changed;
  // The initial list too: a cluster that looked before it synced waits for it.
  hosts_changed.on_add = [this](const kube::ObjectPtr&, bool) { WakeHostWatchers(); };
  hosts_changed.on_update = [this](const kube::ObjectPtr& old_obj, const kube::ObjectPtr& obj) {
    if (Str(*old_obj, {"metadata", "labels", std::string(harvester::kZoneLabel)}) !=
        Str(*obj, {"metadata", "labels", std::string(harvester::kZoneLabel)})) {
      WakeHostWatchers();
    }
  };
  hosts_changed.on_delete = [this](const kube::DeletedObject&) { WakeHostWatchers(); };
  hosts_->AddEventHandler(std::move(hosts_changed));
}

std::vector<kube::Informer*> Connection::Informers() const {
  return {vms_.get(), vmis_.get(), lbs_.get(), secrets_.get(), pools_.get(), pvcs_.get()};
}

Connection::~Connection() {
  auto informers = Informers();
  informers.push_back(hosts_.get());
  kube::StopInformers(informers);
}

kube::Status Connection::Start(const std::stop_token& stop) {
  hosts_->Start();
  for (auto* i : Informers()) i->Start();
  for (auto* i : Informers()) {
    if (!i->WaitForSync(kHarvesterSyncTimeout, stop)) {
      if (stop.stop_requested()) return {kube::StatusCode::kCancelled, "stopped"};
      return {kube::StatusCode::kUnavailable,
              "the watch on Harvester " + i->options().gvr.resource + " did not sync in " +
                  std::to_string(kHarvesterSyncTimeout.count()) + "s"};
    }
  }
  return kube::Status::Ok();
}

kube::Status Connection::EnsureNamespace(const std::string& name) {
  {
    std::lock_guard lock(mu_);
    if (namespaces_.contains(name)) return kube::Status::Ok();
  }
  auto got = client_->Get(kube::resources::kNamespaces, "", name);
  if (!got.ok() && got.status().IsNotFound()) {
    kube::Object ns = {
        {"apiVersion", "v1"},
        {"kind", "Namespace"},
        {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/created-by", "caphv"}}}}}};
    auto created = client_->Create(kube::resources::kNamespaces, "", ns);
    if (!created.ok() && !created.status().IsAlreadyExists()) return created.status();
  } else if (!got.ok()) {
    return got.status();
  } else if (!Str(*got, {"metadata", "deletionTimestamp"}).empty()) {
    return {kube::StatusCode::kConflict, "Harvester namespace " + name + " is being deleted"};
  }
  std::lock_guard lock(mu_);
  namespaces_.insert(name);
  return kube::Status::Ok();
}

void Connection::ForgetNamespace(const std::string& name) {
  std::lock_guard lock(mu_);
  namespaces_.erase(name);
}

void Connection::WaitForPool(const kube::Request& machine) {
  std::lock_guard lock(mu_);
  pool_waiters_.insert(machine.Key());
}

void Connection::WaitForDeletion(const std::string& pvc_key, const kube::Request& machine) {
  {
    std::lock_guard lock(mu_);
    pvc_waiters_[pvc_key].insert(machine.Key());
  }
  // The store is updated before the handlers run: a PVC deleted before the
  // waiter was registered is no longer in it.
  if (!pvcs_->store().Get(pvc_key)) WakePvcWaiters(pvc_key);
}

void Connection::WakePvcWaiters(const std::string& pvc_key) {
  std::set<std::string> waiters;
  {
    std::lock_guard lock(mu_);
    auto it = pvc_waiters_.find(pvc_key);
    if (it == pvc_waiters_.end()) return;
    waiters.swap(it->second);
    pvc_waiters_.erase(it);
  }
  if (!callbacks_.machine_event) return;
  for (const auto& key : waiters) callbacks_.machine_event(kube::Request::FromKey(key));
}

std::vector<kube::ObjectPtr> Connection::Disks(const std::string& ns, const std::string& vm) const {
  auto disks = pvcs_->store().ByIndex(kDiskOwnerIndex, ns + "/" + vm);
  return disks.ok() ? std::move(disks).value() : std::vector<kube::ObjectPtr>{};
}

std::optional<std::vector<harvester::Host>> Connection::hosts() const {
  if (!hosts_->HasSynced()) return std::nullopt;
  std::vector<harvester::Host> out;
  for (const auto& n : hosts_->store().List()) {
    out.push_back(
        {kube::NameOf(*n), Str(*n, {"metadata", "labels", std::string(harvester::kZoneLabel)})});
  }
  return out;
}

void Connection::WatchHosts(const kube::Request& cluster) {
  std::lock_guard lock(mu_);
  host_watchers_.insert(cluster.Key());
}

void Connection::UnwatchHosts(const kube::Request& cluster) {
  std::lock_guard lock(mu_);
  host_watchers_.erase(cluster.Key());
}

void Connection::WakeHostWatchers() {
  std::set<std::string> watchers;
  {
    std::lock_guard lock(mu_);
    watchers = host_watchers_;
  }
  if (!callbacks_.cluster_event) return;
  for (const auto& key : watchers) callbacks_.cluster_event(kube::Request::FromKey(key));
}

void Connection::WakePoolWaiters() {
  std::set<std::string> waiters;
  {
    std::lock_guard lock(mu_);
    waiters.swap(pool_waiters_);
  }
  if (!callbacks_.machine_event) return;
  for (const auto& key : waiters) callbacks_.machine_event(kube::Request::FromKey(key));
}

std::optional<kube::CredentialExpiry> IdentityExpiry(kube::Client& client) {
  if (auto e = kube::CredentialExpiryOf(client.config())) return e;
  auto token = client.config().BearerToken();
  const std::string name = token.ok() ? kube::RancherTokenName(*token) : std::string();
  if (name.empty()) return std::nullopt;
  auto object = client.Get(harvester::kRancherTokens, "", name);
  if (!object.ok()) {
    kube::log::Root()
        .WithName("harvester")
        .V(1)
        .Info("Cannot read the identity's Rancher token; its expiry stays unknown",
              {{"server", client.config().server},
               {"token", name},
               {"error", object.status().message()}});
    return std::nullopt;
  }
  if (auto at = harvester::RancherTokenExpiry(*object)) {
    return kube::CredentialExpiry{*at, "Rancher token " + name};
  }
  return std::nullopt;
}

std::shared_ptr<kube::Client> ConnectHarvester(const std::string& kubeconfig,
                                               ConnectionError* error) {
  auto config = kube::LoadInlineKubeconfig(kubeconfig);
  if (!config.ok()) {
    *error = {"MalformedIdentitySecret",
              {kube::StatusCode::kInvalidArgument,
               "the kubeconfig is not usable: " + config.status().message()}};
    return nullptr;
  }
  config->user_agent = "caphv-manager";
  config->connect_timeout = kHarvesterConnectTimeout;
  config->request_timeout = kHarvesterRequestTimeout;
  auto client = kube::Client::New(std::move(config).value());
  if (!client.ok()) {
    *error = {"MalformedIdentitySecret", client.status()};
    return nullptr;
  }
  auto dep = (*client)->Get(kube::resources::kDeployments, "harvester-system", "harvester");
  if (!dep.ok()) {
    const kube::Status& s = dep.status();
    if (s.code() == kube::StatusCode::kUnauthorized || s.code() == kube::StatusCode::kForbidden) {
      std::string why = "Harvester at " + (*client)->config().server +
                        " refused the identity's credentials: " + s.message();
      const auto expiry = kube::CredentialExpiryOf((*client)->config());
      const auto now = std::chrono::system_clock::now();
      if (expiry && expiry->expires_at <= now) {
        why += "; " + harvester::DescribeExpiry(*expiry, now) +
               ": put a renewed kubeconfig into the identity Secret";
      }
      *error = {"HarvesterAuthenticationFailed", {s.code(), why}};
    } else if (s.IsNotFound()) {
      *error = {
          "NotHarvester",
          {s.code(), (*client)->config().server + " is not a Harvester cluster (no Deployment "
                                                  "harvester-system/harvester)"}};
    } else {
      *error = {"HarvesterConnectionFailed",
                {s.code(),
                 "cannot reach Harvester at " + (*client)->config().server + ": " + s.message()}};
    }
    return nullptr;
  }
  bool available = false;
  if (auto st = dep->find("status"); st != dep->end() && st->contains("conditions")) {
    for (const auto& c : (*st)["conditions"]) {
      if (c.value("type", "") == "Available" && c.value("status", "") == "True") available = true;
    }
  }
  if (!available) {
    *error = {"HarvesterConnectionFailed",
              {kube::StatusCode::kUnavailable,
               "Harvester at " + (*client)->config().server +
                   " is not available (Deployment harvester-system/harvester is not Available)"}};
    return nullptr;
  }
  return *client;
}

}  // namespace caphv::controllers
