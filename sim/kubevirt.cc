// File: sim/kubevirt.cc

#include "sim/kubevirt.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "api/yaml.h"
#include "kube/base64.h"
#include "sim/ipam.h"
#include "sim/manifests.h"
#include "sim/object_util.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;
using std::chrono::milliseconds;

namespace {

const Object& Empty() {
  static const Object kEmpty = Object::object();
  return kEmpty;
}

// obj[path...] or an empty object.
const Object& At(const Object& o, std::initializer_list<const char*> path) {
  const Object* cur = &o;
  for (const char* k : path) {
    if (!cur->is_object() || !cur->contains(k)) return Empty();
    cur = &(*cur)[k];
  }
  return *cur;
}

std::string Str(const Object& o, std::initializer_list<const char*> path) {
  const Object& v = At(o, path);
  return v.is_string() ? v.get<std::string>() : "";
}

const Object* CloudInitVolume(const Object& vm) {
  const Object& vols = At(vm, {"spec", "template", "spec", "volumes"});
  if (!vols.is_array()) return nullptr;
  for (const auto& v : vols) {
    if (v.contains("cloudInitNoCloud")) return &v["cloudInitNoCloud"];
  }
  return nullptr;
}

std::string StripPrefix(const std::string& address) { return address.substr(0, address.find('/')); }

std::string Iso8601Now() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

std::string InlineNetworkData(const Object& vm) {
  const Object* ci = CloudInitVolume(vm);
  if (!ci) return "";
  if (ci->contains("networkData") && (*ci)["networkData"].is_string()) {
    return (*ci)["networkData"].get<std::string>();
  }
  if (ci->contains("networkDataBase64") && (*ci)["networkDataBase64"].is_string()) {
    return kube::Base64Decode((*ci)["networkDataBase64"].get<std::string>()).value_or("");
  }
  return "";
}

std::string NetworkDataSecretName(const Object& vm) {
  const Object* ci = CloudInitVolume(vm);
  return ci ? Str(*ci, {"networkDataSecretRef", "name"}) : "";
}

std::string NetworkDataFromSecret(const Object& secret) {
  for (const char* key : {"networkdata", "networkData"}) {
    const Object& v = At(secret, {"data", key});
    if (v.is_string()) return kube::Base64Decode(v.get<std::string>()).value_or("");
    const Object& s = At(secret, {"stringData", key});
    if (s.is_string()) return s.get<std::string>();
  }
  return "";
}

std::optional<std::string> StaticAddress(const std::string& network_data, size_t index) {
  if (network_data.empty()) return std::nullopt;
  auto docs = api::ParseYaml(network_data);
  if (!docs.ok() || docs->empty()) return std::nullopt;
  Object nd = docs->front();
  if (nd.contains("network") && nd["network"].is_object()) nd = nd["network"];
  const std::string iface = "eth" + std::to_string(index);
  // network-config v1: config: [{type: physical, name: eth0, subnets: [{type: static, address}]}]
  if (nd.contains("config") && nd["config"].is_array()) {
    size_t physical = 0;
    for (const auto& c : nd["config"]) {
      if (c.value("type", "") != "physical") continue;
      const bool match = c.value("name", "") == iface || (!c.contains("name") && physical == index);
      ++physical;
      if (!match) continue;
      for (const auto& s : c.value("subnets", Object::array())) {
        const std::string type = s.value("type", "");
        if ((type == "static" || type == "static4") && s.contains("address")) {
          return StripPrefix(s.value("address", ""));
        }
      }
      return std::nullopt;
    }
  }
  // network-config v2: ethernets: {eth0: {addresses: [10.0.0.5/24]}}
  if (nd.contains("ethernets") && nd["ethernets"].is_object() && nd["ethernets"].contains(iface)) {
    for (const auto& a : nd["ethernets"][iface].value("addresses", Object::array())) {
      if (a.is_string() && ParseIpv4(StripPrefix(a.get<std::string>()))) {
        return StripPrefix(a.get<std::string>());
      }
    }
  }
  return std::nullopt;
}

std::string GeneratedMac(const std::string& uid, size_t index) {
  const std::string seed = uid + "/" + std::to_string(index);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(seed.data(), seed.size(), md, &len, EVP_sha256(), nullptr);
  char buf[18];
  std::snprintf(buf, sizeof buf, "52:54:00:%02x:%02x:%02x", md[0], md[1], md[2]);
  return buf;
}

std::vector<Nic> PlanNics(const Object& vm, const std::string& network_data) {
  std::vector<Nic> out;
  const Object& nets = At(vm, {"spec", "template", "spec", "networks"});
  const Object& ifaces = At(vm, {"spec", "template", "spec", "domain", "devices", "interfaces"});
  const std::string ns = Str(vm, {"metadata", "namespace"});
  const std::string uid = Str(vm, {"metadata", "uid"});
  if (!nets.is_array()) return out;
  for (size_t i = 0; i < nets.size(); ++i) {
    Nic nic;
    nic.name = nets[i].value("name", "");
    const std::string nad = Str(nets[i], {"multus", "networkName"});
    if (!nad.empty()) nic.network = nad.find('/') == std::string::npos ? ns + "/" + nad : nad;
    if (ifaces.is_array()) {
      for (const auto& f : ifaces) {
        if (f.value("name", "") == nic.name) nic.mac = f.value("macAddress", "");
      }
    }
    if (nic.mac.empty()) nic.mac = GeneratedMac(uid, i);
    nic.ip = StaticAddress(network_data, i).value_or("");
    out.push_back(nic);
  }
  return out;
}

std::vector<std::string> ValidateVm(const Object& vm, const std::string& network_data,
                                    const AdmissionWorld& world) {
  std::vector<std::string> errors;
  const std::string ns = Str(vm, {"metadata", "namespace"});
  const std::string key = ns + "/" + Str(vm, {"metadata", "name"});
  const Object& domain = At(vm, {"spec", "template", "spec", "domain"});
  if (At(domain, {"memory", "guest"}).empty() &&
      At(domain, {"resources", "limits", "memory"}).empty()) {
    errors.push_back(
        "spec.template.spec.domain: either memory.guest or resources.limits.memory must be set");
  }
  const std::string templates = Str(vm, {"metadata", "annotations", kClaimTemplatesAnnotation});
  if (!templates.empty()) {
    Object parsed = Object::parse(templates, nullptr, false);
    if (parsed.is_discarded() || !parsed.is_array()) {
      errors.push_back(std::string("annotation ") + kClaimTemplatesAnnotation +
                       " is not a JSON array of PersistentVolumeClaims");
    } else {
      // A missing image is not refused here: Harvester skips its PVC and the
      // VM waits (ErrorPvcNotFound, see EnsureClaims).
    }
  }
  // KubeVirt v1.6.0's VMI admitter (pkg/virt-api/webhooks/validating-webhook/
  // admitters/vmi-create-admitter.go, validateDomainSpec): an efi bootloader
  // is Secure Boot unless secureBoot is false, and Secure Boot needs the SMM
  // feature (present, enabled unless false).
  using internal::FindAt;
  if (const Object* efi = FindAt(domain, {"firmware", "bootloader", "efi"}); efi != nullptr) {
    const Object* secure = FindAt(*efi, {"secureBoot"});
    const bool secure_boot = secure == nullptr || !secure->is_boolean() || secure->get<bool>();
    const Object* smm = FindAt(domain, {"features", "smm"});
    const Object* smm_on = smm ? FindAt(*smm, {"enabled"}) : nullptr;
    const bool smm_enabled =
        smm != nullptr && (smm_on == nullptr || !smm_on->is_boolean() || smm_on->get<bool>());
    if (secure_boot && !smm_enabled) {
      errors.push_back(
          "spec.template.spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which is "
          "currently disabled.");
    }
  }
  for (const auto& nic : PlanNics(vm, network_data)) {
    if (!nic.network.empty() && world.network_exists) {
      const auto slash = nic.network.find('/');
      if (!world.network_exists(nic.network.substr(0, slash), nic.network.substr(slash + 1))) {
        errors.push_back("network-attachment-definitions.k8s.cni.cncf.io \"" + nic.network +
                         "\" not found");
      }
    }
    if (!nic.ip.empty()) {
      auto it = world.ips_in_use.find(nic.ip);
      if (it != world.ips_in_use.end() && it->second != key) {
        errors.push_back("IP address " + nic.ip + " is already in use by virtual machine " +
                         it->second);
      }
    }
  }
  return errors;
}

kube::StatusOr<std::vector<Object>> ClaimsFromVm(const Object& vm) {
  std::vector<Object> out;
  const std::string templates = Str(vm, {"metadata", "annotations", kClaimTemplatesAnnotation});
  if (templates.empty()) return out;
  Object parsed = Object::parse(templates, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return Status(StatusCode::kInvalidArgument, "volumeClaimTemplates is not a JSON array");
  }
  for (const auto& t : parsed) {
    const std::string name = Str(t, {"metadata", "name"});
    if (name.empty()) continue;
    Object pvc = {{"apiVersion", "v1"},
                  {"kind", "PersistentVolumeClaim"},
                  {"metadata", {{"name", name}, {"namespace", Str(vm, {"metadata", "namespace"})}}},
                  {"spec", t.value("spec", Object::object())}};
    Object annotations = At(t, {"metadata", "annotations"});
    if (Str(t, {"spec", "volumeMode"}) == "Filesystem") {
      annotations["harvesterhci.io/volumeForVirtualMachine"] = "true";
    }
    if (!annotations.empty()) pvc["metadata"]["annotations"] = annotations;
    const Object& labels = At(t, {"metadata", "labels"});
    if (!labels.empty()) pvc["metadata"]["labels"] = labels;
    out.push_back(std::move(pvc));
  }
  return out;
}

std::vector<std::string> RemovedClaims(const Object& vm) {
  std::vector<std::string> out;
  std::stringstream ss(Str(vm, {"metadata", "annotations", kRemovedClaimsAnnotation}));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Object BoundClaimStatus(const Object& pvc) {
  const Object& spec = At(pvc, {"spec"});
  return {{"phase", "Bound"},
          {"accessModes", spec.value("accessModes", Object::array({"ReadWriteMany"}))},
          {"capacity", {{"storage", Str(spec, {"resources", "requests", "storage"})}}}};
}

bool WantsRunning(const Object& vm) {
  const Object& spec = At(vm, {"spec"});
  if (spec.contains("runStrategy") && spec["runStrategy"].is_string()) {
    const std::string rs = spec["runStrategy"].get<std::string>();
    return rs == "Always" || rs == "RerunOnFailure" || rs == "Once";
  }
  return spec.value("running", false);
}

bool FailureInjected(const Object& vm) {
  return Str(vm, {"metadata", "annotations", kFailAnnotation}) == "true";
}

bool GuestDied(const Object& vm) {
  return Str(vm, {"metadata", "annotations", kDeadAnnotation}) == "true";
}

Stage StageOf(const Object& vm, milliseconds since_start, milliseconds boot_delay,
              milliseconds ip_delay) {
  if (!WantsRunning(vm)) return Stage::kStopped;
  if (FailureInjected(vm) || GuestDied(vm)) return Stage::kFailed;
  if (since_start < boot_delay) return Stage::kScheduling;
  if (since_start < boot_delay + ip_delay) return Stage::kBooting;
  return Stage::kRunning;
}

milliseconds UntilNextStage(Stage stage, milliseconds since_start, milliseconds boot_delay,
                            milliseconds ip_delay) {
  switch (stage) {
    case Stage::kScheduling:
      return std::max(milliseconds(1), boot_delay - since_start);
    case Stage::kBooting:
      return std::max(milliseconds(1), boot_delay + ip_delay - since_start);
    default:
      return milliseconds(0);
  }
}

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
  const std::string name = Str(vm, {"metadata", "name"});
  Object labels = At(vm, {"spec", "template", "metadata", "labels"});
  if (!labels.is_object()) labels = Object::object();
  Object annotations = At(vm, {"spec", "template", "metadata", "annotations"});
  if (!annotations.is_object()) annotations = Object::object();
  labels["kubevirt.io/created-by"] = Str(vm, {"metadata", "uid"});
  Object status = Object::object();
  const bool scheduled = stage != Stage::kScheduling;
  if (scheduled) {
    labels["kubevirt.io/nodeName"] = where.node;
    status["nodeName"] = where.node;
  }
  if (Str(vm, {"metadata", "labels", "harvesterhci.io/creator"}) ==
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
                  {"namespace", Str(vm, {"metadata", "namespace"})},
                  {"labels", labels},
                  {"finalizers", Object::array({kVmFinalizer, kVmiForegroundFinalizer})},
                  {"ownerReferences", Object::array({{{"apiVersion", "kubevirt.io/v1"},
                                                      {"kind", "VirtualMachine"},
                                                      {"name", name},
                                                      {"uid", Str(vm, {"metadata", "uid"})},
                                                      {"controller", true},
                                                      {"blockOwnerDeletion", true}}})}}},
                {"spec", At(vm, {"spec", "template", "spec"})},
                {"status", status}};
  if (!annotations.empty()) vmi["metadata"]["annotations"] = annotations;
  return vmi;
}

std::string WhyClaimCannotBind(const std::string& class_name, const std::string& default_class,
                               const std::set<std::string>& classes,
                               const std::string& image_class) {
  const std::string effective = class_name.empty() ? default_class : class_name;
  if (effective.empty()) return "no storage class given and no default storage class";
  if (classes.count(effective) == 0) {
    return "storageclass.storage.k8s.io \"" + effective + "\" not found";
  }
  if (!image_class.empty() && effective != image_class) {
    return "storage class " + effective + " is not the class of its image (" + image_class +
           "): the volume cannot be made from the image";
  }
  return "";
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
  if (At(vm, {"spec", "runStrategy"}).is_string()) {
    status["runStrategy"] = At(vm, {"spec", "runStrategy"});
  }
  const Object& gen = At(vm, {"metadata", "generation"});
  if (gen.is_number_integer()) {
    status["observedGeneration"] = gen;
    status["desiredGeneration"] = gen;
  }
  return status;
}

Object BuildNode(const Object& vm) {
  const std::string name = Str(vm, {"metadata", "name"});
  Object labels = {{"kubernetes.io/hostname", name},
                   {"kubernetes.io/os", "linux"},
                   {"kubernetes.io/arch", "amd64"},
                   {"beta.kubernetes.io/os", "linux"},
                   {"beta.kubernetes.io/arch", "amd64"}};
  const std::string machine_type = Str(vm, {"metadata", "labels", "harvestercluster/machinetype"});
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
  addresses.push_back({{"type", "Hostname"}, {"address", Str(vm, {"metadata", "name"})}});
  const Object& limits = At(vm, {"spec", "template", "spec", "domain", "resources", "limits"});
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
            {"systemUUID", Str(vm, {"metadata", "uid"})},
            {"bootID", ""}}}};
}

std::string ProviderIdFor(const Object& vm) {
  return "harvester://" + Str(vm, {"metadata", "uid"});
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
  return {{"metadata", {{"resourceVersion", Str(node, {"metadata", "resourceVersion"})}}},
          {"spec", patch_spec}};
}

}  // namespace caphv::sim
