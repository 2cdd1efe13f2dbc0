// File: controllers/capi.cc

#include "controllers/capi.h"

#include <algorithm>

#include "api/conditions.h"
#include "harvester/naming.h"
#include "kube/json_path.h"

namespace caphv::controllers {

std::string Str(const kube::Object& o, std::initializer_list<std::string_view> path) {
  return std::string(kube::StringAt(o, path));
}

std::string CapiOwnerName(const kube::Object& o, std::string_view kind) {
  auto meta = o.find("metadata");
  if (meta == o.end()) return {};
  auto refs = meta->find("ownerReferences");
  if (refs == meta->end() || !refs->is_array()) return {};
  for (const auto& r : *refs) {
    const std::string api_version = r.value("apiVersion", "");
    if (r.value("kind", "") != kind) continue;
    if (api_version.rfind(std::string(kCapiGroup) + "/", 0) != 0) continue;
    return r.value("name", "");
  }
  return {};
}

bool IsPaused(const kube::Object* cluster, const kube::Object& o) {
  auto annotated = [](const kube::Object& x) {
    auto meta = x.find("metadata");
    if (meta == x.end()) return false;
    auto ann = meta->find("annotations");
    return ann != meta->end() && ann->is_object() && ann->contains(std::string(kPausedAnnotation));
  };
  if (annotated(o)) return true;
  if (cluster == nullptr) return false;
  auto spec = cluster->find("spec");
  if (spec != cluster->end() && spec->value("paused", false)) return true;
  return false;
}

bool IsDeleting(const kube::Object& o) {
  return !Str(o, {"metadata", "deletionTimestamp"}).empty();
}

namespace {
std::vector<std::string> Finalizers(const kube::Object& o) {
  std::vector<std::string> out;
  auto meta = o.find("metadata");
  if (meta == o.end()) return out;
  auto f = meta->find("finalizers");
  if (f == meta->end() || !f->is_array()) return out;
  for (const auto& s : *f) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

kube::Object FinalizerPatch(const kube::Object& o, const std::vector<std::string>& finalizers) {
  return {
      {"metadata", {{"finalizers", finalizers}, {"resourceVersion", kube::ResourceVersionOf(o)}}}};
}
}  // namespace

bool HasFinalizer(const kube::Object& o, std::string_view finalizer) {
  auto f = Finalizers(o);
  return std::find(f.begin(), f.end(), finalizer) != f.end();
}

std::optional<kube::Object> AddFinalizerPatch(const kube::Object& o, std::string_view finalizer,
                                              std::string_view legacy) {
  auto f = Finalizers(o);
  const bool has = std::find(f.begin(), f.end(), finalizer) != f.end();
  const bool has_legacy = std::find(f.begin(), f.end(), legacy) != f.end();
  if (has && !has_legacy) return std::nullopt;
  std::erase(f, std::string(legacy));
  if (!has) f.emplace_back(finalizer);
  return FinalizerPatch(o, f);
}

std::optional<kube::Object> RemoveFinalizerPatch(const kube::Object& o, std::string_view finalizer,
                                                 std::string_view legacy) {
  auto f = Finalizers(o);
  const size_t before = f.size();
  std::erase(f, std::string(finalizer));
  std::erase(f, std::string(legacy));
  if (f.size() == before) return std::nullopt;
  return FinalizerPatch(o, f);
}

bool ClusterInfrastructureReady(const kube::Object& cluster) {
  return kube::TrueAt(cluster, {"status", "infrastructureReady"}) ||
         kube::TrueAt(cluster, {"status", "initialization", "infrastructureProvisioned"});
}

std::map<std::string, std::string> LabelsOf(const kube::Object& o) { return kube::LabelsOf(o); }

bool ClusterControlPlaneInitialized(const kube::Object& cluster) {
  if (kube::TrueAt(cluster, {"status", "initialization", "controlPlaneInitialized"})) return true;
  const kube::Object* conditions = kube::Find(cluster, {"status", "conditions"});
  if (conditions == nullptr || !conditions->is_array()) return false;
  // Read in place: every reconcile of every machine asks (value() copied
  // each condition's strings).
  return std::any_of(conditions->begin(), conditions->end(), [](const kube::Object& c) {
    return kube::StringAt(c, {"type"}) == "ControlPlaneInitialized" &&
           kube::StringAt(c, {"status"}) == "True";
  });
}

std::string CapiVersionServed(const kube::Object& api_group) {
  return kube::ServesVersion(api_group, "v1beta2") ? "v1beta2" : "v1beta1";
}

std::string NewerCapiVersionServed(std::string_view reading, const kube::Object& api_group) {
  std::string served = CapiVersionServed(api_group);
  return reading == "v1beta1" && served == "v1beta2" ? served : "";
}

std::string BootstrapDataSecretName(const kube::Object& machine) {
  return Str(machine, {"spec", "bootstrap", "dataSecretName"});
}

const kube::FieldMask& MachineFields() {
  static const kube::FieldMask mask(kube::kCachedMetadata, {{"spec", "clusterName"},
                                                            {"spec", "bootstrap", "dataSecretName"},
                                                            {"spec", "infrastructureRef"},
                                                            {"spec", "failureDomain"},
                                                            {"status", "nodeRef"}});
  return mask;
}

}  // namespace caphv::controllers
