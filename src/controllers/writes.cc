// File: controllers/writes.cc

#include "controllers/writes.h"

namespace caphv::controllers {

kube::StatusOr<kube::Object> ApplyStatus(kube::Client& client,
                                         const kube::GroupVersionResource& gvr,
                                         const kube::Object& object, const kube::Object& status) {
  kube::Object body = {
      {"apiVersion", object.value("apiVersion", "")},
      {"kind", object.value("kind", "")},
      {"metadata", {{"name", kube::NameOf(object)}, {"namespace", kube::NamespaceOf(object)}}},
      {"status", status},
  };
  kube::ApplyOptions options;
  options.subresource = "status";
  return client.Apply(gvr, kube::NamespaceOf(object), body, options);
}

kube::StatusOr<kube::Object> ReplaceStatus(kube::Client& client,
                                           const kube::GroupVersionResource& gvr,
                                           const kube::Object& object, const kube::Object& status) {
  kube::PatchOptions options;
  options.field_manager = "caphv";
  options.subresource = "status";
  return client.Patch(gvr, kube::NamespaceOf(object), kube::NameOf(object), kube::PatchType::kMerge,
                      {{"status", status}}, options);
}

kube::StatusOr<kube::Object> MergePatch(kube::Client& client, const kube::GroupVersionResource& gvr,
                                        const kube::Object& object, const kube::Object& patch) {
  return client.Patch(gvr, kube::NamespaceOf(object), kube::NameOf(object), kube::PatchType::kMerge,
                      patch);
}

kube::Status DeleteIfExists(kube::Client& client, const kube::GroupVersionResource& gvr,
                            std::string_view ns, std::string_view name) {
  kube::Status s = client.Delete(gvr, ns, name);
  if (s.IsNotFound()) return kube::Status::Ok();
  return s;
}

}  // namespace caphv::controllers
