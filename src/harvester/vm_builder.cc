// File: harvester/vm_builder.cc

#include "harvester/vm_builder.h"

#include <cctype>
#include <set>

#include "api/quantity.h"
#include "harvester/resources.h"
#include "kube/json_path.h"

namespace caphv::harvester {
namespace {

using kube::Object;
using kube::Status;
using kube::StatusCode;

constexpr std::string_view kAnnotationVolumeClaimTemplates = "harvesterhci.io/volumeClaimTemplates";
constexpr std::string_view kAnnotationRemovedPvcs = "harvesterhci.io/removedPersistentVolumeClaims";
constexpr std::string_view kAnnotationImageId = "harvesterhci.io/imageId";
constexpr std::string_view kAnnotationSshNames = "harvesterhci.io/sshNames";
constexpr std::string_view kAnnotationDiskNames = "harvesterhci.io/diskNames";
constexpr std::string_view kAnnotationWaitForLease = "harvesterhci.io/waitForLeaseInterfaceNames";

Status Invalid(std::string field, std::string msg) {
  return Status(StatusCode::kInvalidArgument, field + ": " + msg, 0, "Invalid",
                {{"FieldValueInvalid", msg, field}});
}

kube::StatusOr<int64_t> PositiveBytes(const std::string& field, const std::string& text) {
  std::string error;
  auto q = api::Quantity::Parse(text, &error);
  if (!q) return Invalid(field, "\"" + text + "\" is not a quantity: " + error);
  auto v = q->Value();
  if (!v || *v <= 0) return Invalid(field, "\"" + text + "\" must be a positive size");
  return *v;
}

// The boot order of each volume: the user's when any volume has one, else 1
// for the first image volume.
kube::StatusOr<std::vector<int>> BootOrders(const std::vector<api::Volume>& volumes) {
  std::vector<int> orders(volumes.size(), 0);
  std::set<int> seen;
  bool user_set = false;
  for (size_t i = 0; i < volumes.size(); ++i) {
    int order = volumes[i].boot_order;
    if (order < 0) {
      return Invalid("spec.volumes[" + std::to_string(i) + "].bootOrder", "must not be negative");
    }
    if (order == 0) continue;
    if (!seen.insert(order).second) {
      return Invalid("spec.volumes[" + std::to_string(i) + "].bootOrder",
                     "boot order " + std::to_string(order) + " is used by two volumes");
    }
    orders[i] = order;
    user_set = true;
  }
  if (!user_set) {
    for (size_t i = 0; i < volumes.size(); ++i) {
      if (volumes[i].volume_type == api::kVolumeTypeImage) {
        orders[i] = 1;
        break;
      }
    }
  }
  return orders;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  static const char* const kSuffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes == 0) return "0";
  int i = 0;
  while (i < 6 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++i;
  }
  return std::to_string(bytes) + kSuffix[i];
}

std::string FormatMillis(int64_t millis) {
  if (millis % 1000 == 0) return std::to_string(millis / 1000);
  return std::to_string(millis) + "m";
}

std::map<std::string, std::string> RoleSelector(const ClusterIdentity& cluster,
                                                bool control_plane) {
  return {{std::string(kLabelClusterId), ClusterId(cluster)},
          {std::string(kLabelRole), std::string(control_plane ? kRoleControlPlane : kRoleWorker)}};
}

std::map<std::string, std::string> VmLabels(const VmInputs& in) {
  auto labels = ClusterLabels(in.cluster);
  for (auto& [k, v] : RoleSelector(in.cluster, in.control_plane)) labels[k] = v;
  labels[std::string(kLabelVmName)] = in.name;
  labels[std::string(kLabelCreator)] = in.creator;
  labels[std::string(kLabelGuestCluster)] = in.cluster.name;
  if (in.control_plane) {
    labels[std::string(kLabelLegacyMachineType)] = "controlplane-" + in.cluster.name;
  }
  return labels;
}

std::string PvcName(const std::string& vm_name, const std::string& machine_uid, size_t index) {
  std::string disk = "disk-" + std::to_string(index);
  return NameWithHash(vm_name + "-" + disk, machine_uid + "/" + disk, 253);
}

std::string DiskOwnerOf(std::string_view pvc_name) {
  const size_t at = pvc_name.rfind("-disk-");
  return at == std::string_view::npos || at == 0 ? std::string()
                                                 : std::string(pvc_name.substr(0, at));
}

kube::StatusOr<Object> BuildVirtualMachine(const VmInputs& in) {
  const api::HarvesterMachineSpec& spec = in.spec;
  if (!IsDns1123Label(in.name)) {
    return Invalid("metadata.name", "\"" + in.name +
                                        "\" is not a valid hostname (DNS-1123 label, at most 63 "
                                        "characters)");
  }
  if (in.namespace_.empty()) return Invalid("spec.targetNamespace", "must not be empty");
  if (in.machine_uid.empty()) return Invalid("metadata.uid", "the machine uid is required");
  if (in.cluster.name.empty()) return Invalid("cluster", "the cluster name is required");
  if (spec.cpu <= 0) return Invalid("spec.cpu", "must be at least 1");
  if (in.resources.cpu_overcommit_percent <= 0 || in.resources.memory_overcommit_percent <= 0) {
    return Invalid("overcommit-config", "percentages must be positive");
  }
  CAPHV_ASSIGN_OR_RETURN(int64_t memory, PositiveBytes("spec.memory", spec.memory));
  CAPHV_ASSIGN_OR_RETURN(int64_t reserved,
                         PositiveBytes("reservedMemory", in.resources.reserved_memory));
  if (memory <= reserved) {
    return Invalid("spec.memory", "\"" + spec.memory + "\" must exceed the " +
                                      in.resources.reserved_memory +
                                      " Harvester reserves for the VM itself");
  }
  if (spec.volumes.empty()) return Invalid("spec.volumes", "at least one volume is required");
  if (spec.networks.empty()) return Invalid("spec.networks", "at least one network is required");
  if (!in.mac_addresses.empty() && in.mac_addresses.size() != spec.networks.size()) {
    return Invalid("macAddresses", "one MAC per network is required when any is given");
  }
  if (spec.ssh_key_pair.empty()) return Invalid("spec.sshKeyPair", "must not be empty");
  CAPHV_ASSIGN_OR_RETURN(std::vector<int> boot_orders, BootOrders(spec.volumes));

  const auto labels = VmLabels(in);
  Object claim_templates = Object::array();
  Object disks = Object::array();
  Object volumes = Object::array();
  Object disk_names = Object::array();
  for (size_t i = 0; i < spec.volumes.size(); ++i) {
    const api::Volume& v = spec.volumes[i];
    const std::string field = "spec.volumes[" + std::to_string(i) + "]";
    CAPHV_ASSIGN_OR_RETURN(int64_t size, PositiveBytes(field + ".volumeSize", v.volume_size));
    (void)size;
    Object pvc = {{"metadata", {{"name", PvcName(in.name, in.machine_uid, i)}}},
                  {"spec",
                   {{"accessModes", {"ReadWriteMany"}},
                    {"resources", {{"requests", {{"storage", v.volume_size}}}}},
                    {"volumeMode", "Block"}}}};
    if (v.volume_type == api::kVolumeTypeImage) {
      if (v.image_name.empty()) return Invalid(field + ".imageName", "required for image volumes");
      auto it = in.images.find(v.image_name);
      if (it == in.images.end() || it->second.name.empty()) {
        return Invalid(field + ".imageName", "image \"" + v.image_name + "\" was not resolved");
      }
      const ResolvedImage& image = it->second;
      std::string image_ns = image.namespace_.empty() ? in.namespace_ : image.namespace_;
      pvc["metadata"]["annotations"] = {{kAnnotationImageId, image_ns + "/" + image.name}};
      pvc["spec"]["storageClassName"] =
          image.storage_class_name.empty() ? "longhorn-" + image.name : image.storage_class_name;
    } else if (v.volume_type == api::kVolumeTypeStorageClass) {
      if (v.storage_class.empty()) {
        return Invalid(field + ".storageClass", "required for storageClass volumes");
      }
      pvc["spec"]["storageClassName"] = v.storage_class;
    } else {
      return Invalid(field + ".volumeType",
                     "\"" + v.volume_type + "\" is neither image nor storageClass");
    }
    const std::string disk = "disk-" + std::to_string(i);
    Object d = {{"name", disk}, {"disk", {{"bus", "virtio"}}}};
    if (boot_orders[i] > 0) d["bootOrder"] = boot_orders[i];
    disks.push_back(d);
    volumes.push_back(
        {{"name", disk}, {"persistentVolumeClaim", {{"claimName", pvc["metadata"]["name"]}}}});
    disk_names.push_back(pvc["metadata"]["name"]);
    claim_templates.push_back(std::move(pvc));
  }
  const std::string secret =
      in.cloud_init_secret_name.empty() ? CloudInitSecretName(in.name) : in.cloud_init_secret_name;
  disks.push_back({{"name", "cloudinitdisk"}, {"disk", {{"bus", "virtio"}}}});
  Object no_cloud = {{"secretRef", {{"name", secret}}}};
  if (in.network_data) no_cloud["networkDataSecretRef"] = {{"name", secret}};
  volumes.push_back({{"name", "cloudinitdisk"}, {"cloudInitNoCloud", no_cloud}});

  Object interfaces = Object::array();
  Object networks = Object::array();
  for (size_t i = 0; i < spec.networks.size(); ++i) {
    if (spec.networks[i].empty()) {
      return Invalid("spec.networks[" + std::to_string(i) + "]", "must not be empty");
    }
    const std::string nic = "nic-" + std::to_string(i);
    Object iface = {{"name", nic}, {"model", "virtio"}, {"bridge", Object::object()}};
    if (!in.mac_addresses.empty() && !in.mac_addresses[i].empty()) {
      iface["macAddress"] = in.mac_addresses[i];
    }
    interfaces.push_back(iface);
    networks.push_back(
        {{"name", nic},
         {"multus", {{"networkName", QualifiedName(spec.networks[i], in.namespace_)}}}});
  }

  const int64_t cpu_millis = int64_t{spec.cpu} * 1000;
  Object resources = {
      {"limits", {{"cpu", std::to_string(spec.cpu)}, {"memory", spec.memory}}},
      {"requests",
       {{"cpu", FormatMillis(cpu_millis * 100 / in.resources.cpu_overcommit_percent)},
        {"memory", FormatBytes(memory * 100 / in.resources.memory_overcommit_percent)}}}};

  // Spread the cluster's VMs of one role over Harvester hosts: the selector
  // matches the siblings (same cluster id and role), not this VM alone.
  Object affinity = {{"podAntiAffinity",
                      {{"preferredDuringSchedulingIgnoredDuringExecution",
                        {{{"weight", 100},
                          {"podAffinityTerm",
                           {{"topologyKey", "kubernetes.io/hostname"},
                            {"labelSelector",
                             {{"matchLabels", RoleSelector(in.cluster, in.control_plane)}}}}}}}}}}};
  if (spec.node_affinity.is_object() && !spec.node_affinity.empty()) {
    affinity["nodeAffinity"] = spec.node_affinity.json();
  }
  if (in.failure_domain) {
    // Pinned to its failure domain: the requirement joins every term the
    // user wrote (terms are ORed), so both hold.
    const Object requirement = {{"key", in.failure_domain->key},
                                {"operator", "In"},
                                {"values", Object::array({in.failure_domain->value})}};
    Object& required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    if (!required.is_object()) required = Object::object();
    Object& terms = required["nodeSelectorTerms"];
    if (!terms.is_array() || terms.empty()) terms = Object::array({Object::object()});
    for (Object& term : terms) {
      if (!term.is_object()) term = Object::object();
      Object& exprs = term["matchExpressions"];
      if (!exprs.is_array()) exprs = Object::array();
      exprs.push_back(requirement);
    }
  }
  if (spec.workload_affinity.is_object() && !spec.workload_affinity.empty()) {
    affinity["podAffinity"] = spec.workload_affinity.json();
  }

  Object template_spec = {
      {"hostname", in.name},
      {"evictionStrategy", "LiveMigrateIfPossible"},
      {"affinity", affinity},
      {"domain",
       {{"cpu", {{"cores", spec.cpu}, {"sockets", 1}, {"threads", 1}}},
        {"memory", {{"guest", FormatBytes(memory - reserved)}}},
        {"resources", resources},
        {"devices",
         {{"disks", disks},
          {"interfaces", interfaces},
          {"inputs", {{{"bus", "usb"}, {"name", "tablet"}, {"type", "tablet"}}}}}}}},
      {"networks", networks},
      {"volumes", volumes},
  };
  // Firmware and TPM as the Go provider v0.8+ maps them. KubeVirt takes an
  // `efi` without `secureBoot` as Secure Boot on, so the flag is always
  // written; Secure Boot needs the SMM feature (KubeVirt's VMI admitter,
  // validateDomainSpec) and gets it.
  Object& domain = template_spec["domain"];
  if (spec.firmware && spec.firmware->efi) {
    domain["firmware"] = {{"bootloader", {{"efi", {{"secureBoot", spec.firmware->secure_boot}}}}}};
    if (spec.firmware->secure_boot) domain["features"] = {{"smm", {{"enabled", true}}}};
  }
  if (spec.tpm && spec.tpm->enabled) {
    domain["devices"]["tpm"] = {{"persistent", spec.tpm->persistent}};
  }

  Object vm = {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachine"},
      {"metadata",
       {{"name", in.name},
        {"namespace", in.namespace_},
        {"labels", labels},
        {"annotations", {{kAnnotationVolumeClaimTemplates, claim_templates.dump()}}}}},
      {"spec",
       {{"runStrategy", "Always"},
        {"template",
         {{"metadata",
           {{"labels", labels},
            {"annotations",
             {{kAnnotationSshNames,
               Object::array({QualifiedName(spec.ssh_key_pair, in.namespace_)}).dump()},
              {kAnnotationDiskNames, disk_names.dump()},
              {kAnnotationWaitForLease, "[]"}}}}},
          {"spec", template_spec}}}}},
  };
  return vm;
}

std::vector<std::string> PvcNamesOf(const Object& vm) {
  std::vector<std::string> names;
  const Object* annotations = nullptr;
  if (vm.contains("metadata") && vm["metadata"].contains("annotations")) {
    annotations = &vm["metadata"]["annotations"];
  }
  if (!annotations || !annotations->contains(kAnnotationVolumeClaimTemplates)) return names;
  const Object& text = (*annotations)[std::string(kAnnotationVolumeClaimTemplates)];
  if (!text.is_string()) return names;
  Object templates = Object::parse(text.get<std::string>(), nullptr, false);
  if (!templates.is_array()) return names;
  for (const auto& t : templates) {
    if (t.contains("metadata") && t["metadata"].contains("name") &&
        t["metadata"]["name"].is_string()) {
      names.push_back(t["metadata"]["name"].get<std::string>());
    }
  }
  return names;
}

std::optional<Object> RemovePvcsPatch(const Object& vm) {
  auto names = PvcNamesOf(vm);
  if (names.empty()) return std::nullopt;
  std::string joined;
  for (const auto& n : names) joined += (joined.empty() ? "" : ",") + n;
  return Object{{"metadata", {{"annotations", {{kAnnotationRemovedPvcs, joined}}}}}};
}

kube::Object AdoptVmPatch(const std::map<std::string, std::string>& labels,
                          const std::string& owner_key) {
  return {
      {"metadata",
       {{"labels", labels},
        {"annotations",
         {{std::string(kAnnotationOwner), owner_key}, {std::string(kAnnotationAdopted), "true"}}}}},
      {"spec", {{"template", {{"metadata", {{"labels", labels}}}}}}}};
}

kube::Object AdoptVmiPatch(const std::map<std::string, std::string>& labels) {
  return {{"metadata", {{"labels", labels}}}};
}

kube::Object AdoptSecretPatch(const std::map<std::string, std::string>& labels,
                              const std::string& owner_key) {
  return {{"metadata",
           {{"labels", labels}, {"annotations", {{std::string(kAnnotationOwner), owner_key}}}}}};
}

std::string CloudInitSecretOf(const kube::Object& vm) {
  const kube::Object* volumes = nullptr;
  if (auto spec = vm.find("spec"); spec != vm.end() && spec->contains("template")) {
    const auto& t = (*spec)["template"];
    if (t.contains("spec") && t["spec"].contains("volumes")) volumes = &t["spec"]["volumes"];
  }
  if (volumes == nullptr || !volumes->is_array()) return {};
  for (const auto& v : *volumes) {
    for (const char* source : {"cloudInitNoCloud", "cloudInitConfigDrive"}) {
      auto it = v.find(source);
      if (it == v.end() || !it->is_object()) continue;
      for (const char* ref : {"secretRef", "userDataSecretRef"}) {
        auto r = it->find(ref);
        if (r != it->end() && r->is_object() && r->contains("name") && (*r)["name"].is_string()) {
          return (*r)["name"].get<std::string>();
        }
      }
    }
  }
  return {};
}

namespace {

bool LinkLocalOrLoopback(std::string_view ip) {
  auto starts = [&](std::string_view p) {
    if (ip.size() < p.size()) return false;
    for (size_t i = 0; i < p.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(ip[i])) != p[i]) return false;
    }
    return true;
  };
  if (ip.find(':') != std::string_view::npos) {
    return ip == "::1" || starts("fe8") || starts("fe9") || starts("fea") || starts("feb");
  }
  return starts("169.254.") || starts("127.");
}

}  // namespace

const kube::FieldMask& VmFields() {
  static const kube::FieldMask mask(kube::kCachedMetadata, {{"spec", "template", "spec", "volumes"},
                                                            {"status", "ready"},
                                                            {"status", "printableStatus"},
                                                            {"status", "conditions"}});
  return mask;
}

const kube::FieldMask& VmiFields() {
  static const kube::FieldMask mask({{"metadata", "name"},
                                     {"metadata", "namespace"},
                                     {"metadata", "uid"},
                                     {"metadata", "resourceVersion"},
                                     {"metadata", "deletionTimestamp"},
                                     {"spec", "domain", "devices", "interfaces"},
                                     {"status", "phase"},
                                     {"status", "interfaces"},
                                     {"status", "phaseTransitionTimestamps"},
                                     {"status", "conditions"}});
  return mask;
}

std::vector<std::string> VmiAddresses(const kube::Object& vmi) {
  std::set<std::string> declared;
  if (const kube::Object* spec = kube::Find(vmi, {"spec", "domain", "devices", "interfaces"});
      spec != nullptr && spec->is_array()) {
    for (const auto& i : *spec) {
      if (i.is_object() && i.contains("name") && i["name"].is_string()) {
        declared.insert(i["name"].get<std::string>());
      }
    }
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const kube::Object& ip) {
    if (!ip.is_string()) return;
    std::string text = ip.get<std::string>();
    if (text.empty() || LinkLocalOrLoopback(text) || !seen.insert(text).second) return;
    out.push_back(std::move(text));
  };
  const kube::Object* status = kube::Find(vmi, {"status", "interfaces"});
  if (status == nullptr || !status->is_array()) return out;
  for (const auto& nic : *status) {
    if (!nic.is_object()) continue;
    const std::string name = nic.value("name", "");
    if (name.empty() || (!declared.empty() && declared.count(name) == 0)) continue;
    if (nic.contains("ipAddress")) add(nic["ipAddress"]);
    if (auto ips = nic.find("ipAddresses"); ips != nic.end() && ips->is_array()) {
      for (const auto& ip : *ips) add(ip);
    }
  }
  return out;
}

}  // namespace caphv::harvester
