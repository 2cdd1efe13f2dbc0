// Unit tests of kube/untrusted_json.h: the bounded decoding of JSON from outside.

#include "kube/untrusted_json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace caphv::kube {
namespace {

std::string Nested(int depth, const std::string& open = "[", const std::string& close = "]") {
  std::string s;
  for (int i = 0; i < depth; ++i) s += open;
  for (int i = 0; i < depth; ++i) s += close;
  return s;
}

TEST(UntrustedJsonTest, NestingIsBounded) {
  EXPECT_FALSE(JsonNestsDeeperThan(Nested(kMaxJsonDepth), kMaxJsonDepth));
  EXPECT_TRUE(JsonNestsDeeperThan(Nested(kMaxJsonDepth + 1), kMaxJsonDepth));
  // Brackets inside strings (escaped quotes too) do not count.
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"a": "[[[[\"[[[[", "b": [1]})", 2));
  EXPECT_TRUE(JsonNestsDeeperThan(R"({"a": {"b": [1]}})", 2));

  bool too_deep = false;
  // What crashed the manager: metadata holding an array nested 100,000 deep.
  const std::string review =
      R"({"request": {"object": {"metadata": {"x": )" + Nested(100000) + "}}}}";
  EXPECT_TRUE(ParseUntrustedJson(review, &too_deep).is_discarded());
  EXPECT_TRUE(too_deep);
  Object ok = ParseUntrustedJson(R"({"metadata": {"name": "a"}})", &too_deep);
  EXPECT_FALSE(too_deep);
  EXPECT_EQ(NameOf(ok), "a");
  EXPECT_TRUE(ParseUntrustedJson("{not json", &too_deep).is_discarded());
  EXPECT_FALSE(too_deep);
}

TEST(UntrustedJsonTest, ListItemsAreHandedOverOneByOne) {
  // A custom resource's list: keys sorted, so "kind" comes after "items".
  const std::string page = R"({"apiVersion": "v1", "items": [
      {"metadata": {"name": "a", "items": [{"nested": 1}]}, "spec": {"x": [1, 2]}},
      7,
      [{"in": "an array"}],
      {"metadata": {"name": "b"}}],
    "kind": "GizmoList", "metadata": {"continue": "c1", "resourceVersion": "42"}})";
  std::vector<Object> items;
  Object rest = ParseUntrustedList(page, [&](Object&& item) { items.push_back(std::move(item)); });
  ASSERT_TRUE(rest.is_object());
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(NameOf(items[0]), "a");
  // Objects nested in an item, even under a key named "items", stay in it.
  EXPECT_EQ(items[0]["metadata"]["items"], Object::parse(R"([{"nested": 1}])"));
  EXPECT_EQ(items[0]["spec"]["x"], Object::parse("[1, 2]"));
  EXPECT_EQ(NameOf(items[1]), "b");
  // What is left is the list without its items.
  EXPECT_EQ(rest["items"], Object::array());
  EXPECT_EQ(rest["kind"], "GizmoList");
  EXPECT_EQ(rest["metadata"]["continue"], "c1");
  EXPECT_EQ(rest["metadata"]["resourceVersion"], "42");

  bool too_deep = false;
  EXPECT_TRUE(ParseUntrustedList(
                  "{\"items\": " + Nested(100000) + "}", [](Object&&) {}, &too_deep)
                  .is_discarded());
  EXPECT_TRUE(too_deep);
  EXPECT_TRUE(
      ParseUntrustedList(R"({"items": [{"a": 1}, {)", [](Object&&) {}, &too_deep).is_discarded());
  EXPECT_FALSE(too_deep);
}

TEST(UntrustedJsonTest, BuildsWhatNlohmannsParserBuilds) {
  const std::string text = R"({"a": [1, -2, 3.5, 1e3, 18446744073709551615, true, false, null],
      "b": {"c": "\u00e9t\u00e9 \"q\"", "d": {}, "e": [], "f": [[], [{}], {"g": [0]}]},
      "dup": 1, "dup": {"last": "wins"}, "": ""})";
  EXPECT_EQ(ParseUntrustedJson(text), Object::parse(text));
  EXPECT_EQ(ParseUntrustedJson("[]"), Object::array());
  EXPECT_EQ(ParseUntrustedJson("\"s\""), "s");
  EXPECT_EQ(ParseUntrustedJson("7"), 7);
  for (const char* bad : {"", "{", "[1,]", R"({"a" 1})", "{} {}", "nul"}) {
    EXPECT_TRUE(ParseUntrustedJson(bad).is_discarded()) << bad;
  }
}

const JsonKeep kEventWithoutManagedFields{kWatchEventObject, &FieldMask::WithoutManagedFields()};

TEST(UntrustedJsonTest, TheWatchedObjectsManagedFieldsAreLeftOut) {
  const std::string event = R"({"type": "MODIFIED",
      "metadata": {"managedFields": ["not the object's"]},
      "object": {"kind": "VirtualMachine",
        "metadata": {"name": "vm-1", "managedFields": [{"manager": "caphv",
            "fieldsV1": {"f:spec": {"f:a": {}, "f:b": {".": {}}}}}],
          "labels": {"managedFields": "a label"}},
        "spec": {"metadata": {"managedFields": [1]}}}})";
  Object parsed = ParseUntrustedJson(event, nullptr, kEventWithoutManagedFields);
  Object expected = Object::parse(event);
  expected["object"]["metadata"].erase("managedFields");
  EXPECT_EQ(parsed, expected);
  // Only that path: the same key elsewhere stays.
  EXPECT_EQ(parsed["metadata"]["managedFields"], Object::parse(R"(["not the object's"])"));
  EXPECT_EQ(parsed["object"]["spec"]["metadata"]["managedFields"], Object::parse("[1]"));

  // A value left out is still bounded and still has to be JSON.
  bool too_deep = false;
  const std::string deep = R"({"object": {"metadata": {"managedFields": )" + Nested(100000) + "}}}";
  EXPECT_TRUE(ParseUntrustedJson(deep, &too_deep, kEventWithoutManagedFields).is_discarded());
  EXPECT_TRUE(too_deep);
  EXPECT_TRUE(ParseUntrustedJson(R"({"object": {"metadata": {"managedFields": [1,]}}})", &too_deep,
                                 kEventWithoutManagedFields)
                  .is_discarded());
  EXPECT_FALSE(too_deep);
}

TEST(UntrustedJsonTest, ListItemsLeaveTheirManagedFieldsOut) {
  const std::string page = R"({"kind": "VirtualMachineList",
      "metadata": {"resourceVersion": "9", "managedFields": "the list's own"},
      "items": [
        {"metadata": {"name": "a", "managedFields": [{"manager": "x"}]}, "spec": {"n": 1}},
        {"metadata": {"name": "b"}, "status": {"metadata": {"managedFields": 2}}}]})";
  std::vector<Object> items;
  Object rest = ParseUntrustedList(
      page, [&](Object&& item) { items.push_back(std::move(item)); }, nullptr,
      &FieldMask::WithoutManagedFields());
  ASSERT_EQ(items.size(), 2U);
  EXPECT_EQ(items[0], Object::parse(R"({"metadata": {"name": "a"}, "spec": {"n": 1}})"));
  EXPECT_EQ(items[1],
            Object::parse(
                R"({"metadata": {"name": "b"}, "status": {"metadata": {"managedFields": 2}}})"));
  EXPECT_EQ(rest["metadata"]["managedFields"], "the list's own");
  EXPECT_EQ(rest["items"], Object::array());
}

}  // namespace
}  // namespace caphv::kube
