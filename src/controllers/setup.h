// File: controllers/setup.h
//
// Controllers: everything the HarvesterCluster and HarvesterMachine
// reconcilers share (informers over the management cluster, the Harvester
// and workload-cluster connections, the event recorder) and the two
// controllers themselves, in the two phases of a manager's life:
//
//   StartCaches(stop)  every process, before leader election: starts the
//                      management-cluster informers and waits (bounded by
//                      ControllerOptions::cache_sync_timeout) until they have
//                      synced, so a replica that wins the lease after a
//                      failover starts with warm caches. Returns an error
//                      when a cache did not sync in time (the manager then
//                      fails its readiness and exits).
//   Run(leading)       leader only: runs the workers until `leading` stops,
//                      then stops the Harvester/workload connections.
//
// Watches (events, never polling):
//   HarvesterCluster  <- itself; its Cluster; identity Secret changes
//                        (metadata-only cache, by an index on
//                        spec.identitySecret); HarvesterMachine deletions;
//                        its LoadBalancer and token Secret on Harvester; its
//                        connection becoming ready or failing.
//   HarvesterMachine  <- itself; its Machine (infrastructureRef); its
//                        Cluster and HarvesterCluster (by the cluster-name
//                        label); its VM, VMI and PVCs on Harvester; any
//                        IPPool change while it waits for an address; its
//                        Node in the workload cluster.
//
// Thread safety: New() once; StartCaches() then Run() once each, from any
// one thread; CachesSynced() from any thread.

#pragma once

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>

#include "kube/client.h"
#include "kube/status.h"

namespace caphv::controllers {

struct ControllerOptions {
  std::string watch_namespace;  // "" = all namespaces
  std::string watch_filter;     // cluster.x-k8s.io/watch-filter label value; "" = all
  int concurrency = 10;
  std::chrono::milliseconds sync_period{10 * 60 * 1000};
  std::chrono::milliseconds cache_sync_timeout{2 * 60 * 1000};
};

class Controllers {
 public:
  // Reads the management cluster's id (uid of kube-system) and builds the
  // informers and controllers; nothing is started yet.
  static kube::StatusOr<std::unique_ptr<Controllers>> New(std::shared_ptr<kube::Client> mgmt,
                                                          const ControllerOptions& options);
  ~Controllers();
  Controllers(const Controllers&) = delete;
  Controllers& operator=(const Controllers&) = delete;

  // Starts the informers and waits until they synced; kUnavailable naming the
  // resource that did not sync in time, kCancelled when `stop` came first.
  kube::Status StartCaches(std::stop_token stop);
  bool CachesSynced() const;

  // Runs the reconcilers until `leading` is stopped. Non-OK when a
  // controller could not run.
  kube::Status Run(std::stop_token leading);

 private:
  struct Impl;
  explicit Controllers(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace caphv::controllers
