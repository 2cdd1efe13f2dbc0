// File: controllers/context.h
//
// What the reconcilers share: the management-cluster client, the informers
// over the management cluster (their caches are what reconcilers read), the
// Harvester connections and workload clusters (both built in the background:
// a lookup never blocks), the event recorder and the management cluster's id
// (the uid of its kube-system namespace; it makes Harvester owner ids unique
// across management clusters).
//
// Thread safety: the members are thread-safe objects; the struct is set up
// once before the controllers run.

#pragma once

#include <memory>
#include <string>

#include "controllers/harvester_connections.h"
#include "kube/client.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "workload/workload_cluster.h"

namespace caphv::controllers {

struct Context {
  std::shared_ptr<kube::Client> mgmt;
  std::shared_ptr<kube::Informer> harvester_clusters;
  std::shared_ptr<kube::Informer> harvester_machines;
  std::shared_ptr<kube::Informer> clusters;  // cluster.x-k8s.io Clusters
  std::shared_ptr<kube::Informer> machines;  // cluster.x-k8s.io Machines
  std::shared_ptr<kube::Informer> secrets;   // metadata only (data stripped)
  std::shared_ptr<HarvesterConnections> connections;
  std::shared_ptr<workload::WorkloadClusters> workloads;
  std::shared_ptr<kube::EventRecorder> recorder;
  std::string management_cluster_id;
  // Cluster API reads infrastructure clusters under the v1beta2 contract
  // (it serves cluster.x-k8s.io/v1beta2): status.failureDomains is published.
  // Under v1beta1 (v1.10) it would read that list as the v1beta1 map, fail,
  // and stop reconciling the Cluster.
  bool publish_failure_domains = false;
};

}  // namespace caphv::controllers
