// File: controllers/machine/machine_observe.cc
//
// HarvesterMachineReconciler::Observe: everything the planner needs, from
// caches only (management cluster, the Harvester connection, the workload
// cluster). Live reads are actions the planner asks for.

#include "controllers/machine/machine_observe.h"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string_view>

#include "api/codec.h"
#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/machine/machine_reconciler.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "harvester/vm_builder.h"
#include "kube/json_path.h"

namespace caphv::controllers {

namespace {

// The array at `path` of a JSON object, read in place; nullptr when absent.
const kube::Object* ArrayAt(const kube::Object& o, kube::FieldPath path) {
  const kube::Object* v = kube::Find(o, path);
  return v != nullptr && v->is_array() ? v : nullptr;
}

}  // namespace

// The views below read the cached objects in place: nlohmann's value() copies
// whole subtrees (a VM's metadata, its conditions), and every reconcile of
// every machine reads its VM, VMI and cloud-init Secret.
VmView ViewOfVm(const kube::Object& vm, const harvester::ClusterIdentity& identity,
                bool for_deletion) {
  VmView v;
  v.uid = kube::UidOf(vm);
  v.created = Str(vm, {"metadata", "creationTimestamp"});
  v.ours = harvester::OwnedBy(LabelsOf(vm), identity);
  v.deleting = IsDeleting(vm);
  const kube::Object* annotations = kube::Find(vm, {"metadata", "annotations"});
  if (annotations != nullptr && !annotations->is_object()) annotations = nullptr;
  v.adopted = annotations != nullptr && annotations->contains(harvester::kAnnotationAdopted);
  if (const kube::Object* st = kube::Find(vm, {"status"}); st != nullptr && st->is_object()) {
    v.printable_status = std::string(kube::StringAt(*st, {"printableStatus"}));
    auto ready = st->find("ready");
    v.running = (ready != st->end() && ready->is_boolean() && ready->get<bool>()) ||
                v.printable_status == "Running";
    if (const kube::Object* conditions = ArrayAt(*st, {"conditions"})) {
      for (const auto& c : *conditions) {
        if (!c.is_object() || kube::StringAt(c, {"status"}) != "False") continue;
        const std::string_view type = kube::StringAt(c, {"type"});
        if (type == "Synchronized") v.not_synchronized = kube::StringAt(c, {"message"});
        if (type == "PodScheduled") v.unschedulable = kube::StringAt(c, {"message"});
      }
    }
  }
  v.cloud_init_secret = harvester::CloudInitSecretOf(vm);
  v.pvcs_marked_for_removal = true;
  if (!for_deletion) return v;
  v.remove_pvcs_patch = harvester::RemovePvcsPatch(vm);
  if (v.remove_pvcs_patch) {
    // Marked once the VM's annotations already say what the patch would.
    const kube::Object& want = (*v.remove_pvcs_patch)["metadata"]["annotations"];
    for (const auto& [k, val] : want.items()) {
      if (annotations == nullptr) {
        v.pvcs_marked_for_removal = false;
        break;
      }
      auto have = annotations->find(k);
      if (have == annotations->end() || *have != val) v.pvcs_marked_for_removal = false;
    }
  }
  return v;
}

VmiView ViewOfVmi(const kube::Object& vmi) {
  VmiView v;
  v.phase = Str(vmi, {"status", "phase"});
  for (auto& ip : harvester::VmiAddresses(vmi)) v.addresses.push_back({"ExternalIP", ip});
  const kube::Object* st = kube::Find(vmi, {"status"});
  if (st == nullptr || !st->is_object()) return v;
  if (const kube::Object* transitions = ArrayAt(*st, {"phaseTransitionTimestamps"})) {
    for (const auto& t : *transitions) {
      if (t.is_object() && kube::StringAt(t, {"phase"}) == "Running") {
        v.running_since = kube::StringAt(t, {"phaseTransitionTimestamp"});
      }
    }
  }
  if (v.running_since.empty() && v.phase == "Running") {
    if (const kube::Object* conditions = ArrayAt(*st, {"conditions"})) {
      for (const auto& c : *conditions) {
        if (c.is_object() && kube::StringAt(c, {"type"}) == "Ready" &&
            kube::StringAt(c, {"status"}) == "True") {
          v.running_since = kube::StringAt(c, {"lastTransitionTime"});
        }
      }
    }
  }
  return v;
}

SecretView ViewOfSecret(const kube::Object& secret, const harvester::ClusterIdentity& identity) {
  SecretView v;
  v.ours = harvester::OwnedBy(LabelsOf(secret), identity);
  v.content_hash = Str(secret, {"metadata", "annotations", kAnnotationContentHash});
  v.not_merged_because = Str(secret, {"metadata", "annotations", kAnnotationUserDataNotMerged});
  return v;
}

MachineObservation HarvesterMachineReconciler::Observe(MachineScope& r) {
  MachineObservation o;
  const kube::Object& object = *r.object;
  o.hm = r.hm;
  o.status_foreign = ToOurConditions(o.hm.status.conditions, kMachineConditionTypes);
  o.key = r.req.Key();
  o.deleting = IsDeleting(object);
  o.has_finalizer =
      HasFinalizer(object, kMachineFinalizer) || HasFinalizer(object, kLegacyMachineFinalizer);

  kube::ObjectPtr machine;
  if (const std::string name = CapiOwnerName(object, "Machine"); !name.empty()) {
    machine = ctx_.machines->store().Get(r.req.ns, name);
  }
  if (machine) {
    o.machine_found = true;
    o.bootstrap_secret = BootstrapDataSecretName(*machine);
    o.machine_failure_domain = Str(*machine, {"spec", "failureDomain"});
    o.machine_has_node_ref = !Str(*machine, {"status", "nodeRef", "name"}).empty();
    o.control_plane = LabelsOf(*machine).contains(std::string(kControlPlaneLabel));
  }
  o.control_plane |= o.hm.metadata.labels.contains(std::string(kControlPlaneLabel));
  if (auto it = o.hm.metadata.labels.find(std::string(kClusterNameLabel));
      it != o.hm.metadata.labels.end()) {
    o.cluster_name = it->second;
  }
  if (o.cluster_name.empty() && machine) o.cluster_name = Str(*machine, {"spec", "clusterName"});
  kube::ObjectPtr cluster;
  if (!o.cluster_name.empty()) cluster = ctx_.clusters->store().Get(r.req.ns, o.cluster_name);
  o.paused = IsPaused(cluster.get(), object);
  o.cluster_deleting = !cluster || IsDeleting(*cluster);
  if (cluster) {
    o.cluster_found = true;
    o.infrastructure_ready = ClusterInfrastructureReady(*cluster);
    o.control_plane_initialized = ClusterControlPlaneInitialized(*cluster);
    const std::string hc_name = Str(*cluster, {"spec", "infrastructureRef", "name"});
    if (!hc_name.empty() &&
        Str(*cluster, {"spec", "infrastructureRef", "kind"}) == "HarvesterCluster") {
      if (auto hc = ctx_.harvester_clusters->store().Get(r.req.ns, hc_name)) {
        if (auto decoded = harvester_clusters_.Get(hc); decoded.ok()) {
          o.hc = std::move(decoded).value();
          o.management_cluster_id = harvester::ManagementClusterIdOf(o.hc->metadata.annotations,
                                                                     ctx_.management_cluster_id);
        } else {
          r.log.Error(decoded.status(), "Cannot read the HarvesterCluster");
        }
      }
    }
  }
  if (!o.cluster_name.empty()) r.log = r.log.WithValues({{"Cluster", o.cluster_name}});
  if (!o.paused && o.hc) {
    ObserveHarvester(r, o);
    ObserveWorkload(r, o);
  }
  Recall(o);
  return o;
}

void HarvesterMachineReconciler::ObserveHarvester(MachineScope& r, MachineObservation& o) {
  // Before the machine may create anything it needs no connection. (Not
  // keyed on the finalizer: the loop adds it and plans again on this
  // observation.)
  if (!o.deleting && (!o.machine_found || !o.infrastructure_ready || o.bootstrap_secret.empty())) {
    return;
  }
  const api::HarvesterCluster& hc = *o.hc;
  ConnectionLookup lookup =
      ctx_.connections->Get(hc.spec.identity_secret.namespace_, hc.spec.identity_secret.name,
                            Waiter{Waiter::Kind::kMachine, r.req});
  o.harvester = ViewOfConnection(lookup);
  if (!lookup.value) return;
  r.conn = lookup.value;
  const Connection& conn = *r.conn;
  const std::string& ns = hc.spec.target_namespace;
  const std::string& name = o.hm.metadata.name;
  const harvester::ClusterIdentity identity = MachineIdentity(o);
  if (auto vm = conn.vms().Get(ns, name)) o.vm = ViewOfVm(*vm, identity, o.deleting);
  if (auto vmi = conn.vmis().Get(ns, name)) o.vmi = ViewOfVmi(*vmi);
  for (const auto& pvc : conn.Disks(ns, name)) {
    o.pvcs.push_back({kube::NameOf(*pvc), IsDeleting(*pvc)});
  }
  std::sort(o.pvcs.begin(), o.pvcs.end(),
            [](const PvcView& a, const PvcView& b) { return a.name < b.name; });
  if (auto secret = conn.secrets().Get(ns, harvester::CloudInitSecretName(name))) {
    o.cloud_init_secret = ViewOfSecret(*secret, identity);
  }
  std::vector<std::string> refs = harvester::VmPoolRefs(hc, o.hm);
  if (!o.hm.status.allocated_pool_ref.empty() &&
      std::find(refs.begin(), refs.end(), o.hm.status.allocated_pool_ref) == refs.end()) {
    refs.push_back(o.hm.status.allocated_pool_ref);
  }
  for (const auto& ref : refs) {
    harvester::PoolCandidate c{ref, std::nullopt};
    if (auto pool = conn.pools().Get("", ref)) {
      if (auto parsed = harvester::ParseIpPool(*pool); parsed.ok()) {
        c.pool = std::move(parsed).value();
      } else {
        r.log.Error(parsed.status(), "Cannot read an IPPool", {{"ipPool", ref}});
      }
    }
    o.pools.push_back(std::move(c));
  }
}

void HarvesterMachineReconciler::ObserveWorkload(MachineScope& r, MachineObservation& o) {
  o.now = std::chrono::system_clock::now();
  // A running VM looks for its Node: to initialise it (until NodeInitialized
  // is True), for a control-plane machine without a nodeRef until Cluster
  // API watches Nodes itself, and for a control-plane machine's etcd Node
  // (its finalizer while the VM lives; its member's removal on deletion).
  const bool running = o.vm && o.vmi && o.vmi->phase == "Running";
  const bool etcd = o.control_plane && (running || o.deleting);
  if (!etcd) {
    if (o.deleting || !running) return;
    const bool nudge = !o.machine_has_node_ref && !o.control_plane_initialized && o.control_plane;
    if (!nudge && api::IsConditionTrue(o.hm.status.conditions, kNodeInitialized)) return;
  }
  workload::WorkloadLookup lookup = ctx_.workloads->Get(r.req.ns, o.cluster_name, r.req);
  o.workload.ready = lookup.value != nullptr;
  o.workload.reason = lookup.reason;
  o.workload.message = lookup.message;
  o.workload.retry_after = lookup.retry_after;
  if (!lookup.value) return;
  r.workload = lookup.value;
  if (auto node = lookup.value->nodes().Get("", o.hm.metadata.name)) {
    o.node = workload::ViewOfNode(*node);
    if (o.control_plane) o.etcd_node = workload::ViewOfEtcdNode(*node);
  }
  if (!o.etcd_node) return;
  // The members of the cluster's other machines (their Nodes are named
  // after them; the workload cluster may hold other Nodes), one Node
  // decoded at a time.
  lookup.value->nodes().ForEach("", [&](const kube::Object& node) {
    const workload::EtcdNodeView v = workload::ViewOfEtcdNode(node);
    if (v.name == o.hm.metadata.name || !workload::HoldsEtcdMember(v)) return true;
    auto other = ctx_.harvester_machines->store().Get(r.req.ns, v.name);
    if (!other) return true;
    const auto labels = LabelsOf(*other);
    if (auto it = labels.find(std::string(kClusterNameLabel));
        it != labels.end() && it->second == o.cluster_name) {
      ++o.other_etcd_members;
    }
    return true;
  });
}

}  // namespace caphv::controllers
