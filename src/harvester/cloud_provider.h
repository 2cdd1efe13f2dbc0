// File: harvester/cloud_provider.h
//
// What the workload cluster's Harvester cloud provider (and CSI driver)
// need on Harvester, modelled on Harvester's own `POST
// /v1/harvester/kubeconfig`: a ServiceAccount in the target namespace, a
// RoleBinding there to ClusterRole `harvesterhci.io:cloudprovider` (the CCM
// only ever works in that namespace), a ClusterRoleBinding to
// `harvesterhci.io:csi-driver` (cluster-scoped reads the CSI driver needs),
// a `kubernetes.io/service-account-token` Secret the token controller fills,
// and the cloud-config: a kubeconfig with that token, the CA and the
// Harvester server, whose context namespace is the target namespace.
//
// Names carry a hash of the cluster identity, so two clusters of the same
// name (other namespace or other management cluster) never share a binding;
// every object carries ClusterLabels() so deletion finds them all.
//
// Thread safety: pure functions.

#pragma once

#include <string>
#include <vector>

#include "harvester/naming.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::harvester {

inline constexpr std::string_view kCloudProviderClusterRole = "harvesterhci.io:cloudprovider";
inline constexpr std::string_view kCsiDriverClusterRole = "harvesterhci.io:csi-driver";

struct CloudProviderNames {
  std::string service_account;       // "caphv-<cluster>-<hash5>", <= 63
  std::string token_secret;          // "<sa>-token"
  std::string role_binding;          // "<namespace>-<sa>" (in the target namespace)
  std::string cluster_role_binding;  // "<namespace>-<sa>"
};

CloudProviderNames CloudProviderNamesFor(const ClusterIdentity& cluster,
                                         const std::string& target_namespace);

struct CloudProviderInputs {
  ClusterIdentity cluster;
  std::string target_namespace;
  bool csi = true;                  // also bind harvesterhci.io:csi-driver
  std::string service_account_uid;  // "" = no ownerReference on the token Secret
};

// ServiceAccount, RoleBinding, [ClusterRoleBinding,] token Secret, in the
// order to create them.
std::vector<kube::Object> BuildCloudProviderObjects(const CloudProviderInputs& in);

// The cloud-config kubeconfig (YAML): cluster, user and context "default",
// context namespace `target_namespace`, CA embedded. kInvalidArgument on an
// empty token, CA or namespace, or a server that is not an https:// URL.
kube::StatusOr<std::string> BuildCloudConfigKubeconfig(const std::string& token,
                                                       const std::string& ca_pem,
                                                       const std::string& server,
                                                       const std::string& target_namespace);

// Same, from the token Secret as read back. kUnavailable while the token
// controller has not filled `data.token` and `data.ca.crt` yet (wait for the
// Secret's next watch event; never sleep).
kube::StatusOr<std::string> CloudConfigFromTokenSecret(const kube::Object& secret,
                                                       const std::string& server,
                                                       const std::string& target_namespace);

// Sets the cloud-config into a multi-document YAML of manifests (the value
// of a ClusterResourceSet ConfigMap). Documents are separated by lines
// "---"; blank documents are dropped. In every document with `kind: Secret`,
// `metadata.name: <secret_name>` and `metadata.namespace: kube-system`
// (absent or empty counts as a match too): data[<secret_key>] =
// base64(cloud_config), stringData[<secret_key>] removed (stringData
// dropped when it becomes empty); that document is re-emitted (key order
// sorted, comments lost). When none matches, a Secret (apiVersion v1,
// namespace kube-system, type Opaque) is appended. Every other document is
// kept byte-for-byte. Documents are joined with "\n---\n"; the result ends
// with a newline when the input did (or was blank). Idempotent:
// injecting twice gives the same text. kInvalidArgument, naming the
// document, when a document is not valid YAML.
kube::StatusOr<std::string> InjectCloudConfig(const std::string& manifests,
                                              const std::string& secret_name,
                                              const std::string& secret_key,
                                              const std::string& cloud_config);

}  // namespace caphv::harvester
