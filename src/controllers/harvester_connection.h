// File: controllers/harvester_connection.h
//
// Connections to Harvester clusters, one per identity Secret (key
// `kubeconfig`), shared by the HarvesterCluster and HarvesterMachine
// reconcilers.
//
// A Connection holds a kube::Client for that Harvester and informers over
// the objects CAPHV creates there (selected by the managed-by label):
// VirtualMachines, VirtualMachineInstances, LoadBalancers and Secrets (token
// and cloud-init), plus every IPPool and every PersistentVolumeClaim
// (metadata only: PVCs are made by Harvester from the VM's claim templates
// and carry no CAPHV label). Events are mapped back, through the owner
// annotation CAPHV writes (harvester/resources.h kAnnotationOwner), to the
// object to reconcile:
//   VM, VMI (through its VM)              -> machine_event(owner)
//   Secret of type
//     kubernetes.io/service-account-token -> cluster_event(owner)  (cloud provider token)
//     any other type (cloud-init: Opaque) -> machine_event(owner)
//   LoadBalancer                          -> cluster_event(owner)
//   IPPool (any change)                   -> machine_event of each WaitForPool() waiter
//   PVC deleted                           -> machine_event of each WaitForDeletion() waiter
// So reconcilers read Harvester state from caches and never poll.
//
// The Harvester hosts (Nodes) are watched too, for failure domains
// (harvester/failure_domains.h): a change of the set of hosts or of a host's
// zone enqueues every HarvesterCluster that read them (WatchHosts). Their
// watch is best-effort: an identity without `list nodes` still connects.
//
// Memory: the Secret cache drops `data`/`stringData` except for
// service-account tokens (their token and ca.crt are read); the PVC cache
// keeps name, namespace, uid, labels, annotations, deletionTimestamp and
// resourceVersion only.
//
// Connections are built and cached by HarvesterConnections
// (controllers/harvester_connections.h), in the background: a reconcile
// never waits on a Harvester. ConnectHarvester checks that the target really
// is Harvester (Deployment harvester-system/harvester exists and is
// Available).
//
// Errors carry a PascalCase reason for the caller's condition:
// IdentitySecretUnavailable, MalformedIdentitySecret,
// HarvesterAuthenticationFailed, NotHarvester, HarvesterConnectionFailed.
// Their messages name the Harvester endpoint once it is known.
//
// Thread safety: all methods are safe for concurrent use.

#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harvester/failure_domains.h"
#include "kube/client.h"
#include "kube/controller.h"
#include "kube/credential_expiry.h"
#include "kube/field_mask.h"
#include "kube/informer.h"
#include "kube/status.h"

namespace caphv::controllers {

struct ConnectionCallbacks {
  // A VM, VMI or cloud-init Secret of this HarvesterMachine changed, an
  // IPPool changed while it waited for an address, or a PVC it waited for
  // is gone.
  std::function<void(const kube::Request&)> machine_event;
  // A LoadBalancer or token Secret of this HarvesterCluster changed.
  std::function<void(const kube::Request&)> cluster_event;
};

// Connect and request timeouts of the clients CAPHV uses for Harvester:
// short, so that a connection attempt to an unreachable Harvester ends soon
// and is retried on the backoff of HarvesterConnections.
inline constexpr std::chrono::seconds kHarvesterConnectTimeout{5};
inline constexpr std::chrono::seconds kHarvesterRequestTimeout{20};
// How long Start() waits for the informers to sync.
inline constexpr std::chrono::seconds kHarvesterSyncTimeout{30};

class Connection {
 public:
  Connection(std::shared_ptr<kube::Client> client, std::string kubeconfig,
             const ConnectionCallbacks& callbacks);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  kube::Client& client() { return *client_; }
  const std::string& server() const { return client_->config().server; }
  const std::string& kubeconfig() const { return kubeconfig_; }
  // When the identity's credentials expire, if they say so (set once, before
  // the connection is handed out).
  const std::optional<kube::CredentialExpiry>& identity_expiry() const { return identity_expiry_; }
  void set_identity_expiry(std::optional<kube::CredentialExpiry> e) {
    identity_expiry_ = std::move(e);
  }

  const kube::Store& vms() const { return vms_->store(); }
  const kube::Store& vmis() const { return vmis_->store(); }
  const kube::Store& load_balancers() const { return lbs_->store(); }
  // Every Secret labelled managed-by=caphv; data kept only for
  // service-account tokens.
  const kube::Store& secrets() const { return secrets_->store(); }
  // The same store as secrets(): look token Secrets up by name there.
  const kube::Store& token_secrets() const { return secrets_->store(); }
  const kube::Store& pools() const { return pools_->store(); }
  // Every PVC (metadata only).
  const kube::Store& pvcs() const { return pvcs_->store(); }
  // The disks of VM `ns`/`vm` (harvester::DiskOwnerOf).
  std::vector<kube::ObjectPtr> Disks(const std::string& ns, const std::string& vm) const;
  // The Harvester hosts (its Nodes, name and zone only) for failure-domain
  // discovery; nullopt until their watch has synced (an identity that may
  // not list Nodes never syncs it: the rest of the connection works).
  std::optional<std::vector<harvester::Host>> hosts() const;
  // `cluster` reads the hosts: a host added, removed or re-zoned enqueues it.
  void WatchHosts(const kube::Request& cluster);
  // `cluster` no longer reads them (it is being deleted).
  void UnwatchHosts(const kube::Request& cluster);

  // Starts the informers and waits for them to sync (bounded by
  // kHarvesterSyncTimeout); Cancelled when `stop` is requested first.
  kube::Status Start(const std::stop_token& stop);

  // Creates namespace `name` on Harvester unless this connection already
  // saw it exist.
  kube::Status EnsureNamespace(const std::string& name);
  // Forgets that `name` exists (after a write failed with NotFound).
  void ForgetNamespace(const std::string& name);

  // `machine` waits for an address; the next IPPool change enqueues it.
  void WaitForPool(const kube::Request& machine);

  // `machine` waits until PVC `pvc_key` ("<namespace>/<name>") is deleted;
  // its deletion enqueues it (at once when the cache no longer holds it).
  void WaitForDeletion(const std::string& pvc_key, const kube::Request& machine);

 private:
  void WakePoolWaiters();
  void WakeHostWatchers();
  void WakePvcWaiters(const std::string& pvc_key);
  std::vector<kube::Informer*> Informers() const;

  std::shared_ptr<kube::Client> client_;
  std::string kubeconfig_;
  std::optional<kube::CredentialExpiry> identity_expiry_;
  ConnectionCallbacks callbacks_;
  std::shared_ptr<kube::Informer> vms_, vmis_, lbs_, secrets_, pools_, pvcs_;
  // Not among Informers(): Start() does not wait for it.
  std::shared_ptr<kube::Informer> hosts_;
  std::mutex mu_;
  std::set<std::string> namespaces_;                          // guarded by mu_
  std::set<std::string> pool_waiters_;                        // request keys; guarded by mu_
  std::map<std::string, std::set<std::string>> pvc_waiters_;  // PVC key -> request keys; mu_
  std::set<std::string> host_watchers_;                       // cluster request keys; mu_
};

// What Connection's informers keep, exposed for tests.
// PVC: metadata.{name,namespace,uid,labels,annotations,deletionTimestamp,
// resourceVersion} (and apiVersion/kind) only.
const kube::FieldMask& PvcFields();
// Secret (a transform): drops data and stringData unless the type is
// kubernetes.io/service-account-token.
void CompactManagedSecret(kube::Object& secret);
// Node (a Harvester host): metadata.{name,resourceVersion} and the
// topology.kubernetes.io/zone label only.
const kube::FieldMask& HostFields();

// A connection failure with the reason to report.
struct ConnectionError {
  std::string reason;
  kube::Status status;
};

// Builds a client from kubeconfig bytes (with kHarvesterConnectTimeout and
// kHarvesterRequestTimeout) and checks that it talks to Harvester. Exposed
// for tests.
std::shared_ptr<kube::Client> ConnectHarvester(const std::string& kubeconfig,
                                               ConnectionError* error);

// When the credentials of `client` (connected with an identity kubeconfig)
// expire: a JWT's `exp`, a client certificate's notAfter, or a Rancher
// token's expiry read from Harvester (a failed read is logged and ignored).
std::optional<kube::CredentialExpiry> IdentityExpiry(kube::Client& client);

// The server of a kubeconfig ("" when it cannot be parsed).
std::string KubeconfigServer(const std::string& kubeconfig);

}  // namespace caphv::controllers
