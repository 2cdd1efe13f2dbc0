// File: controllers/setup.h
//
// RunControllers: builds the informers over the management cluster, the
// Harvester connection cache and the HarvesterCluster and HarvesterMachine
// controllers, and runs them until `stop`. This is the leader-only runnable
// caphv-manager starts once it leads.
//
// Watches (events, never polling):
//   HarvesterCluster  <- itself; its Cluster; identity Secret changes
//                        (metadata-only cache, by an index on
//                        spec.identitySecret); HarvesterMachine deletions;
//                        its LoadBalancer and token Secret on Harvester.
//   HarvesterMachine  <- itself; its Machine (infrastructureRef); its
//                        Cluster and HarvesterCluster (by the cluster-name
//                        label); its VM and VMI on Harvester; any IPPool
//                        change while it waits for an address.
//
// Thread safety: call once per process; blocks until `stop`.

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
};

kube::Status RunControllers(std::shared_ptr<kube::Client> mgmt, const ControllerOptions& options,
                            std::stop_token stop);

}  // namespace caphv::controllers
