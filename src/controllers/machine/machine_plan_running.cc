// File: controllers/machine/machine_plan_running.cc
//
// The planner's normal path once the VM exists (machine_planner.h): its state
// reported (providerID, the VMI's phase and addresses, ready), then its Node:
// registration, initialisation, the etcd Node's finalizer.

#include "controllers/machine/machine_planner.h"

namespace caphv::controllers {

void MachinePlanner::ReportVm(const VmView& vm) {
  const std::string provider_id = std::string(api::kProviderIDPrefix) + vm.uid;
  Mark(kMachineCreated, true, "MachineCreated", "");
  if (obs_.hm.spec.provider_id.empty()) {
    return Act(ActionKind::kSetProviderID, name_, provider_id);
  }
  if (obs_.hm.spec.provider_id != provider_id) {
    Mark(kVmProvisioningReady, false, "ProviderIDMismatch",
         "spec.providerID is " + obs_.hm.spec.provider_id + " but the VM is " + provider_id +
             " (the VM was replaced outside CAPHV)",
         true);
    return WaitForEvent("providerID mismatch");
  }
  if (vm.adopted && vm.running && !obs_.vmi && !obs_.vmi_adopted) {
    // An adopted VM's VMI started with the labels of whoever made it.
    return Act(ActionKind::kAdoptVmi, name_, {}, harvester::AdoptVmiPatch(OwnVmLabels()));
  }
  const std::string phase = obs_.vmi ? obs_.vmi->phase : std::string();
  if (phase == "Failed") {
    Mark(kVmProvisioningReady, false, "VMProvisioningFailed",
         "the VM " + ns_ + "/" + name_ + " failed", true);
    plan_.status.ready = false;
    return WaitForEvent("the VM failed");
  }
  if (phase != "Running") {
    std::string why = "waiting for the VM to run";
    if (!phase.empty()) why += " (phase " + phase + ")";
    if (vm.printable_status == "ErrorPvcNotFound" ||
        vm.printable_status == "WaitingForVolumeBinding") {
      // KubeVirt holds it for its volumes: a missing image, a storage
      // class that does not exist. Said, and looked at again.
      Mark(kVmProvisioningReady, false, "VMVolumesNotReady",
           "the VM " + ns_ + "/" + name_ + " does not start: " + vm.printable_status +
               (vm.not_synchronized.empty() ? std::string() : ": " + vm.not_synchronized),
           true);
      return WaitForEvent("the VM's volumes");
    }
    if (vm.printable_status == "ErrorUnschedulable") {
      // No Harvester host takes it (its failure domain, node affinity, or
      // cordoned hosts): said, and looked at again when KubeVirt says more.
      Mark(kVmProvisioningReady, false, "VMUnschedulable",
           "no Harvester host can run the VM " + ns_ + "/" + name_ +
               (failure_domain_.empty() ? std::string() : " in failure domain " + failure_domain_) +
               (vm.unschedulable.empty() ? std::string() : ": " + vm.unschedulable),
           true);
      return WaitForEvent("a Harvester host for the VM");
    }
    Mark(kVmProvisioningReady, false, "VMProvisioning", std::move(why));
    return WaitForEvent("the VM to run");
  }
  if (obs_.vmi->addresses.empty()) {
    std::string why =
        "the VM runs; waiting for qemu-guest-agent in the guest to report its IP "
        "address";
    if (obs_.cloud_init_secret && !obs_.cloud_init_secret->not_merged_because.empty()) {
      why +=
          " (the bootstrap data was not merged, so CAPHV did not add the agent: the image "
          "must run it)";
    }
    Mark(kVmProvisioningReady, false, "WaitingForIPAddress", std::move(why));
    return WaitForEvent("the VM's address");
  }
  plan_.status.addresses = obs_.vmi->addresses;
  plan_.status.ready = true;
  plan_.status.initialization = api::Initialization{true};
  Mark(kVmProvisioningReady, true, "VMProvisioningReady", "");
  CheckNode(provider_id);
  InitNode(provider_id);
  if (!plan_.action) GuardEtcdNode();
}

// A control-plane machine's etcd Node keeps kEtcdNodeFinalizer while the
// VM lives, so that its member's removal can always be recorded on it.
void MachinePlanner::GuardEtcdNode() {
  if (!obs_.control_plane || !obs_.etcd_node || !obs_.workload.ready) return;
  if (auto patch = workload::AddEtcdNodeFinalizer(*obs_.etcd_node)) {
    Act(ActionKind::kGuardEtcdNode, obs_.etcd_node->name, {}, std::move(*patch));
  }
}

// Node initialisation (workload/node_init.h), once the VM runs: done once
// per machine (NodeInitialized True is never revisited), never on a Node
// whose providerID names something else.
void MachinePlanner::InitNode(const std::string& provider_id) {
  if (conditions_.IsTrue(kNodeInitialized)) return;
  if (!obs_.workload.ready) {
    Mark(kNodeInitialized, false, "WaitingForWorkloadCluster",
         "waiting for the workload cluster: " + obs_.workload.message);
    if (obs_.workload.retry_after > kube::Clock::Duration::zero()) {
      WaitFor(obs_.workload, "the workload cluster");
    }
    return;
  }
  if (!obs_.node) {
    Mark(kNodeInitialized, false, "WaitingForNode",
         "waiting for the guest to register Node " + name_);
    return;
  }
  workload::NodeInitDecision d = workload::DecideNodeInit(*obs_.node, provider_id);
  switch (d.outcome) {
    case workload::NodeInitDecision::Outcome::kForeign:
      Mark(kNodeInitialized, false, "NodeProviderIDMismatch", d.message, true);
      return WaitForEvent("a change of the Node");
    case workload::NodeInitDecision::Outcome::kInitialized:
      Mark(kNodeInitialized, true,
           obs_.node_initialized_here ? "NodeInitialized" : "NodeAlreadyInitialized",
           obs_.node_initialized_here ? d.message + " (set by CAPHV)"
                                      : d.message + " (set by the cloud provider)");
      return;
    case workload::NodeInitDecision::Outcome::kWrite:
      // The cloud provider first; CAPHV if it has not done it by then. A
      // Node of unknown age, or "younger than zero" (the workload cluster's
      // clock ahead of this one), is not waited for.
      if (const auto age = obs_.node->created ? obs_.now - *obs_.node->created
                                              : std::chrono::system_clock::duration::max();
          age >= std::chrono::system_clock::duration::zero() &&
          age < workload::kCloudProviderGrace) {
        Mark(kNodeInitialized, false, "WaitingForCloudProvider",
             "Node " + name_ + " registered; CAPHV initialises it if the cloud provider has not " +
                 "within " + std::to_string(workload::kCloudProviderGrace.count()) + "s");
        plan_.wait = Wait::After(
            std::chrono::duration_cast<kube::Clock::Duration>(workload::kCloudProviderGrace - age),
            "the cloud provider to initialise the Node");
        return;
      }
      return Act(ActionKind::kInitializeNode, name_, provider_id, std::move(d.patch));
  }
}

// Cluster API watches a workload cluster's Nodes only once its control
// plane is initialized; until then (the first control-plane machine of a
// machine-based control plane) it finds the Node only if it exists when
// the Machine is reconciled. Reporting the Node's registration updates
// this object, which makes Cluster API look again.
void MachinePlanner::CheckNode(const std::string& provider_id) {
  const std::string registered = "Node " + name_ + " registered with providerID " + provider_id;
  if (obs_.machine_has_node_ref) {
    Mark(kNodeRegistered, true, "NodeRegistered", registered);
    return WaitForEvent("nothing: the machine is provisioned");
  }
  if (obs_.control_plane_initialized || !obs_.control_plane) {
    // Cluster API watches the Nodes once the control plane is initialized
    // (and reconciles every Machine again then); until that, only the
    // control-plane machines that initialize it need the nudge below.
    return WaitForEvent("Cluster API to set the Machine's nodeRef");
  }
  if (!obs_.workload.ready) {
    Mark(kNodeRegistered, false, "WaitingForWorkloadCluster",
         "waiting for the workload cluster: " + obs_.workload.message);
    return WaitFor(obs_.workload, "the workload cluster");
  }
  if (obs_.node && obs_.node->provider_id == provider_id) {
    Mark(kNodeRegistered, true, "NodeRegistered", registered);
    return WaitForEvent("the Machine's nodeRef");
  }
  Mark(kNodeRegistered, false, "WaitingForNode",
       "waiting for the guest to register Node " + name_ + " with providerID " + provider_id);
  WaitForEvent("the Node");
}

}  // namespace caphv::controllers
