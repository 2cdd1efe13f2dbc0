// File: controllers/capi.h
//
// What CAPHV knows of Cluster API, shared by the two reconcilers: its
// resources, labels, annotations and finalizers; small readers and patch
// builders over Cluster API objects and CAPHV's own: owner lookup, pause, deletion,
// finalizers (with migration of the Go provider's legacy names), the
// Cluster's infrastructure readiness and the Machine's bootstrap data.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/common.h"
#include "api/harvester_machine.h"
#include "kube/client.h"
#include "kube/field_mask.h"
#include "kube/resource.h"

namespace caphv::controllers {

inline constexpr std::string_view kClusterFinalizer =
    "harvester.infrastructure.cluster.x-k8s.io/finalizer";
inline constexpr std::string_view kLegacyClusterFinalizer =
    "harvester.infrastructure.cluster.x-k8s.io";
inline constexpr std::string_view kMachineFinalizer = api::kMachineFinalizer;
inline constexpr std::string_view kLegacyMachineFinalizer = api::kLegacyMachineFinalizer;
inline constexpr std::string_view kPausedAnnotation = "cluster.x-k8s.io/paused";
inline constexpr std::string_view kControlPlaneLabel = "cluster.x-k8s.io/control-plane";
inline constexpr std::string_view kClusterNameLabel = "cluster.x-k8s.io/cluster-name";
inline constexpr std::string_view kCapiGroup = "cluster.x-k8s.io";

// Cluster API core at v1beta1 (served by v1.9 through v1.15). The manager
// reads Clusters and Machines at the newest version the management cluster
// serves instead (controllers::CapiVersionServed); these are the fallback.
inline const kube::GroupVersionResource kCapiClusters{"cluster.x-k8s.io", "v1beta1", "clusters",
                                                      true, "Cluster"};
inline const kube::GroupVersionResource kCapiMachines{"cluster.x-k8s.io", "v1beta1", "machines",
                                                      true, "Machine"};

// Name of the ownerReference of `kind` in group cluster.x-k8s.io; "" if none.
std::string CapiOwnerName(const kube::Object& o, std::string_view kind);

// Cluster.spec.paused, or the paused annotation on `o` (or on the Cluster).
bool IsPaused(const kube::Object* cluster, const kube::Object& o);

bool IsDeleting(const kube::Object& o);
bool HasFinalizer(const kube::Object& o, std::string_view finalizer);

// Merge patch adding `finalizer` (and dropping `legacy`), guarded by the
// object's resourceVersion; nullopt when nothing is to change.
std::optional<kube::Object> AddFinalizerPatch(const kube::Object& o, std::string_view finalizer,
                                              std::string_view legacy);
// Merge patch removing `finalizer` and `legacy`; nullopt when neither is set.
std::optional<kube::Object> RemoveFinalizerPatch(const kube::Object& o, std::string_view finalizer,
                                                 std::string_view legacy);

// Cluster status.infrastructureReady (v1beta1) or
// status.initialization.infrastructureProvisioned (v1beta2).
bool ClusterInfrastructureReady(const kube::Object& cluster);

// Cluster condition ControlPlaneInitialized True (v1beta1) or
// status.initialization.controlPlaneInitialized (v1beta2): from then on
// Cluster API watches the workload cluster's Nodes itself.
bool ClusterControlPlaneInitialized(const kube::Object& cluster);

// The version of cluster.x-k8s.io to read Clusters and Machines at, from the
// group's discovery document (GET /apis/cluster.x-k8s.io): v1beta2 when
// served (Cluster API v1.11+), else v1beta1 (v1.9/v1.10, and when the
// document is missing or unreadable). The fields CAPHV reads are at the same
// paths in both, or read in both shapes (ClusterInfrastructureReady, ...).
std::string CapiVersionServed(const kube::Object& api_group);

// When a manager reading cluster.x-k8s.io at `reading` should start again to
// read the newer version the group's discovery document now serves (Cluster
// API upgraded underneath it from v1.10 to v1.11+): that version, else "".
// Never back to v1beta1: a missing or unreadable document says nothing.
std::string NewerCapiVersionServed(std::string_view reading, const kube::Object& api_group);

// Machine spec.bootstrap.dataSecretName ("" while the bootstrap provider works).
std::string BootstrapDataSecretName(const kube::Object& machine);

// What the cache of Cluster API Machines keeps (its informer's mask): the
// cached metadata, spec.clusterName, spec.bootstrap.dataSecretName,
// spec.infrastructureRef, spec.failureDomain and status.nodeRef, the fields
// the reconcilers, their watch predicates and the connection sweeper read.
// Cluster API rewrites the rest (conditions, phase, addresses, node info) as
// machines progress; kept whole it is most of a Machine.
const kube::FieldMask& MachineFields();

// metadata.labels (empty when absent).
std::map<std::string, std::string> LabelsOf(const kube::Object& o);

// Reads a string at a JSON path; "" when absent or not a string.
std::string Str(const kube::Object& o, std::initializer_list<std::string_view> path);

}  // namespace caphv::controllers
