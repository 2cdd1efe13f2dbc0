// File: sim/install.cc

#include "sim/install.h"

#include <thread>

#include "sim/manifests.h"

namespace caphv::sim {

using kube::Object;
using kube::Status;
using kube::StatusCode;

Status ApplyObject(kube::Client& client, const Object& object) {
  CAPHV_ASSIGN_OR_RETURN(auto gvr, GvrOf(object));
  const std::string ns = gvr.namespaced ? kube::NamespaceOf(object) : "";
  auto applied = client.Apply(gvr, ns, object, {.field_manager = "caphv-sim", .force = true});
  if (!applied.ok()) {
    return applied.status().WithContext("apply " + gvr.String() + " " + kube::KeyOf(object));
  }
  return {};
}

Status InstallCrds(kube::Client& client, std::chrono::seconds timeout) {
  CAPHV_ASSIGN_OR_RETURN(auto crds, CrdManifests());
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
    CAPHV_ASSIGN_OR_RETURN(auto docs, ParseYamlDocuments(std::string(text)));
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

Status Install(kube::Client& client, const Environment& env) {
  CAPHV_RETURN_IF_ERROR(InstallCrds(client, std::chrono::seconds(60)));
  CAPHV_RETURN_IF_ERROR(InstallHarvester(client));
  return SeedEnvironment(client, env);
}

}  // namespace caphv::sim
