// File: controllers/machine/machine_reconciler.h
//
// HarvesterMachineReconciler: the Cluster API InfraMachine side of CAPHV, one
// Harvester VM per HarvesterMachine. A reconcile is
//
//   observe  (machine_observe.cc)  the caches of the management cluster, of
//            the machine's Harvester connection and of its workload cluster,
//            into a MachineObservation; no network call;
//   plan     (machine_plan.h)      the pure planner picks the next action and
//            the conditions;
//   execute  (machine_execute.cc)  one API call per action, its result folded
//            into the observation, then plan again (bounded by kMaxSteps);
//   report                          the status once (server-side apply, field
//            manager caphv), Warning Events of condition transitions, the
//            caphv_machine_* metrics, and the waits the plan asked for (the
//            next IPPool change, a PVC's deletion).
//
// A failed action sets the condition of its step (reason PascalCase, message
// with the API's answer) and returns the error, so the key is retried with
// backoff.
//
// Thread safety: Reconcile() may run concurrently for different keys.

#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controllers/context.h"
#include "controllers/decoded_cache.h"
#include "controllers/machine/machine_plan.h"
#include "controllers/scope.h"
#include "kube/controller.h"

namespace caphv::controllers {

class HarvesterMachineReconciler {
 public:
  explicit HarvesterMachineReconciler(Context& ctx)
      : ctx_(ctx), status_hold_(kube::Clock::Real()) {}
  kube::Result Reconcile(const kube::Request& req);

 private:
  MachineObservation Observe(MachineScope& r);
  void ObserveHarvester(MachineScope& r, MachineObservation& o);
  void ObserveWorkload(MachineScope& r, MachineObservation& o);
  // Performs `action`; on success its result is folded into `o`.
  kube::Status Execute(MachineScope& r, const MachineAction& action, MachineObservation& o);
  kube::Status ReadCreationInputs(MachineScope& r, MachineObservation& o);
  kube::Status WritePool(MachineScope& r, const MachineAction& action, MachineObservation& o);
  kube::Status CreateOrAdopt(MachineScope& r, const MachineAction& action, MachineObservation& o);
  kube::Status InitializeNode(MachineScope& r, const MachineAction& action, MachineObservation& o);
  kube::Status PatchEtcdNode(MachineScope& r, const MachineAction& action, MachineObservation& o);
  kube::Result Report(MachineScope& r, const MachineObservation& o, MachinePlan plan,
                      const MachineAction* failed, const kube::Status& error);
  void Emit(MachineScope& r, const EventNote& e) { EmitEvent(ctx_.recorder.get(), *r.object, e); }
  void RecordOwnWrite(MachineScope& r, kube::Object written);
  // What this process did for a deleting machine, remembered until the
  // machine leaves the cache, because the caches show it only when the watch
  // events arrive and a reconcile may come first (another event of the
  // machine): each of these writes is final, so none is repeated.
  struct DeletionMemo {
    bool vm_delete_sent = false;     // the VM's DELETE was answered
    bool vm_gone = false;            // a live read found no VM
    bool finalizer_removed = false;  // the finalizer's removal was answered
  };
  // Applies what this process remembers of the machine (its DeletionMemo,
  // nodes_initialized_) to its observation.
  void Recall(MachineObservation& o);
  // Updates the memo of a deleting machine (no-op otherwise).
  void RememberDeletion(const MachineObservation& o, void (*mark)(DeletionMemo&));
  void ConfirmVmGone(MachineObservation& o);

  Context& ctx_;
  std::mutex mu_;
  std::map<std::string, std::string> cluster_of_;  // machine key -> "<ns>/<cluster>" (metrics)
  std::map<std::string, DeletionMemo> deletions_;  // by "<machine key>/<uid>"
  // "<machine key>/<uid>" of machines whose Node this process initialised:
  // the NodeInitialized reason a held status reports later (not kept across
  // a restart, after which the condition, once written, is final anyway).
  std::set<std::string> nodes_initialized_;
  StatusHold status_hold_;
  // The HarvesterClusters every machine of a cluster reads at each reconcile.
  DecodedCache<api::HarvesterCluster> harvester_clusters_;
};

}  // namespace caphv::controllers
