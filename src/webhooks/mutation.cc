// File: webhooks/mutation.cc

#include "webhooks/mutation.h"

#include <cstdint>
#include <string>

namespace caphv::webhooks {
namespace {

// spec.controlPlaneEndpoint of `obj` when it is a real address: a host that
// is neither empty nor unspecified, and a port in 1..65535.
const api::Json* RealEndpoint(const api::Json& obj) {
  if (!obj.is_object()) return nullptr;
  const auto spec = obj.find("spec");
  if (spec == obj.end() || !spec->is_object()) return nullptr;
  const auto ep = spec->find("controlPlaneEndpoint");
  if (ep == spec->end() || !ep->is_object()) return nullptr;
  const auto host = ep->find("host");
  const auto port = ep->find("port");
  if (host == ep->end() || !host->is_string() || port == ep->end() || !port->is_number_integer()) {
    return nullptr;
  }
  const auto& h = host->get_ref<const std::string&>();
  const auto p = port->get<int64_t>();
  if (h.empty() || h == "0.0.0.0" || h == "::" || p <= 0 || p > 65535) return nullptr;
  return &*ep;
}

}  // namespace

api::Json HarvesterClusterPatch(const api::Json& object, const api::Json* old_object) {
  api::Json ops = api::Json::array();
  if (old_object == nullptr || !object.is_object()) return ops;
  const api::Json* kept = RealEndpoint(*old_object);
  if (kept == nullptr || RealEndpoint(object) != nullptr) return ops;
  const auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return ops;
  ops.push_back({{"op", "add"},
                 {"path", "/spec/controlPlaneEndpoint"},
                 {"value", {{"host", (*kept)["host"]}, {"port", (*kept)["port"]}}}});
  return ops;
}

}  // namespace caphv::webhooks
