// File: webhooks/mutation.cc

#include "webhooks/mutation.h"

#include "api/harvester_cluster.h"

namespace caphv::webhooks {

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

}  // namespace caphv::webhooks
