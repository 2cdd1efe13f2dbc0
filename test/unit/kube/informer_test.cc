// File: test/unit/kube/informer_test.cc
//
// Informer cache and handler semantics, driven through its reflector entry
// points (Replace/Apply/Resync) without starting it: adds, updates, deletes,
// deleted-final-state-unknown across a relist, late handlers, compaction,
// logged handler exceptions, and read-your-writes (RecordWrite).
// The list/watch side is covered against a real apiserver in
// test/integration/kube/informer_test.cc.

#include "kube/informer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "kube/field_mask.h"
#include "kube/log.h"

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

// Every informer test runs with a plain store (false) and a packed one
// (true).
class InformerTest : public ::testing::TestWithParam<bool> {
 protected:
  InformerOptions Options() const {
    InformerOptions o;
    o.gvr = resources::kConfigMaps;
    o.packed = GetParam();
    return o;
  }
  // What the reflector does with a LIST: each item prepared as its page is
  // read, then the whole content.
  static void Relist(Informer& inf, std::vector<Object> items, const std::string& rv) {
    for (Object& item : items) inf.PrepareListed(item);
    inf.Replace(std::move(items), rv);
  }
};
using InformerRecordWriteTest = InformerTest;

INSTANTIATE_TEST_SUITE_P(PlainAndPacked, InformerTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Packed" : "Plain"; });
INSTANTIATE_TEST_SUITE_P(PlainAndPacked, InformerRecordWriteTest, ::testing::Bool(),
                         [](const auto& p) { return p.param ? "Packed" : "Plain"; });

TEST_P(InformerTest, InitialListThenWatchEvents) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  EXPECT_FALSE(inf.HasSynced());
  EXPECT_FALSE(inf.WaitForSync(std::chrono::milliseconds(1)));
  Relist(inf, {Cm("a", "1"), Cm("b", "2")}, "2");
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

TEST_P(InformerTest, RelistReportsVanishedObjectsAsFinalStateUnknown) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "1"), Cm("b", "2"), Cm("c", "3")}, "3");
  r.log.clear();
  // While disconnected: a unchanged, b modified, c deleted, d created.
  Relist(inf, {Cm("a", "1"), Cm("b", "7"), Cm("d", "8")}, "9");
  std::sort(r.log.begin(), r.log.end());
  EXPECT_EQ(r.log, (std::vector<std::string>{"add d@8", "delete ns/c@3 unknown", "update b@2->7"}));
  EXPECT_EQ(inf.store().Size(), 3u);
}

TEST_P(InformerTest, LateHandlerReceivesExistingObjects) {
  Informer inf(nullptr, Options());
  Relist(inf, {Cm("a", "1"), Cm("b", "2")}, "2");
  Recorder r;
  inf.AddEventHandler(r.Handler());
  std::sort(r.log.begin(), r.log.end());
  EXPECT_EQ(r.log, (std::vector<std::string>{"add a@1 initial", "add b@2 initial"}));
}

TEST_P(InformerTest, RemovedHandlerHearsNothing) {
  Informer inf(nullptr, Options());
  Recorder r;
  auto id = inf.AddEventHandler(r.Handler());
  inf.RemoveEventHandler(id);
  Relist(inf, {Cm("a", "1")}, "1");
  EXPECT_TRUE(r.log.empty());
}

TEST_P(InformerTest, ResyncRedeliversCacheAsUpdates) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "1")}, "1");
  r.log.clear();
  inf.Resync();
  EXPECT_EQ(r.log, (std::vector<std::string>{"update a@1->1"}));
}

TEST_P(InformerTest, CachedObjectsAreCompactedAndTransformed) {
  InformerOptions o = Options();
  o.transform = [](Object& obj) { obj["metadata"]["annotations"] = {{"seen", "yes"}}; };
  Informer inf(nullptr, std::move(o));
  // As the reflector does: each listed item is prepared as its page is read.
  Object listed = Cm("a", "1");
  inf.PrepareListed(listed);
  EXPECT_EQ(listed.is_binary(), GetParam()) << "a packed store's items are packed as read";
  inf.Replace({listed}, "1");
  inf.Apply(Event(WatchEvent::Type::kAdded, Cm("b", "2")));
  for (const char* key : {"ns/a", "ns/b"}) {
    ObjectPtr obj = inf.store().Get(key);
    ASSERT_NE(obj, nullptr);
    EXPECT_FALSE(obj->at("metadata").contains("managedFields")) << key;
    EXPECT_EQ(obj->at("metadata").at("annotations").at("seen"), "yes") << key;
  }
}

TEST_P(InformerTest, UpdatesThatChangeNothingCachedAreStoredButNotAnnounced) {
  InformerOptions o = Options();
  // What a transform keeps of a ConfigMap: its metadata and data.a.
  o.transform = [](Object& obj) {
    static const FieldMask mask({{"metadata", "name"},
                                 {"metadata", "namespace"},
                                 {"metadata", "resourceVersion"},
                                 {"data", "a"}});
    mask.Apply(obj);
  };
  o.drop_unchanged_updates = true;
  Informer inf(nullptr, std::move(o));
  Recorder r;
  inf.AddEventHandler(r.Handler());
  auto with = [](const std::string& rv, const std::string& a, const std::string& b) {
    Object cm = Cm("x", rv);
    cm["data"] = {{"a", a}, {"b", b}};
    return cm;
  };
  Relist(inf, {with("1", "1", "1")}, "1");
  inf.Apply(Event(WatchEvent::Type::kModified, with("2", "1", "2")));  // b: left out
  inf.Apply(Event(WatchEvent::Type::kModified, with("3", "2", "2")));  // a: kept
  // While disconnected, b again: the relist announces nothing either.
  Relist(inf, {with("4", "2", "3")}, "4");
  inf.Resync();  // a resync is announced, as it exists to reconcile again
  EXPECT_EQ(r.log, (std::vector<std::string>{"add x@1 initial", "update x@2->3", "update x@4->4"}));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/x")), "4") << "the newest is stored";
}

TEST_P(InformerTest, HandlerExceptionIsLoggedAndDoesNotStopDispatch) {
  std::ostringstream out;
  log::Configure(0, log::Format::kText, &out);
  {
    Informer inf(nullptr, Options());
    EventHandler bad;
    bad.on_add = [](const ObjectPtr&, bool) { throw std::runtime_error("boom"); };
    inf.AddEventHandler(bad);
    Recorder r;
    inf.AddEventHandler(r.Handler());
    Relist(inf, {Cm("a", "1")}, "1");
    EXPECT_EQ(r.log, (std::vector<std::string>{"add a@1 initial"}));
  }
  log::Configure(0, log::Format::kText, nullptr);
  const std::string logged = out.str();
  EXPECT_NE(logged.find("\"Event handler failed\""), std::string::npos) << logged;
  EXPECT_NE(logged.find("boom"), std::string::npos) << logged;
  EXPECT_NE(logged.find("object=\"ns/a\""), std::string::npos) << logged;
  EXPECT_NE(logged.find("resource=\"configmaps\""), std::string::npos) << logged;
}

TEST_P(InformerTest, ExtraIndexersAreAvailable) {
  InformerOptions o = Options();
  o.indexers[LabelIndexName("app")] = IndexByLabel("app");
  Informer inf(nullptr, std::move(o));
  Object a = Cm("a", "1");
  a["metadata"]["labels"] = {{"app", "web"}};
  Relist(inf, {a, Cm("b", "1")}, "1");
  EXPECT_EQ(inf.store().ByIndex(LabelIndexName("app"), "web")->size(), 1u);
  EXPECT_EQ(inf.store().ByIndex(kNamespaceIndex, "ns")->size(), 2u);
}

// ---------------------------------------------------------- read-your-writes

TEST_P(InformerRecordWriteTest, NewerWriteIsCachedAtOnceAndAnnouncedByItsWatchEvent) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "5")}, "5");
  r.log.clear();

  EXPECT_TRUE(inf.RecordWrite(Cm("a", "7")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "7");
  EXPECT_FALSE(inf.store().Get("ns/a")->at("metadata").contains("managedFields"));
  EXPECT_TRUE(r.log.empty()) << "handlers are left to the watch event";

  // The watch event: handlers hear the change from what they last knew (5).
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "7")));
  EXPECT_EQ(r.log, (std::vector<std::string>{"update a@5->7"}));
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "8")));
  EXPECT_EQ(r.log.back(), "update a@7->8");
}

// The parser builds a watched or listed object as the informer's mask keeps
// it; an object written by CAPHV gets the same projection before it is
// cached.
TEST_P(InformerRecordWriteTest, AWriteIsCachedAsTheMaskKeepsIt) {
  static const FieldMask mask({{"metadata", "name"},
                               {"metadata", "namespace"},
                               {"metadata", "resourceVersion"},
                               {"data", "a"}});
  InformerOptions o = Options();
  o.keep = &mask;
  Informer inf(nullptr, std::move(o));
  Relist(inf, {}, "5");
  Object written = Cm("a", "7");
  written["metadata"]["labels"] = {{"l", "v"}};
  written["data"] = {{"a", "1"}, {"b", "2"}};
  EXPECT_TRUE(inf.RecordWrite(written));
  ObjectPtr cached = inf.store().Get("ns/a");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(*cached, Object::parse(R"({"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
      "data": {"a": "1"}})"));
}

TEST_P(InformerRecordWriteTest, OlderOrEqualWriteIsIgnored) {
  Informer inf(nullptr, Options());
  Relist(inf, {Cm("a", "5")}, "5");
  EXPECT_FALSE(inf.RecordWrite(Cm("a", "5")));
  EXPECT_FALSE(inf.RecordWrite(Cm("a", "4")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "5");
  // Numerically, not as text: "10" is newer than "9".
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "9")));
  EXPECT_TRUE(inf.RecordWrite(Cm("a", "10")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "10");
}

TEST_P(InformerRecordWriteTest, CreatedObjectIsCachedThenAddedByItsWatchEvent) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {}, "10");
  EXPECT_TRUE(inf.RecordWrite(Cm("b", "12")));
  ASSERT_NE(inf.store().Get("ns/b"), nullptr);
  EXPECT_TRUE(r.log.empty());
  inf.Apply(Event(WatchEvent::Type::kAdded, Cm("b", "12")));
  EXPECT_EQ(r.log, (std::vector<std::string>{"add b@12"}));
}

TEST_P(InformerRecordWriteTest, DeletedObjectIsNotBroughtBack) {
  Informer inf(nullptr, Options());
  Relist(inf, {Cm("a", "5")}, "5");
  inf.Apply(Event(WatchEvent::Type::kDeleted, Cm("a", "8")));
  // A write answered at 7 reaches the cache after the deletion at 8.
  EXPECT_FALSE(inf.RecordWrite(Cm("a", "7")));
  EXPECT_EQ(inf.store().Get("ns/a"), nullptr);
}

TEST_P(InformerRecordWriteTest, DeletionAfterAWriteRemovesIt) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "5")}, "5");
  r.log.clear();
  ASSERT_TRUE(inf.RecordWrite(Cm("a", "7")));
  inf.Apply(Event(WatchEvent::Type::kDeleted, Cm("a", "9")));
  EXPECT_EQ(inf.store().Get("ns/a"), nullptr);
  EXPECT_EQ(r.log, (std::vector<std::string>{"delete ns/a@9"}));
}

TEST_P(InformerRecordWriteTest, OlderWatchEventDoesNotHideTheWrite) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "5")}, "5");
  r.log.clear();
  ASSERT_TRUE(inf.RecordWrite(Cm("a", "9")));
  // Someone else's change at 7 was still on its way.
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "7")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "9");
  inf.Apply(Event(WatchEvent::Type::kModified, Cm("a", "9")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "9");
  EXPECT_EQ(r.log, (std::vector<std::string>{"update a@5->7", "update a@7->9"}));
}

TEST_P(InformerRecordWriteTest, RelistAnnouncesRecordedWrites) {
  Informer inf(nullptr, Options());
  Recorder r;
  inf.AddEventHandler(r.Handler());
  Relist(inf, {Cm("a", "5")}, "5");
  r.log.clear();
  ASSERT_TRUE(inf.RecordWrite(Cm("a", "7")));
  ASSERT_TRUE(inf.RecordWrite(Cm("b", "8")));
  Relist(inf, {Cm("a", "7"), Cm("b", "8")}, "8");
  std::sort(r.log.begin(), r.log.end());
  EXPECT_EQ(r.log, (std::vector<std::string>{"add b@8", "update a@5->7"}));
}

TEST_P(InformerRecordWriteTest, UnparsableResourceVersionsOnlyFillAbsentEntries) {
  Informer inf(nullptr, Options());
  Relist(inf, {Cm("a", "x1")}, "x1");
  EXPECT_FALSE(inf.RecordWrite(Cm("a", "x2")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/a")), "x1");
  EXPECT_FALSE(inf.RecordWrite(Cm("a", "9")));  // cached one does not parse
  EXPECT_TRUE(inf.RecordWrite(Cm("b", "x3")));
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get("ns/b")), "x3");
}

TEST_P(InformerRecordWriteTest, ObjectsOutsideTheInformersScopeAreIgnored) {
  {
    InformerOptions o = Options();
    o.ns = "other";
    Informer inf(nullptr, std::move(o));
    Relist(inf, {}, "1");
    EXPECT_FALSE(inf.RecordWrite(Cm("a", "2")));
    EXPECT_EQ(inf.store().Size(), 0u);
  }
  {
    InformerOptions o = Options();
    o.label_selector = "app=web,tier!=db,owner";
    Informer inf(nullptr, std::move(o));
    Relist(inf, {}, "1");
    Object plain = Cm("a", "2");
    EXPECT_FALSE(inf.RecordWrite(plain));
    Object labelled = Cm("b", "3");
    labelled["metadata"]["labels"] = {{"app", "web"}, {"owner", "me"}};
    EXPECT_TRUE(inf.RecordWrite(labelled));
    labelled["metadata"]["labels"]["tier"] = "db";
    labelled["metadata"]["name"] = "c";
    EXPECT_FALSE(inf.RecordWrite(labelled));
  }
  for (auto [label_selector, field_selector] :
       {std::pair<const char*, const char*>{"app in (web)", ""}, {"", "metadata.name=a"}}) {
    InformerOptions o = Options();
    o.label_selector = label_selector;
    o.field_selector = field_selector;
    Informer inf(nullptr, std::move(o));
    Relist(inf, {}, "1");
    Object a = Cm("a", "2");
    a["metadata"]["labels"] = {{"app", "web"}};
    EXPECT_FALSE(inf.RecordWrite(a))
        << "cannot be decided here: " << label_selector << field_selector;
  }
}

}  // namespace
}  // namespace caphv::kube
