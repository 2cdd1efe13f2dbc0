// File: controllers/machine/machine_execute.cc
//
// HarvesterMachineReconciler::Execute: one API call per planned action (the
// creation-input read makes a few), its result folded into the observation
// so the next plan sees what this reconcile wrote.

#include "api/codec.h"
#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/machine/machine_observe.h"
#include "controllers/machine/machine_reconciler.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "kube/base64.h"

namespace caphv::controllers {

namespace {

using kube::Status;
using std::chrono::seconds;

std::string Decoded(const kube::Object& secret, const std::string& key) {
  auto v = kube::Base64Decode(Str(secret, {"data", key}));
  return v ? *v : std::string();
}

const kube::GroupVersionResource& HmGvr() {
  static const auto gvr = api::ResourceOf(api::Kind::kHarvesterMachine);
  return gvr;
}

}  // namespace

// Read-your-writes of the HarvesterMachine: the cache and this run's object
// (which later patches and the status write start from) become what the
// apiserver answered.
void HarvesterMachineReconciler::RecordOwnWrite(MachineScope& r, kube::Object written) {
  ctx_.harvester_machines->RecordWrite(written);
  r.object = std::make_shared<const kube::Object>(std::move(written));
}

void HarvesterMachineReconciler::Recall(MachineObservation& o) {
  std::lock_guard lock(mu_);
  o.node_initialized_here |= nodes_initialized_.contains(o.key + "/" + o.hm.metadata.uid);
  if (!o.deleting) return;
  auto it = deletions_.find(o.key + "/" + o.hm.metadata.uid);
  if (it == deletions_.end()) return;
  const DeletionMemo& m = it->second;
  if (m.finalizer_removed) o.has_finalizer = false;
  if (m.vm_gone && !o.vm) o.vm_absence_confirmed = true;
  if (m.vm_delete_sent && o.vm && o.vm->ours) o.vm->deleting = true;
}

void HarvesterMachineReconciler::RememberDeletion(const MachineObservation& o,
                                                  void (*mark)(DeletionMemo&)) {
  if (!o.deleting) return;
  std::lock_guard lock(mu_);
  mark(deletions_[o.key + "/" + o.hm.metadata.uid]);
}

void HarvesterMachineReconciler::ConfirmVmGone(MachineObservation& o) {
  o.vm_absence_confirmed = true;
  RememberDeletion(o, [](DeletionMemo& m) { m.vm_gone = true; });
}

Status HarvesterMachineReconciler::Execute(MachineScope& r, const MachineAction& a,
                                           MachineObservation& o) {
  const std::string ns = o.hc ? o.hc->spec.target_namespace : std::string();
  const std::string& name = o.hm.metadata.name;
  switch (a.kind) {
    case ActionKind::kAddFinalizer: {
      if (auto p = AddFinalizerPatch(*r.object, kMachineFinalizer, kLegacyMachineFinalizer)) {
        CAPHV_ASSIGN_OR_RETURN(auto written, MergePatch(*ctx_.mgmt, HmGvr(), *r.object, *p));
        RecordOwnWrite(r, std::move(written));
      }
      o.has_finalizer = true;
      return Status::Ok();
    }
    case ActionKind::kRemoveFinalizer: {
      if (auto p = RemoveFinalizerPatch(*r.object, kMachineFinalizer, kLegacyMachineFinalizer)) {
        auto written = MergePatch(*ctx_.mgmt, HmGvr(), *r.object, *p);
        if (!written.ok() && !written.status().IsNotFound()) return written.status();
        // The cache shows the finalizer gone until the deletion arrives, so a
        // reconcile in between does not ask again.
        if (written.ok()) RecordOwnWrite(r, std::move(written).value());
      }
      if (!o.cluster_name.empty()) {
        metrics::DeleteMachineStatus(r.req.ns + "/" + o.cluster_name, r.req.Key());
      }
      o.has_finalizer = false;
      RememberDeletion(o, [](DeletionMemo& m) { m.finalizer_removed = true; });
      r.finalizer_removed = true;
      r.log.Info("Deleted the machine's VM and everything it used on Harvester");
      return Status::Ok();
    }
    case ActionKind::kReadCreationInputs:
      return ReadCreationInputs(r, o);
    case ActionKind::kReserveAddress:
    case ActionKind::kReleaseAddress:
      return WritePool(r, a, o);
    case ActionKind::kApplyCloudInitSecret:
    case ActionKind::kCreateVm:
      return CreateOrAdopt(r, a, o);
    case ActionKind::kAdoptCloudInitSecret: {
      auto patched = r.conn->client().Patch(kube::resources::kSecrets, ns, a.name,
                                            kube::PatchType::kMerge, a.body);
      if (!patched.ok() && !patched.status().IsNotFound()) return patched.status();
      o.cloud_init_secret_adopted = true;
      return Status::Ok();
    }
    case ActionKind::kAdoptVm: {
      auto patched = r.conn->client().Patch(harvester::kVirtualMachines, ns, name,
                                            kube::PatchType::kMerge, a.body);
      if (!patched.ok()) return patched.status();
      o.vm = ViewOfVm(*patched, MachineIdentity(o), o.deleting);
      Emit(r, {false, "VMAdopted",
               "adopted VirtualMachine " + ns + "/" + name +
                   ", which spec.providerID names (made outside this management cluster)"});
      return Status::Ok();
    }
    case ActionKind::kAdoptVmi: {
      auto patched = r.conn->client().Patch(harvester::kVirtualMachineInstances, ns, name,
                                            kube::PatchType::kMerge, a.body);
      if (patched.ok()) {
        o.vmi = ViewOfVmi(*patched);
      } else if (!patched.status().IsNotFound()) {
        return patched.status();
      }
      o.vmi_adopted = true;
      return Status::Ok();
    }
    case ActionKind::kSetProviderID: {
      kube::Object patch = {{"spec", {{"providerID", a.value}}}};
      CAPHV_ASSIGN_OR_RETURN(auto written, MergePatch(*ctx_.mgmt, HmGvr(), *r.object, patch));
      RecordOwnWrite(r, std::move(written));
      o.hm.spec.provider_id = a.value;
      return Status::Ok();
    }
    case ActionKind::kMarkPvcsForRemoval: {
      auto patched = r.conn->client().Patch(harvester::kVirtualMachines, ns, name,
                                            kube::PatchType::kMerge, a.body);
      if (patched.ok()) {
        o.vm = ViewOfVm(*patched, MachineIdentity(o), o.deleting);
      } else if (patched.status().IsNotFound()) {
        o.vm.reset();
      } else {
        return patched.status();
      }
      return Status::Ok();
    }
    case ActionKind::kDeleteVm: {
      // caphv_machine_delete_total counts deletion requests, _errors_total the failed ones.
      metrics::MachineDeleteTotal().Increment();
      Status st = r.conn->client().Delete(harvester::kVirtualMachines, ns, name);
      if (st.IsNotFound()) {
        o.vm.reset();
        ConfirmVmGone(o);
        return Status::Ok();
      }
      if (!st.ok()) {
        metrics::MachineDeleteErrorsTotal().Increment();
        return st;
      }
      o.vm->deleting = true;
      RememberDeletion(o, [](DeletionMemo& m) { m.vm_delete_sent = true; });
      // No Event: the object goes (Ready False, Deleting), the log says it.
      r.log.Info("Deleting the VirtualMachine", {{"vm", ns + "/" + name}});
      return Status::Ok();
    }
    case ActionKind::kDeletePvc: {
      Status st =
          DeleteIfExists(r.conn->client(), kube::resources::kPersistentVolumeClaims, ns, a.name);
      if (!st.ok()) return st;
      for (auto& pvc : o.pvcs) pvc.deleting |= pvc.name == a.name;
      return Status::Ok();
    }
    case ActionKind::kDeleteCloudInitSecret: {
      CAPHV_RETURN_IF_ERROR(
          DeleteIfExists(r.conn->client(), kube::resources::kSecrets, ns, a.name));
      o.cloud_init_secret.reset();
      return Status::Ok();
    }
    case ActionKind::kInitializeNode:
      return InitializeNode(r, a, o);
    case ActionKind::kGuardEtcdNode:
    case ActionKind::kRequestEtcdRemoval:
    case ActionKind::kReleaseEtcdNode:
      return PatchEtcdNode(r, a, o);
    case ActionKind::kConfirmVmGone: {
      auto vm = r.conn->client().Get(harvester::kVirtualMachines, ns, name);
      if (vm.ok()) {
        o.vm = ViewOfVm(*vm, MachineIdentity(o), o.deleting);
      } else if (vm.status().IsNotFound()) {
        ConfirmVmGone(o);
      } else {
        return vm.status();
      }
      return Status::Ok();
    }
  }
  return Status(kube::StatusCode::kInternal, "unknown action");
}

Status HarvesterMachineReconciler::ReadCreationInputs(MachineScope& r, MachineObservation& o) {
  CreationInputs in;
  const std::string& ns = o.hc->spec.target_namespace;
  auto missing = [&](std::string reason, std::string message, seconds retry) {
    in.error_reason = std::move(reason);
    in.error_message = std::move(message);
    in.retry_after = retry;
    o.inputs = std::move(in);
    return Status::Ok();
  };
  // Bootstrap data (a management Secret; its data is not cached).
  auto bootstrap = ctx_.mgmt->Get(kube::resources::kSecrets, r.req.ns, o.bootstrap_secret);
  if (!bootstrap.ok()) {
    if (!bootstrap.status().IsNotFound()) return bootstrap.status();
    return missing("BootstrapDataUnavailable",
                   "bootstrap Secret " + r.req.ns + "/" + o.bootstrap_secret + " not found",
                   seconds(10));
  }
  in.bootstrap_data = Decoded(*bootstrap, "value");
  in.bootstrap_format = Decoded(*bootstrap, "format");
  // SSH key.
  auto [kp_ns, kp_name] = harvester::SplitQualifiedName(o.hm.spec.ssh_key_pair, ns);
  auto keypair = r.conn->client().Get(harvester::kKeyPairs, kp_ns, kp_name);
  if (!keypair.ok()) {
    if (!keypair.status().IsNotFound()) return keypair.status();
    return missing("KeyPairNotFound",
                   "Harvester KeyPair " + kp_ns + "/" + kp_name + " (spec.sshKeyPair) not found",
                   seconds(30));
  }
  in.ssh_public_key = Str(*keypair, {"spec", "publicKey"});
  // Images, by name or (as Harvester users often write) display name.
  for (size_t i = 0; i < o.hm.spec.volumes.size(); ++i) {
    const api::Volume& v = o.hm.spec.volumes[i];
    if (v.volume_type != api::kVolumeTypeImage || in.images.contains(v.image_name)) continue;
    auto [img_ns, img_name] = harvester::SplitQualifiedName(v.image_name, ns);
    auto image = r.conn->client().Get(harvester::kVirtualMachineImages, img_ns, img_name);
    if (!image.ok() && image.status().IsNotFound()) {
      auto list = r.conn->client().List(harvester::kVirtualMachineImages, img_ns);
      if (!list.ok()) return list.status();
      for (auto& item : list->items) {
        if (Str(item, {"spec", "displayName"}) == img_name) image = std::move(item);
      }
    }
    if (!image.ok()) {
      if (!image.status().IsNotFound()) return image.status();
      return missing("ImageNotFound",
                     "Harvester image " + img_ns + "/" + img_name + " (spec.volumes[" +
                         std::to_string(i) + "].imageName) not found",
                     seconds(30));
    }
    in.images[v.image_name] = {img_ns, kube::NameOf(*image),
                               Str(*image, {"status", "storageClassName"})};
  }
  o.inputs = std::move(in);
  return Status::Ok();
}

Status HarvesterMachineReconciler::WritePool(MachineScope& r, const MachineAction& a,
                                             MachineObservation& o) {
  const bool reserve = a.kind == ActionKind::kReserveAddress;
  auto written =
      r.conn->client().Patch(harvester::kIPPools, "", a.name, kube::PatchType::kMerge, a.body);
  // caphv_ippool_allocations_total counts attempts that succeeded or failed;
  // a 409 (the pool changed since the cache saw it) is neither: the watch
  // event brings the new version and the retry decides again.
  const bool conflict = !written.ok() && written.status().IsConflict();
  if (reserve && !conflict) metrics::IPPoolAllocationsTotal().Increment();
  if (!written.ok()) {
    if (reserve && !conflict) metrics::IPPoolAllocationErrorsTotal().Increment();
    return written.status();
  }
  auto parsed = harvester::ParseIpPool(*written);
  if (!parsed.ok()) return parsed.status();
  for (auto& c : o.pools) {
    if (c.pool && c.pool->name == a.name) c.pool = *parsed;
  }
  if (reserve) {
    Emit(r, {false, "VMIPAllocated", "allocated " + a.value + " from IPPool " + a.name});
  } else {
    metrics::IPPoolReleasesTotal().Increment();
    Emit(r, {false, "VMIPReleased", "released the address of IPPool " + a.name});
  }
  return Status::Ok();
}

Status HarvesterMachineReconciler::CreateOrAdopt(MachineScope& r, const MachineAction& a,
                                                 MachineObservation& o) {
  const bool vm = a.kind == ActionKind::kCreateVm;
  const kube::GroupVersionResource& gvr =
      vm ? harvester::kVirtualMachines : kube::resources::kSecrets;
  const std::string ns = kube::NamespaceOf(a.body);
  const harvester::ClusterIdentity identity = MachineIdentity(o);
  // caphv_machine_create_total counts attempts, _errors_total the failed ones.
  if (vm) metrics::MachineCreateTotal().Increment();
  kube::StatusOr<kube::Object> written = (vm || a.create) ? r.conn->client().Create(gvr, ns, a.body)
                                                          : r.conn->client().Apply(gvr, ns, a.body);
  if (!written.ok() && written.status().IsAlreadyExists()) {
    // Made by an earlier attempt the cache has not shown yet, or not ours at
    // all: read it and let the planner decide.
    written = r.conn->client().Get(gvr, ns, kube::NameOf(a.body));
    if (!written.ok()) return written.status();
  } else if (!written.ok()) {
    if (written.status().IsNotFound()) r.conn->ForgetNamespace(ns);
    if (vm) metrics::MachineCreateErrorsTotal().Increment();
    return written.status();
  } else if (vm) {
    // No Event: the VMProvisioningReady condition and the log say it (a
    // write per machine a user gains nothing from).
    r.log.Info("Created the VirtualMachine", {{"vm", ns + "/" + kube::NameOf(a.body)}});
  }
  if (vm) {
    o.vm = ViewOfVm(*written, identity, o.deleting);
  } else {
    o.cloud_init_secret = ViewOfSecret(*written, identity);
  }
  return Status::Ok();
}

// One merge patch of the workload Node: providerID and taints together,
// guarded by the resourceVersion the decision was made on.
// caphv_node_init_total counts the writes answered, _errors_total the failed
// ones; a 409 (the kubelet or the cloud provider wrote in between) is
// neither: the Node's watch event brings the new version and the planner
// decides again.
Status HarvesterMachineReconciler::PatchEtcdNode(MachineScope& r, const MachineAction& a,
                                                 MachineObservation& o) {
  if (!r.workload) {
    return Status(kube::StatusCode::kUnavailable, "no connection to the workload cluster");
  }
  const bool removal = a.kind == ActionKind::kRequestEtcdRemoval;
  auto patched =
      r.workload->client().Patch(kube::resources::kNodes, "", a.name, kube::PatchType::kMerge,
                                 a.body, {.field_manager = "caphv"});
  const bool conflict = !patched.ok() && patched.status().IsConflict();
  if (removal && !conflict) metrics::EtcdMemberRemoveTotal().Increment();
  if (!patched.ok()) {
    if (patched.status().IsNotFound()) {
      // The Node is gone (its member with it, for RKE2): nothing to guard.
      o.etcd_node.reset();
      return Status::Ok();
    }
    if (removal && !conflict) metrics::EtcdMemberRemoveErrorsTotal().Increment();
    return patched.status();
  }
  o.etcd_node = workload::ViewOfEtcdNode(*patched);
  if (removal) {
    r.log.Info("Asked RKE2 to remove the etcd member",
               {{"node", a.name}, {"member", o.etcd_node->member}});
    Emit(r, {false, "EtcdMemberRemovalRequested",
             "Node " + a.name + ": asked RKE2 to remove etcd member " + o.etcd_node->member});
  }
  return Status::Ok();
}

Status HarvesterMachineReconciler::InitializeNode(MachineScope& r, const MachineAction& a,
                                                  MachineObservation& o) {
  if (!r.workload) {
    return Status(kube::StatusCode::kUnavailable, "no connection to the workload cluster");
  }
  auto patched =
      r.workload->client().Patch(kube::resources::kNodes, "", a.name, kube::PatchType::kJson,
                                 a.body, {.field_manager = "caphv"});
  if (!patched.ok() && workload::IsNodeChanged(patched.status())) {
    // Not an error: the Node's taints changed since they were read; the
    // next plan decides on the Node as it now is.
    return Status(kube::StatusCode::kConflict,
                  "Node " + a.name + " changed since it was read: " + patched.status().message());
  }
  const bool conflict = !patched.ok() && patched.status().IsConflict();
  if (!conflict) metrics::NodeInitTotal().Increment();
  if (!patched.ok()) {
    if (!conflict) metrics::NodeInitErrorsTotal().Increment();
    return patched.status();
  }
  const workload::NodeView before = o.node.value_or(workload::NodeView{});
  o.node = workload::ViewOfNode(*patched);
  o.node_initialized_here = true;
  {
    std::lock_guard lock(mu_);
    nodes_initialized_.insert(o.key + "/" + o.hm.metadata.uid);
  }
  if (auto since = api::ParseTime(o.vmi ? o.vmi->running_since : std::string())) {
    metrics::NodeInitDuration().Observe(
        std::chrono::duration<double>(std::chrono::system_clock::now() - *since).count());
  }
  // No Event: the NodeInitialized condition says it, with the time.
  r.log.Info("Initialized the workload Node",
             {{"node", a.name},
              {"providerID", before.provider_id.empty() ? a.value : std::string()},
              {"removedTaint",
               before.uninitialized ? std::string(workload::kUninitializedTaint) : std::string()}});
  return Status::Ok();
}

}  // namespace caphv::controllers
