// File: kube/resource.h
//
// GroupVersionResource: how the client addresses a collection, for core,
// built-in and custom resources alike, plus the well-known ones CAPHV uses.

#pragma once

#include <string>
#include <string_view>

namespace caphv::kube {

struct GroupVersionResource {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "configmaps"
  bool namespaced = true;
  // The kind of its objects ("ConfigMap"), when known: a LIST's items carry
  // none, and get it from here before they are prepared (a packed cache
  // cannot add it afterwards). Not part of the resource's identity (==).
  std::string kind;

  // "v1" or "apps/v1": the apiVersion of objects of this resource.
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }

  // "/api/v1" or "/apis/apps/v1".
  std::string ApiPrefix() const {
    return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  }

  // Collection path, e.g. "/api/v1/namespaces/ns/configmaps". An empty
  // namespace on a namespaced resource addresses all namespaces.
  std::string CollectionPath(std::string_view ns) const;

  // Object path, optionally with a subresource ("status", "scale").
  std::string ObjectPath(std::string_view ns, std::string_view name,
                         std::string_view subresource = {}) const;

  // "configmaps" or "deployments.apps": for messages.
  std::string String() const { return group.empty() ? resource : resource + "." + group; }

  bool operator==(const GroupVersionResource& o) const {
    return group == o.group && version == o.version && resource == o.resource &&
           namespaced == o.namespaced;
  }
};

// Resources of the core and built-in groups the runtime itself needs.
namespace resources {
inline const GroupVersionResource kNamespaces{"", "v1", "namespaces", false, "Namespace"};
inline const GroupVersionResource kConfigMaps{"", "v1", "configmaps", true, "ConfigMap"};
inline const GroupVersionResource kSecrets{"", "v1", "secrets", true, "Secret"};
inline const GroupVersionResource kEvents{"", "v1", "events", true, "Event"};
inline const GroupVersionResource kNodes{"", "v1", "nodes", false, "Node"};
inline const GroupVersionResource kServiceAccounts{"", "v1", "serviceaccounts", true,
                                                   "ServiceAccount"};
inline const GroupVersionResource kServices{"", "v1", "services", true, "Service"};
inline const GroupVersionResource kPersistentVolumeClaims{"", "v1", "persistentvolumeclaims", true,
                                                          "PersistentVolumeClaim"};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases", true, "Lease"};
inline const GroupVersionResource kCustomResourceDefinitions{
    "apiextensions.k8s.io", "v1", "customresourcedefinitions", false, "CustomResourceDefinition"};
inline const GroupVersionResource kClusterRoles{"rbac.authorization.k8s.io", "v1", "clusterroles",
                                                false, "ClusterRole"};
inline const GroupVersionResource kClusterRoleBindings{
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", false, "ClusterRoleBinding"};
inline const GroupVersionResource kRoleBindings{"rbac.authorization.k8s.io", "v1", "rolebindings",
                                                true, "RoleBinding"};
inline const GroupVersionResource kDeployments{"apps", "v1", "deployments", true, "Deployment"};
inline const GroupVersionResource kValidatingWebhookConfigurations{
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations", false,
    "ValidatingWebhookConfiguration"};
inline const GroupVersionResource kMutatingWebhookConfigurations{
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations", false,
    "MutatingWebhookConfiguration"};
}  // namespace resources

}  // namespace caphv::kube
