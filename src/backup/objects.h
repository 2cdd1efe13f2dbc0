// File: backup/objects.h
//
// What `caphv backup` saves and `caphv restore` re-applies (docs/cli.md):
// the table of kinds, each with the phase of the restore it belongs to, and
// how objects are named and compared across the two (ObjectRef). Secrets and
// ConfigMaps are not listed by kind: a backup holds only those the other
// objects need (backup/backup.h).
//
// Thread safety: pure functions and constant tables.

#pragma once

#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "kube/object.h"

namespace caphv::backup {

// Restore phases, in order: what an object refers to exists before it.
enum class Phase : int {
  kSecrets = 0,            // Secrets, ConfigMaps
  kClasses = 1,            // ClusterClasses and every *Template
  kInfraClusters = 2,      // HarvesterClusters
  kClusters = 3,           // Clusters (paused until the end)
  kControlPlanes = 4,      // RKE2ControlPlanes, KubeadmControlPlanes
  kDeployments = 5,        // MachineDeployments
  kMachineSets = 6,        // MachineSets
  kMachines = 7,           // Machines
  kMachineObjects = 8,     // HarvesterMachines, bootstrap configs
  kOther = 9,              // kinds this table does not know
  kResourceBindings = 10,  // ClusterResourceSetBindings (their Cluster first)
  kResourceSets = 11,      // ClusterResourceSets (after their bindings: nothing applied again)
  kHealthChecks = 12,      // MachineHealthChecks
};

struct Kind {
  std::string_view group;     // "" for the core group
  std::string_view kind;      // "Cluster"
  std::string_view resource;  // plural, lower case: "clusters"
  Phase phase;

  // "clusters.cluster.x-k8s.io", or "secrets" for the core group: the name
  // of the kind in messages and of its file in a backup (".yaml" added).
  std::string Name() const;
};

// The kinds a backup lists, in restore order (Secrets and ConfigMaps, which
// a backup selects rather than lists, come first).
const std::vector<Kind>& Kinds();

inline constexpr Kind kSecretKind{"", "Secret", "secrets", Phase::kSecrets};
inline constexpr Kind kConfigMapKind{"", "ConfigMap", "configmaps", Phase::kSecrets};

// The group of an apiVersion: "cluster.x-k8s.io/v1beta1" -> "cluster.x-k8s.io",
// "v1" -> "".
std::string GroupOf(std::string_view api_version);

// The phase of a kind; kOther for one the table does not know.
Phase PhaseOf(std::string_view group, std::string_view kind);

// An object as both sides name it: group, kind, namespace and name.
struct ObjectRef {
  std::string group;
  std::string kind;
  std::string ns;
  std::string name;

  bool operator==(const ObjectRef&) const = default;
  bool operator<(const ObjectRef& o) const {
    return std::tie(group, kind, ns, name) < std::tie(o.group, o.kind, o.ns, o.name);
  }
  // "Cluster ns/name" (or "Kind name" without a namespace).
  std::string String() const;
};

ObjectRef RefOf(const kube::Object& o);

// The string `o[key]`, "" when `o` is not an object or the field is absent
// or not a string.
std::string StringField(const kube::Object& o, const char* key);

// metadata.ownerReferences of `o`: its entries that are objects, in order.
std::vector<kube::Object> OwnerReferencesOf(const kube::Object& o);

}  // namespace caphv::backup
