// File: test/unit/backup/restore_test.cc
//
// What `caphv restore` decides (backup/restore.h): the backup read back
// (caphv's files and the operations guide's `kubectl get -o yaml` files),
// bad input refused with one line naming the file, the order, what is not
// restored, what an object already there is, the object written (nothing
// the server sets, owners of this management cluster, Clusters paused until
// the end) and the owner references added afterwards.

#include "backup/restore.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/yaml.h"
#include "management_objects.h"

namespace caphv::backup {
namespace {

using kube::Object;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::ManagementObjects;
using testing::UidFor;

std::map<std::string, std::string> FilesOf(const std::vector<Object>& objects) {
  std::map<std::string, std::vector<Object>> by_kind;
  for (const auto& o : objects) by_kind[RefOf(o).kind].push_back(StripForBackup(o));
  std::map<std::string, std::string> files;
  for (auto& [kind, items] : by_kind) files[kind + ".yaml"] = RenderList(std::move(items));
  return files;
}

std::vector<std::string> Kinds(const std::vector<Object>& objects) {
  std::vector<std::string> out;
  for (const auto& o : objects) {
    const std::string kind = RefOf(o).kind;
    if (out.empty() || out.back() != kind) out.push_back(kind);
  }
  return out;
}

Object Find(const std::vector<Object>& objects, const std::string& name) {
  for (const auto& o : objects) {
    if (RefOf(o).String() == name) return o;
  }
  ADD_FAILURE() << name << " not found";
  return Object::object();
}

TEST(ParseBackup, ReadsEveryObjectBackInDependencyOrder) {
  auto files = FilesOf(ManagementObjects());
  files["Secret.yaml"] =
      RenderList({{{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "hv-identity"}, {"namespace", "x"}}}}});
  files["notes.txt"] = "not a backup file";
  files["widget.yaml"] =
      "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: prod\n";
  auto b = ParseBackup(files);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_FALSE(b->manifest.has_value());
  EXPECT_EQ(b->objects.size(), ManagementObjects().size() + 2);
  // What an object names or is owned by comes before it; a kind of no
  // known phase before the ClusterResourceSets.
  EXPECT_THAT(
      Kinds(b->objects),
      ElementsAre("Secret", "HarvesterMachineTemplate", "HarvesterCluster", "Cluster",
                  "MachineDeployment", "MachineSet", "Machine", "HarvesterMachine", "Widget",
                  "ClusterResourceSetBinding", "ClusterResourceSet", "MachineHealthCheck"));
}

TEST(ParseBackup, ReadsTheOperationsGuideScriptsFiles) {
  // `kubectl get clusters.cluster.x-k8s.io -A -o yaml`, status and all; an
  // empty List for a kind of no object.
  const Object cluster = ManagementObjects()[0];
  Object list = {{"apiVersion", "v1"},
                 {"kind", "List"},
                 {"items", Object::array({cluster})},
                 {"metadata", {{"resourceVersion", ""}}}};
  auto b =
      ParseBackup({{"clusters.cluster.x-k8s.io.yaml", api::ToYaml(list)},
                   {"machines.cluster.x-k8s.io.yaml",
                    "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n"},
                   {"rke2controlplanes.controlplane.cluster.x-k8s.io.yaml", ""}});
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->objects.size(), 1u);
  EXPECT_EQ(b->objects[0], cluster);
}

TEST(ParseBackup, BadInputIsOneLineNamingTheFile) {
  auto message = [](const std::map<std::string, std::string>& files) {
    auto b = ParseBackup(files);
    EXPECT_FALSE(b.ok());
    EXPECT_EQ(b.status().message().find('\n'), std::string::npos) << b.status().message();
    return b.ok() ? std::string() : b.status().message();
  };
  EXPECT_THAT(message({{"clusters.yaml", "items: [\n"}}), HasSubstr("clusters.yaml: not YAML"));
  EXPECT_THAT(message({{"clusters.yaml",
                        "apiVersion: v1\nkind: List\nitems:\n- kind: Cluster\n"
                        "  apiVersion: cluster.x-k8s.io/v1beta1\n"
                        "  metadata: {namespace: prod}\n"}}),
              HasSubstr("clusters.yaml: item 1 (Cluster) has no metadata.name"));
  EXPECT_THAT(message({{"a.yaml", "kind: Secret\nmetadata: {name: s}\n"}}),
              HasSubstr("a.yaml: item 1 has no apiVersion"));
  EXPECT_THAT(message({{"a.yaml", "- 1\n"}}), HasSubstr("a.yaml: document 1 is not an object"));
  EXPECT_THAT(message({{"notes.txt", "hello"}}), HasSubstr("no object"));
  EXPECT_THAT(message({{"manifest.yaml", "kind: CaphvBackup\nformatVersion: 9\n"},
                       {"a.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"}}),
              HasSubstr("format version 9"));
  // The same object twice: once is enough; with other content, which one?
  const std::string s1 = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: n}\n";
  EXPECT_TRUE(ParseBackup({{"a.yaml", s1}, {"b.yaml", s1}}).ok());
  EXPECT_THAT(message({{"a.yaml", s1}, {"b.yaml", s1 + "type: Opaque\n"}}),
              HasSubstr("Secret n/s is in the backup twice, with different content (a.yaml, "
                        "b.yaml)"));
}

TEST(BeingDeleted, WhatWasBeingDeletedAndWhatItOwnsIsNotRestored) {
  auto objects = ManagementObjects();
  for (auto& o : objects) {
    if (RefOf(o).String() == "Machine prod/alpha-md-x7-b") {
      o["metadata"]["deletionTimestamp"] = "2025-06-01T10:00:00Z";
    }
  }
  EXPECT_EQ(BeingDeleted(objects),
            (std::set<ObjectRef>{
                {"cluster.x-k8s.io", "Machine", "prod", "alpha-md-x7-b"},
                {"infrastructure.cluster.x-k8s.io", "HarvesterMachine", "prod", "alpha-md-x7-b"}}));
  EXPECT_TRUE(BeingDeleted(ManagementObjects()).empty());
}

TEST(Compare, WhatTheManagementClusterHoldsUnderTheName) {
  const Object backup = ManagementObjects()[0];  // Cluster alpha
  EXPECT_EQ(Compare(backup, nullptr), Found::kMissing);
  EXPECT_EQ(Compare(backup, &backup), Found::kSame);

  Object restored = ForRestore(backup, {});
  restored["metadata"]["uid"] = "new";
  restored["spec"]["paused"] = false;  // unpaused, and changed since
  EXPECT_EQ(Compare(backup, &restored), Found::kRestored);

  Object twin = backup;  // made by someone else, the same spec
  twin["metadata"]["uid"] = "other";
  twin.erase("status");
  EXPECT_EQ(Compare(backup, &twin), Found::kEqual);
  twin["spec"]["paused"] = true;
  EXPECT_EQ(Compare(backup, &twin), Found::kConflict);
}

TEST(ForRestore, NothingTheServerSetsAndOwnersOfThisManagementCluster) {
  const auto objects = ManagementObjects();
  Object hm = Find(objects, "HarvesterMachine prod/alpha-md-x7-a");
  hm["metadata"]["deletionTimestamp"] = "2025-06-01T10:00:00Z";
  hm["metadata"]["generateName"] = "alpha-md-x7-";
  hm["metadata"]["finalizers"] = Object::array({"harvestermachine.infrastructure"});
  // Its owner, the Machine, has a uid on the new management cluster.
  const std::map<std::string, std::string> uids = {{UidFor("Machine", "alpha-md-x7-a"), "new-m"}};
  const Object o = ForRestore(hm, uids);
  EXPECT_FALSE(o.contains("status"));
  for (const char* gone : {"uid", "resourceVersion", "generation", "creationTimestamp",
                           "deletionTimestamp", "managedFields", "generateName"}) {
    EXPECT_FALSE(o["metadata"].contains(gone)) << gone;
  }
  EXPECT_EQ(o["metadata"]["finalizers"], hm["metadata"]["finalizers"]);
  EXPECT_EQ(o["metadata"]["annotations"][kRestoredUidAnnotation], kube::UidOf(hm));
  ASSERT_EQ(o["metadata"]["ownerReferences"].size(), 1u);
  Object want = hm["metadata"]["ownerReferences"][0];
  want["uid"] = "new-m";
  EXPECT_EQ(o["metadata"]["ownerReferences"][0], want);  // controller etc. kept
  EXPECT_EQ(o["spec"], hm["spec"]);

  // An owner without a uid here yet: no reference (none naming the lost
  // cluster's uid, which the garbage collector would act on).
  EXPECT_FALSE(ForRestore(hm, {})["metadata"].contains("ownerReferences"));
  EXPECT_TRUE(RemapOwners(hm, {}).empty());
}

TEST(ForRestore, ClustersArePausedUntilTheEnd) {
  const Object cluster = ManagementObjects()[0];
  const Object o = ForRestore(cluster, {});
  EXPECT_EQ(o["spec"]["paused"], true);
  EXPECT_TRUE(PausedByRestore(o));
  Object after = o;
  after.merge_patch(UnpausePatch());
  EXPECT_EQ(after["spec"]["paused"], false);
  EXPECT_FALSE(PausedByRestore(after));
  EXPECT_EQ(after["metadata"]["annotations"][kRestoredUidAnnotation], kube::UidOf(cluster));

  // A Cluster paused in the backup stays paused.
  Object paused = cluster;
  paused["spec"]["paused"] = true;
  const Object p = ForRestore(paused, {});
  EXPECT_EQ(p["spec"]["paused"], true);
  EXPECT_FALSE(PausedByRestore(p));
  // Other kinds are not paused.
  EXPECT_FALSE(ForRestore(ManagementObjects()[1], {})["spec"].contains("paused"));
}

TEST(OwnerPatch, AddsTheOwnersAnObjectMadeBeforeThemLacks) {
  const Object binding = Find(ManagementObjects(), "ClusterResourceSetBinding prod/alpha");
  const std::map<std::string, std::string> uids = {
      {UidFor("Cluster", "alpha"), "new-c"},
      {UidFor("ClusterResourceSet", "alpha-addons"), "new-r"}};
  const auto desired = RemapOwners(binding, uids);
  ASSERT_EQ(desired.size(), 2u);

  // Made when only the Cluster was there.
  Object current = ForRestore(binding, {{UidFor("Cluster", "alpha"), "new-c"}});
  current["metadata"]["resourceVersion"] = "17";
  auto patch = OwnerPatch(current, desired);
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "17");
  Object after = current;
  after.merge_patch(*patch);
  EXPECT_EQ(after["metadata"]["ownerReferences"], Object(desired));
  EXPECT_FALSE(OwnerPatch(after, desired).has_value()) << "nothing to do the second time";

  // A reference to the same owner under another uid is replaced.
  Object stale = after;
  stale["metadata"]["ownerReferences"][0]["uid"] = "lost";
  patch = OwnerPatch(stale, desired);
  ASSERT_TRUE(patch.has_value());
  stale.merge_patch(*patch);
  EXPECT_EQ(stale["metadata"]["ownerReferences"], Object(desired));

  // Cluster API gave a Machine another MachineSet: left alone.
  const Object machine = Find(ManagementObjects(), "Machine prod/alpha-md-x7-a");
  Object reparented = ForRestore(machine, {});
  reparented["metadata"]["ownerReferences"] =
      Object::array({{{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                      {"kind", "MachineSet"},
                      {"name", "alpha-md-y8"},
                      {"uid", "ms2"}}});
  EXPECT_FALSE(OwnerPatch(reparented,
                          RemapOwners(machine, {{UidFor("MachineSet", "alpha-md-x7"), "new-ms"}}))
                   .has_value());
}

}  // namespace
}  // namespace caphv::backup
