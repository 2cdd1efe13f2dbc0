// File: test/unit/kube/object_test.cc
//
// KeepOnly: the projection informer transforms make of cached objects.

#include "kube/object.h"

#include <gtest/gtest.h>

namespace caphv::kube {
namespace {

TEST(KeepOnlyTest, KeepsTheListedPathsAndTheTypeNothingElse) {
  Object o = Object::parse(R"({"apiVersion": "v1", "kind": "Thing",
      "metadata": {"name": "a", "namespace": "ns", "managedFields": [{"manager": "x"}],
                   "labels": {"l": "v"}},
      "spec": {"big": {"deep": [1, 2, 3]}, "small": "s"},
      "status": {"phase": "Running", "other": 1}})");
  KeepOnly(o, {{"metadata", "name"},
               {"metadata", "namespace"},
               {"metadata", "labels"},
               {"spec", "small"},
               {"status", "phase"},
               {"status", "absent"},
               {"nowhere", "x"}});
  EXPECT_EQ(o, Object::parse(R"({"apiVersion": "v1", "kind": "Thing",
      "metadata": {"name": "a", "namespace": "ns", "labels": {"l": "v"}},
      "spec": {"small": "s"}, "status": {"phase": "Running"}})"));
  EXPECT_EQ(KeyOf(o), "ns/a");
}

TEST(KeepOnlyTest, CachedMetadataPlusMoreAndAPathThroughANonObject) {
  Object o = Object::parse(R"({"metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
      "deletionTimestamp": "t", "finalizers": ["f"], "generateName": "g"},
      "spec": "not an object"})");
  KeepOnly(o, kCachedMetadata, {{"spec", "field"}});
  EXPECT_EQ(o, Object::parse(R"({"metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
      "deletionTimestamp": "t", "finalizers": ["f"]}})"));
}

TEST(KeepOnlyTest, ANonObjectIsLeftAsItIs) {
  Object o = Object::array({1, 2});
  KeepOnly(o, {{"metadata", "name"}});
  EXPECT_EQ(o, Object::array({1, 2}));
}

}  // namespace
}  // namespace caphv::kube
