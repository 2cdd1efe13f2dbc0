// File: test/unit/workload/etcd_member_test.cc
//
// The etcd member of a control-plane machine's Node: how it is read, when
// RKE2 is asked to remove it, and the Node finalizer's patches.

#include "workload/etcd_member.h"

#include <gtest/gtest.h>

namespace caphv::workload {
namespace {

using kube::Object;

Object EtcdNode(Object annotations = Object::object(), Object finalizers = Object::array()) {
  return {{"metadata",
           {{"name", "cp-0"},
            {"resourceVersion", "42"},
            {"labels",
             {{"node-role.kubernetes.io/etcd", "true"},
              {"node-role.kubernetes.io/control-plane", "true"}}},
            {"annotations", annotations},
            {"finalizers", finalizers}}}};
}

TEST(EtcdMemberTest, ViewReadsRoleAnnotationsAndFinalizer) {
  auto v = ViewOfEtcdNode(EtcdNode(
      {{"etcd.rke2.cattle.io/node-name", "cp-0-1a2b3c4d"}, {"etcd.rke2.cattle.io/remove", "true"}},
      Object::array({"other", std::string(kEtcdNodeFinalizer)})));
  EXPECT_EQ(v.name, "cp-0");
  EXPECT_TRUE(v.etcd);
  EXPECT_EQ(v.member, "cp-0-1a2b3c4d");
  EXPECT_TRUE(v.removal_requested);
  EXPECT_TRUE(v.removed_member.empty());
  EXPECT_TRUE(v.has_finalizer);
  EXPECT_FALSE(v.deleting);
  EXPECT_EQ(v.resource_version, "42");
  EXPECT_TRUE(HoldsEtcdMember(v));

  Object worker = {{"metadata", {{"name", "w-0"}, {"labels", {{"kubernetes.io/os", "linux"}}}}}};
  EXPECT_FALSE(ViewOfEtcdNode(worker).etcd);
  EXPECT_FALSE(HoldsEtcdMember(ViewOfEtcdNode(worker)));
}

TEST(EtcdMemberTest, RemovalIsRequestedOnceThenAwaitedThenDone) {
  auto v = ViewOfEtcdNode(EtcdNode({{"etcd.rke2.cattle.io/node-name", "cp-0-1a2b3c4d"}}));
  auto d = DecideEtcdRemoval(v, 2);
  ASSERT_EQ(d.outcome, EtcdRemovalDecision::Outcome::kRequest);
  EXPECT_EQ(d.patch["metadata"]["annotations"]["etcd.rke2.cattle.io/remove"], "true");
  EXPECT_EQ(d.patch["metadata"]["resourceVersion"], "42");  // only the Node it was computed from

  v.removal_requested = true;
  EXPECT_EQ(DecideEtcdRemoval(v, 2).outcome, EtcdRemovalDecision::Outcome::kWaiting);

  v.removed_member = "cp-0-1a2b3c4d";
  d = DecideEtcdRemoval(v, 2);
  EXPECT_EQ(d.outcome, EtcdRemovalDecision::Outcome::kRemoved);
  EXPECT_NE(d.message.find("cp-0-1a2b3c4d"), std::string::npos) << d.message;
  EXPECT_FALSE(HoldsEtcdMember(v));
}

TEST(EtcdMemberTest, TheLastMemberIsNeverRemovedNorANodeWithoutEtcd) {
  auto v = ViewOfEtcdNode(EtcdNode({{"etcd.rke2.cattle.io/node-name", "cp-0-1a2b3c4d"}}));
  auto d = DecideEtcdRemoval(v, 0);
  EXPECT_EQ(d.outcome, EtcdRemovalDecision::Outcome::kLastVoter);
  EXPECT_TRUE(d.patch.is_null());
  v.etcd = false;
  EXPECT_EQ(DecideEtcdRemoval(v, 2).outcome, EtcdRemovalDecision::Outcome::kNothing);
}

TEST(EtcdMemberTest, FinalizerIsAddedToAMemberNodeAndRemovedKeepingOthers) {
  auto v = ViewOfEtcdNode(EtcdNode(Object::object(), Object::array({"other"})));
  auto add = AddEtcdNodeFinalizer(v);
  ASSERT_TRUE(add);
  EXPECT_EQ((*add)["metadata"]["finalizers"],
            Object::array({"other", std::string(kEtcdNodeFinalizer)}));
  EXPECT_EQ((*add)["metadata"]["resourceVersion"], "42");
  EXPECT_FALSE(RemoveEtcdNodeFinalizer(v));  // not ours yet

  v = ViewOfEtcdNode(
      EtcdNode(Object::object(), Object::array({"other", std::string(kEtcdNodeFinalizer)})));
  EXPECT_FALSE(AddEtcdNodeFinalizer(v));
  auto remove = RemoveEtcdNodeFinalizer(v);
  ASSERT_TRUE(remove);
  EXPECT_EQ((*remove)["metadata"]["finalizers"], Object::array({"other"}));

  // Not on a Node being deleted, nor on one whose member RKE2 removed.
  Object deleting = EtcdNode();
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_FALSE(AddEtcdNodeFinalizer(ViewOfEtcdNode(deleting)));
  EXPECT_FALSE(AddEtcdNodeFinalizer(
      ViewOfEtcdNode(EtcdNode({{"etcd.rke2.cattle.io/removed-node-name", "cp-0-1a2b3c4d"}}))));
}

}  // namespace
}  // namespace caphv::workload
