// File: controllers/scope.h
//
// One reconcile's handles, shared by its observe, execute and report steps:
// ClusterScope for a HarvesterCluster (cluster_observe.cc, cluster_execute.cc,
// cluster_reconciler.cc), MachineScope for a HarvesterMachine
// (machine_observe.cc, machine_execute.cc, machine_reconciler.cc). Free types,
// so that the steps' files depend on them and not on the reconciler classes.
//
// Thread safety: owned by one reconcile.

#pragma once

#include <memory>
#include <string>

#include "api/harvester_machine.h"
#include "controllers/harvester_connection.h"
#include "kube/controller.h"
#include "kube/log.h"
#include "workload/workload_cluster.h"

namespace caphv::controllers {

struct ClusterScope {
  kube::Request req;
  kube::ObjectPtr object;            // the HarvesterCluster as last read or written
  std::shared_ptr<Connection> conn;  // set when the connection is ready
  kube::log::Logger log;
  std::string metrics_label;  // "<ns>/<Cluster name>"; "" without an owner
  bool finalizer_removed = false;
};

struct MachineScope {
  kube::Request req;
  kube::ObjectPtr object;
  api::HarvesterMachine hm;
  kube::log::Logger log;
  std::shared_ptr<Connection> conn;  // set once the Harvester connection is ready
  std::shared_ptr<workload::WorkloadCluster> workload;  // set when observed and ready
  bool finalizer_removed = false;
};

}  // namespace caphv::controllers
