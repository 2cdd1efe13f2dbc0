// File: webhooks/validation_cluster.cc
//
// Rules for HarvesterCluster and HarvesterClusterTemplate.

#include <set>
#include <string>

#include "harvester/ipv4.h"
#include "harvester/naming.h"
#include "webhooks/validation.h"
#include "webhooks/validation_net.h"

namespace caphv::webhooks {

using harvester::Contains;
using harvester::Ipv4Subnet;
using harvester::IsDns1123Label;
using harvester::IsDns1123Subdomain;
using harvester::IsIp;
using harvester::ParseCidr;
using harvester::ParseIpv4;
namespace {

constexpr std::string_view kApiServerListener = "api-server";
constexpr int kApiServerPort = 6443;

void ValidateRequiredIP(const std::string& value, const std::string& path, FieldErrors& errs) {
  if (value.empty()) {
    errs.push_back(Required(path));
  } else if (!IsIp(value)) {
    errs.push_back(Invalid(path, value, "is not a valid IP address"));
  }
}

void ValidateIPList(const std::vector<std::string>& ips, const std::string& path,
                    FieldErrors& errs) {
  for (size_t i = 0; i < ips.size(); ++i) {
    if (!IsIp(ips[i])) {
      errs.push_back(
          Invalid(path + "[" + std::to_string(i) + "]", ips[i], "is not a valid IP address"));
    }
  }
}

void ValidatePoolRef(const std::string& ref, const std::string& path, FieldErrors& errs) {
  std::string why;
  if (!ParseObjectRef(ref, /*strict_name=*/true, &why)) {
    errs.push_back(Invalid(path, ref, "must be <name> or <namespace>/<name> of an IPPool: " + why));
  }
}

// An inline IP pool: vmNetwork, subnet, gateway required; range within subnet.
void ValidateIPPool(const api::IPPoolSpec& pool, const std::string& path, FieldErrors& errs) {
  std::string why;
  if (pool.vm_network.empty()) {
    errs.push_back(Required(path + ".vmNetwork"));
  } else if (auto ref = ParseObjectRef(pool.vm_network, /*strict_name=*/true, &why);
             !ref || ref->namespace_.empty()) {
    // Harvester's IPPool webhook takes the network only as <namespace>/<name>
    // of a NetworkAttachmentDefinition (load-balancer-harvester v1.7.3
    // pkg/utils/vid.go): a bare name is refused as an invalid network.
    errs.push_back(Invalid(path + ".vmNetwork", pool.vm_network,
                           "must be <namespace>/<name> of a VM network: " +
                               (ref ? std::string("the namespace is missing") : why)));
  }
  std::optional<Ipv4Subnet> subnet;
  if (pool.subnet.empty()) {
    errs.push_back(Required(path + ".subnet"));
  } else if (!(subnet = ParseCidr(pool.subnet))) {
    errs.push_back(
        Invalid(path + ".subnet", pool.subnet, "must be an IPv4 CIDR such as 10.0.0.0/24"));
  }
  auto check_in_subnet = [&](const std::string& value, const std::string& field, bool required) {
    if (value.empty()) {
      if (required) errs.push_back(Required(path + "." + field));
      return std::optional<uint32_t>();
    }
    auto ip = ParseIpv4(value);
    if (!ip) {
      errs.push_back(Invalid(path + "." + field, value, "is not a valid IPv4 address"));
    } else if (subnet && !Contains(*subnet, *ip)) {
      errs.push_back(Invalid(path + "." + field, value, "must be inside " + pool.subnet));
      return std::optional<uint32_t>();
    }
    return ip;
  };
  check_in_subnet(pool.gateway, "gateway", true);
  auto start = check_in_subnet(pool.range_start, "rangeStart", false);
  auto end = check_in_subnet(pool.range_end, "rangeEnd", false);
  if (start && end && *start > *end) {
    errs.push_back(Invalid(path + ".rangeEnd", pool.range_end,
                           "must not be lower than rangeStart " + pool.range_start));
  }
}

void ValidateLoadBalancer(const api::LoadBalancerConfig& lb, const std::string& path,
                          FieldErrors& errs) {
  if (lb.ipam_type != api::kIpamDhcp && lb.ipam_type != api::kIpamPool) {
    errs.push_back(
        NotSupported(path + ".ipamType", lb.ipam_type, {api::kIpamDhcp, api::kIpamPool}));
  }
  // ipPoolRef next to ipPool is what the Go provider writes once it created
  // the inline pool, so both may be set.
  if (!lb.ip_pool_ref.empty()) ValidatePoolRef(lb.ip_pool_ref, path + ".ipPoolRef", errs);
  if (lb.ip_pool) ValidateIPPool(*lb.ip_pool, path + ".ipPool", errs);
  std::set<std::string> names;
  std::set<std::pair<int, std::string>> ports;
  // Harvester refuses two listeners of one protocol on one backend port
  // (load-balancer-harvester v1.7.3 pkg/webhook/loadbalancer/validator.go);
  // the api-server listener CAPHV always adds forwards TCP 6443.
  std::set<std::pair<int, std::string>> backend_ports = {{kApiServerPort, "TCP"}};
  for (size_t i = 0; i < lb.listeners.size(); ++i) {
    const auto& l = lb.listeners[i];
    std::string lp = path + ".listeners[" + std::to_string(i) + "]";
    if (l.name.empty()) {
      errs.push_back(Required(lp + ".name"));
    } else if (!IsDns1123Label(l.name)) {
      errs.push_back(Invalid(lp + ".name", l.name, "must be a lowercase RFC 1123 label"));
    } else if (l.name == kApiServerListener) {
      errs.push_back(Forbidden(
          lp + ".name", "may not be api-server: that listener is reserved and always added"));
    } else if (!names.insert(l.name).second) {
      errs.push_back(Duplicate(lp, l.name, "is already the name of another listener"));
    }
    std::string protocol = l.protocol.empty() ? "TCP" : l.protocol;
    if (protocol != "TCP" && protocol != "UDP") {
      errs.push_back(NotSupported(lp + ".protocol", l.protocol, {"TCP", "UDP"}));
    }
    if (l.port < 1 || l.port > 65535) {
      errs.push_back(Invalid(lp + ".port", l.port, "must be between 1 and 65535, inclusive"));
    } else if (l.port == kApiServerPort && protocol == "TCP") {
      errs.push_back(Forbidden(lp + ".port",
                               "may not be 6443 over TCP: that port is the api-server listener's"));
    } else if (!ports.insert({l.port, protocol}).second) {
      errs.push_back(Duplicate(lp + ".port", l.port,
                               "is already the port of another " + protocol + " listener"));
    }
    if (l.backend_port < 1 || l.backend_port > 65535) {
      errs.push_back(
          Invalid(lp + ".backendPort", l.backend_port, "must be between 1 and 65535, inclusive"));
    } else if (!backend_ports.insert({l.backend_port, protocol}).second) {
      errs.push_back(Invalid(lp + ".backendPort", l.backend_port,
                             l.backend_port == kApiServerPort && protocol == "TCP"
                                 ? "may not be 6443 over TCP: that backend port is the "
                                   "api-server listener's"
                                 : "is already the backend port of another " + protocol +
                                       " listener: Harvester's load balancer forwards each "
                                       "protocol and backend port once"));
    }
  }
}

// The addresses an inline pool hands out, as Harvester defaults them (start
// network+1, end broadcast-1); nullopt when the pool does not parse.
std::optional<std::pair<uint32_t, uint32_t>> PoolSpan(const api::IPPoolSpec& pool) {
  auto cidr = ParseCidr(pool.subnet);
  if (!cidr || cidr->prefix > 30) return std::nullopt;
  uint32_t start = harvester::FirstHost(*cidr), end = harvester::LastHost(*cidr);
  if (!pool.range_start.empty()) {
    auto ip = ParseIpv4(pool.range_start);
    if (!ip) return std::nullopt;
    start = *ip;
  }
  if (!pool.range_end.empty()) {
    auto ip = ParseIpv4(pool.range_end);
    if (!ip) return std::nullopt;
    end = *ip;
  }
  return std::pair{start, end};
}

}  // namespace

void ValidateVMNetworkConfig(const api::VMNetworkConfig& vm, const std::string& path,
                             bool machine_level, FieldErrors& errs) {
  ValidateRequiredIP(vm.gateway, path + ".gateway", errs);
  if (vm.subnet_mask.empty()) {
    errs.push_back(Required(path + ".subnetMask"));
  } else if (!IsIp(vm.subnet_mask)) {
    errs.push_back(Invalid(path + ".subnetMask", vm.subnet_mask, "is not a valid IP address"));
  } else if (!SubnetMaskPrefix(vm.subnet_mask)) {
    errs.push_back(Invalid(path + ".subnetMask", vm.subnet_mask,
                           "must be a contiguous dotted IPv4 mask such as 255.255.255.0"));
  }
  if (machine_level) {
    // A machine names existing pools; the inline pool is the cluster's.
    if (vm.ip_pool) {
      errs.push_back(Forbidden(
          path + ".ipPool", "is not supported at the machine level; use ipPoolRef or ipPoolRefs"));
    }
    if (vm.ip_pool_ref.empty() && vm.ip_pool_refs.empty()) {
      errs.push_back(Required(path, "requires one of ipPoolRef or ipPoolRefs"));
    }
  } else if (vm.ip_pool_ref.empty() && vm.ip_pool_refs.empty() && !vm.ip_pool) {
    errs.push_back(Required(path, "requires one of ipPoolRef, ipPoolRefs or ipPool"));
  }
  // As in the Go provider: ipPoolRefs wins over ipPoolRef, a repeated pool is
  // only tried again, and ipPoolRef next to ipPool is what it writes once it
  // created the inline pool.
  if (!vm.ip_pool_ref.empty()) ValidatePoolRef(vm.ip_pool_ref, path + ".ipPoolRef", errs);
  for (size_t i = 0; i < vm.ip_pool_refs.size(); ++i) {
    ValidatePoolRef(vm.ip_pool_refs[i], path + ".ipPoolRefs[" + std::to_string(i) + "]", errs);
  }
  if (vm.ip_pool && !machine_level) {
    ValidateIPPool(*vm.ip_pool, path + ".ipPool", errs);
    // The VMs' gateway must be reachable inside the pool's subnet.
    auto cidr = ParseCidr(vm.ip_pool->subnet);
    auto gw = ParseIpv4(vm.gateway);
    if (cidr && gw && !Contains(*cidr, *gw)) {
      errs.push_back(Invalid(path + ".gateway", vm.gateway,
                             "must be inside the ipPool subnet " + vm.ip_pool->subnet));
    }
  }
  ValidateIPList(vm.dns_servers, path + ".dnsServers", errs);
}

FieldErrors ValidateHarvesterClusterSpec(const api::HarvesterClusterSpec& spec,
                                         const std::string& path) {
  FieldErrors errs;
  if (spec.target_namespace.empty()) {
    errs.push_back(Required(path + ".targetNamespace"));
  } else if (!IsDns1123Label(spec.target_namespace)) {
    errs.push_back(Invalid(path + ".targetNamespace", spec.target_namespace,
                           "must be a lowercase RFC 1123 label (a Harvester namespace)"));
  }
  const std::string sp = path + ".identitySecret";
  if (spec.identity_secret.name.empty()) {
    errs.push_back(Required(sp + ".name"));
  } else if (!IsDns1123Subdomain(spec.identity_secret.name)) {
    errs.push_back(
        Invalid(sp + ".name", spec.identity_secret.name, "must be a lowercase RFC 1123 subdomain"));
  }
  if (spec.identity_secret.namespace_.empty()) {
    errs.push_back(Required(sp + ".namespace"));
  } else if (!IsDns1123Label(spec.identity_secret.namespace_)) {
    errs.push_back(Invalid(sp + ".namespace", spec.identity_secret.namespace_,
                           "must be a lowercase RFC 1123 label"));
  }
  ValidateLoadBalancer(spec.load_balancer_config, path + ".loadBalancerConfig", errs);
  if (spec.vm_network_config)
    ValidateVMNetworkConfig(*spec.vm_network_config, path + ".vmNetworkConfig", false, errs);
  // Harvester refuses a pool whose range overlaps another pool's
  // (load-balancer-harvester v1.7.3 pkg/webhook/ippool/validator.go): the
  // inline VM pool would never be created next to the inline LB pool.
  if (spec.load_balancer_config.ip_pool && spec.vm_network_config &&
      spec.vm_network_config->ip_pool) {
    auto lb = PoolSpan(*spec.load_balancer_config.ip_pool);
    auto vm = PoolSpan(*spec.vm_network_config->ip_pool);
    if (lb && vm && lb->first <= vm->second && vm->first <= lb->second) {
      errs.push_back(
          Invalid(path + ".vmNetworkConfig.ipPool", spec.vm_network_config->ip_pool->subnet,
                  "has a range that overlaps the range of loadBalancerConfig.ipPool: Harvester "
                  "refuses IP pools whose ranges overlap; give each its own range"));
    }
  }
  if (spec.update_cloud_provider_config) {
    const auto& c = *spec.update_cloud_provider_config;
    const std::string cp = path + ".updateCloudProviderConfig";
    auto need = [&](const std::string& v, const char* name) {
      if (v.empty()) errs.push_back(Required(cp + "." + name));
    };
    need(c.manifests_config_map_namespace, "manifestsConfigMapNamespace");
    need(c.manifests_config_map_name, "manifestsConfigMapName");
    need(c.manifests_config_map_key, "manifestsConfigMapKey");
    need(c.cloud_config_credentials_secret_name, "cloudConfigCredentialsSecretName");
    need(c.cloud_config_credentials_secret_key, "cloudConfigCredentialsSecretKey");
  }
  if (spec.control_plane_endpoint) {
    const auto& ep = *spec.control_plane_endpoint;
    if (ep.port < 0 || ep.port > 65535) {
      errs.push_back(Invalid(path + ".controlPlaneEndpoint.port", ep.port,
                             "must be between 0 and 65535, inclusive"));
    }
  }
  return errs;
}

FieldErrors ValidateHarvesterCluster(const api::HarvesterCluster& obj) {
  return ValidateHarvesterClusterSpec(obj.spec, "spec");
}

FieldErrors ValidateHarvesterClusterUpdate(const api::HarvesterCluster& old_obj,
                                           const api::HarvesterCluster& new_obj) {
  FieldErrors errs;
  // A spec that did not change is not re-validated, so metadata-only updates
  // (finalizers, labels) of objects created under older rules still pass.
  if (!SemanticallyEqual(old_obj.spec, new_obj.spec)) errs = ValidateHarvesterCluster(new_obj);
  // The VMs, load balancer and secrets live in targetNamespace of the Harvester
  // the identity points at: changing either would orphan them.
  const char* kOrphan = "cannot be changed: it would orphan the Harvester resources";
  if (old_obj.spec.target_namespace != new_obj.spec.target_namespace) {
    errs.push_back(Invalid("spec.targetNamespace", new_obj.spec.target_namespace, kOrphan));
  }
  if (old_obj.spec.identity_secret.namespace_ != new_obj.spec.identity_secret.namespace_) {
    errs.push_back(
        Invalid("spec.identitySecret.namespace", new_obj.spec.identity_secret.namespace_, kOrphan));
  }
  if (old_obj.spec.identity_secret.name != new_obj.spec.identity_secret.name) {
    errs.push_back(Invalid("spec.identitySecret.name", new_obj.spec.identity_secret.name, kOrphan));
  }
  // Harvester refuses a change of a load balancer's `ipam` (load-balancer-
  // harvester v1.7.3 pkg/webhook/loadbalancer/validator.go checkIPAM).
  if (old_obj.spec.load_balancer_config.ipam_type != new_obj.spec.load_balancer_config.ipam_type) {
    errs.push_back(Invalid("spec.loadBalancerConfig.ipamType",
                           new_obj.spec.load_balancer_config.ipam_type,
                           "cannot be changed: Harvester does not change the IPAM of a load "
                           "balancer; create a new cluster to change it"));
  }
  return errs;
}

FieldErrors ValidateHarvesterClusterTemplate(const api::HarvesterClusterTemplate& obj) {
  return WithoutUnsetValues(
      ValidateHarvesterClusterSpec(obj.spec.template_.spec, "spec.template.spec"));
}

FieldErrors ValidateHarvesterClusterTemplateUpdate(const api::HarvesterClusterTemplate& old_obj,
                                                   const api::HarvesterClusterTemplate& new_obj) {
  if (SemanticallyEqual(old_obj.spec.template_.spec, new_obj.spec.template_.spec)) return {};
  return ValidateHarvesterClusterTemplate(new_obj);
}

}  // namespace caphv::webhooks
