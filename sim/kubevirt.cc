// File: sim/kubevirt.cc
//
// What KubeVirt and Harvester decide about a VirtualMachine (see kubevirt.h):
// the network data of its cloud-init volume and the NIC plan, the admission
// rules of Harvester's VM webhook, the PVCs of its claim templates and
// whether they can bind, and the stage of its simulated life. The objects
// written at each stage (VMI, VM status, guest Node) are in kubevirt_vmi.cc.

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

using internal::ObjectAt;
using internal::StrAt;
using kube::Object;
using kube::Status;
using kube::StatusCode;
using std::chrono::milliseconds;

namespace {

const Object* CloudInitVolume(const Object& vm) {
  const Object& vols = ObjectAt(vm, {"spec", "template", "spec", "volumes"});
  if (!vols.is_array()) return nullptr;
  for (const auto& v : vols) {
    if (v.contains("cloudInitNoCloud")) return &v["cloudInitNoCloud"];
  }
  return nullptr;
}

std::string StripPrefix(const std::string& address) { return address.substr(0, address.find('/')); }

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
  return ci ? StrAt(*ci, {"networkDataSecretRef", "name"}) : "";
}

std::string NetworkDataFromSecret(const Object& secret) {
  for (const char* key : {"networkdata", "networkData"}) {
    const Object& v = ObjectAt(secret, {"data", key});
    if (v.is_string()) return kube::Base64Decode(v.get<std::string>()).value_or("");
    const Object& s = ObjectAt(secret, {"stringData", key});
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
  const Object& nets = ObjectAt(vm, {"spec", "template", "spec", "networks"});
  const Object& ifaces =
      ObjectAt(vm, {"spec", "template", "spec", "domain", "devices", "interfaces"});
  const std::string ns = StrAt(vm, {"metadata", "namespace"});
  const std::string uid = StrAt(vm, {"metadata", "uid"});
  if (!nets.is_array()) return out;
  for (size_t i = 0; i < nets.size(); ++i) {
    Nic nic;
    nic.name = nets[i].value("name", "");
    const std::string nad = StrAt(nets[i], {"multus", "networkName"});
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
  const std::string ns = StrAt(vm, {"metadata", "namespace"});
  const std::string key = ns + "/" + StrAt(vm, {"metadata", "name"});
  const Object& domain = ObjectAt(vm, {"spec", "template", "spec", "domain"});
  if (ObjectAt(domain, {"memory", "guest"}).empty() &&
      ObjectAt(domain, {"resources", "limits", "memory"}).empty()) {
    errors.push_back(
        "spec.template.spec.domain: either memory.guest or resources.limits.memory must be set");
  }
  const std::string templates = StrAt(vm, {"metadata", "annotations", kClaimTemplatesAnnotation});
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
  const std::string templates = StrAt(vm, {"metadata", "annotations", kClaimTemplatesAnnotation});
  if (templates.empty()) return out;
  Object parsed = Object::parse(templates, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_array()) {
    return Status(StatusCode::kInvalidArgument, "volumeClaimTemplates is not a JSON array");
  }
  for (const auto& t : parsed) {
    const std::string name = StrAt(t, {"metadata", "name"});
    if (name.empty()) continue;
    Object pvc = {
        {"apiVersion", "v1"},
        {"kind", "PersistentVolumeClaim"},
        {"metadata", {{"name", name}, {"namespace", StrAt(vm, {"metadata", "namespace"})}}},
        {"spec", t.value("spec", Object::object())}};
    Object annotations = ObjectAt(t, {"metadata", "annotations"});
    if (StrAt(t, {"spec", "volumeMode"}) == "Filesystem") {
      annotations["harvesterhci.io/volumeForVirtualMachine"] = "true";
    }
    if (!annotations.empty()) pvc["metadata"]["annotations"] = annotations;
    const Object& labels = ObjectAt(t, {"metadata", "labels"});
    if (!labels.empty()) pvc["metadata"]["labels"] = labels;
    out.push_back(std::move(pvc));
  }
  return out;
}

std::vector<std::string> RemovedClaims(const Object& vm) {
  std::vector<std::string> out;
  std::stringstream ss(StrAt(vm, {"metadata", "annotations", kRemovedClaimsAnnotation}));
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Object BoundClaimStatus(const Object& pvc) {
  const Object& spec = ObjectAt(pvc, {"spec"});
  return {{"phase", "Bound"},
          {"accessModes", spec.value("accessModes", Object::array({"ReadWriteMany"}))},
          {"capacity", {{"storage", StrAt(spec, {"resources", "requests", "storage"})}}}};
}

bool WantsRunning(const Object& vm) {
  const Object& spec = ObjectAt(vm, {"spec"});
  if (spec.contains("runStrategy") && spec["runStrategy"].is_string()) {
    const std::string rs = spec["runStrategy"].get<std::string>();
    return rs == "Always" || rs == "RerunOnFailure" || rs == "Once";
  }
  return spec.value("running", false);
}

bool FailureInjected(const Object& vm) {
  return StrAt(vm, {"metadata", "annotations", kFailAnnotation}) == "true";
}

bool GuestDied(const Object& vm) {
  return StrAt(vm, {"metadata", "annotations", kDeadAnnotation}) == "true";
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

}  // namespace caphv::sim
