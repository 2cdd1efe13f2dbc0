// File: test/integration/e2e/disaster_recovery_fixture.h
//
// Fixture of the disaster-recovery scenario (disaster_recovery_test.cc):
// the operations guide's backup script, the namespaces and the filtered
// restore docs/operations.md gives, reading what a backup holds (caphv's
// tarball or the script's folder), and the fixture that adds a fresh
// management cluster to the bed (`hack/testbed add-cluster --name mgmt2
// --with-capi`), abandons the old one and cleans both up.
//
// Header-only, included by disaster_recovery_test.cc alone. Thread safety:
// test thread only.

#pragma once

#include <set>

#include "backup/archive.h"
#include "backup/restore.h"
#include "e2e_fixture.h"

namespace caphv::e2e {

using caphv::testing::RunCommand;
using caphv::testing::SourcePath;

inline const GroupVersionResource kMachineSets{"cluster.x-k8s.io", "v1beta1", "machinesets", true};
inline const GroupVersionResource kPvcGvr = kube::resources::kPersistentVolumeClaims;
inline const GroupVersionResource kSecretGvr = kube::resources::kSecrets;
inline const GroupVersionResource kConfigMapGvr = kube::resources::kConfigMaps;

inline constexpr char kNewMgmt[] = "mgmt2";

// The operations guide's backup script, verbatim except for the one kind it
// misses: harvestermachinetemplates (without them the restored
// MachineDeployment cannot make a machine: "failed to retrieve
// HarvesterMachineTemplate ...: not found").
inline constexpr char kBackupScript[] = R"sh(#!/bin/bash
BACKUP_DIR="caphv-backup-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$BACKUP_DIR"
for kind in clusters.cluster.x-k8s.io machines.cluster.x-k8s.io \
machinedeployments.cluster.x-k8s.io machinesets.cluster.x-k8s.io \
rke2controlplanes.controlplane.cluster.x-k8s.io \
harvesterclusters.infrastructure.cluster.x-k8s.io \
harvestermachines.infrastructure.cluster.x-k8s.io \
harvestermachinetemplates.infrastructure.cluster.x-k8s.io \
clusterresourcesets.addons.cluster.x-k8s.io \
machinehealthchecks.cluster.x-k8s.io;
do
kubectl get "$kind" -A -o yaml > "$BACKUP_DIR/$kind.yaml" 2>/dev/null
done
#Export secrets(kubeconfig, cloud - init)
kubectl get secrets -A -l cluster.x-k8s.io/cluster-name -o yaml > "$BACKUP_DIR/secrets.yaml"
echo "Backup saved to $BACKUP_DIR/"
)sh";

// Before the restore: the backup's namespaces (kubectl apply does not create
// them). $1: the backup folder.
inline constexpr char kNamespacesScript[] = R"sh(#!/bin/bash
set -euo pipefail
BACKUP_DIR=$1
for ns in $(yq -r '.items[].metadata.namespace // empty' "$BACKUP_DIR"/*.yaml | sort -u); do
  kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns"
done
)sh";

// The restore of docs/operations.md: the guide's order, each file through
// yq: no ownerReferences (they name uids of the lost cluster: the garbage
// collector would delete the objects), none of the fields the server sets,
// every Cluster paused until all is back. $1: the backup folder.
inline constexpr char kRestoreScript[] = R"sh(#!/bin/bash
set -euo pipefail
BACKUP_DIR=$1
FILTER='del(.items[].metadata.ownerReferences, .items[].metadata.uid,
            .items[].metadata.resourceVersion, .items[].metadata.creationTimestamp,
            .items[].metadata.generation, .items[].metadata.managedFields, .items[].status)
        | (.items[] | select(.kind == "Cluster") | .spec.paused) = true'
for kind in harvesterclusters.infrastructure.cluster.x-k8s.io \
            harvestermachines.infrastructure.cluster.x-k8s.io \
            harvestermachinetemplates.infrastructure.cluster.x-k8s.io \
            clusters.cluster.x-k8s.io machines.cluster.x-k8s.io \
            machinedeployments.cluster.x-k8s.io machinesets.cluster.x-k8s.io \
            rke2controlplanes.controlplane.cluster.x-k8s.io \
            clusterresourcesets.addons.cluster.x-k8s.io \
            machinehealthchecks.cluster.x-k8s.io secrets; do
  f="$BACKUP_DIR/$kind.yaml"
  # Kinds the old cluster did not have (empty file), or had none of.
  [ -s "$f" ] && yq -e '.items | length > 0' "$f" >/dev/null 2>&1 || continue
  yq "$FILTER" "$f" | kubectl apply -f -
done
)sh";

inline std::string Quote(const std::string& s) { return "'" + s + "'"; }

// `script` with every kubectl command a server-side dry run: what the
// apiserver would accept, nothing made.
inline std::string DryRun(const std::string& script) {
  const auto first_line = script.find('\n') + 1;
  return script.substr(0, first_line) + "kubectl() { command kubectl \"$@\" --dry-run=server; }\n" +
         script.substr(first_line);
}

// The shell command running this build's `caphv <args>`.
inline std::string Caphv(const std::string& args) {
  return Quote(caphv::testing::BuildPath("cmd/caphv/caphv")) + " " + args;
}

// What a backup holds: its objects as "Kind ns/name", and its record of
// IPPool entries.
struct BackupContents {
  std::set<std::string> names;
  std::vector<backup::PoolEntry> allocations;
};

// The backup at `path` (caphv's directory or tarball, or the folder of the
// guide's script) as caphv restore reads it; only the objects of namespace
// `ns` when not empty.
inline BackupContents ReadBackup(const std::filesystem::path& path, const std::string& ns = "") {
  BackupContents out;
  auto files = backup::ReadArchive(path.string());
  if (!files.ok()) {
    ADD_FAILURE() << path << ": " << files.status().ToString();
    return out;
  }
  auto parsed = backup::ParseBackup(*files);
  if (!parsed.ok()) {
    ADD_FAILURE() << path << ": " << parsed.status().ToString();
    return out;
  }
  for (const auto& o : parsed->objects) {
    const backup::ObjectRef ref = backup::RefOf(o);
    if (ns.empty() || ref.ns == ns) out.names.insert(ref.String());
  }
  if (auto record = files->find(backup::kAllocationsFile); record != files->end()) {
    auto entries = backup::ParseAllocations(record->second);
    if (!entries.ok()) {
      ADD_FAILURE() << entries.status().ToString();
      return out;
    }
    for (const auto& [server, list] : *entries) {
      out.allocations.insert(out.allocations.end(), list.begin(), list.end());
    }
  }
  return out;
}

// The owners of `o` as "Kind/name=uid".
inline std::vector<std::string> OwnersOf(const Object& o) {
  std::vector<std::string> out;
  for (const auto& r : o["metadata"].value("ownerReferences", Object::array())) {
    out.push_back(r.value("kind", "") + "/" + r.value("name", "") + "=" + r.value("uid", ""));
  }
  return out;
}

class DisasterRecoveryTest : public E2ETest {
 protected:
  void SetUp() override {
    E2ETest::SetUp();
    if (HasFatalFailure()) return;
    std::string out;
    ASSERT_EQ(RunCommand("command -v yq", &out), 0)
        << "yq is required (hack/setup.sh installs it): " << out;
    work_dir_ = std::filesystem::path(Testbed::Get().dir()) / "dr" / ns();
    std::filesystem::create_directories(work_dir_);
    // A management cluster left by an aborted run of this test goes first.
    RunCommand(Bed(std::string("remove-cluster --name ") + kNewMgmt));
  }

  void TearDown() override {
    if (moved_) {
      // The lost management cluster: its objects are dropped without
      // anything acting on them (its Cluster is paused, its caphv-manager
      // gone), so nothing on Harvester is touched.
      AbandonOldObjects();
      // A failure may have left the restored Cluster paused: the new
      // management cluster deletes it as usual.
      if (mgmt_->Get(kClusters, ns(), cluster_).ok()) PauseCluster(mgmt_, false);
    } else if (old_paused_) {
      // Failed before the move: the old management cluster deletes the
      // cluster as usual.
      PauseCluster(old_mgmt_, false);
    }
    E2ETest::TearDown();
    if (mgmt2_added_) {
      std::string out;
      EXPECT_EQ(RunCommand(Bed(std::string("remove-cluster --name ") + kNewMgmt), &out), 0) << out;
    }
  }

  // The shell command `hack/testbed <args> --dir <the bed>`.
  static std::string Bed(const std::string& args) {
    return Quote(SourcePath("hack/testbed")) + " " + args + " --dir " + Quote(Testbed::Get().dir());
  }
  static std::string Kubeconfig(std::string_view cluster) {
    return Testbed::Get().KubeconfigPath(cluster);
  }
  // Runs `script` (bash) in the work folder with KUBECONFIG=`kubeconfig`.
  int RunScript(const std::string& name, const char* script, const std::string& kubeconfig,
                const std::string& args, std::string* out) const {
    const auto path = work_dir_ / name;
    std::ofstream(path) << script;
    return RunCommand("cd " + Quote(work_dir_.string()) + " && KUBECONFIG=" + Quote(kubeconfig) +
                          " bash " + Quote(path.string()) + " " + args,
                      out);
  }

  void PauseCluster(const std::shared_ptr<kube::Client>& mgmt, bool paused) {
    if (!mgmt) return;
    auto r = mgmt->Patch(kClusters, ns(), cluster_, kube::PatchType::kMerge,
                         {{"spec", {{"paused", paused}}}});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }

  // Deletes every Cluster API and CAPHV object of the test's namespace on
  // the old management cluster and strips their finalizers (nothing there
  // acts any more: deletionTimestamp first, so no finalizer comes back).
  void AbandonOldObjects() {
    const std::vector<const GroupVersionResource*> kinds = {&kClusters,
                                                            &kMachineDeployments,
                                                            &kMachineSets,
                                                            &kMachines,
                                                            &kHarvesterClusters,
                                                            &kHarvesterMachines,
                                                            &kHarvesterMachineTemplates};
    const Object no_finalizers = {{"metadata", {{"finalizers", nullptr}}}};
    const bool gone = Eventually(
        [&] {
          size_t left = 0;
          for (const auto* gvr : kinds) {
            auto list = old_mgmt_->List(*gvr, ns());
            if (!list.ok()) continue;
            for (const auto& o : list->items) {
              ++left;
              if (!IsDeleting(o)) old_mgmt_->Delete(*gvr, ns(), NameOf(o)).IgnoreError();
              old_mgmt_->Patch(*gvr, ns(), NameOf(o), kube::PatchType::kMerge, no_finalizers)
                  .status()
                  .IgnoreError();
            }
          }
          return left == 0;
        },
        std::chrono::seconds(60), std::chrono::seconds(1));
    EXPECT_TRUE(gone) << "objects of " << ns() << " left on the old management cluster";
  }

  // Every object of the kinds of the restore in the test's namespace of
  // `mgmt`, as "kind/name".
  std::set<std::string> RestoredObjects(const std::shared_ptr<kube::Client>& mgmt,
                                        std::string* deleting) const {
    std::set<std::string> out;
    for (const auto* gvr :
         {&kClusters, &kMachineDeployments, &kMachineSets, &kMachines, &kHarvesterClusters,
          &kHarvesterMachines, &kHarvesterMachineTemplates}) {
      auto list = mgmt->List(*gvr, ns());
      if (!list.ok()) continue;
      for (const auto& o : list->items) {
        out.insert(gvr->resource + "/" + NameOf(o));
        if (IsDeleting(o) && deleting != nullptr)
          *deleting += " " + gvr->resource + "/" + NameOf(o);
      }
    }
    kube::ListOptions labelled;
    labelled.label_selector = kClusterNameLabel;
    if (auto list = mgmt->List(kSecretGvr, ns(), labelled); list.ok()) {
      for (const auto& o : list->items) {
        out.insert("secrets/" + NameOf(o));
        if (IsDeleting(o) && deleting != nullptr) *deleting += " secrets/" + NameOf(o);
      }
    }
    return out;
  }

  // The managedFields entries of the field manager caphv (what and when it
  // wrote) on the objects of the restore's kinds in the test's namespace of
  // `mgmt`: "kind/name" -> the entries. A write of caphv changes them.
  std::map<std::string, std::string> CaphvWrites(const std::shared_ptr<kube::Client>& mgmt) const {
    std::map<std::string, std::string> out;
    for (const auto* gvr :
         {&kClusters, &kMachineDeployments, &kMachineSets, &kMachines, &kHarvesterClusters,
          &kHarvesterMachines, &kHarvesterMachineTemplates, &kSecretGvr}) {
      auto list = mgmt->List(*gvr, ns());
      if (!list.ok()) continue;
      for (const auto& o : list->items) {
        Object entries = Object::array();
        for (const auto& m : o["metadata"].value("managedFields", Object::array())) {
          if (m.value("manager", "") == "caphv") entries.push_back(m);
        }
        if (!entries.empty()) out[gvr->resource + "/" + NameOf(o)] = entries.dump();
      }
    }
    return out;
  }

  // Owner references of the restored objects that name no live object of
  // the new management cluster (uid of that kind and name), "" when all are
  // live.
  std::string DanglingOwners() const {
    std::map<std::string, std::string> uid_of;  // "Kind/name" -> uid
    const std::vector<std::pair<std::string, const GroupVersionResource*>> kinds = {
        {"Cluster", &kClusters},
        {"MachineDeployment", &kMachineDeployments},
        {"MachineSet", &kMachineSets},
        {"Machine", &kMachines},
        {"HarvesterCluster", &kHarvesterClusters},
        {"HarvesterMachine", &kHarvesterMachines},
        {"HarvesterMachineTemplate", &kHarvesterMachineTemplates}};
    std::vector<Object> all;
    for (const auto& [kind, gvr] : kinds) {
      if (auto list = mgmt_->List(*gvr, ns()); list.ok()) {
        for (const auto& o : list->items) {
          uid_of[kind + "/" + NameOf(o)] = kube::UidOf(o);
          all.push_back(o);
        }
      }
    }
    std::string out;
    for (const auto& o : all) {
      for (const auto& r : o["metadata"].value("ownerReferences", Object::array())) {
        const auto it = uid_of.find(r.value("kind", "") + "/" + r.value("name", ""));
        if (it == uid_of.end() || it->second != r.value("uid", "")) {
          out += " " + Str(o, "/kind") + "/" + NameOf(o) + "->" + r.value("kind", "") + "/" +
                 r.value("name", "");
        }
      }
    }
    return out;
  }

  std::filesystem::path work_dir_;
  std::shared_ptr<kube::Client> old_mgmt_;
  bool old_paused_ = false;
  bool mgmt2_added_ = false;
  bool moved_ = false;  // mgmt_ and manager_ are the new management cluster's
};

}  // namespace caphv::e2e
