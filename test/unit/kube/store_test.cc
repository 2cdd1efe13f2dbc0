// File: test/unit/kube/store_test.cc
//
// Store: keys, namespace/label/custom indexes kept in step with updates,
// deletes and replaces, selector reads (objects, keys, visits), each for a
// plain and a packed store; packing; CompactObject.

#include "kube/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

namespace caphv::kube {
namespace {

ObjectPtr Make(const std::string& ns, const std::string& name,
               const Object& labels = Object::object(), const std::string& rv = "1") {
  Object o = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"resourceVersion", rv}, {"labels", labels}}}};
  if (!ns.empty()) o["metadata"]["namespace"] = ns;
  return std::make_shared<const Object>(std::move(o));
}

std::vector<std::string> Names(const std::vector<ObjectPtr>& objs) {
  std::vector<std::string> out;
  out.reserve(objs.size());
  for (const auto& o : objs) out.push_back(KeyOf(*o));
  std::sort(out.begin(), out.end());
  return out;
}

// Every store test runs on a plain store (false) and a packed one (true).
class StoreTest : public ::testing::TestWithParam<bool> {
 protected:
  Indexers WithNamespace(Indexers more = {}) {
    more.emplace(std::string(kNamespaceIndex), IndexByNamespace);
    return more;
  }
};

INSTANTIATE_TEST_SUITE_P(PlainAndPacked, StoreTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Packed" : "Plain"; });

TEST_P(StoreTest, UpsertGetDelete) {
  Store s(WithNamespace(), GetParam());
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

TEST_P(StoreTest, NamespaceIndex) {
  Store s(WithNamespace(), GetParam());
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

TEST_P(StoreTest, LabelIndexFollowsUpdates) {
  Store s(WithNamespace(), GetParam());
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

TEST_P(StoreTest, CustomMultiValueIndex) {
  // Index ConfigMaps by each of their data keys.
  Indexers ix{{"dataKey", [](const Object& o) {
                 std::vector<std::string> keys;
                 if (o.contains("data")) {
                   for (auto& [k, v] : o["data"].items()) keys.push_back(k);
                 }
                 return keys;
               }}};
  Store s(WithNamespace(ix), GetParam());
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

TEST_P(StoreTest, ReplaceRebuildsIndexesAndReturnsPrevious) {
  Store s(WithNamespace(), GetParam());
  ASSERT_TRUE(s.AddIndexers({{LabelIndexName("app"), IndexByLabel("app")}}).ok());
  s.Upsert(Make("ns", "a", {{"app", "web"}}));
  s.Upsert(Make("ns", "b", {{"app", "web"}}));
  auto previous = s.Replace({Make("ns", "b", {{"app", "db"}}, "5"), Make("other", "c")});
  EXPECT_EQ(previous.size(), 2u);
  ASSERT_TRUE(previous.count("ns/a"));
  // As stored: packed in a packed store.
  EXPECT_EQ(previous["ns/a"]->is_binary(), GetParam());
  EXPECT_EQ(*Unpack(previous["ns/a"]), *Make("ns", "a", {{"app", "web"}}));
  EXPECT_EQ(Names(s.List()), (std::vector<std::string>{"ns/b", "other/c"}));
  EXPECT_TRUE(s.ByIndex(LabelIndexName("app"), "web")->empty());
  EXPECT_EQ(Names(*s.ByIndex(LabelIndexName("app"), "db")), (std::vector<std::string>{"ns/b"}));
  EXPECT_EQ(Names(s.List("other")), (std::vector<std::string>{"other/c"}));
}

TEST_P(StoreTest, AddIndexersRejectedOnceFilledOrDuplicate) {
  Store s(WithNamespace(), GetParam());
  EXPECT_FALSE(s.AddIndexers({{std::string(kNamespaceIndex), IndexByNamespace}}).ok());
  s.Upsert(Make("ns", "a"));
  EXPECT_FALSE(s.AddIndexers({{"x", IndexByNamespace}}).ok());
}

TEST_P(StoreTest, ReadsGiveTheObjectsAsWritten) {
  Store s(WithNamespace(), GetParam());
  Object o = *Make("ns", "a", {{"app", "web"}});
  o["spec"] = {{"replicas", 3},
               {"ratio", 0.5},
               {"negative", -7},
               {"big", 18446744073709551615ULL},
               {"flag", true},
               {"none", nullptr},
               {"list", {"x", 1, Object::object()}},
               {"text", std::string(300, 'z')}};
  s.Upsert(std::make_shared<const Object>(o));
  EXPECT_EQ(*s.Get("ns/a"), o);
  EXPECT_EQ(*s.List().at(0), o);
  EXPECT_EQ(*s.List("ns").at(0), o);
  EXPECT_EQ(*s.ByIndex(kNamespaceIndex, "ns")->at(0), o);
  EXPECT_EQ(*s.ListByLabels("ns", {{"app", "web"}}).at(0), o);
  // Packed objects given to the store are taken as they are.
  Object b = *Make("ns", "b");
  s.Upsert(Pack(b));
  EXPECT_EQ(*s.Get("ns/b"), b);
  s.Replace({Pack(o), std::make_shared<const Object>(b)});
  EXPECT_EQ(*s.Get("ns/a"), o);
  EXPECT_EQ(*s.Get("ns/b"), b);
  EXPECT_EQ(*s.Delete("ns/a"), o);
}

TEST_P(StoreTest, ListByLabelsNarrowsByALabelIndexAndStillFilters) {
  Store s(WithNamespace({{LabelIndexName("cluster"), IndexByLabel("cluster")}}), GetParam());
  s.Upsert(Make("ns", "a", {{"cluster", "c1"}, {"role", "cp"}}));
  s.Upsert(Make("ns", "b", {{"cluster", "c1"}}));
  s.Upsert(Make("other", "a", {{"cluster", "c1"}, {"role", "cp"}}));
  s.Upsert(Make("ns", "c", {{"cluster", "c2"}, {"role", "cp"}}));
  EXPECT_EQ(Names(s.ListByLabels("ns", {{"cluster", "c1"}})),
            (std::vector<std::string>{"ns/a", "ns/b"}));
  EXPECT_EQ(Names(s.ListByLabels("ns", {{"cluster", "c1"}, {"role", "cp"}})),
            (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(Names(s.ListByLabels("", {{"role", "cp"}, {"cluster", "c1"}})),
            (std::vector<std::string>{"ns/a", "other/a"}));
  EXPECT_TRUE(s.ListByLabels("ns", {{"cluster", "c3"}}).empty());
  EXPECT_EQ(Names(s.ListByLabels("ns", {{"role", "cp"}})),
            (std::vector<std::string>{"ns/a", "ns/c"}));
}

// KeysByLabels and ForEachByLabels select what ListByLabels does, whether
// the selector's keys are all indexed (two label indexes here: the keys come
// from the indexes alone), some are, or none is.
TEST_P(StoreTest, KeysAndVisitsBySelectorAgreeWithListByLabels) {
  Store s(WithNamespace({{LabelIndexName("cluster"), IndexByLabel("cluster")},
                         {LabelIndexName("zone"), IndexByLabel("zone")}}),
          GetParam());
  s.Upsert(Make("ns", "a", {{"cluster", "c1"}, {"role", "cp"}, {"zone", "z1"}}));
  s.Upsert(Make("ns", "b", {{"cluster", "c1"}, {"zone", "z2"}}));
  s.Upsert(Make("other", "a", {{"cluster", "c1"}, {"role", "cp"}, {"zone", "z1"}}));
  s.Upsert(Make("ns", "c", {{"cluster", "c2"}, {"role", "cp"}, {"zone", "z1"}}));
  s.Upsert(Make("ns", "d"));
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases = {
      {"ns", {{"cluster", "c1"}}},
      {"", {{"cluster", "c1"}}},
      {"ns", {{"cluster", "c1"}, {"zone", "z1"}}},
      {"", {{"zone", "z1"}, {"cluster", "c1"}}},
      {"ns", {{"cluster", "c1"}, {"role", "cp"}}},
      {"ns", {{"role", "cp"}}},
      {"ns", {}},
      {"", {}},
      {"none", {{"cluster", "c1"}}},
      {"ns", {{"cluster", "c3"}}},
      {"ns", {{"cluster", "c1"}, {"zone", "z9"}}},
  };
  for (const auto& [ns, selector] : cases) {
    SCOPED_TRACE(ns + " " + ::testing::PrintToString(selector));
    const std::vector<std::string> listed = Names(s.ListByLabels(ns, selector));
    std::vector<std::string> keys = s.KeysByLabels(ns, selector);
    std::sort(keys.begin(), keys.end());
    EXPECT_EQ(keys, listed);
    std::vector<std::string> visited;
    s.ForEachByLabels(ns, selector, [&visited](const Object& o) {
      visited.push_back(KeyOf(o));
      return true;
    });
    std::sort(visited.begin(), visited.end());
    EXPECT_EQ(visited, listed);
  }
  EXPECT_EQ(Names(s.ListByLabels("ns", {{"cluster", "c1"}, {"zone", "z1"}})),
            (std::vector<std::string>{"ns/a"}));
  EXPECT_EQ(s.KeysByLabels("", {}).size(), 5u);
}

TEST_P(StoreTest, ForEachByLabelsStopsWhenTheVisitorSaysSo) {
  Store s(WithNamespace({{LabelIndexName("cluster"), IndexByLabel("cluster")}}), GetParam());
  for (const char* name : {"a", "b", "c"}) s.Upsert(Make("ns", name, {{"cluster", "c1"}}));
  int visits = 0;
  s.ForEachByLabels("ns", {{"cluster", "c1"}}, [&visits](const Object&) {
    ++visits;
    return false;
  });
  EXPECT_EQ(visits, 1);
  // Stopping at "ns/b" visits nothing after it.
  std::vector<std::string> visited;
  s.ForEach("ns", [&visited](const Object& o) {
    visited.push_back(KeyOf(o));
    return visited.back() != "ns/b";
  });
  ASSERT_FALSE(visited.empty());
  EXPECT_EQ(visited.back(), "ns/b");
  // The objects visited are the stored ones, decoded.
  s.ForEach("ns", [](const Object& o) {
    EXPECT_EQ(o, *Make("ns", NameOf(o), {{"cluster", "c1"}}));
    return true;
  });
}

TEST(PackTest, PackedIsSmallerAndUnpacksToTheSameObject) {
  Object o = *Make("ns", "a", {{"app", "web"}});
  o["status"] = {{"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
  ObjectPtr packed = Pack(o);
  ASSERT_TRUE(packed->is_binary());
  EXPECT_LT(packed->get_binary().size(), o.dump().size());
  EXPECT_EQ(*Unpack(packed), o);
  // An object that is not packed is returned as it is.
  auto plain = std::make_shared<const Object>(o);
  EXPECT_EQ(Unpack(plain), plain);
  EXPECT_EQ(Unpack(nullptr), nullptr);
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
