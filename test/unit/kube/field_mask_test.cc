// File: test/unit/kube/field_mask_test.cc
//
// FieldMask: what a cache keeps of an object, applied to a built object
// (Apply) and while parsing (ParseUntrustedJson, ParseUntrustedList). Both
// must build the same.

#include "kube/field_mask.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kube/untrusted_json.h"

namespace caphv::kube {
namespace {

Object Applied(const FieldMask& mask, const std::string& text) {
  Object o = Object::parse(text);
  mask.Apply(o);
  return o;
}

// What the parser builds of `text` itself, of a watch event carrying it and
// of a list page holding it; each must be what Apply makes of it.
void ExpectParsedAsApplied(const FieldMask& mask, const std::string& text) {
  const Object applied = Applied(mask, text);
  EXPECT_EQ(ParseUntrustedJson(text, nullptr, JsonKeep{{}, &mask}), applied) << text;

  const std::string event = R"({"type": "MODIFIED", "object": )" + text + "}";
  Object parsed = ParseUntrustedJson(event, nullptr, JsonKeep{kWatchEventObject, &mask});
  EXPECT_EQ(parsed["type"], "MODIFIED");
  EXPECT_EQ(parsed["object"], applied) << event;

  if (!applied.is_object()) return;
  const std::string page =
      R"({"metadata": {"resourceVersion": "3"}, "items": [)" + text + ", " + text + "]}";
  std::vector<Object> items;
  Object rest = ParseUntrustedList(
      page, [&](Object&& item) { items.push_back(std::move(item)); }, nullptr, &mask);
  EXPECT_EQ(rest["metadata"]["resourceVersion"], "3");
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(items[0], applied) << page;
  EXPECT_EQ(items[1], applied) << page;
}

TEST(FieldMaskTest, KeepsTheListedPathsAndTheTypeNothingElse) {
  const FieldMask mask({{"metadata", "name"},
                        {"metadata", "namespace"},
                        {"metadata", "labels"},
                        {"spec", "small"},
                        {"status", "phase"},
                        {"status", "absent"},
                        {"nowhere", "x"}});
  const std::string thing = R"({"apiVersion": "v1", "kind": "Thing",
      "metadata": {"name": "a", "namespace": "ns", "managedFields": [{"manager": "x"}],
                   "labels": {"l": "v"}},
      "spec": {"big": {"deep": [1, 2, 3]}, "small": "s"},
      "status": {"phase": "Running", "other": 1}})";
  const Object o = Applied(mask, thing);
  EXPECT_EQ(o, Object::parse(R"({"apiVersion": "v1", "kind": "Thing",
      "metadata": {"name": "a", "namespace": "ns", "labels": {"l": "v"}},
      "spec": {"small": "s"}, "status": {"phase": "Running"}})"));
  EXPECT_EQ(KeyOf(o), "ns/a");
  ExpectParsedAsApplied(mask, thing);
}

TEST(FieldMaskTest, CachedMetadataPlusMoreAndAPathThroughANonObject) {
  const FieldMask mask(kCachedMetadata, {{"spec", "field"}, {"status", "ready"}});
  const std::string thing = R"({"metadata": {"name": "a", "uid": "u", "resourceVersion": "7",
      "deletionTimestamp": "t", "finalizers": ["f"], "generateName": "g"},
      "spec": "not an object", "status": [{"ready": true}]})";
  EXPECT_EQ(Applied(mask, thing), Object::parse(R"({"metadata": {"name": "a", "uid": "u",
      "resourceVersion": "7", "deletionTimestamp": "t", "finalizers": ["f"]}})"));
  ExpectParsedAsApplied(mask, thing);
}

TEST(FieldMaskTest, AnObjectOnAPathLeftWithNothingIsLeftOutButNotTheRoot) {
  const FieldMask mask({{"metadata", "labels", "zone"}, {"status", "ready"}});
  // Neither the zone label nor readiness: no labels, metadata or status.
  const std::string without = R"({"metadata": {"labels": {"other": "x"}, "name": "n"},
      "status": {}, "spec": {"ready": true}})";
  EXPECT_EQ(Applied(mask, without), Object::object());
  ExpectParsedAsApplied(mask, without);
  // What a path ends at is kept whole, an empty object too.
  const std::string with = R"({"metadata": {"labels": {"zone": "z1", "other": "x"}},
      "status": {"ready": {}}})";
  EXPECT_EQ(Applied(mask, with),
            Object::parse(R"({"metadata": {"labels": {"zone": "z1"}}, "status": {"ready": {}}})"));
  ExpectParsedAsApplied(mask, with);
}

TEST(FieldMaskTest, ANonObjectAtTheRootIsLeftAsItIs) {
  const FieldMask mask({{"metadata", "name"}});
  for (const std::string text : {"[1, 2]", R"("s")", "7", "null"}) {
    EXPECT_EQ(Applied(mask, text), Object::parse(text)) << text;
    ExpectParsedAsApplied(mask, text);
  }
}

TEST(FieldMaskTest, WithoutManagedFieldsKeepsAllButThem) {
  const FieldMask& mask = FieldMask::WithoutManagedFields();
  const std::string thing = R"({"kind": "VirtualMachine",
      "metadata": {"name": "vm-1", "managedFields": [{"manager": "caphv"}],
                   "labels": {"managedFields": "a label"}},
      "spec": {"metadata": {"managedFields": [1]}}, "extra": [1, {"a": null}]})";
  Object expected = Object::parse(thing);
  expected["metadata"].erase("managedFields");
  EXPECT_EQ(Applied(mask, thing), expected);
  ExpectParsedAsApplied(mask, thing);
  // Metadata that is not an object is kept as it is; managedFields of any
  // type are left out.
  for (const std::string text : {R"({"metadata": "odd"})", R"({"metadata": {"managedFields": 3}})",
                                 R"({"metadata": {"managedFields": {"a": [1]}, "name": "x"}})"}) {
    ExpectParsedAsApplied(mask, text);
  }
  EXPECT_EQ(Applied(mask, R"({"metadata": {"managedFields": 3}})"),
            Object::parse(R"({"metadata": {}})"));
}

TEST(FieldMaskTest, TheLastOfDuplicateKeysWinsAsInAWholeParse) {
  const FieldMask mask({{"status", "phase"}, {"spec", "a"}});
  for (const std::string text : {
           R"({"status": {"phase": "Running"}, "status": "gone"})",
           R"({"status": {"phase": "Running"}, "status": {"other": 1}})",
           R"({"status": "gone", "status": {"phase": "Running"}})",
           R"({"spec": {"a": 1, "a": [2]}, "spec": {"a": {"b": 3}}})",
           R"({"status": {"phase": 1}, "status": [1]})",
       }) {
    ExpectParsedAsApplied(mask, text);
  }
}

TEST(FieldMaskTest, AValueLeftOutIsStillBoundedAndStillHasToBeJson) {
  const FieldMask mask({{"metadata", "name"}});
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += '[';
  for (int i = 0; i < 100000; ++i) deep += ']';
  bool too_deep = false;
  EXPECT_TRUE(ParseUntrustedJson(R"({"spec": )" + deep + "}", &too_deep, JsonKeep{{}, &mask})
                  .is_discarded());
  EXPECT_TRUE(too_deep);
  EXPECT_TRUE(ParseUntrustedJson(R"({"spec": [1,], "metadata": {"name": "a"}})", &too_deep,
                                 JsonKeep{{}, &mask})
                  .is_discarded());
  EXPECT_FALSE(too_deep);
}

}  // namespace
}  // namespace caphv::kube
