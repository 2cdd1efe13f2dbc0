// File: test/unit/backup/backup_test.cc
//
// What `caphv backup` saves (backup/backup.h): the objects of one Cluster
// with --cluster, the Secrets and ConfigMaps they name, the fields kept,
// files that read back and do not change between two backups of the same
// objects, the IPPool record and the manifest.

#include "backup/backup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "api/yaml.h"
#include "management_objects.h"

namespace caphv::backup {
namespace {

using kube::Object;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using testing::kNs;
using testing::ManagementObjects;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

std::vector<std::string> Names(const std::vector<Object>& objects) {
  std::vector<std::string> out;
  out.reserve(objects.size());
  for (const auto& o : objects) out.push_back(RefOf(o).String());
  return out;
}

TEST(StripForBackup, DropsWhatTheServerChangesAndKeepsWhatTheRestoreNeeds) {
  Object m = ManagementObjects()[2];  // alpha's control-plane Machine
  m["metadata"]["finalizers"] = Object::array({"machine.cluster.x-k8s.io"});
  m["metadata"]["selfLink"] = "/apis/...";
  const Object kept = StripForBackup(m);
  EXPECT_FALSE(kept.contains("status"));
  for (const char* gone : {"resourceVersion", "generation", "managedFields", "selfLink"}) {
    EXPECT_FALSE(kept["metadata"].contains(gone)) << gone;
  }
  EXPECT_EQ(kept["metadata"]["uid"], m["metadata"]["uid"]);
  EXPECT_EQ(kept["metadata"]["ownerReferences"], m["metadata"]["ownerReferences"]);
  EXPECT_EQ(kept["metadata"]["finalizers"], m["metadata"]["finalizers"]);
  EXPECT_EQ(kept["metadata"]["labels"], m["metadata"]["labels"]);
  EXPECT_EQ(kept["spec"], m["spec"]);
}

TEST(ReferencesOf, NamesTheObjectsAClusterNeeds) {
  const auto objects = ManagementObjects();
  auto refs = [&](const std::string& name) {
    for (const auto& o : objects) {
      if (RefOf(o).String() == name) return ReferencesOf(o);
    }
    return std::vector<ObjectRef>{};
  };
  EXPECT_THAT(refs("Cluster prod/alpha"), Contains(ObjectRef{"infrastructure.cluster.x-k8s.io",
                                                             "HarvesterCluster", kNs, "alpha"}));
  // The identity Secret, in its own namespace.
  EXPECT_THAT(refs("HarvesterCluster prod/alpha"),
              Contains(ObjectRef{"", "Secret", "caphv-system", "hv-identity"}));
  EXPECT_THAT(refs("MachineDeployment prod/alpha-md"),
              IsSupersetOf({ObjectRef{"infrastructure.cluster.x-k8s.io", "HarvesterMachineTemplate",
                                      kNs, "alpha-md"},
                            ObjectRef{"", "Secret", kNs, "alpha-bootstrap-worker"}}));
  EXPECT_THAT(refs("Machine prod/alpha-cp-0"),
              Contains(ObjectRef{"", "Secret", kNs, "alpha-bootstrap-cp"}));
  EXPECT_THAT(refs("ClusterResourceSet prod/alpha-addons"),
              IsSupersetOf({ObjectRef{"", "ConfigMap", kNs, "cloud-config-alpha"},
                            ObjectRef{"", "Secret", kNs, "addon-secret"}}));
  EXPECT_THAT(
      refs("ClusterResourceSetBinding prod/alpha"),
      Contains(ObjectRef{"addons.cluster.x-k8s.io", "ClusterResourceSet", kNs, "alpha-addons"}));

  // A topology Cluster names its ClusterClass, whose templates it names.
  const Object topology = testing::Make(testing::kCapi, "Cluster", "gamma",
                                        {{"topology", {{"class", "harvester-rke2"}}}});
  EXPECT_THAT(ReferencesOf(topology),
              Contains(ObjectRef{"cluster.x-k8s.io", "ClusterClass", kNs, "harvester-rke2"}));
  const Object cls = testing::Make(
      testing::kCapi, "ClusterClass", "harvester-rke2",
      {{"infrastructure",
        {{"ref", testing::Ref(testing::kInfra, "HarvesterClusterTemplate", "hct")}}}});
  EXPECT_THAT(ReferencesOf(cls), Contains(ObjectRef{"infrastructure.cluster.x-k8s.io",
                                                    "HarvesterClusterTemplate", kNs, "hct"}));
}

TEST(SelectorMatches, MatchLabelsAndExpressions) {
  const std::map<std::string, std::string> labels = {{"env", "prod"}, {"csi", "external"}};
  EXPECT_TRUE(SelectorMatches(Object::object(), labels));
  EXPECT_TRUE(SelectorMatches({{"matchLabels", {{"env", "prod"}}}}, labels));
  EXPECT_FALSE(SelectorMatches({{"matchLabels", {{"env", "dev"}}}}, labels));
  auto expr = [](const std::string& key, const std::string& op, std::vector<std::string> values) {
    return Object{{"matchExpressions",
                   Object::array({{{"key", key}, {"operator", op}, {"values", values}}})}};
  };
  EXPECT_TRUE(SelectorMatches(expr("env", "In", {"dev", "prod"}), labels));
  EXPECT_FALSE(SelectorMatches(expr("env", "NotIn", {"prod"}), labels));
  EXPECT_TRUE(SelectorMatches(expr("team", "DoesNotExist", {}), labels));
  EXPECT_FALSE(SelectorMatches(expr("team", "Exists", {}), labels));
  EXPECT_FALSE(SelectorMatches(expr("env", "Bogus", {}), labels));
}

TEST(Select, WithoutAClusterEverythingAndTheSecretsAndConfigMapsNamed) {
  const auto objects = ManagementObjects();
  const Selection s = Select(objects, "");
  EXPECT_EQ(s.objects.size(), objects.size());
  EXPECT_THAT(s.secrets, IsSupersetOf({ObjectRef{"", "Secret", "caphv-system", "hv-identity"},
                                       ObjectRef{"", "Secret", kNs, "addon-secret"},
                                       ObjectRef{"", "Secret", kNs, "beta-bootstrap-cp"}}));
  EXPECT_THAT(s.config_maps, IsSupersetOf({ObjectRef{"", "ConfigMap", kNs, "cloud-config-alpha"},
                                           ObjectRef{"", "ConfigMap", kNs, "other"}}));
}

TEST(Select, OneClusterTakesWhatItOwnsAndNamesAndNothingOfTheOther) {
  const auto objects = ManagementObjects();
  const Selection s = Select(objects, "alpha");
  std::vector<std::string> want;
  for (const auto& o : objects) {
    const std::string name = RefOf(o).String();
    if (name.find("beta") == std::string::npos && name.find("other") == std::string::npos) {
      want.push_back(name);
    }
  }
  // The workers' HarvesterMachines carry no label: they come by their owners;
  // the template by the MachineDeployment naming it; the ClusterResourceSet
  // by its selector.
  EXPECT_THAT(Names(s.objects), UnorderedElementsAreArray(want));
  EXPECT_THAT(s.secrets, Contains(ObjectRef{"", "Secret", "caphv-system", "hv-identity"}));
  EXPECT_THAT(s.secrets, Not(Contains(ObjectRef{"", "Secret", kNs, "beta-bootstrap-cp"})));
  EXPECT_THAT(s.config_maps, Contains(ObjectRef{"", "ConfigMap", kNs, "cloud-config-alpha"}));
  EXPECT_THAT(s.config_maps, Not(Contains(ObjectRef{"", "ConfigMap", kNs, "other"})));

  EXPECT_THAT(
      Names(Select(objects, "beta").objects),
      UnorderedElementsAreArray({"Cluster prod/beta", "HarvesterCluster prod/beta",
                                 "Machine prod/beta-cp-0", "HarvesterMachine prod/beta-cp-0"}));
  EXPECT_TRUE(Select(objects, "gamma").objects.empty());
}

TEST(RenderList, ReadsBackSortedAndTheSameForTheSameObjects) {
  auto objects = ManagementObjects();
  std::vector<Object> machines;
  for (const auto& o : objects) {
    if (RefOf(o).kind == "Machine") machines.push_back(StripForBackup(o));
  }
  ASSERT_GE(machines.size(), 3u);
  const std::string text = RenderList(machines);
  std::vector<Object> reversed(machines.rbegin(), machines.rend());
  EXPECT_EQ(RenderList(reversed), text) << "the order read must not matter";

  auto docs = api::ParseYaml(text);
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  const Object& list = (*docs)[0];
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), machines.size());
  std::vector<std::string> names;
  for (const auto& item : list["items"]) names.push_back(RefOf(item).String());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(list["items"], UnorderedElementsAreArray(machines));
}

TEST(AllocationsOf, TheEntriesOfTheMachinesAndLoadBalancersOfTheBackup) {
  const auto objects = Select(ManagementObjects(), "alpha").objects;
  const std::vector<Object> pools = {
      {{"metadata", {{"name", "vm-pool"}}},
       {"status",
        {{"allocated",
          {{"10.0.0.10", "prod/alpha-cp-0@0123456789ab"},
           {"10.0.0.11", "prod/alpha-md-x7-a"},  // the Go provider's form
           {"10.0.0.12", "prod/beta-cp-0@0123456789ab"},
           {"10.0.0.13", "prod/alpha-cp-0-other@0123456789ab"}}}}}},
      {{"metadata", {{"name", "lb-pool"}}},
       {"status",
        {{"allocated",
          {{"10.0.1.10", "vms-alpha/prod-alpha-lb"}, {"10.0.1.11", "vms-beta/prod-beta-lb"}}}}}},
      {{"metadata", {{"name", "empty"}}}, {"status", Object::object()}}};
  const auto entries = AllocationsOf(pools, objects);
  EXPECT_EQ(entries, (std::vector<PoolEntry>{
                         {"lb-pool", "10.0.1.10", "vms-alpha/prod-alpha-lb"},
                         {"vm-pool", "10.0.0.10", "prod/alpha-cp-0@0123456789ab"},
                         {"vm-pool", "10.0.0.11", "prod/alpha-md-x7-a"},
                     }));

  const std::map<std::string, std::vector<PoolEntry>> record = {{"https://hv:6443", entries}};
  auto parsed = ParseAllocations(RenderAllocations(record));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, record);
  EXPECT_FALSE(ParseAllocations("harvesters: 3\n").ok());
}

TEST(Manifest, ReadsBackAndRefusesANewerFormat) {
  Manifest m;
  m.caphv_version = "v0.3.0";
  m.created = "2025-06-01T10:00:00Z";
  m.server = "https://mgmt:6443";
  m.management_cluster_id = "0b1c";
  m.scope = {kNs};
  m.cluster = "alpha";
  m.namespaces = {"caphv-system", kNs};
  m.counts = {{"clusters.cluster.x-k8s.io", 1}, {"secrets", 4}};
  m.skipped = {{"kubeadmcontrolplanes.controlplane.cluster.x-k8s.io", "not served"}};
  m.allocations = "3 entries";
  const std::string text = RenderManifest(m);
  auto back = ParseManifest(text);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->server, m.server);
  EXPECT_EQ(back->management_cluster_id, m.management_cluster_id);
  EXPECT_EQ(back->scope, m.scope);
  EXPECT_EQ(back->cluster, m.cluster);
  EXPECT_EQ(back->namespaces, m.namespaces);
  EXPECT_EQ(back->counts, m.counts);
  EXPECT_EQ(back->skipped, m.skipped);
  EXPECT_EQ(back->created, m.created);

  std::string newer = text;
  const auto at = newer.find("formatVersion: 1");
  ASSERT_NE(at, std::string::npos) << text;
  newer.replace(at, 16, "formatVersion: 2");
  auto refused = ParseManifest(newer);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("format version 2"));
  EXPECT_FALSE(ParseManifest("kind: Something\n").ok());
  EXPECT_FALSE(ParseManifest("- a\n- b\n").ok());
}

}  // namespace
}  // namespace caphv::backup
