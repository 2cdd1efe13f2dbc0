// File: kube/object.h
//
// Object: a Kubernetes object as its raw JSON (nlohmann::json). The raw
// object is the truth; typed structs elsewhere (src/api) are read views.
// ObjectPtr is the shared, immutable form caches hand out. The accessors read
// metadata fields and return "" when a field is absent or not a string.
//
// This header knows nothing of HTTP: pure builders (src/api, src/harvester,
// src/webhooks) include it instead of kube/client.h.
//
// Thread safety: the accessors are pure functions; an Object is a plain value
// (an ObjectPtr's target must never be modified).

#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace caphv::kube {

using Object = nlohmann::json;
using ObjectPtr = std::shared_ptr<const Object>;

std::string NamespaceOf(const Object& o);
std::string NameOf(const Object& o);
std::string ResourceVersionOf(const Object& o);
std::string UidOf(const Object& o);
// "ns/name", or "name" for cluster-scoped objects: the cache key.
std::string KeyOf(const Object& o);

// Whether an APIGroup discovery document (GET /apis/<group>) lists `version`
// among the versions served; false when the document is not one.
bool ServesVersion(const Object& api_group, std::string_view version);

}  // namespace caphv::kube
