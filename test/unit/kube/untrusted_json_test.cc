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

}  // namespace
}  // namespace caphv::kube
