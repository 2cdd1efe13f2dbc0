// File: controllers/machine/machine_plan_provision.cc
//
// The planner's normal path up to a VM (machine_planner.h): owner Machine,
// finalizer, the cluster's infrastructure, bootstrap data, the Harvester
// connection, an address, the creation inputs, the cloud-init Secret and the
// VM; a VM spec.providerID names that is gone.

#include <algorithm>

#include "api/conditions.h"
#include "controllers/machine/machine_planner.h"
#include "harvester/cloud_init.h"
#include "harvester/resources.h"

namespace caphv::controllers {

using std::chrono::seconds;

void MachinePlanner::Normal() {
  if (!obs_.machine_found) return WaitForEvent("waiting for Cluster API to set the owner Machine");
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
void MachinePlanner::ReportVmLost() {
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
void MachinePlanner::MarkBootstrapData(const std::string& not_merged_because) {
  if (not_merged_because.empty()) {
    return Mark(kBootstrapDataReady, true, "BootstrapDataReady", "");
  }
  Mark(kBootstrapDataReady, true, "BootstrapDataNotMerged",
       "the bootstrap data is " + not_merged_because +
           ": CAPHV added neither qemu-guest-agent nor the SSH key of spec.sshKeyPair; the "
           "image must run qemu-guest-agent, or Harvester never learns the VM's address",
       true);
}

// Records the address this machine holds in its pools (status is
// re-derivable after clusterctl move); true when it has one (or needs none).
bool MachinePlanner::DeriveAddress() {
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

void MachinePlanner::Allocate() {
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
    Mark(kVmIpAllocated, false, "VMIPPoolExhausted", "no IP address available: " + d.message, true);
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

void MachinePlanner::Create() {
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
  auto nd_in =
      harvester::EffectiveNetworkData(obs_.hm.spec, harvester::MachineVmNetwork(obs_.hm, *obs_.hc),
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

}  // namespace caphv::controllers
