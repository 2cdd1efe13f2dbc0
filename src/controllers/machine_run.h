// File: controllers/machine_run.h
//
// The state of one HarvesterMachine reconcile shared by its observe, execute
// and report steps (machine_observe.cc, machine_execute.cc,
// machine_reconciler.cc). Private to the reconciler.
//
// Thread safety: owned by one reconcile.

#pragma once

#include <memory>

#include "api/harvester_machine.h"
#include "controllers/harvester_connection.h"
#include "controllers/machine_reconciler.h"
#include "kube/log.h"
#include "workload/workload_cluster.h"

namespace caphv::controllers {

struct HarvesterMachineReconciler::Run {
  kube::Request req;
  kube::ObjectPtr object;
  api::HarvesterMachine hm;
  kube::log::Logger log;
  std::shared_ptr<Connection> conn;  // set once the Harvester connection is ready
  std::shared_ptr<workload::WorkloadCluster> workload;  // set when observed and ready
  bool finalizer_removed = false;
};

}  // namespace caphv::controllers
