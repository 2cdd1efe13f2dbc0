// File: test/unit/kube/informer_test.cc
//
// Informer cache and handler semantics, driven through its reflector entry
// points (Replace/Apply/Resync) without starting it: adds, updates, deletes,
// deleted-final-state-unknown across a relist, late handlers, compaction.
// The list/watch side is covered against a real apiserver in
// test/integration/kube/informer_test.cc.

#include "kube/informer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace caphv::kube {
namespace {

Object Cm(const std::string& name, const std::string& rv) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"namespace", "ns"},
            {"name", name},
            {"resourceVersion", rv},
            {"managedFields", Object::array({{{"manager", "test"}}})}}}};
}

WatchEvent Event(WatchEvent::Type t, Object o) {
  WatchEvent e;
  e.type = t;
  e.object = std::move(o);
  return e;
}

struct Recorder {
  std::vector<std::string> log;
  EventHandler Handler() {
    EventHandler h;
    h.on_add = [this](const ObjectPtr& o, bool initial) {
      log.push_back("add " + NameOf(*o) + "@" + ResourceVersionOf(*o) +
                    (initial ? " initial" : ""));
    };
    h.on_update = [this](const ObjectPtr& o, const ObjectPtr& n) {
      log.push_back("update " + NameOf(*n) + "@" + ResourceVersionOf(*o) + "->" +
                    ResourceVersionOf(*n));
    };
    h.on_delete = [this](const DeletedObject& d) {
      log.push_back("delete " + d.key + "@" + ResourceVersionOf(*d.object) +
                    (d.final_state_unknown ? " unknown" : ""));
    };
    return h;
  }
};

InformerOptions Options() {
  InformerOptions o;
  o.gvr = resources::kConfigMaps;
  return o;
}

TEST(InformerTest, InitialListThenWatchEvents) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  EXPECT_FALSE(inf.HasSynced());
  EXPECT_FALSE(inf.WaitForSync(std::chrono::milliseconds(1)));
  inf.Replace({Cm("a", "1"), Cm("b", "2")}, "2");
  EXPECT_TRUE(inf.HasSynced());
  EXPECT_TRUE(inf.WaitForSync(std::chrono::milliseconds(0)));
  inf.Apply(Event(WatchEvent::Type::kAdded, Cm("c", "3")));
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "4")));
  inf.Apply(Event(WatchEvent::Type::kDeleted, Cm("b", "5")));
  EXPECT_EQ(r.log, (std::vector<std::string>{"add a@1 initial", "add b@2 initial", "add c@3",
                                             "update a@1->4", "delete ns/b@5"}));
  EXPECT_EQ(inf.store().Size(), 2u);
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "4");
  EXPECT_EQ(inf.store().Get("ns/b"), nullptr);
}

TEST(InformerTest, RelistReportsVanishedObjectsAsFinalStateUnknown) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  inf.Replace({Cm("a", "1"), Cm("b", "2"), Cm("c", "3")}, "3");
  r.log.clear();
  // While disconnected: a unchanged, b modified, c deleted, d created.
  inf.Replace({Cm("a", "1"), Cm("b", "7"), Cm("d", "8")}, "9");
  std::sort(r.log.begin(), r.log.end());
  EXPECT_EQ(r.log, (std::vector<std::string>{"add d@8", "delete ns/c@3 unknown", "update b@2->7"}));
  EXPECT_EQ(inf.store().Size(), 3u);
}

TEST(InformerTest, LateHandlerReceivesExistingObjects) {
  Informer inf(nullptr, Options());
  inf.Replace({Cm("a", "1"), Cm("b", "2")}, "2");
  Recorder r;
  inf.AddEventHandler(r.Handler());
  std::sort(r.log.begin(), r.log.end());
  EXPECT_EQ(r.log, (std::vector<std::string>{"add a@1 initial", "add b@2 initial"}));
}

TEST(InformerTest, RemovedHandlerHearsNothing) {
  Informer inf(nullptr, Options());
  Recorder r;
  auto id = inf.AddEventHandler(r.Handler());
  inf.RemoveEventHandler(id);
  inf.Replace({Cm("a", "1")}, "1");
  EXPECT_TRUE(r.log.empty());
}

TEST(InformerTest, ResyncRedeliversCacheAsUpdates) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  inf.Replace({Cm("a", "1")}, "1");
  r.log.clear();
  inf.Resync();
  EXPECT_EQ(r.log, (std::vector<std::string>{"update a@1->1"}));
}

TEST(InformerTest, CachedObjectsAreCompactedAndTransformed) {
  InformerOptions o = Options();
  o.transform = [](Object& obj) { obj["metadata"]["annotations"] = {{"seen", "yes"}}; };
  Informer inf(nullptr, std::move(o));
  inf.Replace({Cm("a", "1")}, "1");
  inf.Apply(Event(WatchEvent::Type::kAdded, Cm("b", "2")));
  for (const char* key : {"ns/a", "ns/b"}) {
    ObjectPtr obj = inf.store().Get(key);
    ASSERT_NE(obj, nullptr);
    EXPECT_FALSE(obj->at("metadata").contains("managedFields")) << key;
    EXPECT_EQ(obj->at("metadata").at("annotations").at("seen"), "yes") << key;
  }
}

TEST(InformerTest, HandlerExceptionDoesNotStopDispatch) {
  Informer inf(nullptr, Options());
  EventHandler bad;
  bad.on_add = [](const ObjectPtr&, bool) { throw std::runtime_error("boom"); };
  inf.AddEventHandler(bad);
  Recorder r;
  inf.AddEventHandler(r.Handler());
  inf.Replace({Cm("a", "1")}, "1");
  EXPECT_EQ(r.log, (std::vector<std::string>{"add a@1 initial"}));
}

TEST(InformerTest, ExtraIndexersAreAvailable) {
  InformerOptions o = Options();
  o.indexers[LabelIndexName("app")] = IndexByLabel("app");
  Informer inf(nullptr, std::move(o));
  Object a = Cm("a", "1");
  a["metadata"]["labels"] = {{"app", "web"}};
  inf.Replace({a, Cm("b", "1")}, "1");
  EXPECT_EQ(inf.store().ByIndex(LabelIndexName("app"), "web")->size(), 1u);
  EXPECT_EQ(inf.store().ByIndex(kNamespaceIndex, "ns")->size(), 2u);
}

}  // namespace
}  // namespace caphv::kube
