// File: webhooks/mutation.cc

#include "webhooks/mutation.h"

#include <algorithm>

#include "api/common.h"
#include "api/harvester_cluster.h"
#include "api/harvester_machine.h"

namespace caphv::webhooks {
namespace {

bool InScope(const api::Json& meta, std::string_view ns, const MachineScope& scope) {
  if (!scope.ns.empty() && ns != scope.ns) return false;
  if (scope.watch_filter.empty()) return true;
  auto labels = meta.find("labels");
  if (labels == meta.end() || !labels->is_object()) return false;
  auto value = labels->find(api::kWatchFilterLabel);
  return value != labels->end() && value->is_string() &&
         value->get_ref<const std::string&>() == scope.watch_filter;
}

}  // namespace

api::Json HarvesterClusterPatch(const api::Json& object, const api::Json* old_object) {
  api::Json ops = api::Json::array();
  if (old_object == nullptr || !object.is_object() || !object.contains("spec")) return ops;
  const auto kept = api::RealControlPlaneEndpoint(*old_object);
  if (!kept || api::RealControlPlaneEndpoint(object)) return ops;
  if (!object.at("spec").is_object()) return ops;
  ops.push_back({{"op", "add"},
                 {"path", "/spec/controlPlaneEndpoint"},
                 {"value", {{"host", kept->host}, {"port", kept->port}}}});
  return ops;
}

api::Json HarvesterMachineCreatePatch(const api::Json& object, std::string_view ns,
                                      const MachineScope& scope) {
  api::Json ops = api::Json::array();
  if (!object.is_object()) return ops;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return ops;
  if (meta->contains("deletionTimestamp") || !InScope(*meta, ns, scope)) return ops;
  auto finalizers = meta->find("finalizers");
  if (finalizers == meta->end() || finalizers->is_null()) {
    ops.push_back({{"op", "add"},
                   {"path", "/metadata/finalizers"},
                   {"value", api::Json::array({api::kMachineFinalizer})}});
    return ops;
  }
  if (!finalizers->is_array()) return ops;  // the apiserver refuses the object anyway
  const bool has = std::any_of(finalizers->begin(), finalizers->end(), [](const api::Json& f) {
    return f.is_string() && (f.get_ref<const std::string&>() == api::kMachineFinalizer ||
                             f.get_ref<const std::string&>() == api::kLegacyMachineFinalizer);
  });
  if (!has) {
    ops.push_back(
        {{"op", "add"}, {"path", "/metadata/finalizers/-"}, {"value", api::kMachineFinalizer}});
  }
  return ops;
}

}  // namespace caphv::webhooks
