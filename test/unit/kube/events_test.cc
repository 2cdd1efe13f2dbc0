// Unit tests of event correlation: the aggregation key and the LRU that maps
// a repeated event to the Event object already written, and forgetting the
// entries of a deleted object.

#include "kube/events.h"

#include <gtest/gtest.h>

namespace caphv::kube {
namespace {

Object Machine(std::string name = "m1", std::string uid = "u1") {
  return {{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
          {"kind", "HarvesterMachine"},
          {"metadata",
           {{"namespace", "ns"},
            {"name", name},
            {"uid", uid},
            {"resourceVersion", "7"},
            {"labels", {{"a", "b"}}}}},
          {"spec", {{"x", 1}}}};
}

std::string Key(const Object& obj, std::string type = "Normal", std::string reason = "Created",
                std::string message = "VM created") {
  return EventAggregationKey(ObjectReferenceOf(obj), type, reason, message, "caphv", "host-a");
}

TEST(ObjectReferenceTest, KeepsIdentityFieldsOnly) {
  Object ref = ObjectReferenceOf(Machine());
  EXPECT_EQ(ref, Object({{"apiVersion", "infrastructure.cluster.x-k8s.io/v1alpha1"},
                         {"kind", "HarvesterMachine"},
                         {"namespace", "ns"},
                         {"name", "m1"},
                         {"uid", "u1"},
                         {"resourceVersion", "7"}}));
  Object node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", "n"}}}};
  EXPECT_FALSE(ObjectReferenceOf(node).contains("namespace"));
}

TEST(EventAggregationKeyTest, SameObjectReasonMessageAggregate) {
  EXPECT_EQ(Key(Machine()), Key(Machine()));
  // resourceVersion changes between reconciles but is not part of the key.
  Object later = Machine();
  later["metadata"]["resourceVersion"] = "8";
  EXPECT_EQ(Key(Machine()), Key(later));
}

TEST(EventAggregationKeyTest, AnyIdentityFieldSeparates) {
  const std::string base = Key(Machine());
  EXPECT_NE(base, Key(Machine("m2")));
  EXPECT_NE(base, Key(Machine("m1", "u2")));  // same name, recreated object
  EXPECT_NE(base, Key(Machine(), "Warning"));
  EXPECT_NE(base, Key(Machine(), "Normal", "Deleted"));
  EXPECT_NE(base, Key(Machine(), "Normal", "Created", "VM created again"));
  EXPECT_NE(base, EventAggregationKey(ObjectReferenceOf(Machine()), "Normal", "Created",
                                      "VM created", "other-component", "host-a"));
}

TEST(EventAggregationKeyTest, FieldBoundariesAreUnambiguous) {
  // Plain concatenation would make these equal ("ab" + "c" == "a" + "bc").
  EXPECT_NE(Key(Machine(), "Normal", "ab", "c"), Key(Machine(), "Normal", "a", "bc"));
}

TEST(EventCorrelatorTest, RepeatsKeepNameAndFirstTimestampAndCount) {
  EventCorrelator c(10);
  auto first = c.Observe("k", "m1.aaa", "ns", "T1");
  EXPECT_EQ(first.count, 1);
  EXPECT_EQ(first.name, "m1.aaa");
  auto second = c.Observe("k", "m1.bbb", "ns", "T2");
  EXPECT_EQ(second.count, 2);
  EXPECT_EQ(second.name, "m1.aaa");
  EXPECT_EQ(second.first_timestamp, "T1");
  EXPECT_EQ(c.Observe("k", "m1.ccc", "ns", "T3").count, 3);
  EXPECT_EQ(c.Observe("other", "m1.ddd", "ns", "T3").count, 1);
  EXPECT_EQ(c.size(), 2u);
}

TEST(EventCorrelatorTest, LeastRecentlyUsedIsEvicted) {
  EventCorrelator c(2);
  c.Observe("a", "a.1", "ns", "T");
  c.Observe("b", "b.1", "ns", "T");
  c.Observe("a", "a.2", "ns", "T");  // a is now most recent
  c.Observe("c", "c.1", "ns", "T");  // evicts b
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.Observe("a", "a.3", "ns", "T").count, 3);
  auto b = c.Observe("b", "b.2", "ns", "T");  // forgotten: a new Event
  EXPECT_EQ(b.count, 1);
  EXPECT_EQ(b.name, "b.2");
}

TEST(EventCorrelatorTest, EraseForgets) {
  EventCorrelator c(4);
  c.Observe("k", "n1", "ns", "T");
  c.Erase("k");
  c.Erase("missing");
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(c.Observe("k", "n2", "ns", "T").name, "n2");
}

TEST(EventCorrelatorTest, EraseObjectForgetsEveryKeyOfThatObjectOnly) {
  EventCorrelator c(16);
  const std::string m1 = EventObjectKey("HarvesterMachine", "ns", "m1");
  const std::string m2 = EventObjectKey("HarvesterMachine", "ns", "m2");
  c.Observe("m1-created", "m1.a", "ns", "T", m1);
  c.Observe("m1-deleting", "m1.b", "ns", "T", m1);
  c.Observe("m2-created", "m2.a", "ns", "T", m2);
  EXPECT_EQ(c.EraseObject(m1), 2u);
  EXPECT_EQ(c.EraseObject(m1), 0u);
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.Observe("m1-created", "m1.c", "ns", "T", m1).count, 1);  // a new Event
  EXPECT_EQ(c.Observe("m2-created", "m2.b", "ns", "T", m2).count, 2);  // still aggregates
}

TEST(EventCorrelatorTest, EvictionKeepsObjectErasureConsistent) {
  EventCorrelator c(1);
  const std::string m1 = EventObjectKey("HarvesterMachine", "ns", "m1");
  c.Observe("a", "a.1", "ns", "T", m1);
  c.Observe("b", "b.1", "ns", "T", m1);  // evicts a
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(c.EraseObject(m1), 1u);
  EXPECT_EQ(c.size(), 0u);
}

TEST(EventObjectKeyTest, KindNamespaceNameAreUnambiguous) {
  EXPECT_NE(EventObjectKey("A", "b", "c"), EventObjectKey("A", "", "bc"));
  EXPECT_NE(EventObjectKey("HarvesterMachine", "ns", "m"), EventObjectKey("Machine", "ns", "m"));
}

}  // namespace
}  // namespace caphv::kube
