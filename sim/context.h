// File: sim/context.h
//
// SimContext: what every controller the simulator plays shares, as a
// controller manager shares its clients and caches: the Harvester and
// workload clients, the options, one informer per kind read, the Harvester
// event recorder, the namespace scope and the fault injector. The
// controllers (sim/vm_controller.h, sim/guests.h, sim/lb_controller.h,
// sim/status_controllers.h) each own their own state and lock; the context
// holds none of theirs.
//
// Thread safety: the members are set in the constructor and not replaced;
// informers, clients and the recorder are thread-safe; Fault() locks its own
// generator.

#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "kube/client.h"
#include "kube/controller.h"
#include "kube/events.h"
#include "kube/informer.h"
#include "kube/log.h"
#include "sim/env.h"
#include "sim/etcd_members.h"

namespace caphv::sim {

inline constexpr char kDedicatedLabel[] = "sim.caphv.io/dedicated";
// A test knob on a Harvester namespace: "true" makes its guests ignore
// qemu-guest-agent in their user data (as if a provider had left it out), so
// only an image that ships the agent reports addresses.
inline constexpr char kStripGuestAgentLabel[] = "sim.caphv.io/strip-guest-agent";

struct SimOptions {
  std::chrono::milliseconds boot_delay{0};
  std::chrono::milliseconds ip_delay{0};
  std::chrono::milliseconds provider_id_delay{300};
  double fault_rate = 0;  // probability that one of the simulator's writes fails
  bool cloud_provider = true;
  std::string ns;  // "" = all namespaces (minus dedicated ones)
  Environment env;
  // etcd of RKE2 servers (one process per member); no binary = none. With
  // it, each member's pod gets a kwok PortForward (kube-system/etcd-<node>)
  // to the member's client port.
  EtcdMembersOptions etcd;
};

// The informers the controllers read (Harvester's kinds, and the workload
// cluster's Nodes).
struct SimCaches {
  std::shared_ptr<kube::Informer> vms, vmis, pvcs, lbs, pools, images, nads, keypairs, namespaces,
      hosts,  // the Harvester cluster's Nodes
      services, storage_classes,
      nodes;  // the workload cluster's Nodes

  std::vector<std::shared_ptr<kube::Informer>> All() const;
};

class SimContext {
 public:
  SimContext(std::shared_ptr<kube::Client> harvester, std::shared_ptr<kube::Client> workload,
             SimOptions options);

  // True once every cache has synced.
  bool Synced() const;
  // With SimOptions::ns only that namespace; else every namespace not
  // labelled kDedicatedLabel=true.
  bool InScopeNs(const std::string& ns) const;
  bool InScope(const kube::Object& o) const;
  // Fails with probability fault_rate (the simulator's own write faults).
  kube::Status Fault(std::string_view what);

  const std::shared_ptr<kube::Client> h;  // Harvester
  const std::shared_ptr<kube::Client> w;  // the workload (guest) cluster
  const SimOptions opt;
  const kube::log::Logger log;
  kube::EventRecorder recorder;  // Events on Harvester objects
  SimCaches cache;

 private:
  std::mutex fault_mu_;
  std::mt19937_64 rng_;
};

// A controller of the simulator, "sim-<name>": `workers` workers, no metrics
// of its own.
std::unique_ptr<kube::Controller> NewSimController(const std::string& name, int workers,
                                                   kube::ReconcileFunc reconcile);

}  // namespace caphv::sim
