// File: controllers/machine/machine_plan.cc

#include "controllers/machine/machine_plan.h"

#include <algorithm>
#include <array>
#include <regex>
#include <set>

#include "api/conditions.h"
#include "controllers/capi.h"
#include "harvester/cloud_init.h"
#include "harvester/resources.h"

namespace caphv::controllers {

namespace {

using std::chrono::minutes;
using std::chrono::seconds;

class Planner {
 public:
  Planner(const MachineObservation& obs, MachinePlan& plan)
      : obs_(obs),
        plan_(plan),
        conditions_(obs.hm.status.conditions, obs.hm.metadata.generation),
        ns_(obs.hc ? obs.hc->spec.target_namespace : std::string()),
        name_(obs.hm.metadata.name),
        failure_domain_(harvester::EffectiveFailureDomain(obs.machine_failure_domain,
                                                          obs.hm.spec.failure_domain)) {}

  void Run() {
    plan_.status = obs_.hm.status;
    SyncPaused(conditions_, obs_.paused);
    if (!obs_.paused) {
      // The v1beta2 contract's status.failureDomain: where the machine is.
      plan_.status.failure_domain = failure_domain_;
    }
    if (obs_.paused) {
      plan_.wait = Wait::ForEvent("paused");
    } else if (obs_.deleting) {
      Delete();
    } else {
      Normal();
    }
    if (!obs_.paused) {
      SummarizeReady(conditions_, plan_.status.ready.value_or(false), obs_.deleting,
                     kMachineReadyOrder);
    }
    plan_.status.conditions = conditions_.current();
    plan_.events = conditions_.warnings();
  }

 private:
  // --- outcomes ----------------------------------------------------------------
  void Act(ActionKind kind, std::string name = {}, std::string value = {}, kube::Object body = {},
           bool create = false) {
    plan_.action = MachineAction{kind, std::move(name), std::move(value), std::move(body), create};
  }
  void WaitForEvent(std::string why) { plan_.wait = Wait::ForEvent(std::move(why)); }
  void WaitFor(const ConnectionView& c, std::string why) {
    plan_.wait = c.retry_after > kube::Clock::Duration::zero() ? Wait::After(c.retry_after, why)
                                                               : Wait::ForEvent(why);
  }
  void Mark(std::string_view type, bool status, std::string_view reason, std::string message,
            bool warn = false) {
    conditions_.Mark(type, status, reason, std::move(message), warn);
  }

  bool PoolMode() const {
    return obs_.hc && harvester::MachineVmNetwork(obs_.hm, *obs_.hc) &&
           !obs_.hm.spec.network_config;
  }
  // Nothing can exist on Harvester for a machine that never got a VM
  // (providerID) nor an address.
  bool NothingCreated() const {
    return obs_.hm.spec.provider_id.empty() && obs_.hm.status.allocated_ip_address.empty();
  }

  // --- normal ------------------------------------------------------------------
  void Normal() {
    if (!obs_.machine_found)
      return WaitForEvent("waiting for Cluster API to set the owner Machine");
    if (!obs_.has_finalizer) return Act(ActionKind::kAddFinalizer);
    if (!obs_.cluster_found || !obs_.hc || !obs_.infrastructure_ready) {
      Mark(kInfrastructureReady, false, "WaitingForClusterInfrastructure",
           "waiting for the infrastructure of Cluster " + obs_.cluster_name + " to be ready");
      return WaitForEvent("cluster infrastructure");
    }
    Mark(kInfrastructureReady, true, "InfrastructureReady", "");
    if (obs_.bootstrap_secret.empty()) {
      Mark(kBootstrapDataReady, false, "WaitingForBootstrapData",
           "waiting for the bootstrap provider to set Machine.spec.bootstrap.dataSecretName");
      return WaitForEvent("bootstrap data");
    }
    MarkBootstrapData(obs_.cloud_init_secret && obs_.cloud_init_secret->ours
                          ? obs_.cloud_init_secret->not_merged_because
                          : std::string());
    if (!obs_.harvester.ready) {
      // A connection being built (after a restart of the manager, or a new
      // identity) does not undo what was reported: a provisioned machine
      // stays Ready until the connection fails.
      if (!obs_.harvester.failed() && conditions_.Find(kVmProvisioningReady) != nullptr) {
        return WaitFor(obs_.harvester, "Harvester connection");
      }
      Mark(kVmProvisioningReady, false, obs_.harvester.reason,
           "no connection to Harvester: " + obs_.harvester.message, obs_.harvester.failed());
      return WaitFor(obs_.harvester, "Harvester connection");
    }
    const bool have_address = DeriveAddress();
    if (!obs_.vm && !obs_.hm.spec.provider_id.empty()) {
      // The machine recorded a VM the cache does not show: one made without
      // this cluster's labels (to adopt), or one deleted behind our back.
      if (!obs_.vm_absence_confirmed) return Act(ActionKind::kConfirmVmGone, name_);
      return ReportVmLost();
    }
    if (obs_.vm && !obs_.vm->ours && Recorded(*obs_.vm)) return Adopt(*obs_.vm);
    if (obs_.vm && !obs_.vm->ours) {
      Mark(kVmProvisioningReady, false, "VMNameConflict",
           "VirtualMachine " + ns_ + "/" + name_ +
               " exists on Harvester but does not belong to this cluster",
           true);
      return WaitForEvent("VM name conflict");
    }
    if (obs_.vm) return ReportVm(*obs_.vm);
    if (PoolMode() && !have_address) return Allocate();
    Create();
  }

  // The VM spec.providerID names is gone from Harvester (deleted outside
  // Cluster API). Nothing is made in its place, as a cloud provider's
  // instance that vanished: the machine fails (failureReason, which Cluster
  // API copies to the Machine) so that a MachineHealthCheck replaces it.
  void ReportVmLost() {
    const api::Condition* before =
        api::FindCondition(obs_.hm.status.conditions, kVmProvisioningReady);
    plan_.vm_lost = before == nullptr || before->reason != "VMNotFound";
    const std::string message =
        "the VM " + ns_ + "/" + name_ + " (" + obs_.hm.spec.provider_id +
        ") no longer exists on Harvester: it was deleted outside Cluster API. CAPHV makes no new "
        "VM for this machine; delete the Machine (a MachineHealthCheck does) to replace it";
    Mark(kVmProvisioningReady, false, "VMNotFound", message, true);
    plan_.status.ready = false;
    plan_.status.failure_reason = "UpdateError";
    plan_.status.failure_message = message;
    WaitForEvent("the machine's VM is gone");
  }

  // BootstrapDataReady: True; with reason BootstrapDataNotMerged (and one
  // Warning Event) when CAPHV could not add the guest agent and SSH key.
  void MarkBootstrapData(const std::string& not_merged_because) {
    if (not_merged_because.empty()) {
      return Mark(kBootstrapDataReady, true, "BootstrapDataReady", "");
    }
    Mark(kBootstrapDataReady, true, "BootstrapDataNotMerged",
         "the bootstrap data is " + not_merged_because +
             ": CAPHV added neither qemu-guest-agent nor the SSH key of spec.sshKeyPair; the "
             "image must run qemu-guest-agent, or Harvester never learns the VM's address",
         true);
  }

  // spec.providerID names the VM: made for this machine (by the Go provider,
  // or under another management cluster id), whatever its labels say.
  bool Recorded(const VmView& vm) const {
    return !vm.uid.empty() &&
           obs_.hm.spec.provider_id == std::string(api::kProviderIDPrefix) + vm.uid;
  }

  std::map<std::string, std::string> OwnVmLabels() const {
    harvester::VmInputs vi;
    vi.name = name_;
    vi.cluster = MachineIdentity(obs_);
    vi.control_plane = obs_.control_plane;
    return harvester::VmLabels(vi);
  }

  // Adoption, cloud-init Secret first: once the VM carries this cluster's
  // labels nothing looks for its Secret again (a crash in between repeats
  // the Secret's patch, which changes nothing).
  void Adopt(const VmView& vm) {
    const bool secret_cached_ours = vm.cloud_init_secret == harvester::CloudInitSecretName(name_) &&
                                    obs_.cloud_init_secret && obs_.cloud_init_secret->ours;
    if (!vm.cloud_init_secret.empty() && !secret_cached_ours && !obs_.cloud_init_secret_adopted) {
      return Act(
          ActionKind::kAdoptCloudInitSecret, vm.cloud_init_secret, {},
          harvester::AdoptSecretPatch(harvester::ClusterLabels(MachineIdentity(obs_)), obs_.key));
    }
    Act(ActionKind::kAdoptVm, name_, {}, harvester::AdoptVmPatch(OwnVmLabels(), obs_.key));
  }

  // Records the address this machine holds in its pools (status is
  // re-derivable after clusterctl move); true when it has one (or needs none).
  bool DeriveAddress() {
    if (obs_.hm.spec.network_config) {
      Mark(kVmIpAllocated, true, "StaticAddress",
           obs_.hm.spec.network_config->address + " from spec.networkConfig");
      return true;
    }
    if (!PoolMode()) {
      Mark(kVmIpAllocated, true, "DHCP", "the VM's addresses come from DHCP");
      return true;
    }
    const std::string owner = MachineOwnerId(obs_);
    for (const auto& c : obs_.pools) {
      if (!c.pool) continue;
      auto held = harvester::AddressesOf(*c.pool, owner);
      if (held.empty()) continue;
      plan_.status.allocated_ip_address = held.front();
      plan_.status.allocated_pool_ref = c.ref;
      Mark(kVmIpAllocated, true, "VMIPAllocated", held.front() + " from IPPool " + c.ref);
      return true;
    }
    return false;
  }

  void Allocate() {
    const std::string owner = MachineOwnerId(obs_);
    std::vector<harvester::PoolCandidate> configured;
    for (const auto& ref : harvester::VmPoolRefs(*obs_.hc, obs_.hm)) {
      auto it = std::find_if(obs_.pools.begin(), obs_.pools.end(),
                             [&](const auto& c) { return c.ref == ref; });
      configured.push_back(it != obs_.pools.end() ? *it : harvester::PoolCandidate{ref, {}});
    }
    auto d = harvester::DecideAllocation(
        configured, owner, obs_.hm.spec.networks,
        obs_.hm.spec.vm_network_config ? "HarvesterMachine" : "HarvesterCluster");
    if (d.outcome == harvester::AllocationDecision::Outcome::kExhausted) {
      Mark(kVmIpAllocated, false, "VMIPPoolExhausted", "no IP address available: " + d.message,
           true);
      plan_.wait_for_pool = true;
      return WaitForEvent("a free address in the IP pools");
    }
    const auto& pool = *std::find_if(configured.begin(), configured.end(), [&](const auto& c) {
                          return c.ref == d.pool;
                        })->pool;
    auto patch = harvester::ReservePatch(pool, d.ip, owner);
    if (!patch.ok()) {
      Mark(kVmIpAllocated, false, "VMIPAllocationFailed", patch.status().message(), true);
      plan_.wait = Wait::After(seconds(30), "allocation failed");
      return;
    }
    Act(ActionKind::kReserveAddress, pool.name, d.ip, std::move(patch).value());
  }

  void Create() {
    if (!obs_.inputs) return Act(ActionKind::kReadCreationInputs);
    const CreationInputs& in = *obs_.inputs;
    if (!in.error_reason.empty()) {
      Mark(kVmProvisioningReady, false, in.error_reason, in.error_message, true);
      plan_.wait = Wait::After(in.retry_after, "creation inputs");
      return;
    }
    auto fail = [&](std::string_view reason, const std::string& message) {
      Mark(kVmProvisioningReady, false, reason, message, true);
      WaitForEvent("a change of the machine");
    };
    harvester::UserDataInputs ud;
    ud.bootstrap = in.bootstrap_data;
    ud.bootstrap_format = in.bootstrap_format;
    ud.ssh_user = obs_.hm.spec.ssh_user;
    ud.ssh_public_key = in.ssh_public_key;
    auto user_data = harvester::MergeUserData(ud);
    if (!user_data.ok()) return fail("InvalidBootstrapData", user_data.status().message());
    MarkBootstrapData(user_data->not_merged_because);
    auto nd_in = harvester::EffectiveNetworkData(obs_.hm.spec,
                                                 harvester::MachineVmNetwork(obs_.hm, *obs_.hc),
                                                 plan_.status.allocated_ip_address);
    if (!nd_in.ok()) return fail("InvalidNetworkConfig", nd_in.status().message());
    auto network_data = harvester::BuildNetworkData(*nd_in);
    if (!network_data.ok()) return fail("InvalidNetworkConfig", network_data.status().message());

    const harvester::ClusterIdentity identity = MachineIdentity(obs_);
    harvester::CloudInitSecretInputs ci;
    ci.name = harvester::CloudInitSecretName(name_);
    ci.namespace_ = ns_;
    ci.labels = harvester::ClusterLabels(identity);
    ci.user_data = user_data->text;
    ci.network_data = *network_data;
    kube::Object secret = harvester::BuildCloudInitSecret(ci);
    const std::string hash =
        harvester::HexHash(user_data->text + "\n--- network ---\n" + *network_data, 16);
    secret["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = obs_.key;
    secret["metadata"]["annotations"][std::string(kAnnotationContentHash)] = hash;
    if (!user_data->not_merged_because.empty()) {
      secret["metadata"]["annotations"][std::string(kAnnotationUserDataNotMerged)] =
          user_data->not_merged_because;
    }
    if (obs_.cloud_init_secret && !obs_.cloud_init_secret->ours) {
      return fail("CloudInitSecretConflict",
                  "Secret " + ns_ + "/" + ci.name +
                      " exists on Harvester but does not belong to this cluster");
    }
    if (!obs_.cloud_init_secret || obs_.cloud_init_secret->content_hash != hash) {
      return Act(ActionKind::kApplyCloudInitSecret, ci.name, {}, std::move(secret),
                 !obs_.cloud_init_secret);
    }

    harvester::VmInputs vi;
    vi.name = name_;
    vi.namespace_ = ns_;
    vi.machine_uid = obs_.hm.metadata.uid;
    vi.cluster = identity;
    vi.control_plane = obs_.control_plane;
    vi.spec = obs_.hm.spec;
    vi.images = in.images;
    if (!failure_domain_.empty()) {
      vi.failure_domain = harvester::RequirementOfDomain(
          obs_.hc ? obs_.hc->status.failure_domains : std::vector<api::FailureDomain>{},
          failure_domain_);
    }
    auto vm = harvester::BuildVirtualMachine(vi);
    if (!vm.ok()) return fail("InvalidMachineSpec", vm.status().message());
    (*vm)["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = obs_.key;
    Mark(kVmProvisioningReady, false, "VMProvisioning", "waiting for the VM to run");
    Act(ActionKind::kCreateVm, name_, {}, std::move(vm).value());
  }

  void ReportVm(const VmView& vm) {
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
                 (failure_domain_.empty() ? std::string()
                                          : " in failure domain " + failure_domain_) +
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
  void GuardEtcdNode() {
    if (!obs_.control_plane || !obs_.etcd_node || !obs_.workload.ready) return;
    if (auto patch = workload::AddEtcdNodeFinalizer(*obs_.etcd_node)) {
      Act(ActionKind::kGuardEtcdNode, obs_.etcd_node->name, {}, std::move(*patch));
    }
  }

  // kEtcdRemovalTimeout has passed since the deletion began: the etcd steps
  // wait no longer.
  bool EtcdStepsOverdue() const {
    const auto since = api::ParseTime(obs_.hm.metadata.deletion_timestamp);
    return since && obs_.now - *since >= kEtcdRemovalTimeout;
  }

  // Deleting a control-plane machine: its etcd member goes before its VM.
  // Returns true while that holds the deletion (an action or a wait is set).
  bool RemoveEtcdMember() {
    if (!obs_.control_plane || obs_.cluster_deleting) return false;
    if (conditions_.IsTrue(kEtcdMemberRemoved)) return false;
    const bool overdue = EtcdStepsOverdue();
    auto give_up = [&](std::string_view reason, const std::string& message) {
      const api::Condition* before =
          api::FindCondition(obs_.hm.status.conditions, kEtcdMemberRemoved);
      plan_.etcd_member_left =
          before == nullptr || before->status != "False" || before->reason != reason;
      Mark(kEtcdMemberRemoved, false, reason,
           message + "; deleting the VM anyway after " +
               std::to_string(kEtcdRemovalTimeout.count()) +
               " minutes (remove the member by hand: etcdctl member remove)",
           true);
      return false;
    };
    if (!obs_.workload.ready) {
      const std::string why =
          "cannot reach the workload cluster to remove this machine's etcd "
          "member: " +
          obs_.workload.message;
      if (overdue) return give_up("EtcdMemberRemovalFailed", why);
      Mark(kEtcdMemberRemoved, false, "WaitingForWorkloadCluster", why);
      plan_.wait = Wait::After(seconds(10), "the workload cluster");
      return true;
    }
    if (!obs_.etcd_node) return false;  // no Node: no member RKE2 could name
    const workload::EtcdRemovalDecision d =
        workload::DecideEtcdRemoval(*obs_.etcd_node, obs_.other_etcd_members);
    using Outcome = workload::EtcdRemovalDecision::Outcome;
    switch (d.outcome) {
      case Outcome::kNothing:
        return false;
      case Outcome::kRemoved:
        Mark(kEtcdMemberRemoved, true, "EtcdMemberRemoved", d.message);
        return false;
      case Outcome::kLastVoter:
        Mark(kEtcdMemberRemoved, true, "EtcdMemberKept", d.message);
        return false;
      case Outcome::kRequest:
        Mark(kEtcdMemberRemoved, false, "RemovingEtcdMember", d.message);
        Act(ActionKind::kRequestEtcdRemoval, obs_.etcd_node->name, {}, d.patch);
        return true;
      case Outcome::kWaiting:
        if (overdue) return give_up("EtcdMemberRemovalTimedOut", d.message);
        Mark(kEtcdMemberRemoved, false, "RemovingEtcdMember", d.message);
        plan_.wait = Wait::After(seconds(2), "RKE2 to remove the etcd member");
        return true;
    }
    return false;
  }

  // Node initialisation (workload/node_init.h), once the VM runs: done once
  // per machine (NodeInitialized True is never revisited), never on a Node
  // whose providerID names something else.
  void InitNode(const std::string& provider_id) {
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
        return Act(ActionKind::kInitializeNode, name_, provider_id, std::move(d.patch));
    }
  }

  // Cluster API watches a workload cluster's Nodes only once its control
  // plane is initialized; until then (the first control-plane machine of a
  // machine-based control plane) it finds the Node only if it exists when
  // the Machine is reconciled. Reporting the Node's registration updates
  // this object, which makes Cluster API look again.
  void CheckNode(const std::string& provider_id) {
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

  // --- delete ------------------------------------------------------------------
  void Delete() {
    plan_.status.ready = false;
    if (!obs_.has_finalizer) return WaitForEvent("nothing: no finalizer");
    if (!obs_.hc) {
      // Without its HarvesterCluster nothing can have been created (the VM
      // waits for the cluster's infrastructure) unless the cluster went first.
      if (NothingCreated()) return Act(ActionKind::kRemoveFinalizer);
      Mark(kVmProvisioningReady, false, "HarvesterClusterNotFound",
           "the HarvesterCluster of Cluster " + obs_.cluster_name +
               " is gone: cannot delete the VM on Harvester (remove the finalizer to abandon it)",
           true);
      plan_.wait = Wait::After(minutes(1), "the HarvesterCluster");
      return;
    }
    if (!obs_.harvester.ready) {
      if (NothingCreated()) return Act(ActionKind::kRemoveFinalizer);
      Mark(kVmProvisioningReady, false, obs_.harvester.reason,
           "cannot delete the VM on Harvester: " + obs_.harvester.message +
               " (restore the identity, or remove the finalizer to abandon the VM)",
           obs_.harvester.failed());
      return WaitFor(obs_.harvester, "Harvester connection");
    }
    // 1. The VM (adopted first when spec.providerID names it), then wait for
    // it to go.
    if (obs_.vm && !obs_.vm->ours && Recorded(*obs_.vm)) return Adopt(*obs_.vm);
    if (obs_.vm && obs_.vm->ours) {
      if (!obs_.vm->deleting) {
        if (RemoveEtcdMember()) return;
        if (!obs_.vm->pvcs_marked_for_removal && obs_.vm->remove_pvcs_patch) {
          return Act(ActionKind::kMarkPvcsForRemoval, name_, {}, *obs_.vm->remove_pvcs_patch);
        }
        return Act(ActionKind::kDeleteVm, name_);
      }
      Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM to be deleted");
      return WaitForEvent("the VM's deletion");
    }
    const bool foreign_vm = obs_.vm.has_value();
    // The cache may lag behind a VM created an instant before: make sure.
    if (!obs_.vm && !obs_.vm_absence_confirmed) return Act(ActionKind::kConfirmVmGone, name_);
    // 2. Its PVCs: the names CAPHV gave them, and any "<name>-disk-<i>-<hash>"
    // (beside a VM of another cluster, only the names of this machine's uid).
    std::set<std::string> wanted;
    for (size_t i = 0; i < obs_.hm.spec.volumes.size(); ++i) {
      wanted.insert(harvester::PvcName(name_, obs_.hm.metadata.uid, i));
    }
    static const std::regex kDiskSuffix(R"(^-disk-[0-9]+-[a-z0-9]+$)");
    std::vector<std::string> pending;
    for (const auto& pvc : obs_.pvcs) {
      const bool legacy = !foreign_vm && pvc.name.starts_with(name_) &&
                          std::regex_match(pvc.name.substr(name_.size()), kDiskSuffix);
      if (!wanted.contains(pvc.name) && !legacy) continue;
      if (!pvc.deleting) return Act(ActionKind::kDeletePvc, pvc.name);
      pending.push_back(pvc.name);
    }
    if (!pending.empty()) {
      Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM's volumes to be deleted");
      plan_.wait_for_pvcs = pending;
      return WaitForEvent("the PVCs' deletion");
    }
    // 3. The cloud-init Secret, if it is this cluster's.
    if (obs_.cloud_init_secret && obs_.cloud_init_secret->ours) {
      return Act(ActionKind::kDeleteCloudInitSecret, harvester::CloudInitSecretName(name_));
    }
    // 4. The address, now that nothing uses it.
    const std::string owner = MachineOwnerId(obs_);
    for (const auto& c : obs_.pools) {
      if (!c.pool) continue;
      if (auto patch = harvester::ReleasePatch(*c.pool, owner)) {
        return Act(ActionKind::kReleaseAddress, c.pool->name, {}, std::move(*patch));
      }
    }
    plan_.status.allocated_ip_address.clear();
    plan_.status.allocated_pool_ref.clear();
    // 5. The etcd Node may go now (its member was removed, or kept as the last).
    if (obs_.workload.ready) {
      if (obs_.etcd_node) {
        if (auto patch = workload::RemoveEtcdNodeFinalizer(*obs_.etcd_node)) {
          return Act(ActionKind::kReleaseEtcdNode, obs_.etcd_node->name, {}, std::move(*patch));
        }
      }
    } else if (obs_.control_plane && !obs_.cluster_deleting &&
               conditions_.IsTrue(kNodeInitialized)) {
      // Its Node may hold the finalizer, which nobody else lifts: wait for
      // the workload cluster (not when the Cluster goes, and its Nodes with
      // it), then finish anyway, saying how to lift it by hand.
      const std::string why = "cannot reach the workload cluster to lift finalizer " +
                              std::string(workload::kEtcdNodeFinalizer) + " from Node " + name_ +
                              ": " + obs_.workload.message;
      if (!EtcdStepsOverdue()) {
        Mark(kVmProvisioningReady, false, "WaitingForWorkloadCluster", why);
        plan_.wait = Wait::After(seconds(10), "the workload cluster");
        return;
      }
      Mark(kVmProvisioningReady, false, "EtcdNodeFinalizerLeft",
           why + "; finishing the deletion anyway after " +
               std::to_string(kEtcdRemovalTimeout.count()) +
               " minutes (if the Node is still there: kubectl patch node " + name_ +
               " --type=json -p '[{\"op\":\"remove\",\"path\":\"/metadata/finalizers\"}]')",
           true);
    }
    // 6. Done.
    Act(ActionKind::kRemoveFinalizer);
  }

  const MachineObservation& obs_;
  MachinePlan& plan_;
  Conditions conditions_;
  const std::string ns_;
  const std::string name_;
  // Where the machine is placed: Machine.spec.failureDomain, else its own.
  const std::string failure_domain_;
};

}  // namespace

MachinePlan PlanMachine(const MachineObservation& obs) {
  MachinePlan plan;
  Planner(obs, plan).Run();
  return plan;
}

}  // namespace caphv::controllers
