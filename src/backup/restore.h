// File: backup/restore.h
//
// `caphv restore`'s decisions, as pure functions (the command reads the
// management cluster and writes to it, cmd/caphv/restore_command.cc):
//
//   * reading a backup: the manifest, and every object of the other YAML
//     files (a caphv backup, or files of `kubectl get -o yaml` as the
//     operations guide's script writes them), checked and sorted in restore
//     order (ParseBackup);
//   * what to do with each object given what the management cluster holds
//     under its name (Compare): create it; keep it when it is the same object
//     (same uid), one an earlier restore of this backup made (the
//     annotation kRestoredUidAnnotation holds the uid of the backup's object)
//     or one with the same content; otherwise it is a conflict;
//   * the object written (ForRestore): without what the server sets, with
//     owner references rewritten to the owners' uids on this management
//     cluster (as `clusterctl move` does; a reference naming the lost
//     cluster's uid would let the garbage collector delete the object), and
//     every Cluster paused until everything is back;
//   * the owner references an object created before its owner gets
//     afterwards (OwnerPatch), and the Clusters to unpause at the end.
//
// Thread safety: pure functions.

#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backup/backup.h"
#include "backup/objects.h"
#include "kube/object.h"
#include "kube/status.h"

namespace caphv::backup {

// On every object a restore creates: the uid its original had (in the
// backup), so that running the restore again recognises it.
inline constexpr char kRestoredUidAnnotation[] = "caphv.io/restored-uid";
// On a Cluster the restore paused (it was not paused in the backup): the
// restore unpauses it at the end.
inline constexpr char kRestorePausedAnnotation[] = "caphv.io/restore-paused";

struct Backup {
  std::optional<Manifest> manifest;
  std::vector<kube::Object> objects;  // in restore order (SortForRestore)
  size_t allocations = 0;             // entries in the IPPool record
};

// The backup in `files` (file name -> content). kInvalidArgument, with one
// line naming the file and what is wrong, for a file that is not YAML, an
// item without apiVersion, kind or metadata.name, the same object twice with
// different content, a manifest of a newer format, or no object at all.
kube::StatusOr<Backup> ParseBackup(const std::map<std::string, std::string>& files);

// Restore order: by phase (objects.h), the kinds in the order of Kinds()
// within a phase, then namespace and name.
void SortForRestore(std::vector<kube::Object>& objects);

// The objects not to restore: those being deleted when the backup was taken,
// and those whose owner in the backup is not restored (a deletion cascades).
std::set<ObjectRef> BeingDeleted(const std::vector<kube::Object>& objects);

enum class Found {
  kMissing,   // nothing of that name: create it
  kSame,      // the object itself (same uid): keep it
  kRestored,  // made by an earlier restore of this backup: keep it
  kEqual,     // another object with the same content: keep it
  kConflict,  // another object with other content
};

// What the management cluster's `target` (nullptr: none) is to `backup`.
Found Compare(const kube::Object& backup, const kube::Object* target);

// The owner references of `backup` whose owner has a uid in `new_uids`
// (uid in the backup -> uid on this management cluster), with that uid;
// the others are left out.
std::vector<kube::Object> RemapOwners(const kube::Object& backup,
                                      const std::map<std::string, std::string>& new_uids);

// The object to apply for `backup`: without uid, resourceVersion,
// generation, creationTimestamp, deletionTimestamp,
// deletionGracePeriodSeconds, managedFields, selfLink, generateName and
// status; owner references as RemapOwners; kRestoredUidAnnotation set to
// the backup's uid; a Cluster not paused in the backup paused, with
// kRestorePausedAnnotation.
kube::Object ForRestore(const kube::Object& backup,
                        const std::map<std::string, std::string>& new_uids);

// JSON merge patch giving `current` the references of `desired` it lacks
// (carrying its resourceVersion), nullopt when it lacks none. A reference to
// the same owner (group, kind, name) with another uid is replaced; when
// `current` already has an owner of that group and kind under another name
// (Cluster API re-parented it), the desired one is not added.
std::optional<kube::Object> OwnerPatch(const kube::Object& current,
                                       const std::vector<kube::Object>& desired);

// Whether the Cluster `cluster` is paused by a restore that has not ended.
bool PausedByRestore(const kube::Object& cluster);

// JSON merge patch unpausing such a Cluster and dropping the annotation.
kube::Object UnpausePatch();

}  // namespace caphv::backup
