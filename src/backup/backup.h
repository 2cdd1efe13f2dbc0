// File: backup/backup.h
//
// `caphv backup`'s decisions, as pure functions over the objects it read
// (the command does the reading and writing, cmd/caphv/backup_command.cc):
//
//   * which objects a backup holds: every object of the listed kinds in the
//     namespaces asked for, or with --cluster only that Cluster's (Select);
//     the Secrets and ConfigMaps they refer to (a HarvesterCluster's identity
//     Secret, a ClusterResourceSet's resources, a Machine's bootstrap data)
//     besides the Secrets labelled with a cluster name;
//   * what of an object is kept (StripForBackup): everything but the fields
//     the server sets and changes all the time (status, resourceVersion,
//     generation, managedFields), so two backups of an unchanged management
//     cluster are the same files; the uid and owner references stay, the
//     restore needs them;
//   * the files: one YAML List per kind, items sorted by namespace and name
//     (RenderList), the manifest (Manifest) and the record of the clusters'
//     IPPool entries on Harvester (AllocationsOf, RenderAllocations).
//
// Thread safety: pure functions.

#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "backup/objects.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::backup {

inline constexpr char kClusterNameLabel[] = "cluster.x-k8s.io/cluster-name";
inline constexpr char kManifestFile[] = "manifest.yaml";
inline constexpr char kAllocationsFile[] = "ippool-allocations.yaml";
inline constexpr char kManifestKind[] = "CaphvBackup";
inline constexpr int kFormatVersion = 1;

// The object without status, resourceVersion, generation, managedFields and
// selfLink.
kube::Object StripForBackup(kube::Object o);

// The objects `o` refers to by name: every {kind, name} pair in its spec
// (infrastructureRef, controlPlaneRef, template and bootstrap refs, a
// ClusterResourceSet's resources, a ClusterClass's templates), a
// HarvesterCluster's identity Secret, a Machine's bootstrap data Secret, a
// topology Cluster's ClusterClass and a ClusterResourceSetBinding's
// ClusterResourceSets. The group is left empty where the reference does not
// name one; the namespace defaults to `o`'s.
std::vector<ObjectRef> ReferencesOf(const kube::Object& o);

// Whether a metav1.LabelSelector (matchLabels, matchExpressions) selects
// `labels`. An empty selector selects everything.
bool SelectorMatches(const kube::Object& selector,
                     const std::map<std::string, std::string>& labels);

struct Selection {
  std::vector<kube::Object> objects;  // of the listed kinds
  std::set<ObjectRef> secrets;        // the Secrets they refer to
  std::set<ObjectRef> config_maps;    // the ConfigMaps they refer to
};

// The objects of a backup among `objects` (every listed kind of the
// namespaces asked for). `cluster` empty: all of them. Otherwise that
// Cluster's: the Cluster, the objects labelled with its name or whose
// spec.clusterName is it, the ClusterResourceSets whose selector matches
// it, then every object they refer to or own, until nothing is added.
Selection Select(const std::vector<kube::Object>& objects, std::string_view cluster);

// One YAML List (apiVersion v1, kind List, items) of `items` sorted by
// namespace and name.
std::string RenderList(std::vector<kube::Object> items);

// One IPPool entry of a backed-up cluster.
struct PoolEntry {
  std::string pool;
  std::string ip;
  std::string owner;
  bool operator==(const PoolEntry&) const = default;
  bool operator<(const PoolEntry& o) const {
    return std::tie(pool, ip, owner) < std::tie(o.pool, o.ip, o.owner);
  }
};

// The entries of `pools` (IPPool objects as Harvester serves them) that
// belong to the HarvesterMachines ("<ns>/<name>", with or without the
// "@<management cluster hash>" suffix) and the HarvesterClusters' load
// balancers ("<targetNamespace>/<load balancer name>") among `objects`,
// sorted.
std::vector<PoolEntry> AllocationsOf(const std::vector<kube::Object>& pools,
                                     const std::vector<kube::Object>& objects);

// The record file: per Harvester (its server), the entries by pool.
std::string RenderAllocations(const std::map<std::string, std::vector<PoolEntry>>& by_server);

// The entries of a record file, by server; kInvalidArgument when it is not one.
kube::StatusOr<std::map<std::string, std::vector<PoolEntry>>> ParseAllocations(
    std::string_view text);

struct Manifest {
  int format_version = kFormatVersion;
  std::string caphv_version;
  std::string created;                // RFC 3339, UTC
  std::string server;                 // the management cluster's apiserver
  std::string management_cluster_id;  // its kube-system namespace's uid
  bool all_namespaces = false;
  std::vector<std::string> scope;              // namespaces asked for (without all_namespaces)
  std::string cluster;                         // --cluster, "" for all
  std::vector<std::string> namespaces;         // of the objects
  std::map<std::string, int64_t> counts;       // kind name -> objects
  std::map<std::string, std::string> skipped;  // kind name -> why
  std::string allocations;                     // what the record holds, or why there is none
};

std::string RenderManifest(const Manifest& m);

// kInvalidArgument when `text` is not a manifest, or one of a newer format.
kube::StatusOr<Manifest> ParseManifest(std::string_view text);

}  // namespace caphv::backup
