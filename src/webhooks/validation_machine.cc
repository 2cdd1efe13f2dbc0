// File: webhooks/validation_machine.cc
//
// Rules for HarvesterMachine and HarvesterMachineTemplate.

#include <map>
#include <set>
#include <string>

#include "api/quantity.h"
#include "harvester/ipv4.h"
#include "harvester/naming.h"
#include "webhooks/validation.h"
#include "webhooks/validation_net.h"

namespace caphv::webhooks {

using harvester::Contains;
using harvester::IsDns1123Subdomain;
using harvester::IsIp;
using harvester::ParseIpv4;
namespace {

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// A required, positive Kubernetes quantity.
void ValidatePositiveQuantity(const std::string& value, const std::string& path,
                              FieldErrors& errs) {
  if (value.empty()) {
    errs.push_back(Required(path));
    return;
  }
  std::string why;
  auto q = api::Quantity::Parse(value, &why);
  if (!q) {
    errs.push_back(Invalid(path, value, "is not a valid resource quantity: " + why));
  } else if (q->Sign() <= 0) {
    errs.push_back(Invalid(path, value, "must be greater than 0"));
  }
}

void ValidateVolumes(const std::vector<api::Volume>& volumes, const std::string& path,
                     FieldErrors& errs) {
  if (volumes.empty()) {
    errs.push_back(Required(path, "must contain at least one volume"));
    return;
  }
  std::map<int32_t, size_t> boot_orders;  // bootOrder -> first index
  for (size_t i = 0; i < volumes.size(); ++i) {
    const auto& v = volumes[i];
    const std::string vp = Index(path, i);
    if (v.volume_type == api::kVolumeTypeImage) {
      std::string why;
      if (v.image_name.empty()) {
        errs.push_back(Required(vp + ".imageName", "is required when volumeType is 'image'"));
      } else if (!ParseObjectRef(v.image_name, /*strict_name=*/false, &why)) {
        errs.push_back(Invalid(vp + ".imageName", v.image_name,
                               "must be <name> or <namespace>/<name> of a VM image: " + why));
      }
    } else if (v.volume_type == api::kVolumeTypeStorageClass) {
      if (v.storage_class.empty()) {
        errs.push_back(
            Required(vp + ".storageClass", "is required when volumeType is 'storageClass'"));
      } else if (!IsDns1123Subdomain(v.storage_class)) {
        errs.push_back(Invalid(vp + ".storageClass", v.storage_class,
                               "must be a lowercase RFC 1123 subdomain"));
      }
    } else {
      errs.push_back(NotSupported(vp + ".volumeType", v.volume_type,
                                  {api::kVolumeTypeImage, api::kVolumeTypeStorageClass}, '\''));
    }
    ValidatePositiveQuantity(v.volume_size, vp + ".volumeSize", errs);
    if (v.boot_order < 0) {
      errs.push_back(
          Invalid(vp + ".bootOrder", v.boot_order, "must be greater than or equal to 0"));
    } else if (v.boot_order > 0) {
      auto [it, inserted] = boot_orders.emplace(v.boot_order, i);
      if (!inserted) {
        errs.push_back(Duplicate(vp + ".bootOrder", v.boot_order,
                                 "is already the bootOrder of " + Index(path, it->second)));
      }
    }
  }
  // The boot disk is the lowest positive bootOrder, else the first volume.
  size_t boot = boot_orders.empty() ? 0 : boot_orders.begin()->second;
  const auto& disk = volumes[boot];
  if (disk.volume_type == api::kVolumeTypeStorageClass) {
    errs.push_back(
        Invalid(Index(path, boot) + ".volumeType", disk.volume_type,
                "cannot boot: the boot disk (first in boot order) must be an image volume"));
  }
}

void ValidateNetworks(const std::vector<std::string>& networks, const std::string& path,
                      FieldErrors& errs) {
  if (networks.empty()) {
    errs.push_back(Required(path, "must contain at least one network"));
    return;
  }
  for (size_t i = 0; i < networks.size(); ++i) {
    std::string why;
    if (!ParseObjectRef(networks[i], /*strict_name=*/true, &why)) {
      errs.push_back(Invalid(Index(path, i), networks[i],
                             "must be <namespace>/<name> (or <name>) of a VM network: " + why));
    }
  }
}

void ValidateNetworkConfig(const api::NetworkConfig& nc, const std::string& path,
                           FieldErrors& errs) {
  std::optional<uint32_t> address, gateway;
  bool v6 = false;
  if (nc.address.empty()) {
    errs.push_back(Required(path + ".address", "is required when networkConfig is set"));
  } else if (!IsIp(nc.address)) {
    errs.push_back(Invalid(path + ".address", nc.address, "is not a valid IP address"));
  } else {
    address = ParseIpv4(nc.address);
    v6 = !address;
  }
  if (nc.gateway.empty()) {
    errs.push_back(Required(path + ".gateway", "is required when networkConfig is set"));
  } else if (!IsIp(nc.gateway)) {
    errs.push_back(Invalid(path + ".gateway", nc.gateway, "is not a valid IP address"));
  } else {
    gateway = ParseIpv4(nc.gateway);
  }
  std::optional<int> prefix;
  if (!nc.subnet_mask.empty()) {
    prefix = SubnetMaskPrefix(nc.subnet_mask);
    if (!prefix || v6) {
      errs.push_back(Invalid(path + ".subnetMask", nc.subnet_mask,
                             "must be a contiguous dotted IPv4 mask such as 255.255.255.0"));
    }
  }
  if (address && gateway && prefix && *address == *gateway) {
    errs.push_back(Invalid(path + ".gateway", nc.gateway, "must differ from address"));
  } else if (address && gateway && prefix && !Contains({*address, *prefix}, *gateway)) {
    errs.push_back(
        Invalid(path + ".gateway", nc.gateway,
                "must be inside the subnet of " + nc.address + "/" + std::to_string(*prefix)));
  }
  for (size_t i = 0; i < nc.dns_servers.size(); ++i) {
    if (!IsIp(nc.dns_servers[i])) {
      errs.push_back(
          Invalid(Index(path + ".dnsServers", i), nc.dns_servers[i], "is not a valid IP address"));
    }
  }
}

// Operator/values consistency of a selector requirement (as the apiserver
// checks it for Pods).
template <typename Req>
void ValidateRequirement(const Req& r, const std::string& path, bool node, FieldErrors& errs) {
  if (r.key.empty()) errs.push_back(Required(path + ".key"));
  const std::string& op = r.operator_;
  if (op == "In" || op == "NotIn") {
    if (r.values.empty()) {
      errs.push_back(Required(path + ".values", "must be specified when operator is In or NotIn"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!r.values.empty()) {
      errs.push_back(Forbidden(path + ".values",
                               "may not be specified when operator is Exists or DoesNotExist"));
    }
  } else if (node && (op == "Gt" || op == "Lt")) {
    bool integer = r.values.size() == 1 && !r.values[0].empty() &&
                   r.values[0].find_first_not_of("-0123456789") == std::string::npos;
    if (!integer) {
      errs.push_back(
          Required(path + ".values", "must be a single integer when operator is Gt or Lt"));
    }
  } else {
    std::vector<std::string_view> ops = {"In", "NotIn", "Exists", "DoesNotExist"};
    if (node) ops.insert(ops.end(), {"Gt", "Lt"});
    errs.push_back(NotSupported(path + ".operator", op, ops));
  }
}

void ValidateNodeSelectorTerm(const api::NodeSelectorTerm& t, const std::string& path,
                              FieldErrors& errs) {
  for (size_t i = 0; i < t.match_expressions.size(); ++i) {
    ValidateRequirement(t.match_expressions[i], Index(path + ".matchExpressions", i), true, errs);
  }
  for (size_t i = 0; i < t.match_fields.size(); ++i) {
    ValidateRequirement(t.match_fields[i], Index(path + ".matchFields", i), true, errs);
  }
}

void ValidateLabelSelector(const std::optional<api::LabelSelector>& s, const std::string& path,
                           FieldErrors& errs) {
  if (!s) return;
  for (size_t i = 0; i < s->match_expressions.size(); ++i) {
    ValidateRequirement(s->match_expressions[i], Index(path + ".matchExpressions", i), false, errs);
  }
}

void ValidatePodAffinityTerm(const api::PodAffinityTerm& t, const std::string& path,
                             FieldErrors& errs) {
  if (t.topology_key.empty()) errs.push_back(Required(path + ".topologyKey"));
  ValidateLabelSelector(t.label_selector, path + ".labelSelector", errs);
  ValidateLabelSelector(t.namespace_selector, path + ".namespaceSelector", errs);
}

void ValidateWeight(int32_t w, const std::string& path, FieldErrors& errs) {
  if (w < 1 || w > 100) errs.push_back(Invalid(path, w, "must be in the range 1-100"));
}

void ValidateAffinity(const api::HarvesterMachineSpec& spec, const std::string& path,
                      FieldErrors& errs) {
  constexpr std::string_view kReq = ".requiredDuringSchedulingIgnoredDuringExecution";
  constexpr std::string_view kPref = ".preferredDuringSchedulingIgnoredDuringExecution";
  if (spec.node_affinity.is_object()) {
    const api::NodeAffinity node_affinity = spec.node_affinity.Typed();
    const std::string np = path + ".nodeAffinity";
    if (const auto& req = node_affinity.required) {
      const std::string rp = np + std::string(kReq) + ".nodeSelectorTerms";
      if (req->node_selector_terms.empty()) errs.push_back(Required(rp));
      for (size_t i = 0; i < req->node_selector_terms.size(); ++i) {
        ValidateNodeSelectorTerm(req->node_selector_terms[i], Index(rp, i), errs);
      }
    }
    const auto& pref = node_affinity.preferred;
    for (size_t i = 0; i < pref.size(); ++i) {
      const std::string pp = Index(np + std::string(kPref), i);
      ValidateWeight(pref[i].weight, pp + ".weight", errs);
      ValidateNodeSelectorTerm(pref[i].preference, pp + ".preference", errs);
    }
  }
  if (spec.workload_affinity.is_object()) {
    const api::PodAffinity pod_affinity = spec.workload_affinity.Typed();
    const std::string wp = path + ".workloadAffinity";
    const auto& req = pod_affinity.required;
    for (size_t i = 0; i < req.size(); ++i) {
      ValidatePodAffinityTerm(req[i], Index(wp + std::string(kReq), i), errs);
    }
    const auto& pref = pod_affinity.preferred;
    for (size_t i = 0; i < pref.size(); ++i) {
      const std::string pp = Index(wp + std::string(kPref), i);
      ValidateWeight(pref[i].weight, pp + ".weight", errs);
      ValidatePodAffinityTerm(pref[i].pod_affinity_term, pp + ".podAffinityTerm", errs);
    }
  }
}

}  // namespace

FieldErrors ValidateHarvesterMachineSpec(const api::HarvesterMachineSpec& spec,
                                         const std::string& path) {
  FieldErrors errs;
  if (!spec.provider_id.empty() && (spec.provider_id.rfind(api::kProviderIDPrefix, 0) != 0 ||
                                    spec.provider_id.size() == api::kProviderIDPrefix.size())) {
    errs.push_back(Invalid(path + ".providerID", spec.provider_id, "must be harvester://<VM UID>"));
  }
  if (spec.cpu <= 0) errs.push_back(Invalid(path + ".cpu", spec.cpu, "must be greater than 0"));
  ValidatePositiveQuantity(spec.memory, path + ".memory", errs);
  if (spec.ssh_user.empty()) errs.push_back(Required(path + ".sshUser"));
  if (spec.ssh_key_pair.empty()) {
    errs.push_back(Required(path + ".sshKeyPair"));
  } else {
    std::string why;
    if (!ParseObjectRef(spec.ssh_key_pair, /*strict_name=*/true, &why)) {
      errs.push_back(
          Invalid(path + ".sshKeyPair", spec.ssh_key_pair,
                  "must be <name> or <namespace>/<name> of a Harvester KeyPair: " + why));
    }
  }
  ValidateVolumes(spec.volumes, path + ".volumes", errs);
  ValidateNetworks(spec.networks, path + ".networks", errs);
  ValidateAffinity(spec, path, errs);
  if (spec.network_config)
    ValidateNetworkConfig(*spec.network_config, path + ".networkConfig", errs);
  if (spec.vm_network_config) {
    if (spec.network_config) {
      errs.push_back(Forbidden(path + ".vmNetworkConfig",
                               "and " + path + ".networkConfig are mutually exclusive"));
    }
    ValidateVMNetworkConfig(*spec.vm_network_config, path + ".vmNetworkConfig", true, errs);
  }
  // KubeVirt refuses Secure Boot without EFI and SMM; CAPHV turns SMM on.
  if (spec.firmware && spec.firmware->secure_boot && !spec.firmware->efi) {
    errs.push_back(Invalid(path + ".firmware.secureBoot", true,
                           "requires " + path + ".firmware.efi to be true"));
  }
  return errs;
}

bool MachineHasVM(const api::HarvesterMachine& m) {
  const auto& st = m.status;
  return !m.spec.provider_id.empty() || st.ready.value_or(false) ||
         (st.initialization && st.initialization->provisioned.value_or(false));
}

FieldErrors ValidateHarvesterMachine(const api::HarvesterMachine& obj) {
  return ValidateHarvesterMachineSpec(obj.spec, "spec");
}

FieldErrors ValidateHarvesterMachineUpdate(const api::HarvesterMachine& old_obj,
                                           const api::HarvesterMachine& new_obj) {
  FieldErrors errs;
  if (SemanticallyEqual(old_obj.spec, new_obj.spec)) return errs;
  errs = ValidateHarvesterMachine(new_obj);
  // providerID ties the object to its VM and Node: set once, then fixed.
  if (!old_obj.spec.provider_id.empty() && old_obj.spec.provider_id != new_obj.spec.provider_id) {
    errs.push_back(
        Invalid("spec.providerID", new_obj.spec.provider_id, "cannot be changed once set"));
  }
  if (!MachineHasVM(old_obj)) return errs;
  // Once the VM exists nothing else may change: CAPHV never rebuilds a VM in
  // place, so a change would either be silently ignored or leave disks, NICs
  // or addresses on Harvester that no longer match the object. Roll out a new
  // HarvesterMachineTemplate instead.
  api::HarvesterMachineSpec old_spec = old_obj.spec, new_spec = new_obj.spec;
  old_spec.provider_id = new_spec.provider_id = "";
  old_spec.failure_domain = new_spec.failure_domain = "";
  api::Json a = api::Encode(old_spec), b = api::Encode(new_spec);
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.insert(k);
  for (const auto& [k, v] : b.items()) keys.insert(k);
  for (const auto& key : keys) {
    // One error per changed field; quantities compare by value.
    api::Json ja = a.contains(key) ? a[key] : api::Json();
    api::Json jb = b.contains(key) ? b[key] : api::Json();
    if (ja == jb) continue;
    if (key == "memory" && api::SameQuantity(old_spec.memory, new_spec.memory)) continue;
    if (key == "volumes" && old_spec.volumes.size() == new_spec.volumes.size()) {
      bool same = true;
      for (size_t i = 0; i < old_spec.volumes.size(); ++i) {
        api::Volume x = old_spec.volumes[i], y = new_spec.volumes[i];
        if (!api::SameQuantity(x.volume_size, y.volume_size)) same = false;
        x.volume_size = y.volume_size = "";
        if (!(x == y)) same = false;
      }
      if (same) continue;
    }
    errs.push_back(Forbidden("spec." + key,
                             "cannot be changed once the VM exists (spec.providerID or "
                             "status.ready set); replace the machine instead"));
  }
  return errs;
}

FieldErrors ValidateHarvesterMachineTemplate(const api::HarvesterMachineTemplate& obj) {
  return WithoutUnsetValues(
      ValidateHarvesterMachineSpec(obj.spec.template_.spec, "spec.template.spec"));
}

FieldErrors ValidateHarvesterMachineTemplateUpdate(const api::HarvesterMachineTemplate& old_obj,
                                                   const api::HarvesterMachineTemplate& new_obj) {
  if (SemanticallyEqual(old_obj.spec.template_.spec, new_obj.spec.template_.spec)) return {};
  return ValidateHarvesterMachineTemplate(new_obj);
}

}  // namespace caphv::webhooks
