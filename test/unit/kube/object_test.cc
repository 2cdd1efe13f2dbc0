// File: test/unit/kube/object_test.cc
//
// SameBut and ChangedBeyondResourceVersion: what an informer compares of
// two versions of a cached object. Find and StringAt: reading a field of an
// object of any shape in place.

#include "kube/object.h"

#include <gtest/gtest.h>

#include "kube/json_path.h"

namespace caphv::kube {
namespace {

TEST(ChangedBeyondResourceVersionTest, FalseForUpdatesToFieldsLeftOut) {
  const auto update = ChangedBeyondResourceVersion;
  // A compacted VMI: what the cache keeps of it.
  const Object base = Object::parse(R"({"metadata": {"name": "vm", "resourceVersion": "10"},
      "status": {"phase": "Scheduled", "interfaces": [{"name": "nic-1"}]}})");
  Object same = base;
  same["metadata"]["resourceVersion"] = "11";
  // A new resourceVersion alone: a change to a field the transform removed.
  EXPECT_FALSE(update(base, same));
  same["metadata"]["managedFields"] = Object::array();
  EXPECT_FALSE(update(base, same));
  // A change to anything kept passes, the status included.
  Object phase = same;
  phase["status"]["phase"] = "Running";
  EXPECT_TRUE(update(base, phase));
  Object ip = same;
  ip["status"]["interfaces"][0]["ipAddress"] = "10.0.0.5";
  EXPECT_TRUE(update(base, ip));
  Object deleting = same;
  deleting["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z";
  EXPECT_TRUE(update(base, deleting));
  Object no_status = same;
  no_status.erase("status");
  EXPECT_TRUE(update(base, no_status));
  EXPECT_TRUE(update(no_status, same));
  // A resync (same resourceVersion) passes; so does what is not an object.
  EXPECT_TRUE(update(base, base));
  EXPECT_TRUE(update(Object("x"), Object("y")));
}

TEST(FindTest, ReadsInPlaceAndStopsAtAnythingButAnObject) {
  const Object o = Object::parse(
      R"({"metadata": {"name": "vm-1", "labels": {"a": "b"}, "generation": 3},
          "spec": ["not", "an", "object"], "status": null})");
  const Object* labels = Find(o, {"metadata", "labels"});
  ASSERT_NE(labels, nullptr);
  EXPECT_EQ(labels, &o["metadata"]["labels"]) << "the object itself, not a copy";
  EXPECT_EQ(Find(o, {}), &o);
  EXPECT_EQ(Find(o, {"metadata", "missing"}), nullptr);
  EXPECT_EQ(Find(o, {"spec", "0"}), nullptr) << "an array is not walked into";
  EXPECT_EQ(Find(o, {"status", "phase"}), nullptr);
  EXPECT_EQ(Find(Object("text"), {"metadata"}), nullptr);

  EXPECT_EQ(StringAt(o, {"metadata", "name"}), "vm-1");
  EXPECT_EQ(StringAt(o, {"metadata", "generation"}), "") << "a number is not a string";
  EXPECT_EQ(StringAt(o, {"metadata", "labels"}), "");
  EXPECT_EQ(StringAt(o, {"spec", "x"}), "");
  EXPECT_EQ(NameOf(o), "vm-1");
  EXPECT_EQ(NamespaceOf(o), "");
}

TEST(LabelsOfTest, KeepsTheStringLabelsOfAnyShape) {
  const Object o = Object::parse(R"({"metadata": {"labels": {"a": "b", "n": 1, "c": ""}}})");
  EXPECT_EQ(LabelsOf(o), (std::map<std::string, std::string>{{"a", "b"}, {"c", ""}}));
  EXPECT_TRUE(LabelsOf(Object::parse(R"({"metadata": {"labels": ["a"]}})")).empty());
  EXPECT_TRUE(LabelsOf(Object::parse(R"({"metadata": "x"})")).empty());
  EXPECT_TRUE(LabelsOf(Object("text")).empty());
}

}  // namespace
}  // namespace caphv::kube
