// File: backup/objects.cc

#include "backup/objects.h"

namespace caphv::backup {

namespace {

constexpr std::string_view kCapi = "cluster.x-k8s.io";
constexpr std::string_view kAddons = "addons.cluster.x-k8s.io";
constexpr std::string_view kControlPlane = "controlplane.cluster.x-k8s.io";
constexpr std::string_view kBootstrap = "bootstrap.cluster.x-k8s.io";
constexpr std::string_view kInfra = "infrastructure.cluster.x-k8s.io";

}  // namespace

std::string Kind::Name() const {
  return group.empty() ? std::string(resource) : std::string(resource) + "." + std::string(group);
}

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kKinds = {
      {kCapi, "ClusterClass", "clusterclasses", Phase::kClasses},
      {kInfra, "HarvesterClusterTemplate", "harvesterclustertemplates", Phase::kClasses},
      {kInfra, "HarvesterMachineTemplate", "harvestermachinetemplates", Phase::kClasses},
      {kControlPlane, "RKE2ControlPlaneTemplate", "rke2controlplanetemplates", Phase::kClasses},
      {kBootstrap, "RKE2ConfigTemplate", "rke2configtemplates", Phase::kClasses},
      {kControlPlane, "KubeadmControlPlaneTemplate", "kubeadmcontrolplanetemplates",
       Phase::kClasses},
      {kBootstrap, "KubeadmConfigTemplate", "kubeadmconfigtemplates", Phase::kClasses},
      {kInfra, "HarvesterCluster", "harvesterclusters", Phase::kInfraClusters},
      {kCapi, "Cluster", "clusters", Phase::kClusters},
      {kControlPlane, "RKE2ControlPlane", "rke2controlplanes", Phase::kControlPlanes},
      {kControlPlane, "KubeadmControlPlane", "kubeadmcontrolplanes", Phase::kControlPlanes},
      {kCapi, "MachineDeployment", "machinedeployments", Phase::kDeployments},
      {kCapi, "MachineSet", "machinesets", Phase::kMachineSets},
      {kCapi, "Machine", "machines", Phase::kMachines},
      {kInfra, "HarvesterMachine", "harvestermachines", Phase::kMachineObjects},
      {kBootstrap, "RKE2Config", "rke2configs", Phase::kMachineObjects},
      {kBootstrap, "KubeadmConfig", "kubeadmconfigs", Phase::kMachineObjects},
      {kAddons, "ClusterResourceSetBinding", "clusterresourcesetbindings",
       Phase::kResourceBindings},
      {kAddons, "ClusterResourceSet", "clusterresourcesets", Phase::kResourceSets},
      {kCapi, "MachineHealthCheck", "machinehealthchecks", Phase::kHealthChecks},
  };
  return kKinds;
}

std::string GroupOf(std::string_view api_version) {
  const auto slash = api_version.find('/');
  return slash == std::string_view::npos ? "" : std::string(api_version.substr(0, slash));
}

Phase PhaseOf(std::string_view group, std::string_view kind) {
  if (group.empty() && (kind == "Secret" || kind == "ConfigMap")) return Phase::kSecrets;
  for (const auto& k : Kinds()) {
    if (k.group == group && k.kind == kind) return k.phase;
  }
  return Phase::kOther;
}

std::string ObjectRef::String() const { return kind + " " + (ns.empty() ? "" : ns + "/") + name; }

std::string StringField(const kube::Object& o, const char* key) {
  if (!o.is_object()) return {};
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

ObjectRef RefOf(const kube::Object& o) {
  return {GroupOf(StringField(o, "apiVersion")), StringField(o, "kind"), kube::NamespaceOf(o),
          kube::NameOf(o)};
}

std::vector<kube::Object> OwnerReferencesOf(const kube::Object& o) {
  std::vector<kube::Object> out;
  if (!o.is_object()) return out;
  auto md = o.find("metadata");
  if (md == o.end() || !md->is_object()) return out;
  auto refs = md->find("ownerReferences");
  if (refs == md->end() || !refs->is_array()) return out;
  for (const auto& r : *refs) {
    if (r.is_object()) out.push_back(r);
  }
  return out;
}

}  // namespace caphv::backup
