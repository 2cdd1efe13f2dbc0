// File: sim/vm_controller.h
//
// VmController: KubeVirt's virt-controller for the simulator, with what the
// storage does for a VM's disks.
//   - VirtualMachine -> VMI: Scheduling (sim/scheduling.h places it on a
//     Harvester host), then Running with its addresses (sim/addresses.h),
//     as the guest boots (SimOptions' boot and IP delays); VM status;
//   - disks (vm_volumes.cc): the PVCs of its volumeClaimTemplates (skipped
//     when their image is missing, as Harvester does), bound when their
//     storage class exists, else Pending with the PV controller's Warning;
//   - deletion: finalizer-driven, the VMI, the PVCs of
//     removedPersistentVolumeClaims, then the guest (sim/guests.h).
// Every reconcile drives the VM's guest (Guests::Sync).
//
// Thread safety: Reconcile() from the controller's workers; the boot clocks
// have their own mutex.

#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kube/controller.h"
#include "sim/addresses.h"
#include "sim/context.h"
#include "sim/guests.h"
#include "sim/kubevirt.h"
#include "sim/scheduling.h"

namespace caphv::sim {

// A VM's cloud-init network data: inline, or from its Secret (NotFound while
// the Secret is not there; "" when it has none).
kube::StatusOr<std::string> ReadNetworkData(kube::Client& harvester, const kube::Object& vm);

class VmController {
 public:
  VmController(SimContext& ctx, VmAddresses& addresses, Guests& guests)
      : ctx_(ctx), addresses_(addresses), guests_(guests) {}

  // The controller with every watch it has.
  std::unique_ptr<kube::Controller> Build();
  kube::Result Reconcile(const kube::Request& req);

 private:
  kube::Result Delete(const std::string& key, const kube::Object* vm);
  // Creates the VM's PVCs from its claim templates (skipping those whose
  // image is missing) and binds those whose storage class exists (for an
  // image disk: the image's class). nullopt when every volume is bound;
  // else why the VM cannot start.
  kube::StatusOr<std::optional<VolumeWait>> EnsureClaims(const kube::Object& vm);
  // The Harvester host (the Harvester cluster's Nodes) `vm` runs on: the
  // one its VMI is on, else the scheduler's choice.
  Placement PlacementOf(const kube::Object& vm, const kube::Object* vmi) const;
  // How long ago the VM's guest started booting (zero when it wants to stop).
  std::chrono::milliseconds SinceStart(const kube::Object& vm, const kube::Object* vmi);
  // The VMI's finalizers go (its pod is gone).
  kube::Status ReleaseVmi(const kube::Object& vmi);

  SimContext& ctx_;
  VmAddresses& addresses_;
  Guests& guests_;

  std::mutex mu_;
  std::map<std::string, std::chrono::steady_clock::time_point> started_;  // vm uid -> boot
};

}  // namespace caphv::sim
