// File: api/object_meta.h
//
// ObjectMeta: the typed slice of metav1.ObjectMeta CAPHV reads and writes,
// plus every other metadata key kept verbatim (managedFields, ...), so that
// decoding then encoding an object reproduces its metadata exactly. In CRD
// schemas metadata is just `type: object` (the apiserver owns its schema).
//
// TemplateMeta is the `spec.template.metadata` of the template kinds
// (labels and annotations only, as in Cluster API's ObjectMeta).
//
// Thread safety: plain values.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/fields.h"

namespace caphv::api {

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  std::optional<bool> controller;
  std::optional<bool> block_owner_deletion;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.api_version, Field("apiVersion").Required());
    v(self.kind, Field("kind").Required());
    v(self.name, Field("name").Required());
    v(self.uid, Field("uid").Required());
    v(self.controller, Field("controller"));
    v(self.block_owner_deletion, Field("blockOwnerDeletion"));
  }
  bool operator==(const OwnerReference&) const = default;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;
  std::string deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
  // Every other key of the input metadata, verbatim (an object or null).
  Json extra;

  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.name, Field("name"));
    v(self.generate_name, Field("generateName"));
    v(self.namespace_, Field("namespace"));
    v(self.uid, Field("uid"));
    v(self.resource_version, Field("resourceVersion"));
    v(self.generation, Field("generation"));
    v(self.creation_timestamp, Field("creationTimestamp"));
    v(self.deletion_timestamp, Field("deletionTimestamp"));
    v(self.labels, Field("labels"));
    v(self.annotations, Field("annotations"));
    v(self.owner_references, Field("ownerReferences"));
    v(self.finalizers, Field("finalizers"));
  }
  bool operator==(const ObjectMeta&) const = default;
};

template <>
struct CustomCodec<ObjectMeta> {
  static constexpr bool kCustom = true;
  static Json Encode(const ObjectMeta& meta);
  static bool Empty(const ObjectMeta& meta) { return Encode(meta).empty(); }
  static Json Schema() { return {{"type", "object"}}; }
  static void Decode(const Json& in, ObjectMeta& out, DecodeContext& ctx, const std::string& path);
};

struct TemplateMeta {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.labels, Field("labels").Doc("Labels copied to objects created from the template."));
    v(self.annotations,
      Field("annotations").Doc("Annotations copied to objects created from the template."));
  }
  bool operator==(const TemplateMeta&) const = default;
};

}  // namespace caphv::api
