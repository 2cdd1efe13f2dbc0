// File: sim/vm_mutator.cc

#include "sim/vm_mutator.h"

#include <algorithm>
#include <set>

#include "api/quantity.h"
#include "sim/kubevirt.h"
#include "sim/object_util.h"

namespace caphv::sim {

using internal::FindAt;
using internal::StrAt;
using kube::Object;

namespace {

constexpr int64_t kCpuOvercommitPercent = 1600;
constexpr int64_t kMemoryOvercommitPercent = 150;
constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

Object MutateVmPatch(const Object& vm, const ClusterNetworkOf& cluster_network_of) {
  Object ops = Object::array();
  const std::string base = "/spec/template/spec";
  const Object* spec = FindAt(vm, {"spec", "template", "spec"});
  if (spec == nullptr || !spec->is_object()) return ops;
  const std::string ns = StrAt(vm, {"metadata", "namespace"});
  const std::string name = StrAt(vm, {"metadata", "name"});
  const Object* domain = FindAt(*spec, {"domain"});
  if (domain == nullptr || !domain->is_object()) return ops;

  // Requests and guest memory from the limits.
  const std::string cpu_limit = StrAt(*domain, {"resources", "limits", "cpu"});
  const Object* cpu_limit_value = FindAt(*domain, {"resources", "limits", "cpu"});
  std::string cpu_text = cpu_limit;
  if (cpu_text.empty() && cpu_limit_value != nullptr && cpu_limit_value->is_number_integer()) {
    cpu_text = std::to_string(cpu_limit_value->get<int64_t>());
  }
  const std::string mem_limit = StrAt(*domain, {"resources", "limits", "memory"});
  Object requests = Object::object();
  if (const Object* r = FindAt(*domain, {"resources", "requests"});
      r != nullptr && r->is_object()) {
    requests = *r;
  }
  bool requests_changed = false;
  if (auto q = api::Quantity::Parse(cpu_text); q && q->MilliValue()) {
    const int64_t millis = *q->MilliValue() * 100 / kCpuOvercommitPercent;
    requests["cpu"] = std::to_string(millis) + "m";
    requests_changed = true;
  }
  if (auto q = api::Quantity::Parse(mem_limit); q && q->Value()) {
    const int64_t bytes = *q->Value() * 100 / kMemoryOvercommitPercent;
    requests["memory"] = std::to_string(bytes / kMiB) + "Mi";
    requests_changed = true;
    const std::string guest = StrAt(*domain, {"memory", "guest"});
    if (guest != mem_limit) {
      if (FindAt(*domain, {"memory"}) == nullptr) {
        ops.push_back(
            {{"op", "add"}, {"path", base + "/domain/memory"}, {"value", {{"guest", mem_limit}}}});
      } else {
        ops.push_back({{"op", guest.empty() ? "add" : "replace"},
                       {"path", base + "/domain/memory/guest"},
                       {"value", mem_limit}});
      }
    }
  }
  if (requests_changed) {
    if (FindAt(*domain, {"resources"}) == nullptr) {
      ops.push_back({{"op", "add"},
                     {"path", base + "/domain/resources"},
                     {"value", {{"requests", requests}}}});
    } else {
      ops.push_back({{"op", FindAt(*domain, {"resources", "requests"}) ? "replace" : "add"},
                     {"path", base + "/domain/resources/requests"},
                     {"value", requests}});
    }
  }
  if (const Object* cpu = FindAt(*domain, {"cpu"}); cpu != nullptr && cpu->is_object()) {
    if (!cpu->contains("maxSockets")) {
      ops.push_back({{"op", "add"}, {"path", base + "/domain/cpu/maxSockets"}, {"value", 1}});
    }
  }
  if (!spec->contains("terminationGracePeriodSeconds")) {
    ops.push_back(
        {{"op", "add"}, {"path", base + "/terminationGracePeriodSeconds"}, {"value", 120}});
  }

  // MACs on every interface without one.
  if (const Object* ifaces = FindAt(*domain, {"devices", "interfaces"});
      ifaces != nullptr && ifaces->is_array()) {
    for (size_t i = 0; i < ifaces->size(); ++i) {
      const Object& iface = (*ifaces)[i];
      if (!iface.is_object() || !StrAt(iface, {"macAddress"}).empty()) continue;
      ops.push_back(
          {{"op", "add"},
           {"path", base + "/domain/devices/interfaces/" + std::to_string(i) + "/macAddress"},
           {"value", GeneratedMac(ns + "/" + name, i)}});
    }
  }

  // Node affinity to the cluster networks of the VM's Multus networks.
  std::set<std::string> cluster_networks;
  if (const Object* nets = FindAt(*spec, {"networks"}); nets != nullptr && nets->is_array()) {
    for (const auto& n : *nets) {
      std::string nad = StrAt(n, {"multus", "networkName"});
      if (nad.empty()) continue;
      const auto slash = nad.find('/');
      const std::string nad_ns = slash == std::string::npos ? ns : nad.substr(0, slash);
      const std::string nad_name = slash == std::string::npos ? nad : nad.substr(slash + 1);
      const std::string cn = cluster_network_of ? cluster_network_of(nad_ns, nad_name) : "";
      if (!cn.empty()) cluster_networks.insert(cn);
    }
  }
  if (!cluster_networks.empty()) {
    Object expressions = Object::array();
    for (const auto& cn : cluster_networks) {
      expressions.push_back({{"key", "network.harvesterhci.io/" + cn},
                             {"operator", "In"},
                             {"values", Object::array({"true"})}});
    }
    const Object* terms =
        FindAt(*spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                       "nodeSelectorTerms"});
    Object new_terms = Object::array();
    if (terms != nullptr && terms->is_array() && !terms->empty()) {
      // Every term (they are ORed) gets the expressions.
      for (Object term : *terms) {
        Object exprs = term.value("matchExpressions", Object::array());
        for (const auto& e : expressions) {
          if (std::find(exprs.begin(), exprs.end(), e) == exprs.end()) exprs.push_back(e);
        }
        term["matchExpressions"] = exprs;
        new_terms.push_back(term);
      }
    } else {
      new_terms.push_back({{"matchExpressions", expressions}});
    }
    if (terms == nullptr || *terms != new_terms) {
      Object affinity =
          FindAt(*spec, {"affinity"}) != nullptr ? *FindAt(*spec, {"affinity"}) : Object::object();
      affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
              ["nodeSelectorTerms"] = new_terms;
      ops.push_back({{"op", FindAt(*spec, {"affinity"}) ? "replace" : "add"},
                     {"path", base + "/affinity"},
                     {"value", affinity}});
    }
  }
  return ops;
}

}  // namespace caphv::sim
