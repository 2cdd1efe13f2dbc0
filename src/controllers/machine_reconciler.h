// File: controllers/machine_reconciler.h
//
// HarvesterMachineReconciler: the Cluster API InfraMachine side of CAPHV,
// one Harvester VM per HarvesterMachine.
//
// Normal path (each step returns early while it waits for an event; waiting
// never blocks deletion):
//   owner Machine -> pause -> finalizer -> the Cluster's infrastructure is
//   ready -> Machine.spec.bootstrap.dataSecretName is set -> Harvester
//   connection -> [IP from the cluster's pools, in order, adopting an
//   address this machine already holds] -> cloud-init Secret -> the
//   VirtualMachine (created once; an existing VM of this cluster with the
//   same name is adopted, never duplicated) -> spec.providerID =
//   harvester://<VM uid> -> addresses from the VMI -> ready -> until the
//   Machine has a nodeRef, condition NodeRegistered from the workload
//   cluster's Node (so Cluster API, which watches Nodes only after the
//   control plane is initialized, looks again when it appears).
// Delete path, strictly in this order: the VM (with its PVCs marked for
// removal) and wait until it is gone, its PVCs, the cloud-init Secret, then
// the IP goes back to its pool, then the finalizer.
//
// Pool exhaustion sets VMIPAllocated=False/VMIPPoolExhausted with an Event,
// and the machine is woken by the next change of any IPPool.
//
// Thread safety: Reconcile() may run concurrently for different keys.

#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "controllers/context.h"
#include "kube/controller.h"

namespace caphv::controllers {

class HarvesterMachineReconciler {
 public:
  explicit HarvesterMachineReconciler(Context& ctx) : ctx_(ctx) {}
  kube::Result Reconcile(const kube::Request& req);

 private:
  struct Scope;
  kube::Result ReconcileNormal(Scope& s);
  kube::Result ReconcileDelete(Scope& s);
  kube::Result AllocateAddress(Scope& s, bool* waiting);
  kube::Result CreateVm(Scope& s);
  kube::Result ReportVm(Scope& s, const kube::Object& vm);
  kube::Status ReleaseAddresses(Scope& s);
  bool Connect(Scope& s, kube::Result* wait);
  kube::Result CheckNode(Scope& s, const std::string& provider_id);
  // A client of the workload cluster from Secret <cluster>-kubeconfig.
  std::shared_ptr<kube::Client> WorkloadClient(Scope& s, std::string* error);
  void Emit(Scope& s, bool warning, std::string_view reason, const std::string& message);

  Context& ctx_;
  std::mutex mu_;
  std::map<std::string, std::string> cluster_of_;  // machine key -> "<ns>/<cluster>" (metrics)
  std::set<std::string> ready_seen_;               // uids whose creation time was observed
  // "<ns>/<cluster>-kubeconfig" -> (Secret resourceVersion, client)
  std::map<std::string, std::pair<std::string, std::shared_ptr<kube::Client>>> workload_clients_;
};

}  // namespace caphv::controllers
