// File: test/unit/backup/management_objects.h
//
// A management namespace as Cluster API and CAPHV leave it, for the tests of
// backup/: two Clusters, "alpha" (a control-plane Machine, a
// MachineDeployment with its MachineSet of two workers, a
// HarvesterMachineTemplate, a ClusterResourceSet with its ConfigMap and
// binding, a MachineHealthCheck) and "beta" (one Machine), each with its
// HarvesterCluster; both use the identity Secret "hv-identity" of the
// namespace "caphv-system". Every object has a uid, and the owner references
// Cluster API sets.

#pragma once

#include <string>
#include <vector>

#include "kube/object.h"

namespace caphv::backup::testing {

using kube::Object;

inline constexpr char kNs[] = "prod";
inline constexpr char kCapi[] = "cluster.x-k8s.io/v1beta1";
inline constexpr char kInfra[] = "infrastructure.cluster.x-k8s.io/v1alpha1";

inline std::string UidFor(const std::string& kind, const std::string& name) {
  return "uid-" + kind + "-" + name;
}

inline Object Make(const std::string& api_version, const std::string& kind, const std::string& name,
                   Object spec = Object::object(), Object labels = Object::object()) {
  Object o = {{"apiVersion", api_version},
              {"kind", kind},
              {"metadata",
               {{"name", name},
                {"namespace", kNs},
                {"uid", UidFor(kind, name)},
                {"resourceVersion", "4711"},
                {"generation", 3},
                {"creationTimestamp", "2025-01-02T03:04:05Z"},
                {"managedFields", Object::array({{{"manager", "capi"}}})}}},
              {"spec", std::move(spec)},
              {"status", {{"ready", true}}}};
  if (!labels.empty()) o["metadata"]["labels"] = std::move(labels);
  return o;
}

inline Object OwnerRef(const std::string& api_version, const std::string& kind,
                       const std::string& name, bool controller = true) {
  return {{"apiVersion", api_version},
          {"kind", kind},
          {"name", name},
          {"uid", UidFor(kind, name)},
          {"controller", controller},
          {"blockOwnerDeletion", true}};
}

inline void Own(Object& o, const Object& ref) { o["metadata"]["ownerReferences"].push_back(ref); }

inline Object Ref(const std::string& api_version, const std::string& kind,
                  const std::string& name) {
  return {{"apiVersion", api_version}, {"kind", kind}, {"name", name}, {"namespace", kNs}};
}

inline Object ClusterLabel(const std::string& cluster) {
  return {{"cluster.x-k8s.io/cluster-name", cluster}};
}

// The objects of one Cluster: Cluster, HarvesterCluster and a control-plane
// Machine with its HarvesterMachine.
inline std::vector<Object> ClusterObjects(const std::string& cluster, Object cluster_labels) {
  Object c = Make(kCapi, "Cluster", cluster,
                  {{"infrastructureRef", Ref(kInfra, "HarvesterCluster", cluster)}},
                  std::move(cluster_labels));
  Object hc = Make(kInfra, "HarvesterCluster", cluster,
                   {{"targetNamespace", "vms-" + cluster},
                    {"identitySecret", {{"namespace", "caphv-system"}, {"name", "hv-identity"}}},
                    {"loadBalancerConfig", {{"ipamType", "pool"}, {"ipPoolRef", "lb-pool"}}}});
  Own(hc, OwnerRef(kCapi, "Cluster", cluster));
  const std::string cp = cluster + "-cp-0";
  Object labels = ClusterLabel(cluster);
  labels["cluster.x-k8s.io/control-plane"] = "";
  Object m = Make(kCapi, "Machine", cp,
                  {{"clusterName", cluster},
                   {"bootstrap", {{"dataSecretName", cluster + "-bootstrap-cp"}}},
                   {"infrastructureRef", Ref(kInfra, "HarvesterMachine", cp)},
                   {"providerID", "harvester://vm-" + cp}},
                  labels);
  Own(m, OwnerRef(kCapi, "Cluster", cluster));
  Object hm = Make(kInfra, "HarvesterMachine", cp, {{"cpu", 2}}, labels);
  Own(hm, OwnerRef(kCapi, "Machine", cp));
  return {c, hc, m, hm};
}

// Every object of the namespace, "alpha"'s then "beta"'s.
inline std::vector<Object> ManagementObjects() {
  std::vector<Object> out = ClusterObjects("alpha", {{"addons", "yes"}});
  const Object workers = ClusterLabel("alpha");
  out.push_back(Make(kInfra, "HarvesterMachineTemplate", "alpha-md",
                     {{"template", {{"spec", {{"cpu", 2}}}}}}));
  Object md =
      Make(kCapi, "MachineDeployment", "alpha-md",
           {{"clusterName", "alpha"},
            {"replicas", 2},
            {"template",
             {{"spec",
               {{"clusterName", "alpha"},
                {"bootstrap", {{"dataSecretName", "alpha-bootstrap-worker"}}},
                {"infrastructureRef", Ref(kInfra, "HarvesterMachineTemplate", "alpha-md")}}}}}},
           workers);
  Own(md, OwnerRef(kCapi, "Cluster", "alpha", false));
  out.push_back(md);
  Object ms = Make(kCapi, "MachineSet", "alpha-md-x7", {{"clusterName", "alpha"}}, workers);
  Own(ms, OwnerRef(kCapi, "MachineDeployment", "alpha-md"));
  out.push_back(ms);
  for (const char* w : {"alpha-md-x7-a", "alpha-md-x7-b"}) {
    Object m =
        Make(kCapi, "Machine", w,
             {{"clusterName", "alpha"}, {"infrastructureRef", Ref(kInfra, "HarvesterMachine", w)}},
             workers);
    Own(m, OwnerRef(kCapi, "MachineSet", "alpha-md-x7"));
    out.push_back(m);
    // Cloned from the template: no cluster label.
    Object hm = Make(kInfra, "HarvesterMachine", w, {{"cpu", 2}});
    Own(hm, OwnerRef(kCapi, "Machine", w));
    out.push_back(hm);
  }
  out.push_back(
      Make("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet", "alpha-addons",
           {{"clusterSelector", {{"matchLabels", {{"addons", "yes"}}}}},
            {"resources", Object::array({{{"kind", "ConfigMap"}, {"name", "cloud-config-alpha"}},
                                         {{"kind", "Secret"}, {"name", "addon-secret"}}})}}));
  Object binding =
      Make("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSetBinding", "alpha",
           {{"clusterName", "alpha"},
            {"bindings", Object::array({{{"clusterResourceSetName", "alpha-addons"}}})}});
  Own(binding, OwnerRef(kCapi, "Cluster", "alpha", false));
  Own(binding,
      OwnerRef("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet", "alpha-addons", false));
  out.push_back(binding);
  Object mhc = Make(kCapi, "MachineHealthCheck", "alpha-workers", {{"clusterName", "alpha"}});
  Own(mhc, OwnerRef(kCapi, "Cluster", "alpha", false));
  out.push_back(mhc);
  // A ClusterResourceSet no Cluster of the namespace matches.
  out.push_back(Make("addons.cluster.x-k8s.io/v1beta1", "ClusterResourceSet", "other-addons",
                     {{"clusterSelector", {{"matchLabels", {{"team", "other"}}}}},
                      {"resources", Object::array({{{"kind", "ConfigMap"}, {"name", "other"}}})}}));
  for (auto& o : ClusterObjects("beta", {{"team", "b"}})) out.push_back(o);
  return out;
}

}  // namespace caphv::backup::testing
