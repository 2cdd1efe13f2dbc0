// File: test/integration/e2e/topology_addons.h
//
// The addons of the topology scenarios: the ClusterResourceSets of the
// cloud provider and the CSI driver rendered and applied as the operations
// guide says, the addon ConfigMap CAPHV fills with the cloud provider's
// credentials, and what the addons put into the workload cluster. Also the
// resources and names every topology scenario shares. A base of
// TopologyFixture (topology_fixture.h).
//
// Header-only. Thread safety: test thread only.

#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/yaml.h"
#include "e2e_fixture.h"

namespace caphv::e2e::topology {

inline const GroupVersionResource kClusterClasses{"cluster.x-k8s.io", "v1beta1", "clusterclasses",
                                                  true};
inline const GroupVersionResource kControlPlanes{"controlplane.cluster.x-k8s.io", "v1beta1",
                                                 "rke2controlplanes", true};
inline const GroupVersionResource kSecrets = kube::resources::kSecrets;
inline const GroupVersionResource kPvcs = kube::resources::kPersistentVolumeClaims;
inline const GroupVersionResource kServices = kube::resources::kServices;
inline const GroupVersionResource kNodes = kube::resources::kNodes;
inline const GroupVersionResource kPortForwards{"kwok.x-k8s.io", "v1alpha1", "portforwards", true};
inline const GroupVersionResource kServiceAccounts = kube::resources::kServiceAccounts;

inline constexpr char kVersion[] = "v1.31.4+rke2r1";
inline constexpr char kUninitializedTaint[] = "node.cloudprovider.kubernetes.io/uninitialized";
inline constexpr char kAddonKey[] = "cloud-config.yaml";

class AddonsFixture : public E2ETest {
 protected:
  std::string ClusterSelector() const { return std::string(kClusterNameLabel) + "=" + cluster_; }

  // The addon ConfigMap the class points CAPHV at (the guides' generator
  // makes it): the cloud provider's manifests, without credentials yet.
  void CreateAddonConfigMap() {
    Object cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", "cloud-config-addon-" + cluster_}, {"namespace", ns()}}},
                 {"data",
                  {{kAddonKey,
                    "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: "
                    "harvester-cloud-provider\n  namespace: kube-system\n"}}}};
    auto r = mgmt_->Create(kube::resources::kConfigMaps, ns(), cm);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }

  static inline const GroupVersionResource kDaemonSets{"apps", "v1", "daemonsets", true};
  static inline const GroupVersionResource kCsiDrivers{"storage.k8s.io", "v1", "csidrivers", false};
  static inline const GroupVersionResource kStorageClasses{"storage.k8s.io", "v1", "storageclasses",
                                                           false};
  static inline const GroupVersionResource kResourceSetBindings{
      "addons.cluster.x-k8s.io", "v1beta1", "clusterresourcesetbindings", true};

  // The addon templates of the class, rendered as the operations guide says
  // (clusterctl generate yaml, the variables from the environment) and
  // applied in the test's namespace: the cloud provider of this Cluster
  // (ConfigMap cloud-config-addon-<cluster>, which CAPHV fills, and its
  // ClusterResourceSet) and the CSI driver of the namespace's Clusters.
  void ApplyAddons() {
    // Beside the test's log, for a look after a failure.
    const std::string dir = log_path_.parent_path().string();
    const std::string kubectl =
        "kubectl --kubeconfig '" + Testbed::Get().KubeconfigPath(caphv::testing::kMgmt) + "' ";
    for (const char* addon : {"harvester-cloud-provider", "harvester-csi-driver"}) {
      const std::string rendered = dir + "/e2e-" + ns() + "-" + addon + ".yaml";
      std::string out;
      ASSERT_EQ(caphv::testing::RunCommand(
                    "env CLUSTERCTL_DISABLE_VERSIONCHECK=true CLUSTER_NAME=" + cluster_ +
                        " NAMESPACE=" + ns() + " clusterctl generate yaml --from " +
                        caphv::testing::SourcePath(std::string("templates/clusterresourceset-") +
                                                   addon + ".yaml") +
                        " >" + rendered + " && " + kubectl + "apply -f " + rendered,
                    &out),
                0)
          << out;
    }
  }

  // The labels by which the addons' ClusterResourceSets select the Cluster.
  Object AddonLabels() const { return {{kClusterNameLabel, cluster_}, {"csi", "external"}}; }

  struct WorkloadObject {
    GroupVersionResource gvr;
    std::string ns;
    std::string name;
    std::string Describe() const {
      return gvr.resource + " " + (ns.empty() ? "" : ns + "/") + name;
    }
  };

  // What the addons put into a workload cluster.
  static std::vector<WorkloadObject> CloudProviderObjects() {
    return {{kSecrets, "kube-system", "cloud-config"},
            {kServiceAccounts, "kube-system", "harvester-cloud-controller-manager"},
            {kube::resources::kClusterRoles, "", "harvester-cloud-controller-manager"},
            {kube::resources::kClusterRoleBindings, "", "harvester-cloud-controller-manager"},
            {kube::resources::kRoleBindings, "kube-system",
             "harvester-cloud-controller-manager:apiserver-authentication-reader"},
            {kube::resources::kDeployments, "kube-system", "harvester-cloud-provider"}};
  }
  static std::vector<WorkloadObject> CsiDriverObjects() {
    return {{kServiceAccounts, "kube-system", "harvester-csi"},
            {kube::resources::kClusterRoles, "", "harvester-csi"},
            {kube::resources::kClusterRoleBindings, "", "harvester-csi"},
            {kCsiDrivers, "", "driver.harvesterhci.io"},
            {kDaemonSets, "kube-system", "harvester-csi-plugin"},
            {kube::resources::kDeployments, "kube-system", "csi-controller"},
            {kStorageClasses, "", "harvester"}};
  }

  // The one workload apiserver of the bed outlives its guest clusters, and a
  // ClusterResourceSet leaves what it applied: an earlier run's objects go
  // first, so that what the test finds is this cluster's.
  void DeleteAddonObjectsFromWorkload() {
    auto all = CloudProviderObjects();
    for (auto& o : CsiDriverObjects()) all.push_back(o);
    for (const auto& o : all) {
      auto st = workload_->Delete(o.gvr, o.ns, o.name);
      ASSERT_TRUE(st.ok() || st.IsNotFound()) << o.Describe() << ": " << st.ToString();
    }
    ASSERT_TRUE(Eventually(
        [&] {
          for (const auto& o : all) {
            if (!workload_->Get(o.gvr, o.ns, o.name).status().IsNotFound()) return false;
          }
          return true;
        },
        kWait, kPoll));
  }

  // The value of key `key` of the Secret `name` among the manifests of the
  // addon ConfigMap (what CAPHV wrote there), decoded; "" when absent.
  std::string SecretValueInAddonConfigMap(const std::string& name, const std::string& key) const {
    auto cm = mgmt_->Get(kube::resources::kConfigMaps, ns(), "cloud-config-addon-" + cluster_);
    if (!cm.ok()) return "";
    auto docs = api::ParseYaml((*cm)["data"].value(kAddonKey, ""));
    if (!docs.ok()) return "";
    for (const auto& d : *docs) {
      if (d.value("kind", "") == "Secret" && Str(d, "/metadata/name") == name) {
        return kube::Base64Decode(Str(d, "/data/" + key)).value_or("");
      }
    }
    return "";
  }

  // The token Harvester issued to the cluster's cloud-provider ServiceAccount.
  std::string CloudProviderTokenOnHarvester() const {
    for (const auto& s : OnHarvester(kSecrets, ClusterSelector())) {
      if (Str(s, "/type") == "kubernetes.io/service-account-token") {
        return kube::Base64Decode(Str(s, "/data/token")).value_or("");
      }
    }
    return "";
  }

  // The ClusterResourceSetBinding of the Cluster: ClusterResourceSet name ->
  // its resources (kind/name -> applied).
  std::map<std::string, std::map<std::string, bool>> ResourceSetBindings() const {
    std::map<std::string, std::map<std::string, bool>> out;
    auto b = mgmt_->Get(kResourceSetBindings, ns(), cluster_);
    if (!b.ok()) return out;
    for (const auto& binding : (*b)["spec"].value("bindings", Object::array())) {
      auto& resources = out[binding.value("clusterResourceSetName", "")];
      for (const auto& r : binding.value("resources", Object::array())) {
        resources[r.value("kind", "") + "/" + r.value("name", "")] = r.value("applied", false);
      }
    }
    return out;
  }
};

}  // namespace caphv::e2e::topology
