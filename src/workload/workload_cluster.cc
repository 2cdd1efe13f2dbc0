// File: workload/workload_cluster.cc

#include "workload/workload_cluster.h"

#include <utility>
#include <vector>

#include "kube/base64.h"
#include "kube/config.h"
#include "kube/controller.h"
#include "kube/log.h"
#include "workload/etcd_member.h"

namespace caphv::workload {

namespace {

constexpr std::string_view kKubeconfigSuffix = "-kubeconfig";

kube::PoolOptions Options(kube::Clock* clock) {
  kube::PoolOptions o;
  o.name = "workload cluster cache";
  o.clock = clock;
  o.connecting_message = [](const std::string& key) {
    const auto slash = key.find('/');
    return "connecting to the workload cluster with the Secret " + key.substr(0, slash) + "/" +
           key.substr(slash + 1) + std::string(kKubeconfigSuffix);
  };
  return o;
}

}  // namespace

const kube::FieldMask& NodeFields() {
  static const kube::FieldMask mask({{"metadata", "name"},
                                     {"metadata", "uid"},
                                     {"metadata", "resourceVersion"},
                                     {"metadata", "creationTimestamp"},
                                     {"metadata", "deletionTimestamp"},
                                     {"metadata", "finalizers"},
                                     {"metadata", "labels", kEtcdRoleLabel},
                                     {"metadata", "annotations", kEtcdNodeNameAnnotation},
                                     {"metadata", "annotations", kEtcdRemoveAnnotation},
                                     {"metadata", "annotations", kEtcdRemovedNodeNameAnnotation},
                                     {"spec", "providerID"},
                                     {"spec", "taints"}});
  return mask;
}

kube::StatusOr<std::string> KubeconfigOf(const kube::Object& secret) {
  const kube::Object* value = nullptr;
  if (auto data = secret.find("data"); data != secret.end() && data->is_object()) {
    if (auto v = data->find("value"); v != data->end() && v->is_string()) value = &*v;
  }
  if (value == nullptr || value->get_ref<const std::string&>().empty()) {
    return kube::Status(kube::StatusCode::kInvalidArgument, "has no key `value`");
  }
  auto decoded = kube::Base64Decode(value->get_ref<const std::string&>());
  if (!decoded) {
    return kube::Status(kube::StatusCode::kInvalidArgument, "key `value` is not valid base64");
  }
  return *decoded;
}

kube::StatusOr<kube::RestConfig> WorkloadConfig(const std::string& kubeconfig) {
  auto config = kube::LoadInlineKubeconfig(kubeconfig);
  if (!config.ok()) return config.status();
  config->user_agent = "caphv-manager";
  config->connect_timeout = kWorkloadConnectTimeout;
  config->request_timeout = kWorkloadRequestTimeout;
  return config;
}

// ------------------------------------------------------------------ WorkloadCluster

WorkloadCluster::WorkloadCluster(std::shared_ptr<kube::Client> client, std::string kubeconfig,
                                 const std::function<void(const std::string& node)>& on_node)
    : client_(std::move(client)), kubeconfig_(std::move(kubeconfig)) {
  kube::InformerOptions o;
  o.gvr = kube::resources::kNodes;
  o.keep = &NodeFields();
  o.packed = true;  // a Node per machine
  // A heartbeat or any other change to what NodeFields() leaves out is
  // nothing the reconcilers read.
  o.drop_unchanged_updates = true;
  nodes_ = std::make_shared<kube::Informer>(client_, std::move(o));
  if (on_node) {
    kube::EventHandler h;
    h.on_add = [on_node](const kube::ObjectPtr& n, bool) { on_node(kube::NameOf(*n)); };
    h.on_update = [on_node](const kube::ObjectPtr&, const kube::ObjectPtr& n) {
      on_node(kube::NameOf(*n));
    };
    h.on_delete = [on_node](const kube::DeletedObject& d) {
      on_node(d.object ? kube::NameOf(*d.object) : d.key);
    };
    nodes_->AddEventHandler(std::move(h));
  }
}

WorkloadCluster::~WorkloadCluster() { nodes_->Stop(); }

void WorkloadCluster::Start() { nodes_->Start(); }

bool WorkloadCluster::WaitForSync(std::chrono::milliseconds timeout, std::stop_token stop) {
  return nodes_->WaitForSync(timeout, std::move(stop));
}

// ------------------------------------------------------------------ WorkloadClusters

WorkloadClusters::WorkloadClusters(std::shared_ptr<kube::Client> mgmt,
                                   std::shared_ptr<kube::Informer> secrets,
                                   WorkloadCallbacks callbacks, kube::Clock* clock)
    : mgmt_(std::move(mgmt)),
      callbacks_(std::move(callbacks)),
      pool_(
          std::move(secrets),
          [](const kube::Object& secret) {
            const std::string name = kube::NameOf(secret);
            if (name.size() <= kKubeconfigSuffix.size() || !name.ends_with(kKubeconfigSuffix)) {
              return std::string();
            }
            return kube::NamespaceOf(secret) + "/" +
                   name.substr(0, name.size() - kKubeconfigSuffix.size());
          },
          [this](const kube::BuildContext<WorkloadCluster>& ctx) { return Build(ctx); },
          Options(clock),
          [this](const std::string& key, bool deleted) { OnSecret(key, deleted); }) {}

WorkloadClusters::~WorkloadClusters() { Stop(); }

void WorkloadClusters::Stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    no_secret_.clear();
  }
  pool_.Stop();
}

void WorkloadClusters::OnSecret(const std::string& cluster_key, bool deleted) {
  if (deleted) return;
  std::set<std::string> wake;
  {
    std::lock_guard lock(mu_);
    if (auto it = no_secret_.find(cluster_key); it != no_secret_.end()) {
      wake.swap(it->second);
      no_secret_.erase(it);
    }
  }
  if (callbacks_.wake) {
    for (const auto& w : wake) callbacks_.wake(kube::Request::FromKey(w));
  }
}

WorkloadLookup WorkloadClusters::Get(const std::string& ns, const std::string& cluster,
                                     const kube::Request& waiter) {
  const std::string key = ns + "/" + cluster;
  const std::string secret_name = cluster + std::string(kKubeconfigSuffix);
  {
    // Under mu_ so that OnSecret (which runs after the store is updated)
    // cannot slip between this read and the registration below.
    std::lock_guard lock(mu_);
    if (stopped_) {
      return {nullptr, std::string(kube::kPoolReasonStopped),
              "the workload cluster cache is stopped", std::chrono::milliseconds(0)};
    }
    if (!pool_.SecretKnown(ns, secret_name) && !pool_.Contains(key)) {
      no_secret_[key].insert(waiter.Key());
      return {nullptr, "KubeconfigSecretUnavailable",
              "the Secret " + ns + "/" + secret_name + " does not exist yet",
              std::chrono::milliseconds(0)};
    }
  }
  kube::PoolWaiter w;
  w.id = waiter.Key();
  w.notify = [wake = callbacks_.wake, waiter] {
    if (wake) wake(waiter);
  };
  return pool_.Get(key, ns, secret_name, w);
}

void WorkloadClusters::Sweep(const std::function<bool(const std::string&)>& in_use) {
  {
    std::lock_guard lock(mu_);
    std::erase_if(no_secret_, [&](const auto& kv) { return !in_use(kv.first); });
  }
  pool_.Sweep(in_use);
}

kube::BuildResult<WorkloadCluster> WorkloadClusters::Build(
    const kube::BuildContext<WorkloadCluster>& ctx) {
  using Result = kube::BuildResult<WorkloadCluster>;
  const auto slash = ctx.key.find('/');
  const std::string ns = ctx.key.substr(0, slash);
  const std::string cluster = ctx.key.substr(slash + 1);
  const std::string secret_name = cluster + std::string(kKubeconfigSuffix);
  const std::string secret_ref = "the Secret " + ns + "/" + secret_name;
  ctx.SetProgress("connecting to the workload cluster with " + secret_ref);

  auto secret = mgmt_->Get(kube::resources::kSecrets, ns, secret_name);
  if (!secret.ok() && secret.status().IsNotFound() && ctx.previous) {
    return Result::KeepPrevious();  // the Cluster is being deleted
  }
  if (!secret.ok()) {
    return Result::Failed("KubeconfigSecretUnavailable",
                          "cannot read " + secret_ref + ": " + secret.status().message());
  }
  auto kubeconfig = KubeconfigOf(*secret);
  if (!kubeconfig.ok()) {
    return Result::Failed("MalformedKubeconfig", secret_ref + " " + kubeconfig.status().message());
  }
  if (ctx.previous && ctx.previous->kubeconfig() == *kubeconfig) return Result::KeepPrevious();
  auto config = WorkloadConfig(*kubeconfig);
  if (!config.ok()) {
    return Result::Failed("MalformedKubeconfig",
                          secret_ref + " holds no usable kubeconfig: " + config.status().message());
  }
  auto client = kube::Client::New(std::move(config).value());
  if (!client.ok()) {
    return Result::Failed("MalformedKubeconfig", secret_ref + ": " + client.status().message());
  }
  auto on_node = [node_event = callbacks_.node_event, ns, cluster](const std::string& node) {
    if (node_event) node_event(ns, cluster, node);
  };
  auto wc = std::make_shared<WorkloadCluster>(*client, std::move(kubeconfig).value(), on_node);
  wc->Start();
  // Ready once the Nodes are listed, as a Harvester connection is once its
  // caches are: a reader of an empty cache would take "no Node" for an
  // answer (a control-plane machine's deletion would skip its etcd member
  // and leave its Node's finalizer behind).
  ctx.SetProgress("listing the Nodes of the workload cluster at " + wc->server());
  if (!wc->WaitForSync(kWorkloadSyncTimeout, ctx.stop)) {
    if (ctx.stop.stop_requested()) return Result::Failed("Stopped", "stopped");
    return Result::Failed("WorkloadNodesNotSynced",
                          "the watch on the Nodes of the workload cluster at " + wc->server() +
                              " did not sync in " + std::to_string(kWorkloadSyncTimeout.count()) +
                              "s");
  }
  kube::log::Root()
      .WithName("workload")
      .Info("Watching the Nodes of a workload cluster",
            {{"cluster", ctx.key}, {"server", wc->server()}});
  return Result::Ready(std::move(wc));
}

}  // namespace caphv::workload
