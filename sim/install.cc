// File: sim/install.cc

#include "sim/install.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <thread>

#include "api/yaml.h"
#include "kube/log.h"
#include "sim/manifests.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;
using kube::StatusOr;

namespace {

// The CRDs --kubevirt-crds replaces.
constexpr std::array<std::string_view, 2> kKubeVirtCrds = {"virtualmachines.kubevirt.io",
                                                           "virtualmachineinstances.kubevirt.io"};
// On the CRDs installed from a --kubevirt-crds directory: that directory.
constexpr std::string_view kKubeVirtCrdsAnnotation = "sim.caphv.io/kubevirt-crds";

bool IsKubeVirtCrd(const Object& o) {
  return o.value("kind", "") == "CustomResourceDefinition" &&
         std::ranges::find(kKubeVirtCrds, kube::NameOf(o)) != kKubeVirtCrds.end();
}

}  // namespace

Status ApplyObject(kube::Client& client, const Object& object) {
  CAPHV_ASSIGN_OR_RETURN(auto gvr, GvrOf(object));
  const std::string ns = gvr.namespaced ? kube::NamespaceOf(object) : "";
  auto applied = client.Apply(gvr, ns, object, {.field_manager = "caphv-sim", .force = true});
  if (!applied.ok()) {
    return applied.status().WithContext("apply " + gvr.String() + " " + kube::KeyOf(object));
  }
  if (object.value("kind", "") == "Node" && object.contains("status")) {
    // A Node's status is its kubelet's: written through /status.
    auto status = client.Apply(
        gvr, ns, object, {.field_manager = "caphv-sim", .force = true, .subresource = "status"});
    if (!status.ok())
      return status.status().WithContext("apply status of Node " + kube::NameOf(object));
  }
  return {};
}

StatusOr<std::vector<Object>> KubeVirtCrdsFrom(const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string what = "KubeVirt CRDs in " + dir;
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".yaml") files.push_back(it->path());
  }
  if (ec) return Status(StatusCode::kNotFound, what + ": " + ec.message());
  std::ranges::sort(files);
  std::vector<Object> out;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return Status(StatusCode::kNotFound, what + ": cannot read " + file.string());
    const std::string text(std::istreambuf_iterator<char>(in), {});
    auto docs = api::ParseYaml(text);
    if (!docs.ok()) return docs.status().WithContext(file.string());
    for (auto& d : *docs) {
      if (IsKubeVirtCrd(d)) out.push_back(std::move(d));
    }
  }
  for (std::string_view name : kKubeVirtCrds) {
    if (std::ranges::none_of(out, [&](const Object& o) { return kube::NameOf(o) == name; })) {
      return Status(StatusCode::kNotFound, what + ": no CRD " + std::string(name));
    }
  }
  return out;
}

Status InstallCrds(kube::Client& client, std::chrono::seconds timeout,
                   const std::string& kubevirt_crds_dir) {
  CAPHV_ASSIGN_OR_RETURN(auto crds, CrdManifests());
  if (!kubevirt_crds_dir.empty()) {
    CAPHV_ASSIGN_OR_RETURN(auto kubevirt, KubeVirtCrdsFrom(kubevirt_crds_dir));
    std::erase_if(crds, IsKubeVirtCrd);
    for (auto& crd : kubevirt) {
      crd["metadata"]["annotations"][std::string(kKubeVirtCrdsAnnotation)] = kubevirt_crds_dir;
      crds.push_back(std::move(crd));
    }
  } else {
    // KubeVirt's own CRDs, once installed, stay: an install without the directory (a test's
    // second install on the same bed) does not put the subsets back.
    std::vector<Object> kept;
    for (const auto& crd : crds) {
      if (!IsKubeVirtCrd(crd)) {
        kept.push_back(crd);
        continue;
      }
      auto got = client.Get(kube::resources::kCustomResourceDefinitions, "", kube::NameOf(crd));
      if (got.ok() && got->value("metadata", Object::object())
                          .value("annotations", Object::object())
                          .contains(kKubeVirtCrdsAnnotation)) {
        kube::log::Root().Info("Keeping KubeVirt's CRD installed from a directory",
                               {{"crd", kube::NameOf(crd)}});
        continue;
      }
      kept.push_back(crd);
    }
    crds = std::move(kept);
  }
  for (const auto& crd : crds) CAPHV_RETURN_IF_ERROR(ApplyObject(client, crd));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& crd : crds) {
    const std::string name = kube::NameOf(crd);
    for (;;) {
      auto got = client.Get(kube::resources::kCustomResourceDefinitions, "", name);
      bool established = false;
      if (got.ok()) {
        for (const auto& c :
             got->value("status", Object::object()).value("conditions", Object::array())) {
          if (c.value("type", "") == "Established" && c.value("status", "") == "True") {
            established = true;
          }
        }
      }
      if (established) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return Status(StatusCode::kTimeout, "CRD " + name + " not Established");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  return {};
}

Status InstallHarvester(kube::Client& client) {
  for (const char* file : {"rbac.yaml", "harvester.yaml"}) {
    CAPHV_ASSIGN_OR_RETURN(auto text, FindManifest(file));
    CAPHV_ASSIGN_OR_RETURN(auto docs, api::ParseYaml(text));
    for (const auto& d : docs) CAPHV_RETURN_IF_ERROR(ApplyObject(client, d));
  }
  return MarkDeploymentAvailable(client);
}

Status MarkDeploymentAvailable(kube::Client& client) {
  CAPHV_ASSIGN_OR_RETURN(
      auto dep, client.Get(kube::resources::kDeployments, "harvester-system", "harvester"));
  const int64_t replicas = dep["spec"].value("replicas", int64_t{1});
  Object cond = {{"type", "Available"},
                 {"status", "True"},
                 {"reason", "MinimumReplicasAvailable"},
                 {"message", "Deployment has minimum availability."}};
  Object progressing = {{"type", "Progressing"},
                        {"status", "True"},
                        {"reason", "NewReplicaSetAvailable"},
                        {"message", "ReplicaSet \"harvester\" has successfully progressed."}};
  Object body = {{"apiVersion", "apps/v1"},
                 {"kind", "Deployment"},
                 {"metadata", {{"name", "harvester"}, {"namespace", "harvester-system"}}},
                 {"status",
                  {{"observedGeneration", dep["metadata"].value("generation", int64_t{1})},
                   {"replicas", replicas},
                   {"updatedReplicas", replicas},
                   {"readyReplicas", replicas},
                   {"availableReplicas", replicas},
                   {"conditions", Object::array({cond, progressing})}}}};
  auto applied =
      client.Apply(kube::resources::kDeployments, "harvester-system", body,
                   {.field_manager = "caphv-sim", .force = true, .subresource = "status"});
  return applied.ok() ? Status() : applied.status().WithContext("deployment status");
}

Status SeedEnvironment(kube::Client& client, const Environment& env) {
  CAPHV_ASSIGN_OR_RETURN(auto objects, SeedObjects(env));
  for (const auto& o : objects) CAPHV_RETURN_IF_ERROR(ApplyObject(client, o));
  return {};
}

Status Install(kube::Client& client, const Environment& env, const std::string& kubevirt_crds_dir) {
  CAPHV_RETURN_IF_ERROR(InstallCrds(client, std::chrono::seconds(60), kubevirt_crds_dir));
  CAPHV_RETURN_IF_ERROR(InstallHarvester(client));
  return SeedEnvironment(client, env);
}

}  // namespace caphv::sim
