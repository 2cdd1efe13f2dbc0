// Unit tests of kube/untrusted_json.h: the bounded decoding of JSON from outside.

#include "kube/untrusted_json.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "support/same_json.h"

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

// Object::parse's answer, or a discarded value when it refuses `text`.
Object NlohmannParse(const std::string& text) {
  return Object::parse(text, nullptr, /*allow_exceptions=*/false);
}

void ExpectAsNlohmann(const std::string& text) {
  const Object ours = ParseUntrustedJson(text);
  const Object theirs = NlohmannParse(text);
  EXPECT_EQ(ours.is_discarded(), theirs.is_discarded()) << text;
  if (!theirs.is_discarded()) {
    EXPECT_TRUE(testing::SameJson(ours, theirs)) << text << " → " << ours;
  }
}

TEST(UntrustedJsonTest, NumbersStringsAndRefusalsAreNlohmannsTypeForType) {
  // Integers: unsigned unless signed, as nlohmann reads them; past 64 bits a
  // double; past a double's range refused.
  for (const char* number : {"0",
                             "-0",
                             "7",
                             "-7",
                             "9223372036854775807",
                             "9223372036854775808",
                             "-9223372036854775808",
                             "-9223372036854775809",
                             "18446744073709551615",
                             "18446744073709551616",
                             "0.1",
                             "-0.0",
                             "1e2",
                             "1E-2",
                             "2.2250738585072011e-308",
                             "100e909009000",
                             "-1e400",
                             "1e-400",
                             "0.30000000000000004",
                             "123456789012345678901234567890"}) {
    ExpectAsNlohmann(number);
    ExpectAsNlohmann(std::string("[") + number + "]");
    ExpectAsNlohmann(std::string(R"({"n": )") + number + "}");
  }
  // Strings: escapes, surrogate pairs, and what UTF-8 or JSON forbids.
  for (const char* text :
       {R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u20ac\ud83d\ude00")", R"("\ud800")", R"("\udc00x")",
        R"("\ud800\u0041")", "\"\xc3\xa9\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
        "\"\xc0\xaf\"", "\"tab\there\"", R"("\x")", R"({"k\u0000": 1})"}) {
    ExpectAsNlohmann(text);
  }
  // Documents: what follows the value, whitespace, literals, nesting.
  for (const char* text : {" {} \n", "{}x", "{} {}", "[1,]", "[01]", "[.5]", "[1.]", "[+1]",
                           "truex", "[true, false, null]", "[nul]", "{\"a\":1,}", "/* c */ 1",
                           "\xef\xbb\xbf{}", "[1] \t\r\n"}) {
    ExpectAsNlohmann(text);
  }
  // A NUL ends nlohmann's input outside a string: what comes after it is not read.
  ExpectAsNlohmann(std::string("{}\0garbage", 10));
  ExpectAsNlohmann(std::string("[1,\0 2]", 7));
  ExpectAsNlohmann(Nested(kMaxJsonDepth));
  EXPECT_TRUE(ParseUntrustedJson(Nested(kMaxJsonDepth + 1)).is_discarded());
}

TEST(UntrustedJsonTest, AListRefusedPastItsFirstItemsHandsEachOverOnce) {
  // The items before the flaw are handed over once, whichever parser reads them.
  for (const std::string tail : {R"(, {"name": "c"} x)", R"(, {"n": 1e999}])", R"(,]})"}) {
    const std::string page = R"({"items": [{"name": "a"}, {"name": "b"})" + tail;
    std::vector<std::string> names;
    const Object rest = ParseUntrustedList(
        page, [&](Object&& item) { names.push_back(item.value("name", std::string("?"))); });
    EXPECT_TRUE(rest.is_discarded()) << page;
    ASSERT_GE(names.size(), 2U) << page;
    EXPECT_EQ(names[0], "a");
    EXPECT_EQ(names[1], "b");
    const std::set<std::string> distinct(names.begin(), names.end());
    EXPECT_EQ(distinct.size(), names.size()) << page;
  }
  // A list nlohmann accepts and Boost refuses (bytes after a NUL) hands each item once too.
  const std::string page =
      std::string(R"({"items": [{"name": "a"}, {"name": "b"}]})") + std::string("\0x", 2);
  std::vector<std::string> names;
  const Object rest = ParseUntrustedList(
      page, [&](Object&& item) { names.push_back(item.value("name", std::string("?"))); });
  ASSERT_FALSE(rest.is_discarded());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
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
