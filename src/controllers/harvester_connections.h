// File: controllers/harvester_connections.h
//
// HarvesterConnections: the Harvester connections of the reconcilers, one per
// identity Secret ("<namespace>/<name>"), built in the background on a
// kube::SecretPool (as the workload clusters are, workload/workload_cluster.h)
// so that a reconcile never waits on a Harvester.
//
// Get(ns, name, waiter) answers at once:
//   - the Connection, when it is ready for the Secret's current
//     resourceVersion (read from the metadata-only Secret informer; "" when
//     the informer does not hold the Secret); while a changed Secret is being
//     rebuilt the previous Connection keeps being served;
//   - otherwise no connection, a reason and a message naming the identity
//     Secret and, once known, the Harvester endpoint:
//       Connecting                     first attempt under way
//       IdentitySecretUnavailable      the Secret cannot be read
//       MalformedIdentitySecret        no usable `kubeconfig` key
//       HarvesterAuthenticationFailed  401/403 from Harvester
//       NotHarvester                   no Deployment harvester-system/harvester
//       HarvesterConnectionFailed      unreachable, not Available, watches not synced
//       Stopped                        after Stop()
//     and retry_after: 0 while an attempt runs (the waiter is woken when it
//     ends: the reason is then that of the last failure, if any), else the
//     time until the next attempt may start (the caller requeues after it).
// The waiter is woken through ConnectionCallbacks: cluster_event for
// Waiter::Kind::kCluster, machine_event for kMachine; once per waiter and
// attempt outcome, and when its connection is swept.
//
// Building (on the pool's thread for that identity): GET the Secret (live),
// decode `kubeconfig`; when its bytes equal those of the connection already
// built, keep that connection (only new bytes rebuild); ConnectHarvester
// (short connect and request timeouts), then start the Connection's informers
// and wait for them to sync. A deleted identity Secret keeps an already-built
// connection usable, so a namespace being deleted can still clean its
// Harvester objects up. Failures back off 2 s doubling to 2 min; a change of
// the Secret (an informer event) starts a new attempt at once.
//
// Sweep(in_use) closes the connections of identities no HarvesterCluster uses
// any more (their informers stop); Stop() closes all.
//
// Thread safety: all methods are safe for concurrent use; callbacks are
// called from pool and informer threads and must only enqueue.

#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "controllers/harvester_connection.h"
#include "controllers/reconcile.h"
#include "kube/clock.h"
#include "kube/controller.h"
#include "kube/informer.h"
#include "kube/secret_pool.h"

namespace caphv::controllers {

struct Waiter {
  enum class Kind { kCluster, kMachine } kind;
  kube::Request request;
};

// `value`: the Connection, non-null iff ready; else the reason (see the
// banner), the message and the time until the next attempt.
using ConnectionLookup = kube::PoolAnswer<Connection>;

// A connection lookup as a planner sees it.
ConnectionView ViewOfConnection(const ConnectionLookup& lookup);

class HarvesterConnections {
 public:
  // `secrets`: the metadata-only Secret informer of the management cluster
  // (resourceVersions, change events); `mgmt` reads the Secret data.
  HarvesterConnections(std::shared_ptr<kube::Client> mgmt, std::shared_ptr<kube::Informer> secrets,
                       ConnectionCallbacks callbacks, kube::Clock* clock = nullptr);
  ~HarvesterConnections();
  HarvesterConnections(const HarvesterConnections&) = delete;
  HarvesterConnections& operator=(const HarvesterConnections&) = delete;

  // Never blocks on the network.
  ConnectionLookup Get(const std::string& ns, const std::string& name, const Waiter& waiter);
  // Closes the connections whose identity key ("<ns>/<name>") is not in use.
  void Sweep(const std::function<bool(const std::string& identity_key)>& in_use);
  // Closes every connection; Get() then answers Stopped. Idempotent.
  void Stop();

 private:
  kube::BuildResult<Connection> Build(const kube::BuildContext<Connection>& ctx);

  std::shared_ptr<kube::Client> mgmt_;
  ConnectionCallbacks callbacks_;
  kube::SecretPool<Connection> pool_;  // last: its builder and handler use the above
};

}  // namespace caphv::controllers
