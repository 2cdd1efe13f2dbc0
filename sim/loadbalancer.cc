// File: sim/loadbalancer.cc

#include "sim/loadbalancer.h"

#include <algorithm>
#include <map>
#include <set>

namespace caphv::sim {

using kube::Object;

namespace {

std::string Annotation(const Object& o, const char* key) {
  const auto& meta = o.value("metadata", Object::object());
  const auto& ann = meta.value("annotations", Object::object());
  return ann.value(key, "");
}

bool Matches(const std::string& pattern, const std::string& value) {
  return pattern.empty() || pattern == "*" || pattern == value;
}

}  // namespace

std::string LbOwner(const Object& lb) {
  return lb["metadata"].value("namespace", "") + "/" + lb["metadata"].value("name", "");
}

bool LbUsesPool(const Object& lb) {
  return lb.value("spec", Object::object()).value("ipam", "pool") == "pool";
}

std::optional<std::string> SelectPool(const Object& lb, const std::vector<Object>& pools) {
  const Object spec = lb.value("spec", Object::object());
  const std::string wanted = spec.value("ipPool", "");
  if (!wanted.empty()) {
    for (const auto& p : pools) {
      if (p["metadata"].value("name", "") == wanted) return wanted;
    }
    return std::nullopt;
  }
  const std::string network = Annotation(lb, "loadbalancer.harvesterhci.io/network");
  const std::string project = Annotation(lb, "loadbalancer.harvesterhci.io/project");
  std::string ns = Annotation(lb, "loadbalancer.harvesterhci.io/namespace");
  if (ns.empty()) ns = lb["metadata"].value("namespace", "");
  const std::string cluster = Annotation(lb, "loadbalancer.harvesterhci.io/cluster");
  std::optional<std::string> best;
  int64_t best_priority = -1;
  std::optional<std::string> global;
  for (const auto& p : pools) {
    const std::string name = p["metadata"].value("name", "");
    const Object labels = p["metadata"].value("labels", Object::object());
    if (labels.value("loadbalancer.harvesterhci.io/global-ip-pool", "") == "true") global = name;
    const Object sel = p.value("spec", Object::object()).value("selector", Object::object());
    if (sel.empty()) continue;
    const std::string pool_net = sel.value("network", "");
    if (!pool_net.empty() && pool_net != network) continue;
    const Object scope = sel.value("scope", Object::array());
    bool in_scope = scope.empty();
    for (const auto& s : scope) {
      if (Matches(s.value("project", ""), project) && Matches(s.value("namespace", ""), ns) &&
          Matches(s.value("guestCluster", ""), cluster)) {
        in_scope = true;
      }
    }
    if (!in_scope) continue;
    const int64_t priority = sel.value("priority", int64_t{0});
    if (priority > best_priority) {
      best_priority = priority;
      best = name;
    }
  }
  return best ? best : global;
}

std::vector<std::string> BackendServers(const Object& lb, const std::vector<Object>& vmis) {
  std::vector<std::string> out;
  const Object sel =
      lb.value("spec", Object::object()).value("backendServerSelector", Object::object());
  if (sel.empty()) return out;
  const std::string ns = lb["metadata"].value("namespace", "");
  for (const auto& vmi : vmis) {
    if (vmi["metadata"].value("namespace", "") != ns) continue;
    const Object labels = vmi["metadata"].value("labels", Object::object());
    bool match = true;
    for (auto it = sel.begin(); it != sel.end() && match; ++it) {
      const std::string v = labels.value(it.key(), "");
      match = labels.contains(it.key()) && it->is_array() &&
              std::find(it->begin(), it->end(), Object(v)) != it->end();
    }
    if (!match) continue;
    const Object status = vmi.value("status", Object::object());
    if (status.value("phase", "") != "Running") continue;
    for (const auto& i : status.value("interfaces", Object::array())) {
      const std::string ip = i.value("ipAddress", "");
      if (!ip.empty()) {
        out.push_back(ip);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
Object Ready(bool ok, const std::string& message) {
  return Object::array(
      {{{"type", "Ready"}, {"status", ok ? "True" : "False"}, {"message", message}}});
}
}  // namespace

Object LbPoolStatus(const std::string& pool, const PoolRange& range, const std::string& ip,
                    const std::vector<std::string>& backends) {
  Object out = {{"address", ip},
                {"allocatedAddress",
                 {{"ipPool", pool},
                  {"ip", ip},
                  {"mask", FormatIpv4(harvester::MaskFromPrefix(range.prefix))},
                  {"gateway", FormatIpv4(range.gateway)}}},
                {"conditions", Ready(true, "")}};
  if (!backends.empty()) out["backendServers"] = backends;
  return out;
}

Object LbDhcpStatus(const std::string& ip, const std::vector<std::string>& backends) {
  Object out = {
      {"address", ip}, {"allocatedAddress", {{"ip", "0.0.0.0"}}}, {"conditions", Ready(true, "")}};
  if (!backends.empty()) out["backendServers"] = backends;
  return out;
}

Object LbErrorStatus(const std::string& message) { return {{"conditions", Ready(false, message)}}; }

// ---------------------------------------------------------------- vm load balancers

namespace {

// The Service ports of the LB's listeners (harvester-load-balancer constructService).
Object ServicePorts(const Object& lb) {
  Object ports = Object::array();
  for (const auto& l : lb.value("spec", Object::object()).value("listeners", Object::array())) {
    Object port = {{"name", l.value("name", "")},
                   {"protocol", l.value("protocol", "TCP")},
                   {"port", l.value("port", 0)},
                   {"targetPort", l.value("backendPort", 0)}};
    ports.push_back(port);
  }
  return ports;
}

}  // namespace

bool LbServesVms(const Object& lb) {
  const std::string type = lb.value("spec", Object::object()).value("workloadType", "");
  return type.empty() || type == "vm";
}

Object LbService(const Object& lb, const std::string& lb_ip) {
  const Object& meta = lb["metadata"];
  return {
      {"apiVersion", "v1"},
      {"kind", "Service"},
      {"metadata",
       {{"name", meta.value("name", "")},
        {"namespace", meta.value("namespace", "")},
        {"labels", {{"loadbalancer.harvesterhci.io/servicelb", "true"}}},
        {"ownerReferences", Object::array({{{"apiVersion", lb.value("apiVersion", "")},
                                            {"kind", lb.value("kind", "LoadBalancer")},
                                            {"name", meta.value("name", "")},
                                            {"uid", meta.value("uid", "")}}})}}},
      {"spec", {{"type", "LoadBalancer"}, {"loadBalancerIP", lb_ip}, {"ports", ServicePorts(lb)}}}};
}

Object LbServicePatch(const Object& lb, const std::string& lb_ip, const Object& service) {
  const Object spec = service.value("spec", Object::object());
  Object patch = Object::object();
  if (spec.value("loadBalancerIP", "") != lb_ip) patch["loadBalancerIP"] = lb_ip;
  // Compare what constructService sets; the apiserver adds nodePort (and
  // keeps a numeric targetPort as is).
  const Object want = ServicePorts(lb);
  const Object have = spec.value("ports", Object::array());
  bool same = have.is_array() && have.size() == want.size();
  for (size_t i = 0; same && i < want.size(); ++i) {
    for (const char* k : {"name", "protocol", "port", "targetPort"}) {
      if (have[i].value(k, Object()) != want[i][k]) same = false;
    }
  }
  if (!same) patch["ports"] = want;
  if (patch.empty()) return patch;
  return {{"spec", patch}};
}

std::string ServiceIngressIp(const Object& service) {
  const Object ingress = service.value("status", Object::object())
                             .value("loadBalancer", Object::object())
                             .value("ingress", Object::array());
  if (!ingress.is_array() || ingress.empty() || !ingress[0].is_object()) return "";
  return ingress[0].value("ip", "");
}

Object LbVmStatus(const Object& allocated, const std::string& ingress_ip,
                  const std::vector<std::string>& backends) {
  Object out = {{"allocatedAddress", allocated}};
  if (ingress_ip.empty()) {
    out["conditions"] = Ready(false, "service is waiting for external IP");
    return out;
  }
  out["address"] = ingress_ip;
  if (backends.empty()) {
    out["conditions"] = Ready(false, "no running backend servers");
  } else {
    out["backendServers"] = backends;
    out["conditions"] = Ready(true, "");
  }
  return out;
}

// ---------------------------------------------------------------- kube-vip

std::string KubeVipRequestedAddress(const Object& service) {
  const Object spec = service.value("spec", Object::object());
  if (spec.value("type", "") != "LoadBalancer") return "";
  std::string ips = Annotation(service, kKubeVipIpsAnnotation);
  ips = ips.substr(0, ips.find(','));
  ips.erase(0, ips.find_first_not_of(" \t"));
  ips.erase(ips.find_last_not_of(" \t") + 1);
  if (!ips.empty()) return ips;
  return spec.value("loadBalancerIP", "");
}

Object KubeVipServiceStatus(const std::string& ip) {
  return {{"ingress", Object::array({{{"ip", ip}}})}};
}

namespace {

// The first listener problem (load-balancer-harvester v1.7.3
// pkg/webhook/loadbalancer/validator.go checkListeners), or "".
std::string CheckListeners(const Object& spec) {
  const Object listeners = spec.value("listeners", Object::array());
  if (!listeners.is_array() || listeners.empty()) {
    return "the loadbalancer needs to have at least one listener";
  }
  std::map<std::string, std::string> names, ports, backend_ports;  // key -> listener name
  for (const auto& l : listeners) {
    if (!l.is_object()) continue;
    const std::string name = l.value("name", "");
    const std::string protocol = l.value("protocol", "");
    if (!names.emplace(name, name).second) return "listener has duplicate name " + name;
    const std::string port = protocol + ":" + std::to_string(l.value("port", 0));
    if (auto [it, added] = ports.emplace(port, name); !added) {
      return "listener " + name + " has duplicate port " + port + " with listener " + it->second;
    }
    const std::string backend = protocol + ":" + std::to_string(l.value("backendPort", 0));
    if (auto [it, added] = backend_ports.emplace(backend, name); !added) {
      return "listener " + name + " has duplicate backend port " + backend + " with listener " +
             it->second;
    }
  }
  for (const auto& l : listeners) {
    if (!l.is_object()) continue;
    for (const char* key : {"port", "backendPort"}) {
      const int64_t v = l.value(key, int64_t{0});
      const std::string what =
          std::string(key) == "port" ? "listener port " : "listener backend port ";
      if (v > 65535) return what + std::to_string(v) + " must <= 65535";
      if (v < 1) return what + std::to_string(v) + " must >= 1";
    }
  }
  return "";
}

// checkHealthyCheck: the health check probes a TCP backend port.
std::string CheckHealthCheck(const Object& spec) {
  const Object hc = spec.value("healthCheck", Object());
  if (!hc.is_object() || hc.value("port", 0) == 0) return "";
  const int port = hc.value("port", 0);
  bool backend = false;
  for (const auto& l : spec.value("listeners", Object::array())) {
    if (!l.is_object() || l.value("backendPort", 0) != port) continue;
    if (l.value("protocol", "") == "TCP") return "";
    backend = true;
  }
  return "healthcheck port " + std::to_string(port) +
         (backend ? " can only be a TCP backend port" : " is not in listener backend port list");
}

}  // namespace

std::vector<std::string> ValidateLb(const Object& lb, const Object* old_lb) {
  const std::string key = lb.value("/metadata/namespace"_json_pointer, "") + "/" +
                          lb.value("/metadata/name"_json_pointer, "");
  const std::string verb = old_lb != nullptr ? "update" : "create";
  const std::string prefix = verb + " loadbalancer " + key + " failed: ";
  if (old_lb != nullptr) {
    const Object meta = lb.value("metadata", Object::object());
    if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return {};
  }
  const Object spec = lb.value("spec", Object::object());
  const bool cluster = spec.value("workloadType", "") == "cluster";
  if (!cluster) {
    if (std::string e = CheckListeners(spec); !e.empty()) return {prefix + e};
    if (std::string e = CheckHealthCheck(spec); !e.empty()) {
      return {verb + " loadbalancer " + key + " failed with healthyCheck: " + e};
    }
  }
  if (old_lb != nullptr) {
    const Object old_spec = old_lb->value("spec", Object::object());
    // "" is pool and vm: only a switch between dhcp and not, cluster and not, is refused.
    const std::string old_ipam = old_spec.value("ipam", ""), new_ipam = spec.value("ipam", "");
    if ((old_ipam == "dhcp") != (new_ipam == "dhcp")) {
      return {prefix + "can't change the IPAM from " + old_ipam + " to " + new_ipam};
    }
    const std::string old_type = old_spec.value("workloadType", "");
    const std::string new_type = spec.value("workloadType", "");
    if ((old_type == "cluster") != (new_type == "cluster")) {
      return {prefix + "can't change the WorkloadType from " + old_type + " to " + new_type};
    }
  }
  return {};
}

}  // namespace caphv::sim
