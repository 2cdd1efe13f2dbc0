// File: controllers/harvester_connection.h
//
// Connections to Harvester clusters, one per identity Secret (key
// `kubeconfig`), shared by the HarvesterCluster and HarvesterMachine
// reconcilers.
//
// A Connection holds a kube::Client for that Harvester and informers over
// the objects CAPHV creates there (selected by the managed-by label):
// VirtualMachines, VirtualMachineInstances, LoadBalancers, service-account
// token Secrets, plus every IPPool. Their events are mapped back, through the
// owner annotation CAPHV writes (harvester/resources.h kAnnotationOwner), to
// the HarvesterMachine or HarvesterCluster to reconcile; IPPool changes wake
// the machines waiting for a free address. So reconcilers read Harvester
// state from caches and never poll.
//
// The cache is keyed by the Secret's namespace/name. Get() compares the
// Secret's resourceVersion (from the caller's metadata-only Secret informer)
// with the one the connection was built from; when it changed and the
// kubeconfig bytes changed too, the connection is rebuilt (old informers
// stopped). Building checks that the target really is Harvester (Deployment
// harvester-system/harvester exists and is Available). When the Secret is
// deleted, the connection already built from it stays usable (so a
// namespace being deleted can still clean its Harvester objects up).
//
// Errors carry a PascalCase reason for the caller's condition:
// IdentitySecretUnavailable, MalformedIdentitySecret,
// HarvesterAuthenticationFailed, NotHarvester, HarvesterConnectionFailed.
//
// Thread safety: all methods are safe for concurrent use. Building a
// connection holds the cache lock (at most one build at a time).

#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "kube/client.h"
#include "kube/controller.h"
#include "kube/informer.h"
#include "kube/status.h"

namespace caphv::controllers {

struct ConnectionCallbacks {
  // A VM or VMI of this HarvesterMachine changed.
  std::function<void(const kube::Request&)> machine_event;
  // A LoadBalancer or token Secret of this HarvesterCluster changed.
  std::function<void(const kube::Request&)> cluster_event;
};

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

  const kube::Store& vms() const { return vms_->store(); }
  const kube::Store& vmis() const { return vmis_->store(); }
  const kube::Store& load_balancers() const { return lbs_->store(); }
  const kube::Store& token_secrets() const { return secrets_->store(); }
  const kube::Store& pools() const { return pools_->store(); }

  // Starts the informers and waits for them to sync (bounded).
  kube::Status Start(std::stop_token stop);

  // Creates namespace `name` on Harvester unless this connection already
  // saw it exist.
  kube::Status EnsureNamespace(const std::string& name);
  // Forgets that `name` exists (after a write failed with NotFound).
  void ForgetNamespace(const std::string& name);

  // `machine` waits for an address; the next IPPool change enqueues it.
  void WaitForPool(const kube::Request& machine);

 private:
  void WakePoolWaiters();

  std::shared_ptr<kube::Client> client_;
  std::string kubeconfig_;
  ConnectionCallbacks callbacks_;
  std::shared_ptr<kube::Informer> vms_, vmis_, lbs_, secrets_, pools_;
  std::mutex mu_;
  std::set<std::string> namespaces_;    // guarded by mu_
  std::set<std::string> pool_waiters_;  // request keys; guarded by mu_
};

// A connection failure with the reason to report.
struct ConnectionError {
  std::string reason;
  kube::Status status;
};

class ConnectionCache {
 public:
  // `secrets` is a metadata-only informer over the management cluster's
  // Secrets (for resourceVersions); `mgmt` reads the Secret data.
  ConnectionCache(std::shared_ptr<kube::Client> mgmt, std::shared_ptr<kube::Informer> secrets,
                  ConnectionCallbacks callbacks);
  ~ConnectionCache();

  // The connection of identity Secret `ns/name`; nullptr with `error` set on
  // failure.
  std::shared_ptr<Connection> Get(const std::string& ns, const std::string& name,
                                  ConnectionError* error, std::stop_token stop = {});

  // Stops every connection's informers.
  void Stop();

 private:
  struct Entry {
    std::string resource_version;
    std::shared_ptr<Connection> connection;
  };
  std::shared_ptr<kube::Client> mgmt_;
  std::shared_ptr<kube::Informer> secrets_;
  ConnectionCallbacks callbacks_;
  std::mutex mu_;
  std::map<std::string, Entry> entries_;  // guarded by mu_
};

// Builds a client from kubeconfig bytes and checks that it talks to
// Harvester. Exposed for tests.
std::shared_ptr<kube::Client> ConnectHarvester(const std::string& kubeconfig,
                                               ConnectionError* error);

}  // namespace caphv::controllers
