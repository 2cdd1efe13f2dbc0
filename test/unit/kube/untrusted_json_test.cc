// Unit tests of kube/untrusted_json.h: the bounded decoding of JSON from outside.

#include "kube/untrusted_json.h"

#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace caphv::kube
