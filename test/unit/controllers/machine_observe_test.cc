// Unit tests of what a machine's observe reads from the cached Harvester
// objects (the views of controllers/machine/machine_observe.h) and of the
// decoded HarvesterClusters it shares (controllers/decoded_cache.h).

#include "controllers/machine/machine_observe.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "api/codec.h"
#include "controllers/decoded_cache.h"
#include "harvester/naming.h"
#include "harvester/resources.h"

namespace caphv::controllers {
namespace {

using kube::Object;

const harvester::ClusterIdentity kIdentity{"mgmt-uid", "team", "c1"};

Object Labels(const harvester::ClusterIdentity& id) {
  Object labels = Object::object();
  for (const auto& [k, v] : harvester::ClusterLabels(id)) labels[k] = v;
  return labels;
}

Object Vm() {
  return {
      {"metadata",
       {{"name", "m1"},
        {"uid", "vm-uid"},
        {"creationTimestamp", "2026-12-07T03:00:00Z"},
        {"labels", Labels(kIdentity)},
        {"annotations",
         {{"harvesterhci.io/volumeClaimTemplates",
           R"([{"metadata":{"name":"m1-disk-0-abcde"}},{"metadata":{"name":"m1-disk-1-fghij"}}])"}}}}},
      {"spec",
       {{"template",
         {{"spec",
           {{"volumes",
             {{{"name", "cloudinitdisk"},
               {"cloudInitNoCloud", {{"secretRef", {{"name", "m1-cloud-init"}}}}}}}}}}}}}},
      {"status",
       {{"printableStatus", "Starting"},
        {"ready", false},
        {"conditions",
         {{{"type", "Synchronized"}, {"status", "False"}, {"message", "no PVC m1-disk-0"}},
          {{"type", "PodScheduled"}, {"status", "False"}, {"message", "0/3 nodes"}},
          {{"type", "Ready"}, {"status", "False"}, {"message", "not ready"}}}}}}};
}

TEST(MachineObserveTest, AVmViewReadsWhatThePlannerNeeds) {
  const VmView v = ViewOfVm(Vm(), kIdentity, true);
  EXPECT_EQ(v.uid, "vm-uid");
  EXPECT_EQ(v.created, "2026-12-07T03:00:00Z");
  EXPECT_TRUE(v.ours);
  EXPECT_FALSE(v.adopted);
  EXPECT_FALSE(v.running);
  EXPECT_FALSE(v.deleting);
  EXPECT_EQ(v.printable_status, "Starting");
  EXPECT_EQ(v.not_synchronized, "no PVC m1-disk-0");
  EXPECT_EQ(v.unschedulable, "0/3 nodes");
  EXPECT_EQ(v.cloud_init_secret, "m1-cloud-init");
  ASSERT_TRUE(v.remove_pvcs_patch.has_value());
  EXPECT_FALSE(v.pvcs_marked_for_removal) << "the VM lacks the removal annotation";

  // A machine that is not being deleted reads the same, without the patch.
  const VmView living = ViewOfVm(Vm(), kIdentity, false);
  EXPECT_EQ(living.uid, "vm-uid");
  EXPECT_EQ(living.printable_status, "Starting");
  EXPECT_EQ(living.cloud_init_secret, "m1-cloud-init");
  EXPECT_FALSE(living.remove_pvcs_patch.has_value());
}

TEST(MachineObserveTest, AVmViewSeesRunningDeletionAdoptionAndTheRemovalMark) {
  Object vm = Vm();
  vm["status"] = {{"printableStatus", "Running"}, {"ready", true}};
  vm["metadata"]["deletionTimestamp"] = "2026-12-07T03:10:00Z";
  vm["metadata"]["annotations"][std::string(harvester::kAnnotationAdopted)] = "true";
  vm["metadata"]["annotations"]["harvesterhci.io/removedPersistentVolumeClaims"] =
      "m1-disk-0-abcde,m1-disk-1-fghij";
  const VmView v = ViewOfVm(vm, kIdentity, true);
  EXPECT_TRUE(v.running);
  EXPECT_TRUE(v.deleting);
  EXPECT_TRUE(v.adopted);
  EXPECT_TRUE(v.pvcs_marked_for_removal);
  EXPECT_TRUE(v.not_synchronized.empty());

  vm["metadata"]["annotations"]["harvesterhci.io/removedPersistentVolumeClaims"] =
      "m1-disk-0-abcde";
  EXPECT_FALSE(ViewOfVm(vm, kIdentity, true).pvcs_marked_for_removal);
}

TEST(MachineObserveTest, AVmOfAnotherClusterOrOfOddShapeIsReadWithoutThrowing) {
  EXPECT_FALSE(ViewOfVm(Vm(), {"mgmt-uid", "team", "c2"}, true).ours);
  Object odd = {{"metadata", {{"name", "m1"}, {"annotations", "not an object"}}},
                {"status", {{"ready", "yes"}, {"conditions", {1, "two", {{"type", 3}}}}}}};
  VmView v;
  ASSERT_NO_THROW(v = ViewOfVm(odd, kIdentity, true));
  EXPECT_FALSE(v.running);
  EXPECT_FALSE(v.adopted);
  EXPECT_TRUE(v.pvcs_marked_for_removal) << "a VM that lists no PVC has nothing to mark";
}

TEST(MachineObserveTest, AVmiViewTakesItsAddressesAndWhenItStartedRunning) {
  Object vmi = {
      {"spec", {{"domain", {{"devices", {{"interfaces", {{{"name", "nic-1"}}}}}}}}}},
      {"status",
       {{"phase", "Running"},
        {"interfaces", {{{"name", "nic-1"}, {"ipAddress", "10.0.0.7"}}}},
        {"phaseTransitionTimestamps",
         {{{"phase", "Scheduled"}, {"phaseTransitionTimestamp", "2026-12-07T03:00:01Z"}},
          {{"phase", "Running"}, {"phaseTransitionTimestamp", "2026-12-07T03:00:05Z"}}}}}}};
  VmiView v = ViewOfVmi(vmi);
  EXPECT_EQ(v.phase, "Running");
  ASSERT_EQ(v.addresses.size(), 1u);
  EXPECT_EQ(v.addresses[0].address, "10.0.0.7");
  EXPECT_EQ(v.running_since, "2026-12-07T03:00:05Z");

  // Without the transitions, the Ready condition's time.
  vmi["status"].erase("phaseTransitionTimestamps");
  vmi["status"]["conditions"] = {
      {{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-12-07T03:00:09Z"}}};
  EXPECT_EQ(ViewOfVmi(vmi).running_since, "2026-12-07T03:00:09Z");
  vmi["status"]["phase"] = "Scheduled";
  EXPECT_EQ(ViewOfVmi(vmi).running_since, "");
}

TEST(MachineObserveTest, ASecretViewReadsOwnershipAndItsAnnotations) {
  Object secret = {{"metadata",
                    {{"name", "m1-cloud-init"},
                     {"labels", Labels(kIdentity)},
                     {"annotations",
                      {{std::string(kAnnotationContentHash), "abc123"},
                       {std::string(kAnnotationUserDataNotMerged), "not YAML"}}}}}};
  SecretView v = ViewOfSecret(secret, kIdentity);
  EXPECT_TRUE(v.ours);
  EXPECT_EQ(v.content_hash, "abc123");
  EXPECT_EQ(v.not_merged_because, "not YAML");
  secret["metadata"].erase("annotations");
  v = ViewOfSecret(secret, {"other", "team", "c1"});
  EXPECT_FALSE(v.ours);
  EXPECT_EQ(v.content_hash, "");
}

kube::ObjectPtr HarvesterClusterObject(const std::string& target_namespace) {
  api::HarvesterCluster hc;
  hc.metadata.name = "c1";
  hc.metadata.namespace_ = "team";
  hc.spec.target_namespace = target_namespace;
  return std::make_shared<const Object>(api::Encode(hc));
}

TEST(DecodedCacheTest, TheSameObjectIsDecodedOnceAndANewVersionAgain) {
  DecodedCache<api::HarvesterCluster> cache;
  const kube::ObjectPtr v1 = HarvesterClusterObject("guests");
  auto a = cache.Get(v1);
  auto b = cache.Get(v1);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get()) << "one decode shared by both reads";
  EXPECT_EQ((*a)->spec.target_namespace, "guests");

  // An equal object under another pointer is another version for the cache.
  const kube::ObjectPtr v2 = HarvesterClusterObject("guests-2");
  auto c = cache.Get(v2);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
  EXPECT_EQ((*c)->spec.target_namespace, "guests-2");
}

TEST(DecodedCacheTest, AFreedObjectNeverMatchesAndTheCacheStaysBounded) {
  DecodedCache<api::HarvesterCluster> cache(2);
  std::shared_ptr<const api::HarvesterCluster> first;
  {
    kube::ObjectPtr gone = HarvesterClusterObject("old");
    first = *cache.Get(gone);
  }
  // Whatever address the next object gets, the freed one's entry is dead.
  for (int i = 0; i < 8; ++i) {
    auto got = cache.Get(HarvesterClusterObject("new-" + std::to_string(i)));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ((*got)->spec.target_namespace, "new-" + std::to_string(i));
  }
  EXPECT_EQ(cache.size(), 2u);
}

TEST(DecodedCacheTest, ReadersThatMissTogetherShareOneEntry) {
  DecodedCache<api::HarvesterCluster> cache;
  const kube::ObjectPtr v1 = HarvesterClusterObject("guests");
  std::vector<std::shared_ptr<const api::HarvesterCluster>> got(8);
  {
    std::vector<std::jthread> readers;
    for (auto& slot : got) {
      readers.emplace_back([&cache, &v1, &slot] { slot = *cache.Get(v1); });
    }
  }
  EXPECT_EQ(cache.size(), 1u) << "one version, one slot";
  // A reader whose decode lost the race returns the stored one, not its own.
  const auto stored = *cache.Get(v1);
  for (const auto& g : got) EXPECT_EQ(g.get(), stored.get());
}

TEST(DecodedCacheTest, AnUndecodableObjectIsAnErrorEachTime) {
  DecodedCache<api::HarvesterCluster> cache;
  auto bad = std::make_shared<const Object>(Object{{"spec", {{"targetNamespace", 42}}}});
  EXPECT_FALSE(cache.Get(bad).ok());
  EXPECT_FALSE(cache.Get(bad).ok());
  EXPECT_EQ(cache.size(), 0u);
}

}  // namespace
}  // namespace caphv::controllers
