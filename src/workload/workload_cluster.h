// File: workload/workload_cluster.h
//
// Access to the workload clusters CAPHV provisions, for everything done
// inside them (today: watching their Nodes, so that a HarvesterMachine learns
// that its Node registered without polling).
//
// WorkloadCluster: a kube::Client for one workload cluster plus an informer
// over its Nodes. The Node cache keeps only what CAPHV reads (NodeFields()). Every Node event (add,
// including the initial list, update and delete) calls `on_node(node name)`.
//
// WorkloadClusters: one WorkloadCluster per CAPI Cluster ("<ns>/<cluster>"),
// built in the background on a kube::SecretPool (as the Harvester
// connections are, controllers/harvester_connections.h) from the management
// Secret `<cluster>-kubeconfig` (key `value`), versioned by that Secret's
// resourceVersion in the metadata-only Secret informer. Get() never blocks:
//   - the WorkloadCluster once built (its client exists and its Node
//     informer runs). Being built does not mean the workload apiserver
//     answers: synced() says whether the Node cache is complete; when it
//     becomes complete every Node is announced through node_event, and the
//     informer keeps retrying (with its own backoff) while the apiserver is
//     unreachable, so nobody needs to poll;
//   - or no cluster, with a reason and a message naming the Secret:
//       KubeconfigSecretUnavailable  the Secret does not exist (yet) or
//                                    cannot be read
//       MalformedKubeconfig          no usable kubeconfig under `value`
//       Connecting                   being built
//       Stopped                      after Stop()
//     and retry_after (0: the waiter is woken by the next outcome, or when
//     the Secret appears; > 0: requeue after it).
// While the Secret does not exist nothing is built or read: the waiter is
// woken when the Secret appears. A changed Secret rebuilds the cluster only
// when its kubeconfig bytes changed; a deleted Secret keeps the cluster built
// from it (its Cluster is being deleted; Sweep closes it).
//
// Thread safety: all methods are safe for concurrent use; callbacks are
// called from pool and informer threads and must only enqueue.

#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stop_token>
#include <string>

#include "kube/client.h"
#include "kube/clock.h"
#include "kube/controller.h"
#include "kube/field_mask.h"
#include "kube/informer.h"
#include "kube/secret_pool.h"
#include "kube/status.h"

namespace caphv::workload {

// Connect and request timeouts of the workload clients.
inline constexpr std::chrono::seconds kWorkloadConnectTimeout{5};
inline constexpr std::chrono::seconds kWorkloadRequestTimeout{20};
// How long a new connection waits for its Node cache to sync before it is
// answered ready (an empty cache is not "no Node").
inline constexpr std::chrono::seconds kWorkloadSyncTimeout{30};

// What the Node cache keeps of a Node: what CAPHV reads (node initialisation, etcd membership):
// its name, uid, resourceVersion, deletionTimestamp and finalizers, the
// etcd role label and RKE2's three etcd annotations, spec.providerID and
// spec.taints. Its status, and the labels and annotations the kubelet, RKE2
// and others write, are dropped: they are most of a Node.
const kube::FieldMask& NodeFields();

// The kubeconfig in a `<cluster>-kubeconfig` Secret (data.value, base64);
// InvalidArgument when absent or undecodable.
kube::StatusOr<std::string> KubeconfigOf(const kube::Object& secret);

// A client config from kubeconfig bytes with the workload timeouts.
kube::StatusOr<kube::RestConfig> WorkloadConfig(const std::string& kubeconfig);

class WorkloadCluster {
 public:
  WorkloadCluster(std::shared_ptr<kube::Client> client, std::string kubeconfig,
                  const std::function<void(const std::string& node)>& on_node);
  ~WorkloadCluster();  // stops the informer
  WorkloadCluster(const WorkloadCluster&) = delete;
  WorkloadCluster& operator=(const WorkloadCluster&) = delete;

  kube::Client& client() { return *client_; }
  const std::string& server() const { return client_->config().server; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  const kube::Store& nodes() const { return nodes_->store(); }
  bool synced() const { return nodes_->HasSynced(); }

  // Starts the Node informer (non-blocking; idempotent).
  void Start();
  // Waits (real time) until the Node cache synced, `timeout` passed or `stop`.
  bool WaitForSync(std::chrono::milliseconds timeout, std::stop_token stop = {});

 private:
  std::shared_ptr<kube::Client> client_;
  std::string kubeconfig_;
  std::shared_ptr<kube::Informer> nodes_;
};

struct WorkloadCallbacks {
  // A Node of workload cluster `cluster` (in management namespace `ns`)
  // changed; CAPHV names a machine's Node after its HarvesterMachine.
  std::function<void(const std::string& ns, const std::string& cluster, const std::string& node)>
      node_event;
  // Wakes a waiter registered by Get().
  std::function<void(const kube::Request& waiter)> wake;
};

// `value`: the WorkloadCluster, non-null iff built; else the reason (see the
// banner), the message and when to come back.
using WorkloadLookup = kube::PoolAnswer<WorkloadCluster>;

class WorkloadClusters {
 public:
  // `secrets`: the metadata-only Secret informer of the management cluster;
  // `mgmt` reads the kubeconfig Secrets.
  WorkloadClusters(std::shared_ptr<kube::Client> mgmt, std::shared_ptr<kube::Informer> secrets,
                   WorkloadCallbacks callbacks, kube::Clock* clock = nullptr);
  ~WorkloadClusters();
  WorkloadClusters(const WorkloadClusters&) = delete;
  WorkloadClusters& operator=(const WorkloadClusters&) = delete;

  // The workload cluster of CAPI Cluster `ns/cluster`; `waiter` is woken
  // (through callbacks.wake) when it is not ready yet and that changes.
  WorkloadLookup Get(const std::string& ns, const std::string& cluster,
                     const kube::Request& waiter);
  // Closes the clusters whose key ("<ns>/<cluster>") is not in use.
  void Sweep(const std::function<bool(const std::string& cluster_key)>& in_use);
  // Closes every cluster; Get() then answers Stopped. Idempotent.
  void Stop();

 private:
  kube::BuildResult<WorkloadCluster> Build(const kube::BuildContext<WorkloadCluster>& ctx);
  // A `<cluster>-kubeconfig` Secret appeared, changed or went: wakes who
  // waited for it to exist.
  void OnSecret(const std::string& cluster_key, bool deleted);

  std::shared_ptr<kube::Client> mgmt_;
  WorkloadCallbacks callbacks_;
  std::mutex mu_;
  bool stopped_ = false;                                    // guarded by mu_
  std::map<std::string, std::set<std::string>> no_secret_;  // cluster key -> waiters; mu_
  kube::SecretPool<WorkloadCluster> pool_;  // last: its builder and handler use the above
};

}  // namespace caphv::workload
