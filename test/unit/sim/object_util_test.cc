// Unit tests for sim/object_util.h: when the simulator considers an object
// already in the wanted state.

#include "sim/object_util.h"

#include <gtest/gtest.h>

namespace caphv::sim::internal {
namespace {

TEST(Covers, SubsetOfFieldsMatches) {
  Object have = {{"a", 1}, {"b", {{"c", "x"}, {"d", true}}}, {"extra", 2}};
  EXPECT_TRUE(Covers(Object{{"a", 1}, {"b", {{"c", "x"}}}}, have));
  EXPECT_FALSE(Covers(Object{{"a", 2}}, have));
  EXPECT_FALSE(Covers(Object{{"missing", 1}}, have));
}

TEST(Covers, IgnoresTimestampsAndEmptyCollections) {
  Object have = {{"conditions", Object::array({{{"type", "Ready"}, {"status", "True"}}})}};
  Object want = {{"conditions", Object::array({{{"type", "Ready"},
                                                {"status", "True"},
                                                {"lastTransitionTime", "2026-01-01T00:00:00Z"}}})},
                 {"annotations", Object::object()},
                 {"list", Object::array()}};
  EXPECT_TRUE(Covers(want, have));
  want["conditions"][0]["status"] = "False";
  EXPECT_FALSE(Covers(want, have));
}

TEST(Covers, ListsMustHaveTheSameLength) {
  EXPECT_FALSE(Covers(Object{{"l", {1, 2}}}, Object{{"l", {1, 2, 3}}}));
  EXPECT_TRUE(Covers(Object{{"l", {1, 2}}}, Object{{"l", {1, 2}}}));
}

TEST(Deleting, ReadsDeletionTimestamp) {
  EXPECT_FALSE(Deleting(Object{{"metadata", {{"name", "x"}}}}));
  EXPECT_TRUE(Deleting(Object{{"metadata", {{"deletionTimestamp", "2026-01-01T00:00:00Z"}}}}));
}

}  // namespace
}  // namespace caphv::sim::internal
