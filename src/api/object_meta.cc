// File: api/object_meta.cc

#include "api/object_meta.h"

namespace caphv::api {

Json CustomCodec<ObjectMeta>::Encode(const ObjectMeta& meta) {
  Json out = meta.extra.is_object() ? meta.extra : Json::object();
  EncodeVisitor visitor(out);
  ObjectMeta::Describe(meta, visitor);
  return out;
}

void CustomCodec<ObjectMeta>::Decode(const Json& in, ObjectMeta& out, DecodeContext& ctx,
                                     const std::string& path) {
  if (!in.is_object()) {
    ctx.errors.push_back(path + ": expected an object, got " + in.dump());
    return;
  }
  // Metadata keys we do not model are kept, never reported as unknown.
  DecodeContext inner{.strict = false};
  DecodeVisitor visitor(in, inner, path);
  ObjectMeta::Describe(out, visitor);
  for (auto& e : inner.errors) ctx.errors.push_back(std::move(e));
  out.extra = Json::object();
  static const char* const kKnown[] = {"name",
                                       "generateName",
                                       "namespace",
                                       "uid",
                                       "resourceVersion",
                                       "generation",
                                       "creationTimestamp",
                                       "deletionTimestamp",
                                       "labels",
                                       "annotations",
                                       "ownerReferences",
                                       "finalizers"};
  for (const auto& [key, value] : in.items()) {
    bool modelled = false;
    for (const char* k : kKnown) modelled = modelled || key == k;
    // A modelled key whose value encodes to nothing (e.g. "labels": {}) is
    // kept verbatim so that the round trip stays exact.
    if (!modelled || (value.is_object() && value.empty()) || (value.is_array() && value.empty()) ||
        (value.is_string() && value.get<std::string>().empty())) {
      out.extra[key] = value;
    }
  }
}

}  // namespace caphv::api
