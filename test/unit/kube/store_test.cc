// File: test/unit/kube/store_test.cc
//
// Store: keys, namespace/label/custom indexes kept in step with updates,
// deletes and replaces; CompactObject.

#include "kube/store.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace caphv::kube {
namespace {

ObjectPtr Make(std::string ns, std::string name, Object labels = Object::object(),
               std::string rv = "1") {
  Object o = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"resourceVersion", rv}, {"labels", labels}}}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return std::make_shared<const Object>(std::move(o));
}

std::vector<std::string> Names(std::vector<ObjectPtr> objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(KeyOf(*o));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(StoreTest, UpsertGetDelete) {
  Store s;
  EXPECT_EQ(s.Upsert(Make("ns1", "a")), nullptr);
  ObjectPtr old = s.Upsert(Make("ns1", "a", Object::object(), "2"));
  ASSERT_NE(old, nullptr);
  EXPECT_EQ(ResourceVersionOf(*old), "1");
  EXPECT_EQ(ResourceVersionOf(*s.Get("ns1/a")), "2");
  EXPECT_EQ(ResourceVersionOf(*s.Get("ns1", "a")), "2");
  s.Upsert(Make("", "cluster-scoped"));
  EXPECT_NE(s.Get("cluster-scoped"), nullptr);
  EXPECT_EQ(s.Size(), 2u);
  EXPECT_NE(s.Delete("ns1/a"), nullptr);
  EXPECT_EQ(s.Delete("ns1/a"), nullptr);
  EXPECT_EQ(s.Get("ns1/a"), nullptr);
  EXPECT_EQ(s.Size(), 1u);
}

TEST(StoreTest, NamespaceIndex) {
  Store s;
  s.Upsert(Make("ns1", "a"));
  s.Upsert(Make("ns1", "b"));
  s.Upsert(Make("ns2", "a"));
  EXPECT_EQ(Names(s.List("ns1")), (std::vector<std::string>{"ns1/a", "ns1/b"}));
  EXPECT_EQ(Names(s.List("ns2")), (std::vector<std::string>{"ns2/a"}));
  EXPECT_EQ(Names(s.List()).size(), 3u);
  EXPECT_TRUE(s.List("none").empty());
  s.Delete("ns2/a");
  EXPECT_TRUE(s.List("ns2").empty());
  auto values = s.IndexValues(kNamespaceIndex);
  EXPECT_EQ(values, (std::vector<std::string>{"ns1"}));
}

TEST(StoreTest, LabelIndexFollowsUpdates) {
  Store s;
  ASSERT_TRUE(s.AddIndexers({{LabelIndexName("app"), IndexByLabel("app")}}).ok());
  s.Upsert(Make("ns", "a", {{"app", "web"}}));
  s.Upsert(Make("ns", "b", {{"app", "web"}}));
  s.Upsert(Make("ns", "c", {{"app", "db"}}));
  s.Upsert(Make("ns", "d"));
  EXPECT_EQ(Names(*s.ByIndex(LabelIndexName("app"), "web")),
            (std::vector<std::string>{"ns/a", "ns/b"}));
  // Relabel b: it moves from "web" to "db".
  s.Upsert(Make("ns", "b", {{"app", "db"}}, "2"));
  EXPECT_EQ(Names(*s.ByIndex(LabelIndexName("app"), "web")), (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(Names(*s.ByIndex(LabelIndexName("app"), "db")),
            (std::vector<std::string>{"ns/b", "ns/c"}));
  EXPECT_EQ(Names(s.ListByLabels("ns", {{"app", "db"}})),
            (std::vector<std::string>{"ns/b", "ns/c"}));
  EXPECT_EQ(Names(s.ListByLabels("", {})).size(), 4u);
  EXPECT_FALSE(s.ByIndex("nope", "x").ok());
}

TEST(StoreTest, CustomMultiValueIndex) {
  // Index ConfigMaps by each of their data keys.
  Indexers ix{{"dataKey", [](const Object& o) {
                 std::vector<std::string> keys;
                 if (o.contains("data")) {
                   for (auto& [k, v] : o["data"].items()) keys.push_back(k);
                 }
                 return keys;
               }}};
  Store s(ix);
  Object a = *Make("ns", "a");
  a["data"] = {{"x", "1"}, {"y", "2"}};
  Object b = *Make("ns", "b");
  b["data"] = {{"y", "3"}};
  s.Upsert(std::make_shared<const Object>(a));
  s.Upsert(std::make_shared<const Object>(b));
  EXPECT_EQ(*s.IndexKeys("dataKey", "x"), (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(Names(*s.ByIndex("dataKey", "y")), (std::vector<std::string>{"ns/a", "ns/b"}));
  s.Delete("ns/a");
  EXPECT_TRUE(s.ByIndex("dataKey", "x")->empty());
  EXPECT_EQ(Names(*s.ByIndex("dataKey", "y")), (std::vector<std::string>{"ns/b"}));
}

TEST(StoreTest, ReplaceRebuildsIndexesAndReturnsPrevious) {
  Store s;
  ASSERT_TRUE(s.AddIndexers({{LabelIndexName("app"), IndexByLabel("app")}}).ok());
  s.Upsert(Make("ns", "a", {{"app", "web"}}));
  s.Upsert(Make("ns", "b", {{"app", "web"}}));
  auto previous = s.Replace({Make("ns", "b", {{"app", "db"}}, "5"), Make("other", "c")});
  EXPECT_EQ(previous.size(), 2u);
  EXPECT_TRUE(previous.count("ns/a"));
  EXPECT_EQ(Names(s.List()), (std::vector<std::string>{"ns/b", "other/c"}));
  EXPECT_TRUE(s.ByIndex(LabelIndexName("app"), "web")->empty());
  EXPECT_EQ(Names(*s.ByIndex(LabelIndexName("app"), "db")), (std::vector<std::string>{"ns/b"}));
  EXPECT_EQ(Names(s.List("other")), (std::vector<std::string>{"other/c"}));
}

TEST(StoreTest, AddIndexersRejectedOnceFilledOrDuplicate) {
  Store s;
  EXPECT_FALSE(s.AddIndexers({{std::string(kNamespaceIndex), IndexByNamespace}}).ok());
  s.Upsert(Make("ns", "a"));
  EXPECT_FALSE(s.AddIndexers({{"x", IndexByNamespace}}).ok());
}

TEST(CompactObjectTest, DropsManagedFieldsKeepsTheRest) {
  Object o = *Make("ns", "a", {{"k", "v"}});
  o["metadata"]["managedFields"] = Object::array({{{"manager", "kubectl"}}});
  Object arr = Object::array();
  for (int i = 0; i < 5; ++i) arr.push_back(i);
  o["spec"] = {{"list", arr}};
  Object expected = o;
  expected["metadata"].erase("managedFields");
  CompactObject(o);
  EXPECT_EQ(o, expected);
  EXPECT_EQ(o["spec"]["list"].get_ref<const Object::array_t&>().capacity(), 5u);
}

}  // namespace
}  // namespace caphv::kube
