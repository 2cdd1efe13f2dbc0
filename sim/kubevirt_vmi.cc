// File: sim/kubevirt_vmi.cc
//
// The objects KubeVirt and the guest's kubelet write at each stage of a VM's
// life (see kubevirt.h): the VirtualMachineInstance (running, pending on its
// volumes, unschedulable), the VM's status, the guest Node and its status,
// and the patch the cloud provider and the node lifecycle controller make to
// a Node's spec. The admission rules, the claims and the NIC plan are in
// kubevirt.cc.

#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/kubevirt.h"
#include "sim/object_util.h"

namespace caphv::sim {

using internal::ObjectAt;
using internal::StrAt;
using kube::Object;

namespace {

std::string Iso8601Now() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::string LinkLocalAddress(const std::string& mac) {
  unsigned int b[6];
  char tail = 0;
  if (std::sscanf(mac.c_str(), "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
                  &b[5], &tail) != 6) {
    return "";
  }
  char out[64];
  std::snprintf(out, sizeof out, "fe80::%x:%x:%x:%x", ((b[0] ^ 2u) << 8) | b[1],
                (b[2] << 8) | 0xffu, (0xfeu << 8) | b[3], (b[4] << 8) | b[5]);
  return out;
}

namespace {

// The virt-launcher pod's PodScheduled condition as KubeVirt copies it.
Object UnschedulableCondition(const Placement& where) {
  return {{"type", "PodScheduled"},    {"status", "False"},
          {"reason", "Unschedulable"}, {"message", where.unschedulable},
          {"lastProbeTime", nullptr},  {"lastTransitionTime", Iso8601Now()}};
}

}  // namespace

Object BuildVmi(const Object& vm, Stage stage, const std::vector<Nic>& nics,
                const GuestAgentReport& agent, const Placement& where) {
  const bool unschedulable = !where.unschedulable.empty();
  if (unschedulable) stage = Stage::kScheduling;
  const std::string name = StrAt(vm, {"metadata", "name"});
  Object labels = ObjectAt(vm, {"spec", "template", "metadata", "labels"});
  if (!labels.is_object()) labels = Object::object();
  Object annotations = ObjectAt(vm, {"spec", "template", "metadata", "annotations"});
  if (!annotations.is_object()) annotations = Object::object();
  labels["kubevirt.io/created-by"] = StrAt(vm, {"metadata", "uid"});
  Object status = Object::object();
  const bool scheduled = stage != Stage::kScheduling;
  if (scheduled) {
    labels["kubevirt.io/nodeName"] = where.node;
    status["nodeName"] = where.node;
  }
  if (StrAt(vm, {"metadata", "labels", "harvesterhci.io/creator"}) ==
      "docker-machine-driver-harvester") {
    annotations["topology.kubernetes.io/zone"] = where.zone.empty() ? "zone-a" : where.zone;
    annotations["topology.kubernetes.io/region"] = where.region.empty() ? "region-1" : where.region;
    annotations["kubernetes.io/hostname"] = where.node;
  }
  switch (stage) {
    case Stage::kScheduling:
      status["phase"] = "Scheduling";
      break;
    case Stage::kFailed:
      status["phase"] = "Failed";
      status["reason"] = "SimulatedFailure";
      break;
    default:
      status["phase"] = "Running";
  }
  const bool ready = stage == Stage::kRunning;
  Object conds = Object::array();
  conds.push_back({{"type", "Ready"},
                   {"status", ready ? "True" : "False"},
                   {"lastProbeTime", nullptr},
                   {"lastTransitionTime", Iso8601Now()}});
  const bool agent_up = ready && agent.runs;
  if (agent_up) conds.push_back({{"type", "AgentConnected"}, {"status", "True"}});
  if (stage == Stage::kFailed) {
    conds[0]["reason"] = "SimulatedFailure";
    conds[0]["message"] = std::string("failure injected by annotation ") +
                          (GuestDied(vm) ? kDeadAnnotation : kFailAnnotation);
  }
  if (unschedulable) conds.push_back(UnschedulableCondition(where));
  status["conditions"] = conds;
  if (stage == Stage::kBooting || stage == Stage::kRunning) {
    Object ifs = Object::array();
    for (size_t i = 0; i < nics.size(); ++i) {
      // infoSource as KubeVirt joins it (pkg/network/vmispec/infosource.go):
      // domain, then guest-agent, then multus-status for a Multus network.
      const std::string multus = nics[i].network.empty() ? "" : ", multus-status";
      Object entry = {{"name", nics[i].name},
                      {"mac", nics[i].mac},
                      {"infoSource", "domain" + multus},
                      {"queueCount", 1},
                      {"linkState", "up"}};
      if (agent_up) {
        entry["interfaceName"] = "eth" + std::to_string(i);
        entry["infoSource"] = "domain, guest-agent" + multus;
        Object ips = Object::array();
        if (!nics[i].ip.empty()) {
          entry["ipAddress"] = nics[i].ip;
          ips.push_back(nics[i].ip);
        }
        if (std::string ll = LinkLocalAddress(nics[i].mac); !ll.empty()) ips.push_back(ll);
        if (!ips.empty()) entry["ipAddresses"] = ips;
      }
      ifs.push_back(entry);
    }
    if (agent_up && agent.pod_network) {
      // RKE2's canal: the node's pod subnet 10.42.<n>.0/24 on cni0, and
      // flannel's VXLAN device; unnamed, as the agent reports them.
      const std::string subnet =
          "10.42." + std::to_string(std::hash<std::string>{}(name) % 250) + ".";
      ifs.push_back({{"interfaceName", "cni0"},
                     {"ipAddress", subnet + "1"},
                     {"ipAddresses", Object::array({subnet + "1"})},
                     {"infoSource", "guest-agent"}});
      ifs.push_back({{"interfaceName", "flannel.1"},
                     {"ipAddress", subnet + "0"},
                     {"ipAddresses", Object::array({subnet + "0"})},
                     {"infoSource", "guest-agent"}});
    }
    status["interfaces"] = ifs;
  }
  if (agent_up) {
    status["guestOSInfo"] = {{"name", "Ubuntu"}, {"id", "ubuntu"}, {"versionId", "24.04"}};
  }
  Object vmi = {{"apiVersion", "kubevirt.io/v1"},
                {"kind", "VirtualMachineInstance"},
                {"metadata",
                 {{"name", name},
                  {"namespace", StrAt(vm, {"metadata", "namespace"})},
                  {"labels", labels},
                  {"finalizers", Object::array({kVmFinalizer, kVmiForegroundFinalizer})},
                  {"ownerReferences", Object::array({{{"apiVersion", "kubevirt.io/v1"},
                                                      {"kind", "VirtualMachine"},
                                                      {"name", name},
                                                      {"uid", StrAt(vm, {"metadata", "uid"})},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}})}}},
                {"spec", ObjectAt(vm, {"spec", "template", "spec"})},
                {"status", status}};
  if (!annotations.empty()) vmi["metadata"]["annotations"] = annotations;
  return vmi;
}

Object BuildPendingVmi(const Object& vm, const VolumeWait& wait) {
  Object vmi = BuildVmi(vm, Stage::kScheduling, {}, {});
  vmi["status"]["phase"] = "Pending";
  vmi["status"]["conditions"] = Object::array({{{"type", "Synchronized"},
                                                {"status", "False"},
                                                {"reason", wait.reason},
                                                {"message", wait.message},
                                                {"lastProbeTime", nullptr},
                                                {"lastTransitionTime", Iso8601Now()}}});
  return vmi;
}

Object BuildWaitingVmStatus(const Object& vm, const VolumeWait& wait) {
  Object status = BuildVmStatus(vm, Stage::kScheduling);
  status["printableStatus"] = wait.printable_status;
  status["conditions"].push_back({{"type", "Synchronized"},
                                  {"status", "False"},
                                  {"reason", wait.reason},
                                  {"message", wait.message},
                                  {"lastProbeTime", nullptr},
                                  {"lastTransitionTime", Iso8601Now()}});
  return status;
}

Object BuildVmStatus(const Object& vm, Stage stage, const Placement& where) {
  const bool unschedulable = !where.unschedulable.empty();
  if (unschedulable) stage = Stage::kScheduling;
  static const std::map<Stage, std::string> kPrintable = {{Stage::kStopped, "Stopped"},
                                                          {Stage::kScheduling, "Starting"},
                                                          {Stage::kBooting, "Running"},
                                                          {Stage::kRunning, "Running"},
                                                          {Stage::kFailed, "CrashLoopBackOff"}};
  const bool ready = stage == Stage::kRunning;
  Object cond = {{"type", "Ready"},
                 {"status", ready ? "True" : "False"},
                 {"lastProbeTime", nullptr},
                 {"lastTransitionTime", Iso8601Now()}};
  if (stage == Stage::kFailed) cond["reason"] = "SimulatedFailure";
  if (stage == Stage::kStopped) cond["reason"] = "VMINotExists";
  Object status = {{"created", stage != Stage::kStopped},
                   {"ready", ready},
                   {"printableStatus", unschedulable ? "ErrorUnschedulable" : kPrintable.at(stage)},
                   {"conditions", Object::array({cond})}};
  if (unschedulable) status["conditions"].push_back(UnschedulableCondition(where));
  if (ObjectAt(vm, {"spec", "runStrategy"}).is_string()) {
    status["runStrategy"] = ObjectAt(vm, {"spec", "runStrategy"});
  }
  const Object& gen = ObjectAt(vm, {"metadata", "generation"});
  if (gen.is_number_integer()) {
    status["observedGeneration"] = gen;
    status["desiredGeneration"] = gen;
  }
  return status;
}

Object BuildNode(const Object& vm) {
  const std::string name = StrAt(vm, {"metadata", "name"});
  Object labels = {{"kubernetes.io/hostname", name},
                   {"kubernetes.io/os", "linux"},
                   {"kubernetes.io/arch", "amd64"},
                   {"beta.kubernetes.io/os", "linux"},
                   {"beta.kubernetes.io/arch", "amd64"}};
  const std::string machine_type =
      StrAt(vm, {"metadata", "labels", "harvestercluster/machinetype"});
  if (machine_type.starts_with("controlplane")) {
    labels["node-role.kubernetes.io/control-plane"] = "";
  }
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"taints",
             Object::array(
                 {{{"key", kUninitializedTaint}, {"value", "true"}, {"effect", "NoSchedule"}}})}}}};
}

Object BuildNodeStatus(const Object& vm, const std::vector<Nic>& nics, bool ready) {
  Object addresses = Object::array();
  for (const auto& nic : nics) {
    if (!nic.ip.empty()) addresses.push_back({{"type", "InternalIP"}, {"address", nic.ip}});
  }
  addresses.push_back({{"type", "Hostname"}, {"address", StrAt(vm, {"metadata", "name"})}});
  const Object& limits =
      ObjectAt(vm, {"spec", "template", "spec", "domain", "resources", "limits"});
  Object capacity = {{"cpu", "2"}, {"memory", "4Gi"}, {"pods", "110"}};
  if (limits.is_object()) {
    for (const char* k : {"cpu", "memory"}) {
      if (limits.contains(k)) {
        capacity[k] = limits[k].is_string() ? limits[k] : Object(limits[k].dump());
      }
    }
  }
  const std::string now = Iso8601Now();
  Object conditions = Object::array();
  // The kubelet posts the three pressure conditions before Ready
  // (kubernetes pkg/kubelet/nodestatus/setters.go); once it stops posting,
  // the node lifecycle controller turns them Unknown. Cluster API v1.11+
  // computes a Machine's NodeHealthy from all four.
  struct Pressure {
    const char* type;
    const char* reason;
    const char* message;
  };
  for (const Pressure& p :
       {Pressure{"MemoryPressure", "KubeletHasSufficientMemory",
                 "kubelet has sufficient memory available"},
        Pressure{"DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
        Pressure{"PIDPressure", "KubeletHasSufficientPID",
                 "kubelet has sufficient PID available"}}) {
    conditions.push_back({{"type", p.type},
                          {"status", ready ? "False" : "Unknown"},
                          {"reason", ready ? p.reason : "NodeStatusUnknown"},
                          {"message", ready ? p.message : "Kubelet stopped posting node status."},
                          {"lastHeartbeatTime", now},
                          {"lastTransitionTime", now}});
  }
  conditions.push_back({{"type", "Ready"},
                        {"status", ready ? "True" : "False"},
                        {"reason", ready ? "KubeletReady" : "KubeletNotReady"},
                        {"message", ready ? "kubelet is posting ready status"
                                          : "the virtual machine is not running"},
                        {"lastHeartbeatTime", now},
                        {"lastTransitionTime", now}});
  return {{"addresses", addresses},
          {"capacity", capacity},
          {"allocatable", capacity},
          {"conditions", conditions},
          {"nodeInfo",
           {{"architecture", "amd64"},
            {"operatingSystem", "linux"},
            {"osImage", "Ubuntu 24.04 LTS"},
            {"kernelVersion", "6.8.0-generic"},
            {"containerRuntimeVersion", "containerd://1.7.0"},
            {"kubeletVersion", "v1.33.13"},
            {"kubeProxyVersion", ""},
            {"machineID", ""},
            {"systemUUID", StrAt(vm, {"metadata", "uid"})},
            {"bootID", ""}}}};
}

std::string ProviderIdFor(const Object& vm) {
  return "harvester://" + StrAt(vm, {"metadata", "uid"});
}

Object NodeSpecPatch(const Object& node, const std::set<std::string>& drop_taints,
                     const std::string& provider_id) {
  const Object spec = node.value("spec", Object::object());
  const Object old_taints = spec.value("taints", Object::array());
  Object patch_spec = Object::object();
  if (!provider_id.empty()) patch_spec["providerID"] = provider_id;
  Object taints = Object::array();
  for (const auto& t : old_taints) {
    if (!drop_taints.contains(t.value("key", ""))) taints.push_back(t);
  }
  if (taints.size() != old_taints.size()) {
    patch_spec["taints"] = taints.empty() ? Object(nullptr) : taints;
  }
  if (patch_spec.empty()) return Object::object();
  return {{"metadata", {{"resourceVersion", StrAt(node, {"metadata", "resourceVersion"})}}},
          {"spec", patch_spec}};
}

}  // namespace caphv::sim
