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

#include <initializer_list>
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

// A path of object keys into an Object ({"metadata", "labels"}).
using FieldPath = std::initializer_list<std::string_view>;

// The metadata every cached object keeps (FieldMasks list it first):
// name, namespace, uid, resourceVersion, generation, creationTimestamp,
// deletionTimestamp, labels, annotations, finalizers, ownerReferences.
extern const std::initializer_list<FieldPath> kCachedMetadata;

// Whether two versions of an object are the same but for the top-level keys
// of `skip` (which names "metadata") and, within metadata, its
// resourceVersion and managedFields. Objects that are not JSON objects never
// count as the same.
bool SameBut(const Object& a, const Object& b, std::initializer_list<std::string_view> skip);

// Whether an update changed anything but metadata.resourceVersion (and
// metadata.managedFields). An informer with a transform caches only the
// fields its readers use, so an update to any other field arrives as an
// equal object at a new resourceVersion: its readers would see nothing new.
// Resync re-deliveries (same resourceVersion) count as changed.
bool ChangedBeyondResourceVersion(const Object& old_obj, const Object& new_obj);

// Whether an APIGroup discovery document (GET /apis/<group>) lists `version`
// among the versions served; false when the document is not one.
bool ServesVersion(const Object& api_group, std::string_view version);

}  // namespace caphv::kube
