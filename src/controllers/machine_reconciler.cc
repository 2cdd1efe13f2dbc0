// File: controllers/machine_reconciler.cc

#include "controllers/machine_reconciler.h"

#include <chrono>
#include <ctime>
#include <iomanip>
#include <regex>
#include <set>
#include <sstream>

#include "api/codec.h"
#include "api/conditions.h"
#include "controllers/capi.h"
#include "controllers/metrics.h"
#include "controllers/writes.h"
#include "harvester/cloud_init.h"
#include "harvester/ipam.h"
#include "harvester/naming.h"
#include "harvester/resources.h"
#include "harvester/vm_builder.h"
#include "kube/base64.h"
#include "kube/config.h"
#include "kube/log.h"

namespace caphv::controllers {

namespace {

using kube::Object;
using kube::Result;
using kube::Status;

constexpr std::string_view kInfrastructureReady = "InfrastructureReady";
constexpr std::string_view kBootstrapDataReady = "BootstrapDataReady";
constexpr std::string_view kVmProvisioningReady = "VMProvisioningReady";
constexpr std::string_view kVmIpAllocated = "VMIPAllocated";
constexpr std::string_view kMachineCreated = "MachineCreated";
constexpr std::string_view kNodeRegistered = "NodeRegistered";

const kube::GroupVersionResource& HmGvr() {
  static const auto gvr = api::ResourceOf(api::Kind::kHarvesterMachine);
  return gvr;
}

std::map<std::string, std::string> LabelsOf(const Object& o) {
  auto meta = o.find("metadata");
  if (meta == o.end()) return {};
  return meta->value("labels", std::map<std::string, std::string>{});
}

std::string Decoded(const Object& secret, const std::string& key) {
  auto v = kube::Base64Decode(Str(secret, {"data", key}));
  return v ? *v : std::string();
}

// The VMI's addresses (status.interfaces[].ip and ipAddresses), in order,
// without duplicates.
std::vector<api::MachineAddress> AddressesOf(const Object& vmi) {
  std::vector<api::MachineAddress> out;
  std::set<std::string> seen;
  auto add = [&](const Object& v) {
    if (!v.is_string()) return;
    std::string ip = v.get<std::string>();
    if (ip.empty() || !seen.insert(ip).second) return;
    out.push_back({"ExternalIP", ip});
  };
  auto st = vmi.find("status");
  if (st == vmi.end() || !st->contains("interfaces")) return out;
  for (const auto& nic : (*st)["interfaces"]) {
    if (nic.contains("ip")) add(nic["ip"]);
    if (nic.contains("ipAddresses")) {
      for (const auto& ip : nic["ipAddresses"]) add(ip);
    }
  }
  return out;
}

// "2026-03-10T12:00:00Z" as a time point.
std::optional<std::chrono::system_clock::time_point> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

struct HarvesterMachineReconciler::Scope {
  kube::Request req;
  kube::ObjectPtr object;
  api::HarvesterMachine hm;
  api::HarvesterMachineStatus original;
  kube::ObjectPtr machine;
  kube::ObjectPtr cluster;
  kube::ObjectPtr hc_object;
  api::HarvesterCluster hc;
  std::string cluster_name;
  harvester::ClusterIdentity identity;
  std::shared_ptr<Connection> conn;
  std::string target_ns;
  kube::log::Logger log;

  bool Mark(std::string_view type, bool status, std::string_view reason, std::string message) {
    return MarkCondition(hm.status.conditions, type, status, reason, std::move(message),
                         hm.metadata.generation);
  }
  std::string OwnerId(const std::string& mgmt_id) const {
    return harvester::IpOwnerId(mgmt_id, hm.metadata.namespace_, hm.metadata.name);
  }
  std::vector<std::string> PoolRefs() const {
    std::vector<std::string> refs;
    if (hc.spec.vm_network_config) {
      refs = harvester::OrderedPoolRefs(*hc.spec.vm_network_config);
      if (refs.empty() && hc.spec.vm_network_config->ip_pool) {
        refs.push_back(VmPoolName(hc.metadata.namespace_, hc.metadata.name));
      }
    }
    return refs;
  }
};

void HarvesterMachineReconciler::Emit(Scope& s, bool warning, std::string_view reason,
                                      const std::string& message) {
  if (!ctx_.recorder) return;
  ctx_.recorder->Event(*s.object, warning ? kube::EventType::kWarning : kube::EventType::kNormal,
                       reason, message);
}

Result HarvesterMachineReconciler::Reconcile(const kube::Request& req) {
  const std::string key = req.Key();
  auto object = ctx_.harvester_machines->store().Get(req.ns, req.name);
  if (!object) {
    std::lock_guard lock(mu_);
    if (auto it = cluster_of_.find(key); it != cluster_of_.end()) {
      metrics::DeleteMachineStatus(it->second, key);
      cluster_of_.erase(it);
    }
    return Result::Done();
  }
  auto decoded = api::Decode<api::HarvesterMachine>(*object);
  if (!decoded.ok()) {
    return Result::Terminal(
        Status(kube::StatusCode::kInvalidArgument,
               "cannot read HarvesterMachine " + key + ": " + decoded.status().message()));
  }
  Scope s;
  s.req = req;
  s.object = object;
  s.hm = std::move(decoded).value();
  s.original = s.hm.status;
  s.log = kube::log::Root().WithName("harvestermachine").WithValues({{"HarvesterMachine", key}});

  const std::string machine_name = CapiOwnerName(*object, "Machine");
  if (!machine_name.empty()) s.machine = ctx_.machines->store().Get(req.ns, machine_name);
  auto label = s.hm.metadata.labels.find(std::string(kClusterNameLabel));
  if (label != s.hm.metadata.labels.end()) s.cluster_name = label->second;
  if (s.cluster_name.empty() && s.machine) {
    s.cluster_name = Str(*s.machine, {"spec", "clusterName"});
  }
  if (!s.cluster_name.empty()) {
    s.cluster = ctx_.clusters->store().Get(req.ns, s.cluster_name);
    s.identity = {ctx_.management_cluster_id, req.ns, s.cluster_name};
    s.log = s.log.WithValues({{"Cluster", s.cluster_name}});
    std::lock_guard lock(mu_);
    cluster_of_[key] = req.ns + "/" + s.cluster_name;
  }
  if (s.cluster) {
    const std::string hc_name = Str(*s.cluster, {"spec", "infrastructureRef", "name"});
    if (!hc_name.empty() &&
        Str(*s.cluster, {"spec", "infrastructureRef", "kind"}) == "HarvesterCluster") {
      s.hc_object = ctx_.harvester_clusters->store().Get(req.ns, hc_name);
    }
  }
  if (s.hc_object) {
    auto hc = api::Decode<api::HarvesterCluster>(*s.hc_object);
    if (hc.ok()) {
      s.hc = std::move(hc).value();
      s.target_ns = s.hc.spec.target_namespace;
    } else {
      s.hc_object.reset();
    }
  }

  const bool deleting = IsDeleting(*object);
  const auto start = std::chrono::steady_clock::now();
  Result result;
  if (SyncPausedCondition(s.hm.status.conditions, !deleting && IsPaused(s.cluster.get(), *object),
                          s.hm.metadata.generation)) {
    result = Result::Done();
  } else {
    result = deleting ? ReconcileDelete(s) : ReconcileNormal(s);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  metrics::ObserveMachineReconcile(
      deleting ? metrics::Operation::kDelete : metrics::Operation::kNormal, seconds);

  // Ready mirrors the first condition that is not True.
  if (!deleting) {
    if (s.hm.status.ready.value_or(false)) {
      s.Mark(api::kReadyCondition, true, "Ready", "");
    } else {
      for (std::string_view type :
           {kInfrastructureReady, kBootstrapDataReady, kVmIpAllocated, kVmProvisioningReady}) {
        const api::Condition* c = api::FindCondition(s.hm.status.conditions, type);
        if (c != nullptr && c->status != api::kConditionTrue) {
          s.Mark(api::kReadyCondition, false, c->reason, c->message);
          break;
        }
      }
    }
    if (!s.cluster_name.empty()) {
      metrics::SetMachineStatus(req.ns + "/" + s.cluster_name, key,
                                s.hm.status.ready.value_or(false));
    }
  }
  if (s.hm.status != s.original) {
    Status st = ApplyStatus(*ctx_.mgmt, HmGvr(), *object, api::Encode(s.hm.status));
    if (!st.ok() && !st.IsNotFound() && result.error.ok()) return Result::Error(st);
  }
  return result;
}

bool HarvesterMachineReconciler::Connect(Scope& s, Result* wait) {
  ConnectionError err;
  s.conn = ctx_.connections->Get(s.hc.spec.identity_secret.namespace_,
                                 s.hc.spec.identity_secret.name, &err);
  if (s.conn) return true;
  const std::string msg = "no connection to Harvester: " + err.status.message();
  if (s.Mark(kVmProvisioningReady, false, err.reason, msg)) Emit(s, true, err.reason, msg);
  *wait = (err.reason == "IdentitySecretUnavailable" || err.reason == "MalformedIdentitySecret")
              ? Result::RequeueAfter(std::chrono::minutes(1))
              : Result::RequeueAfter(std::chrono::seconds(30));
  return false;
}

Result HarvesterMachineReconciler::ReconcileNormal(Scope& s) {
  if (!s.machine) {
    s.log.V(1).Info("Waiting for Cluster API to set the owner Machine");
    return Result::Done();  // the ownerReference update is an event
  }
  if (auto p = AddFinalizerPatch(*s.object, kMachineFinalizer, kLegacyMachineFinalizer)) {
    if (Status st = MergePatch(*ctx_.mgmt, HmGvr(), *s.object, *p); !st.ok()) {
      return Result::Error(st);
    }
  }
  if (!s.cluster || !s.hc_object || !ClusterInfrastructureReady(*s.cluster)) {
    s.Mark(kInfrastructureReady, false, "WaitingForClusterInfrastructure",
           "waiting for the infrastructure of Cluster " + s.cluster_name + " to be ready");
    return Result::Done();  // the Cluster's status change is an event
  }
  s.Mark(kInfrastructureReady, true, "InfrastructureReady", "");
  const std::string data_secret = BootstrapDataSecretName(*s.machine);
  if (data_secret.empty()) {
    s.Mark(kBootstrapDataReady, false, "WaitingForBootstrapData",
           "waiting for the bootstrap provider to set Machine.spec.bootstrap.dataSecretName");
    return Result::Done();  // the Machine's change is an event
  }
  s.Mark(kBootstrapDataReady, true, "BootstrapDataReady", "");

  Result wait;
  if (!Connect(s, &wait)) return wait;

  // Conditions are derived on every pass: a reconcile that started from a
  // cached object older than the last status write must not drop them.
  if (s.hm.spec.network_config) {
    s.Mark(kVmIpAllocated, true, "StaticAddress",
           s.hm.spec.network_config->address + " from spec.networkConfig");
  } else if (!s.hc.spec.vm_network_config) {
    s.Mark(kVmIpAllocated, true, "DHCP", "the VM's addresses come from DHCP");
  }
  auto vm = s.conn->vms().Get(s.target_ns, s.hm.metadata.name);
  if (vm && !harvester::OwnedBy(LabelsOf(*vm), s.identity)) {
    const std::string msg = "VirtualMachine " + s.target_ns + "/" + s.hm.metadata.name +
                            " exists on Harvester but does not belong to this cluster";
    if (s.Mark(kVmProvisioningReady, false, "VMNameConflict", msg))
      Emit(s, true, "VMNameConflict", msg);
    return Result::Done();
  }
  if (vm) return ReportVm(s, *vm);

  if (s.hc.spec.vm_network_config && !s.hm.spec.network_config) {
    bool waiting = false;
    Result r = AllocateAddress(s, &waiting);
    if (waiting || !r.error.ok()) return r;
  }
  return CreateVm(s);
}

Result HarvesterMachineReconciler::AllocateAddress(Scope& s, bool* waiting) {
  const std::string owner = s.OwnerId(ctx_.management_cluster_id);
  const std::vector<std::string> refs = s.PoolRefs();
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::vector<harvester::PoolCandidate> candidates;
    for (const auto& ref : refs) {
      harvester::PoolCandidate c{ref, std::nullopt};
      auto pool = s.conn->client().Get(harvester::kIPPools, "", ref);
      if (pool.ok()) {
        auto parsed = harvester::ParseIpPool(*pool);
        if (!parsed.ok()) {
          s.Mark(kVmIpAllocated, false, "VMIPAllocationFailed", parsed.status().message());
          return Result::Error(parsed.status());
        }
        c.pool = std::move(parsed).value();
      } else if (!pool.status().IsNotFound()) {
        return Result::Error(pool.status());
      }
      candidates.push_back(std::move(c));
    }
    auto d = harvester::DecideAllocation(candidates, owner, s.hm.spec.networks);
    switch (d.outcome) {
      case harvester::AllocationDecision::Outcome::kExhausted: {
        const std::string msg = "no IP address available: " + d.message;
        if (s.Mark(kVmIpAllocated, false, "VMIPPoolExhausted", msg)) {
          Emit(s, true, "VMIPPoolExhausted", msg);
          metrics::IPPoolAllocationErrorsTotal().Increment();
        }
        s.conn->WaitForPool(s.req);
        *waiting = true;
        return Result::Done();  // the next IPPool change wakes this machine
      }
      case harvester::AllocationDecision::Outcome::kAdopt:
        break;
      case harvester::AllocationDecision::Outcome::kAllocate: {
        const auto& cand = *std::find_if(candidates.begin(), candidates.end(),
                                         [&](const auto& c) { return c.ref == d.pool; });
        auto patch = harvester::ReservePatch(*cand.pool, d.ip, owner);
        if (!patch.ok()) return Result::Error(patch.status());
        auto written = s.conn->client().Patch(harvester::kIPPools, "", cand.pool->name,
                                              kube::PatchType::kMerge, *patch);
        if (!written.ok()) {
          if (written.status().IsConflict()) continue;  // someone else wrote the pool: re-read
          metrics::IPPoolAllocationErrorsTotal().Increment();
          s.Mark(kVmIpAllocated, false, "VMIPAllocationFailed", written.status().message());
          return Result::Error(written.status());
        }
        metrics::IPPoolAllocationsTotal().Increment();
        Emit(s, false, "VMIPAllocated", "allocated " + d.ip + " from IPPool " + d.pool);
        break;
      }
    }
    s.hm.status.allocated_ip_address = d.ip;
    s.hm.status.allocated_pool_ref = d.pool;
    s.Mark(kVmIpAllocated, true, "VMIPAllocated", d.ip + " from IPPool " + d.pool);
    return Result::Done();
  }
  return Result::Error(Status(kube::StatusCode::kConflict,
                              "the IPPools kept changing while allocating an address; retrying"));
}

Result HarvesterMachineReconciler::CreateVm(Scope& s) {
  const std::string& ns = s.target_ns;
  const std::string& name = s.hm.metadata.name;
  auto fail = [&](std::string_view reason, const std::string& msg) {
    if (s.Mark(kVmProvisioningReady, false, reason, msg)) Emit(s, true, reason, msg);
  };
  // Bootstrap data.
  const std::string data_secret = BootstrapDataSecretName(*s.machine);
  auto bootstrap = ctx_.mgmt->Get(kube::resources::kSecrets, s.req.ns, data_secret);
  if (!bootstrap.ok()) {
    fail("BootstrapDataUnavailable",
         "cannot read bootstrap Secret " + data_secret + ": " + bootstrap.status().message());
    return Result::RequeueAfter(std::chrono::seconds(10));  // that Secret is not watched
  }
  // SSH key.
  auto [kp_ns, kp_name] = harvester::SplitQualifiedName(s.hm.spec.ssh_key_pair, ns);
  auto keypair = s.conn->client().Get(harvester::kKeyPairs, kp_ns, kp_name);
  if (!keypair.ok()) {
    fail("KeyPairNotFound", "cannot read Harvester KeyPair " + kp_ns + "/" + kp_name +
                                " (spec.sshKeyPair): " + keypair.status().message());
    return Result::RequeueAfter(std::chrono::seconds(30));
  }
  harvester::UserDataInputs ud_in;
  ud_in.bootstrap = Decoded(*bootstrap, "value");
  ud_in.bootstrap_format = Decoded(*bootstrap, "format");
  ud_in.ssh_user = s.hm.spec.ssh_user;
  ud_in.ssh_public_key = Str(*keypair, {"spec", "publicKey"});
  auto user_data = harvester::MergeUserData(ud_in);
  if (!user_data.ok()) {
    fail("InvalidBootstrapData", user_data.status().message());
    return Result::Terminal(user_data.status());
  }
  if (!user_data->merged) {
    s.log.Info("Bootstrap data is not cloud-config; passed through unchanged",
               {{"format", user_data->format}});
  }
  auto nd_in = harvester::EffectiveNetworkData(s.hm.spec, s.hc.spec.vm_network_config,
                                               s.hm.status.allocated_ip_address);
  if (!nd_in.ok()) {
    fail("InvalidNetworkConfig", nd_in.status().message());
    return Result::Terminal(nd_in.status());
  }
  auto network_data = harvester::BuildNetworkData(*nd_in);
  if (!network_data.ok()) {
    fail("InvalidNetworkConfig", network_data.status().message());
    return Result::Terminal(network_data.status());
  }
  // Images.
  harvester::VmInputs in;
  for (size_t i = 0; i < s.hm.spec.volumes.size(); ++i) {
    const api::Volume& v = s.hm.spec.volumes[i];
    if (v.volume_type != api::kVolumeTypeImage || in.images.contains(v.image_name)) continue;
    auto [img_ns, img_name] = harvester::SplitQualifiedName(v.image_name, ns);
    auto image = s.conn->client().Get(harvester::kVirtualMachineImages, img_ns, img_name);
    if (!image.ok() && image.status().IsNotFound()) {
      // Harvester users often write the display name.
      auto list = s.conn->client().List(harvester::kVirtualMachineImages, img_ns);
      if (list.ok()) {
        for (auto& item : list->items) {
          if (Str(item, {"spec", "displayName"}) == img_name) image = std::move(item);
        }
      }
    }
    if (!image.ok()) {
      fail("ImageNotFound", "Harvester image " + img_ns + "/" + img_name + " (spec.volumes[" +
                                std::to_string(i) +
                                "].imageName) not found: " + image.status().message());
      return Result::RequeueAfter(std::chrono::seconds(30));
    }
    in.images[v.image_name] = {img_ns, kube::NameOf(*image),
                               Str(*image, {"status", "storageClassName"})};
  }
  if (Status st = s.conn->EnsureNamespace(ns); !st.ok()) return Result::Error(st);

  // A VM of that name the cache does not show (not labelled by CAPHV, or
  // created an instant ago): never overwrite what belongs to someone else.
  if (auto existing = s.conn->client().Get(harvester::kVirtualMachines, ns, name); existing.ok()) {
    if (!harvester::OwnedBy(LabelsOf(*existing), s.identity)) {
      fail("VMNameConflict", "VirtualMachine " + ns + "/" + name +
                                 " exists on Harvester but does not belong to this cluster");
      return Result::Done();
    }
    return ReportVm(s, *existing);
  } else if (!existing.status().IsNotFound()) {
    return Result::Error(existing.status());
  }

  // Cloud-init Secret, then the VM that reads it.
  harvester::CloudInitSecretInputs ci;
  ci.name = harvester::CloudInitSecretName(name);
  ci.namespace_ = ns;
  ci.labels = harvester::ClusterLabels(s.identity);
  ci.user_data = user_data->text;
  ci.network_data = *network_data;
  Object secret = harvester::BuildCloudInitSecret(ci);
  secret["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = s.req.Key();
  if (auto applied = s.conn->client().Apply(kube::resources::kSecrets, ns, secret); !applied.ok()) {
    if (applied.status().IsNotFound()) s.conn->ForgetNamespace(ns);
    fail("CloudInitSecretFailed", applied.status().message());
    return Result::Error(applied.status());
  }

  in.name = name;
  in.namespace_ = ns;
  in.machine_uid = s.hm.metadata.uid;
  in.cluster = s.identity;
  in.control_plane = s.hm.metadata.labels.contains(std::string(kControlPlaneLabel)) ||
                     LabelsOf(*s.machine).contains(std::string(kControlPlaneLabel));
  in.spec = s.hm.spec;
  auto vm = harvester::BuildVirtualMachine(in);
  if (!vm.ok()) {
    fail("InvalidMachineSpec", vm.status().message());
    return Result::Terminal(vm.status());
  }
  (*vm)["metadata"]["annotations"][std::string(harvester::kAnnotationOwner)] = s.req.Key();
  auto created = s.conn->client().Create(harvester::kVirtualMachines, ns, *vm);
  if (!created.ok() && created.status().IsAlreadyExists()) {
    // Created by an earlier attempt the cache has not shown yet: adopt it.
    auto existing = s.conn->client().Get(harvester::kVirtualMachines, ns, name);
    if (!existing.ok()) return Result::Error(existing.status());
    if (!harvester::OwnedBy(LabelsOf(*existing), s.identity)) {
      fail("VMNameConflict", "VirtualMachine " + ns + "/" + name +
                                 " exists on Harvester but does not belong to this cluster");
      return Result::Done();
    }
    return ReportVm(s, *existing);
  }
  if (!created.ok()) {
    metrics::MachineCreateErrorsTotal().Increment();
    fail("VMProvisioningFailed",
         "cannot create VirtualMachine " + ns + "/" + name + ": " + created.status().message());
    return Result::Error(created.status());
  }
  metrics::MachineCreateTotal().Increment();
  Emit(s, false, "VMCreated", "created VirtualMachine " + ns + "/" + name);
  s.Mark(kMachineCreated, true, "MachineCreated", "");
  s.Mark(kVmProvisioningReady, false, "VMProvisioning", "waiting for the VM to start");
  return ReportVm(s, *created);
}

Result HarvesterMachineReconciler::ReportVm(Scope& s, const Object& vm) {
  const std::string provider_id = std::string(api::kProviderIDPrefix) + kube::UidOf(vm);
  s.Mark(kMachineCreated, true, "MachineCreated", "");
  if (s.hm.spec.provider_id.empty()) {
    Object patch = {{"spec", {{"providerID", provider_id}}}};
    if (Status st = MergePatch(*ctx_.mgmt, HmGvr(), *s.object, patch); !st.ok()) {
      return Result::Error(st);
    }
    s.hm.spec.provider_id = provider_id;
  } else if (s.hm.spec.provider_id != provider_id) {
    const std::string msg = "spec.providerID is " + s.hm.spec.provider_id + " but the VM is " +
                            provider_id + " (the VM was replaced outside CAPHV)";
    if (s.Mark(kVmProvisioningReady, false, "ProviderIDMismatch", msg)) {
      Emit(s, true, "ProviderIDMismatch", msg);
    }
    return Result::Done();
  }
  if (s.hm.status.allocated_ip_address.empty() && !s.hm.spec.network_config &&
      s.hc.spec.vm_network_config) {
    // Status lost (clusterctl move, restore): re-derive the address from the pools.
    bool waiting = false;
    AllocateAddress(s, &waiting);
  }
  auto vmi = s.conn->vmis().Get(s.target_ns, s.hm.metadata.name);
  const std::string phase = vmi ? Str(*vmi, {"status", "phase"}) : std::string();
  if (phase == "Failed") {
    const std::string msg = "the VM " + s.target_ns + "/" + s.hm.metadata.name + " failed";
    if (s.Mark(kVmProvisioningReady, false, "VMProvisioningFailed", msg)) {
      Emit(s, true, "VMProvisioningFailed", msg);
    }
    s.hm.status.ready = false;
    return Result::Done();
  }
  if (phase != "Running") {
    s.Mark(
        kVmProvisioningReady, false, "VMProvisioning",
        "waiting for the VM to run" + (phase.empty() ? std::string() : " (phase " + phase + ")"));
    return Result::Done();  // the VMI's change is an event
  }
  auto addresses = AddressesOf(*vmi);
  if (addresses.empty()) {
    s.Mark(kVmProvisioningReady, false, "WaitingForIPAddress",
           "the VM runs; waiting for the guest agent to report its IP address");
    return Result::Done();
  }
  s.hm.status.addresses = std::move(addresses);
  bool first_ready = false;
  {
    // Once per machine, even when a reconcile starts from a cached object
    // older than the status write that made it ready.
    std::lock_guard lock(mu_);
    first_ready =
        !s.hm.status.ready.value_or(false) && ready_seen_.insert(s.hm.metadata.uid).second;
  }
  if (first_ready) {
    const std::string created = s.hm.metadata.creation_timestamp;
    metrics::MachineCreationDuration().Observe(
        std::chrono::duration<double>(
            std::chrono::system_clock::now() -
            ParseRfc3339(created).value_or(std::chrono::system_clock::now()))
            .count());
    Emit(s, false, "VMReady", "VM runs with address " + s.hm.status.addresses.front().address);
  }
  s.hm.status.ready = true;
  s.hm.status.initialization = api::Initialization{true};
  s.Mark(kVmProvisioningReady, true, "VMProvisioningReady", "");
  return CheckNode(s, provider_id);
}

std::shared_ptr<kube::Client> HarvesterMachineReconciler::WorkloadClient(Scope& s,
                                                                         std::string* error) {
  const std::string name = s.cluster_name + "-kubeconfig";
  const std::string key = s.req.ns + "/" + name;
  auto meta = ctx_.secrets->store().Get(s.req.ns, name);
  if (!meta) {
    *error = "Secret " + key + " does not exist yet";
    return nullptr;
  }
  std::lock_guard lock(mu_);
  auto it = workload_clients_.find(key);
  if (it != workload_clients_.end() && it->second.first == kube::ResourceVersionOf(*meta)) {
    return it->second.second;
  }
  auto secret = ctx_.mgmt->Get(kube::resources::kSecrets, s.req.ns, name);
  if (!secret.ok()) {
    *error = secret.status().message();
    return nullptr;
  }
  auto config = kube::LoadKubeconfigString(Decoded(*secret, "value"), "/nonexistent");
  if (!config.ok()) {
    *error = "Secret " + key + ": " + config.status().message();
    return nullptr;
  }
  config->user_agent = "caphv-manager";
  auto client = kube::Client::New(std::move(config).value());
  if (!client.ok()) {
    *error = client.status().message();
    return nullptr;
  }
  workload_clients_[key] = {kube::ResourceVersionOf(*secret), *client};
  return *client;
}

Result HarvesterMachineReconciler::CheckNode(Scope& s, const std::string& provider_id) {
  // Cluster API watches a workload cluster's Nodes only once its control
  // plane is initialized; until then (the first control-plane machine of a
  // machine-based control plane) it finds the Node only if it already exists
  // when the Machine is reconciled. Reporting the Node's registration as a
  // condition updates this object, which makes Cluster API look again.
  if (s.machine && !Str(*s.machine, {"status", "nodeRef", "name"}).empty()) {
    s.Mark(kNodeRegistered, true, "NodeRegistered", "");
    return Result::Done();
  }
  std::string error;
  auto workload = WorkloadClient(s, &error);
  if (!workload) {
    s.Mark(kNodeRegistered, false, "WaitingForWorkloadCluster",
           "waiting for the workload cluster's kubeconfig: " + error);
    return Result::RequeueAfter(std::chrono::seconds(10));
  }
  auto node = workload->Get(kube::resources::kNodes, "", s.hm.metadata.name);
  if (node.ok() && Str(*node, {"spec", "providerID"}) == provider_id) {
    s.Mark(kNodeRegistered, true, "NodeRegistered",
           "Node " + s.hm.metadata.name + " registered with providerID " + provider_id);
    return Result::Done();
  }
  s.Mark(kNodeRegistered, false, "WaitingForNode",
         "waiting for the guest to register Node " + s.hm.metadata.name + " with providerID " +
             provider_id);
  // The workload cluster is not watched: look again shortly.
  return Result::RequeueAfter(std::chrono::seconds(5));
}

Status HarvesterMachineReconciler::ReleaseAddresses(Scope& s) {
  const std::string owner = s.OwnerId(ctx_.management_cluster_id);
  std::vector<std::string> refs = s.PoolRefs();
  if (!s.hm.status.allocated_pool_ref.empty() &&
      std::find(refs.begin(), refs.end(), s.hm.status.allocated_pool_ref) == refs.end()) {
    refs.push_back(s.hm.status.allocated_pool_ref);
  }
  for (const auto& ref : refs) {
    for (int attempt = 0;; ++attempt) {
      auto pool = s.conn->client().Get(harvester::kIPPools, "", ref);
      if (!pool.ok() && pool.status().IsNotFound()) break;
      if (!pool.ok()) return pool.status();
      auto parsed = harvester::ParseIpPool(*pool);
      if (!parsed.ok()) return parsed.status();
      auto patch = harvester::ReleasePatch(*parsed, owner);
      if (!patch) break;
      auto written =
          s.conn->client().Patch(harvester::kIPPools, "", ref, kube::PatchType::kMerge, *patch);
      if (written.ok()) {
        metrics::IPPoolReleasesTotal().Increment();
        Emit(s, false, "VMIPReleased", "released the address of IPPool " + ref);
        break;
      }
      if (!written.status().IsConflict() || attempt >= 5) return written.status();
    }
  }
  return Status::Ok();
}

Result HarvesterMachineReconciler::ReconcileDelete(Scope& s) {
  if (!HasFinalizer(*s.object, kMachineFinalizer) &&
      !HasFinalizer(*s.object, kLegacyMachineFinalizer)) {
    return Result::Done();
  }
  auto finish = [&]() -> Result {
    if (auto p = RemoveFinalizerPatch(*s.object, kMachineFinalizer, kLegacyMachineFinalizer)) {
      if (Status st = MergePatch(*ctx_.mgmt, HmGvr(), *s.object, *p);
          !st.ok() && !st.IsNotFound()) {
        metrics::MachineDeleteErrorsTotal().Increment();
        return Result::Error(st);
      }
    }
    metrics::MachineDeleteTotal().Increment();
    if (!s.cluster_name.empty()) {
      metrics::DeleteMachineStatus(s.req.ns + "/" + s.cluster_name, s.req.Key());
    }
    {
      std::lock_guard lock(mu_);
      ready_seen_.erase(s.hm.metadata.uid);
    }
    s.log.Info("Deleted the machine's VM and everything it used on Harvester");
    return Result::Done();
  };
  if (!s.hc_object) {
    // Without its HarvesterCluster nothing can have been created (the VM
    // waits for the cluster's infrastructure) unless the cluster went first.
    if (s.hm.spec.provider_id.empty() && s.hm.status.allocated_ip_address.empty()) return finish();
    const std::string msg = "the HarvesterCluster of Cluster " + s.cluster_name +
                            " is gone: cannot delete the VM on Harvester (remove the finalizer "
                            "to abandon it)";
    if (s.Mark(kVmProvisioningReady, false, "HarvesterClusterNotFound", msg)) {
      Emit(s, true, "HarvesterClusterNotFound", msg);
    }
    return Result::RequeueAfter(std::chrono::minutes(1));
  }
  Result wait;
  if (!Connect(s, &wait)) {
    // Nothing can exist on Harvester for a machine that never got a VM
    // (providerID) or an address: let it go.
    if (s.hm.spec.provider_id.empty() && s.hm.status.allocated_ip_address.empty()) return finish();
    return wait;
  }
  const std::string& ns = s.target_ns;
  const std::string& name = s.hm.metadata.name;
  s.Mark(api::kReadyCondition, false, "Deleting", "the VM and its resources are being deleted");
  s.hm.status.ready = false;

  // 1. The VM. A live read: the cache may not show a VM created moments ago.
  auto vm = s.conn->client().Get(harvester::kVirtualMachines, ns, name);
  if (!vm.ok() && !vm.status().IsNotFound()) return Result::Error(vm.status());
  const bool foreign_vm = vm.ok() && !harvester::OwnedBy(LabelsOf(*vm), s.identity);
  if (vm.ok() && !foreign_vm) {
    if (!IsDeleting(*vm)) {
      if (auto patch = harvester::RemovePvcsPatch(*vm)) {
        auto patched = s.conn->client().Patch(harvester::kVirtualMachines, ns, name,
                                              kube::PatchType::kMerge, *patch);
        if (!patched.ok() && !patched.status().IsNotFound()) {
          return Result::Error(patched.status());
        }
      }
      if (Status st = DeleteIfExists(s.conn->client(), harvester::kVirtualMachines, ns, name);
          !st.ok()) {
        metrics::MachineDeleteErrorsTotal().Increment();
        return Result::Error(st);
      }
      Emit(s, false, "VMDeleted", "deleting VirtualMachine " + ns + "/" + name);
    }
    s.Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM to be deleted");
    return Result::Done();  // the VM's deletion is an event
  }
  // 2. Its PVCs: the names CAPHV gave them, and any "<name>-disk-<i>-<hash>".
  std::set<std::string> wanted;
  for (size_t i = 0; i < s.hm.spec.volumes.size(); ++i) {
    wanted.insert(harvester::PvcName(name, s.hm.metadata.uid, i));
  }
  const std::regex disk_name("^" + std::regex_replace(name, std::regex(R"([.])"), R"(\.)") +
                             R"(-disk-[0-9]+-[a-z0-9]+$)");
  auto pvcs = s.conn->client().List(kube::resources::kPersistentVolumeClaims, ns);
  if (!pvcs.ok() && !pvcs.status().IsNotFound()) return Result::Error(pvcs.status());
  bool pending = false;
  if (pvcs.ok()) {
    for (const auto& pvc : pvcs->items) {
      const std::string pvc_name = kube::NameOf(pvc);
      // Beside a VM of another cluster with this name, only the names
      // derived from this machine's uid can be this machine's.
      if (!wanted.contains(pvc_name) && (foreign_vm || !std::regex_match(pvc_name, disk_name))) {
        continue;
      }
      pending = true;
      if (IsDeleting(pvc)) continue;
      if (Status st = DeleteIfExists(s.conn->client(), kube::resources::kPersistentVolumeClaims, ns,
                                     pvc_name);
          !st.ok()) {
        return Result::Error(st);
      }
    }
  }
  if (pending) {
    s.Mark(kVmProvisioningReady, false, "Deleting", "waiting for the VM's volumes to be deleted");
    return Result::RequeueAfter(std::chrono::seconds(2));  // PVCs are not watched
  }
  // 3. The cloud-init Secret, if it is this cluster's.
  const std::string secret_name = harvester::CloudInitSecretName(name);
  auto secret = s.conn->client().Get(kube::resources::kSecrets, ns, secret_name);
  if (!secret.ok() && !secret.status().IsNotFound()) return Result::Error(secret.status());
  if (secret.ok() && harvester::OwnedBy(LabelsOf(*secret), s.identity)) {
    if (Status st = DeleteIfExists(s.conn->client(), kube::resources::kSecrets, ns, secret_name);
        !st.ok()) {
      return Result::Error(st);
    }
  }
  // 4. The IP, now that nothing uses it.
  if (Status st = ReleaseAddresses(s); !st.ok()) return Result::Error(st);
  return finish();
}

}  // namespace caphv::controllers
