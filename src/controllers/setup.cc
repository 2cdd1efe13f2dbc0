// File: controllers/setup.cc

#include "controllers/setup.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "api/common.h"
#include "controllers/capi.h"
#include "controllers/cluster/cluster_reconciler.h"
#include "controllers/context.h"
#include "controllers/machine/machine_plan.h"
#include "controllers/machine/machine_reconciler.h"
#include "harvester/resources.h"
#include "kube/controller.h"
#include "kube/log.h"
#include "kube/secret_pool.h"

namespace caphv::controllers {

namespace {

using kube::Object;
using kube::Request;

constexpr char kIdentityIndex[] = "identitySecret";
constexpr std::chrono::seconds kSweepPeriod{60};

std::vector<Request> Requests(const std::vector<std::string>& keys) {
  std::vector<Request> out;
  out.reserve(keys.size());
  for (const auto& key : keys) out.push_back(Request::FromKey(key));
  return out;
}

// NodeInitialized is True in a HarvesterMachine's status: its Node needs
// nothing more from the workload cluster.
bool NodeInitializedIn(const Object& hm) {
  const Object status = hm.value("status", Object::object());
  for (const auto& c : status.value("conditions", Object::array())) {
    if (c.is_object() && c.value("type", "") == kNodeInitialized) {
      return c.value("status", "") == "True";
    }
  }
  return false;
}

// The object named by spec.infrastructureRef when it is of `kind`.
kube::MapFunc InfrastructureRefOf(std::string kind) {
  return [kind](const Object& o) -> std::vector<Request> {
    if (Str(o, {"spec", "infrastructureRef", "kind"}) != kind) return {};
    const std::string name = Str(o, {"spec", "infrastructureRef", "name"});
    if (name.empty()) return {};
    return {{kube::NamespaceOf(o), name}};
  };
}

// Cluster API rewrites a Cluster's status often (conditions of its
// machines); only these fields matter to CAPHV's reconcilers, so other
// updates do not wake every machine of the cluster.
kube::Predicates ClusterFieldsChanged() {
  auto relevant = [](const Object& c) {
    return std::make_tuple(ClusterInfrastructureReady(c), ClusterControlPlaneInitialized(c),
                           IsPaused(&c, c), IsDeleting(c),
                           Str(c, {"spec", "infrastructureRef", "name"}),
                           Str(c, {"spec", "controlPlaneEndpoint", "host"}));
  };
  kube::Predicates p;
  p.update = [relevant](const Object& old_obj, const Object& new_obj) {
    return relevant(old_obj) != relevant(new_obj);
  };
  return p;
}

// Likewise for a Machine: its bootstrap data, its nodeRef, pause and
// deletion.
kube::Predicates MachineFieldsChanged() {
  auto relevant = [](const Object& m) {
    return std::make_tuple(BootstrapDataSecretName(m), Str(m, {"status", "nodeRef", "name"}),
                           IsPaused(nullptr, m), IsDeleting(m),
                           Str(m, {"spec", "infrastructureRef", "name"}),
                           Str(m, {"spec", "failureDomain"}));
  };
  kube::Predicates p;
  p.update = [relevant](const Object& old_obj, const Object& new_obj) {
    return relevant(old_obj) != relevant(new_obj);
  };
  return p;
}

}  // namespace

struct Controllers::Impl {
  ControllerOptions options;
  std::string capi_version;  // of cluster.x-k8s.io read (CapiVersionServed)
  Context ctx;
  std::unique_ptr<HarvesterClusterReconciler> cluster_reconciler;
  std::unique_ptr<HarvesterMachineReconciler> machine_reconciler;
  std::unique_ptr<kube::Controller> clusters;
  std::unique_ptr<kube::Controller> machines;
  std::atomic<bool> synced{false};

  // Every minute, closes the Harvester connections no HarvesterCluster names
  // and the workload clusters none of whose Machines still waits for its
  // Node (a nodeRef, or NodeInitialized on its HarvesterMachine), so their
  // watches and caches do not outlive their clusters; and looks whether
  // cluster.x-k8s.io now serves a newer version than the one read (Cluster
  // API upgraded underneath): returns it then, "" when stopped.
  std::string SweepUntil(std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    for (;;) {
      // With a stop token, wait_for returns the predicate's value (false)
      // once stop is requested: test the token itself.
      cv.wait_for(lock, stop, kSweepPeriod, [] { return false; });
      if (stop.stop_requested()) return "";
      auto hcs = ctx.harvester_clusters;
      ctx.connections->Sweep([hcs](const std::string& identity) {
        auto users = hcs->store().IndexKeys(kIdentityIndex, identity);
        return users.ok() && !users->empty();
      });
      auto capi_machines = ctx.machines;
      auto hms = ctx.harvester_machines;
      ctx.workloads->Sweep([capi_machines, hms](const std::string& cluster_key) {
        const Request c = Request::FromKey(cluster_key);
        const std::map<std::string, std::string> selector = {
            {std::string(kClusterNameLabel), c.name}};
        // One machine decoded at a time, until one still waits for its
        // Node (no nodeRef) or may need it initialised.
        bool waiting = false;
        capi_machines->store().ForEachByLabels(c.ns, selector, [&waiting](const Object& m) {
          waiting = Str(m, {"status", "nodeRef", "name"}).empty();
          return !waiting;
        });
        if (waiting) return true;
        hms->store().ForEachByLabels(c.ns, selector, [&waiting](const Object& hm) {
          waiting = !IsDeleting(hm) && !NodeInitializedIn(hm);
          return !waiting;
        });
        return waiting;
      });
      if (auto group = ctx.mgmt->GetPath("/apis/" + std::string(kCapiGroup)); group.ok()) {
        if (std::string newer = NewerCapiVersionServed(capi_version, *group); !newer.empty()) {
          return newer;
        }
      }
    }
  }

  std::vector<std::shared_ptr<kube::Informer>> Informers() const {
    return {ctx.harvester_clusters, ctx.harvester_machines, ctx.clusters, ctx.machines,
            ctx.secrets};
  }
};

Controllers::Controllers(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Controllers::~Controllers() {
  if (impl_->ctx.connections) impl_->ctx.connections->Stop();
  if (impl_->ctx.workloads) impl_->ctx.workloads->Stop();
  std::vector<kube::Informer*> informers;
  for (const auto& i : impl_->Informers()) informers.push_back(i.get());
  kube::StopInformers(informers);
}

kube::StatusOr<std::unique_ptr<Controllers>> Controllers::New(std::shared_ptr<kube::Client> mgmt,
                                                              const ControllerOptions& options) {
  auto kube_system = mgmt->Get(kube::resources::kNamespaces, "", "kube-system");
  if (!kube_system.ok()) {
    return kube::Status(kube_system.status().code(),
                        "cannot read namespace kube-system (the management cluster id): " +
                            kube_system.status().message());
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  Context& ctx = impl->ctx;
  ctx.mgmt = mgmt;
  ctx.management_cluster_id = kube::UidOf(*kube_system);

  const std::string filter = options.watch_filter.empty()
                                 ? ""
                                 : std::string(api::kWatchFilterLabel) + "=" + options.watch_filter;
  // The collections with an object or more per machine are cached packed,
  // the machines indexed by their cluster.
  const std::string cluster_label(kClusterNameLabel);
  auto informer = [&](const kube::GroupVersionResource& gvr, bool filtered, bool resync,
                      const kube::FieldMask* keep = nullptr, bool per_machine = false) {
    kube::InformerOptions o;
    o.gvr = gvr;
    o.ns = options.watch_namespace;
    if (filtered) o.label_selector = filter;
    if (resync) o.resync_period = options.sync_period;
    o.keep = keep;
    o.packed = per_machine;
    if (per_machine) {
      o.indexers = {{kube::LabelIndexName(cluster_label), kube::IndexByLabel(cluster_label)}};
    }
    return std::make_shared<kube::Informer>(mgmt, std::move(o));
  };
  ctx.harvester_clusters =
      informer(api::ResourceOf(api::Kind::kHarvesterCluster), true, /*resync=*/true);
  ctx.harvester_machines = informer(api::ResourceOf(api::Kind::kHarvesterMachine), true,
                                    /*resync=*/true, nullptr, /*per_machine=*/true);
  // Clusters and Machines at the newest version served: v1beta1 stops being
  // served in 2027, and v1beta2 keeps what CAPHV reads at the same paths.
  {
    auto group = mgmt->GetPath("/apis/" + std::string(kCapiGroup));
    impl->capi_version = CapiVersionServed(group.ok() ? *group : kube::Object());
  }
  kube::GroupVersionResource capi_clusters = kCapiClusters;
  kube::GroupVersionResource capi_machines = kCapiMachines;
  capi_clusters.version = capi_machines.version = impl->capi_version;
  ctx.publish_failure_domains = impl->capi_version == "v1beta2";
  ctx.clusters = informer(capi_clusters, true, false);
  ctx.machines = informer(capi_machines, true, false, &MachineFields(), /*per_machine=*/true);
  {
    kube::InformerOptions o;
    o.gvr = kube::resources::kSecrets;
    o.ns = options.watch_namespace;
    // Keys and resourceVersions only: never keep Secret data in memory.
    o.keep = &kube::PoolSecretFields();
    o.packed = true;
    ctx.secrets = std::make_shared<kube::Informer>(mgmt, std::move(o));
  }
  if (auto st = ctx.harvester_clusters->AddIndexers(
          {{kIdentityIndex,
            [](const Object& hc) -> std::vector<std::string> {
              const std::string ns = Str(hc, {"spec", "identitySecret", "namespace"});
              const std::string name = Str(hc, {"spec", "identitySecret", "name"});
              if (name.empty()) return {};
              return {ns + "/" + name};
            }}});
      !st.ok()) {
    return st;
  }
  kube::EventRecorderOptions ev;
  ev.component = "caphv-controller-manager";
  ctx.recorder = std::make_shared<kube::EventRecorder>(mgmt, ev);

  impl->cluster_reconciler = std::make_unique<HarvesterClusterReconciler>(ctx);
  impl->machine_reconciler = std::make_unique<HarvesterMachineReconciler>(ctx);
  kube::Controller::Options co;
  co.name = "harvestercluster";
  co.max_concurrent_reconciles = std::max(1, options.concurrency / 2);
  co.cache_sync_timeout = options.cache_sync_timeout;
  auto* cr = impl->cluster_reconciler.get();
  impl->clusters = std::make_unique<kube::Controller>(
      std::move(co), [cr](const Request& r) { return cr->Reconcile(r); });
  kube::Controller::Options mo;
  mo.name = "harvestermachine";
  mo.max_concurrent_reconciles = std::max(1, options.concurrency);
  mo.cache_sync_timeout = options.cache_sync_timeout;
  auto* mr = impl->machine_reconciler.get();
  impl->machines = std::make_unique<kube::Controller>(
      std::move(mo), [mr](const Request& r) { return mr->Reconcile(r); });
  kube::Controller& clusters = *impl->clusters;
  kube::Controller& machines = *impl->machines;

  ConnectionCallbacks callbacks;
  callbacks.machine_event = [&machines](const Request& r) { machines.Enqueue(r); };
  callbacks.cluster_event = [&clusters](const Request& r) { clusters.Enqueue(r); };
  ctx.connections = std::make_shared<HarvesterConnections>(mgmt, ctx.secrets, callbacks);
  workload::WorkloadCallbacks wc;
  // CAPHV names a machine's Node after its HarvesterMachine.
  wc.node_event = [&machines](const std::string& ns, const std::string&, const std::string& node) {
    machines.Enqueue({ns, node});
  };
  wc.wake = [&machines](const Request& r) { machines.Enqueue(r); };
  ctx.workloads = std::make_shared<workload::WorkloadClusters>(mgmt, ctx.secrets, wc);

  auto labelled = [cluster_label](const std::shared_ptr<kube::Informer>& target,
                                  bool from_cluster) {
    return [target, cluster_label, from_cluster](const Object& o) -> std::vector<Request> {
      std::string cluster = from_cluster ? kube::NameOf(o) : std::string();
      if (!from_cluster) {
        if (auto meta = o.find("metadata"); meta != o.end() && meta->contains("labels")) {
          cluster = (*meta)["labels"].value(cluster_label, "");
        }
      }
      if (cluster.empty()) return {};
      // Keys from the label index: nothing decoded for a cluster's every
      // machine.
      return Requests(
          target->store().KeysByLabels(kube::NamespaceOf(o), {{cluster_label, cluster}}));
    };
  };

  // HarvesterCluster watches.
  clusters.For(ctx.harvester_clusters);
  clusters.Watch(ctx.clusters, InfrastructureRefOf("HarvesterCluster"), ClusterFieldsChanged());
  auto hcs = ctx.harvester_clusters;
  clusters.Watch(ctx.secrets, [hcs](const Object& secret) {
    auto found = hcs->store().IndexKeys(kIdentityIndex, kube::KeyOf(secret));
    return found.ok() ? Requests(*found) : std::vector<Request>{};
  });
  kube::Predicates deletions;
  deletions.create = [](const Object&) { return false; };
  deletions.update = [](const Object&, const Object&) { return false; };
  clusters.Watch(ctx.harvester_machines, labelled(ctx.harvester_clusters, false), deletions);

  // HarvesterMachine watches. The reconciler is the only writer of a
  // HarvesterMachine's status and folds each write into its observation, so
  // its own status writes bring it no reconcile (a status another writer
  // changes is rewritten at the next one).
  machines.For(ctx.harvester_machines, kube::IgnoreStatusOnlyChanges());
  machines.Watch(ctx.machines, InfrastructureRefOf("HarvesterMachine"), MachineFieldsChanged());
  machines.Watch(ctx.clusters, labelled(ctx.harvester_machines, true), ClusterFieldsChanged());
  // A machine reads its HarvesterCluster's spec; readiness comes through
  // the Cluster.
  machines.Watch(ctx.harvester_clusters, labelled(ctx.harvester_machines, false),
                 kube::GenerationChanged());
  return std::unique_ptr<Controllers>(new Controllers(std::move(impl)));
}

kube::Status Controllers::StartCaches(std::stop_token stop) {
  const auto informers = impl_->Informers();
  for (const auto& i : informers) i->Start();
  for (const auto& i : informers) {
    if (!i->WaitForSync(impl_->options.cache_sync_timeout, stop)) {
      if (stop.stop_requested()) return {kube::StatusCode::kCancelled, "stopped"};
      return {kube::StatusCode::kUnavailable,
              "the cache of " + i->options().gvr.resource + " did not sync within " +
                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                     impl_->options.cache_sync_timeout)
                                     .count()) +
                  "s"};
    }
  }
  impl_->synced.store(true);
  return kube::Status::Ok();
}

bool Controllers::CachesSynced() const { return impl_->synced.load(); }

kube::Status Controllers::Run(std::stop_token leading) {
  Context& ctx = impl_->ctx;
  auto log = kube::log::Root().WithName("controllers");
  log.Info("Starting controllers", {{"managementClusterId", ctx.management_cluster_id},
                                    {"namespace", impl_->options.watch_namespace},
                                    {"clusterAPIVersion", impl_->capi_version}});
  kube::Status cluster_status, machine_status;
  // The controllers stop when leading ends, or when the sweeper finds a newer
  // Cluster API version served (then the manager exits so that it restarts).
  std::stop_source running;
  std::stop_callback forward(leading, [&running] { running.request_stop(); });
  std::string newer;
  {
    // Exceptions never cross a thread top: logged, and the controller fails.
    auto guarded = [&log](const char* what, const std::function<kube::Status()>& body) {
      try {
        return body();
      } catch (const std::exception& e) {
        log.Error(kube::Status(kube::StatusCode::kInternal, e.what()), "Thread failed",
                  {{"thread", what}});
        return kube::Status(kube::StatusCode::kInternal, std::string(what) + ": " + e.what());
      }
    };
    std::jthread a([&] {
      cluster_status =
          guarded("harvestercluster", [&] { return impl_->clusters->Run(running.get_token()); });
    });
    std::jthread b([&] {
      machine_status =
          guarded("harvestermachine", [&] { return impl_->machines->Run(running.get_token()); });
    });
    std::jthread sweeper([&] {
      (void)guarded("sweeper", [&] {
        newer = impl_->SweepUntil(running.get_token());
        if (!newer.empty()) {
          log.Info(
              "Cluster API now serves a newer version; restarting to read Clusters and "
              "Machines at it",
              {{"clusterAPIVersion", newer}, {"reading", impl_->capi_version}});
          running.request_stop();
        }
        return kube::Status::Ok();
      });
    });
  }
  ctx.connections->Stop();
  ctx.workloads->Stop();
  ctx.recorder->Shutdown(std::chrono::seconds(2));
  if (leading.stop_requested()) return kube::Status::Ok();
  if (!newer.empty()) {
    return {kube::StatusCode::kUnavailable, "Cluster API now serves cluster.x-k8s.io/" + newer +
                                                " (read at " + impl_->capi_version +
                                                " since the start); exiting so that the restarted "
                                                "manager reads it"};
  }
  return !cluster_status.ok() ? cluster_status : machine_status;
}

}  // namespace caphv::controllers
