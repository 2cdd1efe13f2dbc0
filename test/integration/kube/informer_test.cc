// File: test/integration/kube/informer_test.cc
//
// Informer and Controller against the real kube-apiserver of the test bed:
// the cache converges to a fresh LIST after 1000 random writes, selector
// scoping, read-your-writes (RecordWrite of a patch response, then its watch
// event announcing the change), and a controller with several workers never
// reconciles one key concurrently while still seeing every key's final state.

#include "kube/informer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "kube/controller.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

using testing::Eventually;
using testing::ScopedNamespace;
using testing::Testbed;

const GroupVersionResource kWidgets{"test.caphv.io", "v1", "widgets", true};

class InformerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto client = Testbed::Get().Client(testing::kMgmt);
    Object crd = Object::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "widgets.test.caphv.io"},
      "spec": {"group": "test.caphv.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList"},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})");
    auto applied = client->Apply(resources::kCustomResourceDefinitions, "", crd);
    ASSERT_TRUE(applied.ok()) << applied.status().ToString();
    ASSERT_TRUE(Eventually([&] { return client->List(kWidgets, "default").ok(); }));
  }

  void SetUp() override {
    client_ = Testbed::Get().Client(testing::kMgmt);
    ns_ = std::make_unique<ScopedNamespace>(client_, "informer");
  }

  static Object Widget(const std::string& name, int value,
                       std::map<std::string, std::string> labels = {}) {
    Object o = {{"apiVersion", "test.caphv.io/v1"},
                {"kind", "Widget"},
                {"metadata", {{"name", name}}},
                {"spec", {{"value", value}}}};
    if (!labels.empty()) o["metadata"]["labels"] = labels;
    return o;
  }

  std::map<std::string, std::string> ListVersions(const std::string& label_selector = "") {
    ListOptions lo;
    lo.label_selector = label_selector;
    auto list = client_->ListAll(kWidgets, ns_->name(), lo);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    std::map<std::string, std::string> out;
    if (!list.ok()) return out;
    for (const auto& o : list->items) out[KeyOf(o)] = ResourceVersionOf(o);
    return out;
  }

  static std::map<std::string, std::string> CacheVersions(const Informer& inf) {
    std::map<std::string, std::string> out;
    for (const auto& o : inf.store().List()) out[KeyOf(*o)] = ResourceVersionOf(*o);
    return out;
  }

  InformerOptions Options() const {
    InformerOptions o;
    o.gvr = kWidgets;
    o.ns = ns_->name();
    return o;
  }

  std::shared_ptr<Client> client_;
  std::unique_ptr<ScopedNamespace> ns_;
};

TEST_F(InformerTest, CacheEqualsListAfterThousandRandomWrites) {
  std::mutex mu;
  std::map<std::string, std::string> seen;  // key -> last rv heard, "" once deleted
  // Declared after the state its handlers touch, so it stops before that goes.
  auto inf = std::make_shared<Informer>(client_, Options());
  EventHandler h;
  h.on_add = [&](const ObjectPtr& o, bool) {
    std::lock_guard<std::mutex> g(mu);
    seen[KeyOf(*o)] = ResourceVersionOf(*o);
  };
  h.on_update = [&](const ObjectPtr&, const ObjectPtr& o) {
    std::lock_guard<std::mutex> g(mu);
    seen[KeyOf(*o)] = ResourceVersionOf(*o);
  };
  h.on_delete = [&](const DeletedObject& d) {
    std::lock_guard<std::mutex> g(mu);
    seen.erase(d.key);
  };
  inf->AddEventHandler(h);
  inf->Start();
  ASSERT_TRUE(inf->WaitForSync(std::chrono::seconds(30)));

  std::mt19937 rng(20261122);
  std::vector<std::string> live;
  int next = 0;
  for (int i = 0; i < 1000; ++i) {
    const int op = live.size() < 20 ? 0 : static_cast<int>(rng() % 3);
    if (op == 0) {
      const std::string name = "w-" + std::to_string(next++);
      auto c = client_->Create(kWidgets, ns_->name(), Widget(name, i));
      ASSERT_TRUE(c.ok()) << c.status().ToString();
      live.push_back(name);
    } else if (op == 1) {
      const std::string& name = live[rng() % live.size()];
      auto p = client_->Patch(kWidgets, ns_->name(), name, PatchType::kMerge,
                              {{"spec", {{"value", i}}}});
      ASSERT_TRUE(p.ok()) << p.status().ToString();
    } else {
      const size_t at = rng() % live.size();
      ASSERT_TRUE(client_->Delete(kWidgets, ns_->name(), live[at]).ok());
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }

  std::map<std::string, std::string> expected = ListVersions();
  EXPECT_EQ(expected.size(), live.size());
  ASSERT_TRUE(Eventually([&] { return CacheVersions(*inf) == expected; }))
      << "cache has " << inf->store().Size() << " objects, LIST has " << expected.size();
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> g(mu);
    return seen == expected;
  })) << "handlers did not observe the final state";
  for (const auto& o : inf->store().List()) {
    EXPECT_FALSE(o->at("metadata").contains("managedFields")) << KeyOf(*o);
  }
  auto c = inf->counters();
  RecordProperty("watch_events", std::to_string(c.events));
  EXPECT_GE(c.events, 1000 - 1);  // every write arrives as an event (none lost)
}

TEST_F(InformerTest, LabelSelectorScopesTheCache) {
  InformerOptions o = Options();
  o.label_selector = "tier=front";
  o.indexers[LabelIndexName("color")] = IndexByLabel("color");
  std::atomic<int> deletes{0};  // declared first: outlives the informer's threads
  Informer inf(client_, std::move(o));
  EventHandler h;
  h.on_delete = [&](const DeletedObject&) { deletes++; };
  inf.AddEventHandler(h);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(30)));
  for (int i = 0; i < 6; ++i) {
    auto c = client_->Create(
        kWidgets, ns_->name(),
        Widget("s-" + std::to_string(i), i,
               {{"tier", i % 2 ? "back" : "front"}, {"color", i < 3 ? "red" : "blue"}}));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
  }
  ASSERT_TRUE(Eventually([&] { return CacheVersions(inf) == ListVersions("tier=front"); }));
  EXPECT_EQ(inf.store().Size(), 3u);
  EXPECT_EQ(inf.store().ByIndex(LabelIndexName("color"), "red")->size(), 2u);  // s-0, s-2
  // Leaving the selector looks like a deletion to the scoped informer.
  ASSERT_TRUE(client_
                  ->Patch(kWidgets, ns_->name(), "s-0", PatchType::kMerge,
                          {{"metadata", {{"labels", {{"tier", "back"}}}}}})
                  .ok());
  // The store changes before the handlers hear of it: wait for both.
  ASSERT_TRUE(Eventually([&] { return inf.store().Size() == 2u && deletes.load() >= 1; }));
  EXPECT_EQ(deletes.load(), 1);
  EXPECT_EQ(inf.store().ByIndex(LabelIndexName("color"), "red")->size(), 1u);
}

TEST_F(InformerTest, RecordWriteServesTheWriteAtOnceAndTheWatchEventAnnouncesIt) {
  std::mutex mu;  // these outlive the informer, whose threads call the handler until stopped
  std::vector<std::string> updates;  // "old rv -> new rv"
  Informer inf(client_, Options());
  EventHandler h;
  h.on_update = [&](const ObjectPtr& old_obj, const ObjectPtr& new_obj) {
    std::lock_guard<std::mutex> g(mu);
    updates.push_back(ResourceVersionOf(*old_obj) + "->" + ResourceVersionOf(*new_obj));
  };
  inf.AddEventHandler(h);
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(30)));
  auto created = client_->Create(kWidgets, ns_->name(), Widget("ryw", 1));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string before = ResourceVersionOf(*created);
  ASSERT_TRUE(Eventually([&] { return inf.store().Get(ns_->name(), "ryw") != nullptr; }));

  auto patched =
      client_->Patch(kWidgets, ns_->name(), "ryw", PatchType::kMerge, {{"spec", {{"value", 2}}}});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  const std::string after = ResourceVersionOf(*patched);
  // Either the watch event came first (nothing to record) or the write is
  // cached now; in both cases the cache shows it at once.
  const bool recorded = inf.RecordWrite(*patched);
  EXPECT_EQ(ResourceVersionOf(*inf.store().Get(ns_->name(), "ryw")), after);
  EXPECT_EQ(inf.store().Get(ns_->name(), "ryw")->at("spec").at("value"), 2);
  EXPECT_FALSE(inf.RecordWrite(*created)) << "an older write never replaces a newer one";
  // The watch event still announces the change, from the version handlers knew.
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> g(mu);
    return !updates.empty();
  }));
  std::lock_guard<std::mutex> g(mu);
  EXPECT_EQ(updates, std::vector<std::string>{before + "->" + after}) << "recorded=" << recorded;
}

TEST_F(InformerTest, ControllerNeverReconcilesAKeyConcurrently) {
  constexpr int kKeys = 40;
  constexpr int kWorkers = 4;
  std::mutex mu;
  std::map<std::string, int> last_value;  // what each reconcile saw
  std::vector<std::atomic<int>> in_flight(kKeys);
  std::atomic<int> overlaps{0};
  std::atomic<int> max_parallel{0};
  std::atomic<int> running{0};
  std::atomic<int> reconciles{0};

  // Declared after the state its handlers touch, so it stops before that goes.
  auto inf = std::make_shared<Informer>(client_, Options());
  Controller::Options co;
  co.name = "widget-test";
  co.max_concurrent_reconciles = kWorkers;
  Controller ctrl(std::move(co), [&](const Request& req) {
    const int k = std::stoi(req.name.substr(2));
    if (in_flight[k].fetch_add(1) != 0) overlaps++;
    const int now = ++running;
    int prev = max_parallel.load();
    while (now > prev && !max_parallel.compare_exchange_weak(prev, now)) {
    }
    reconciles++;
    ObjectPtr obj = inf->store().Get(req.ns, req.name);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // a slow reconcile
    if (obj) {
      std::lock_guard<std::mutex> g(mu);
      last_value[req.name] = obj->at("spec").at("value").get<int>();
    }
    --running;
    in_flight[k].fetch_sub(1);
    return Result::Done();
  });
  ctrl.For(inf);
  std::jthread runner([&](std::stop_token stop) { ASSERT_TRUE(ctrl.Run(stop).ok()); });

  for (int k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(client_->Create(kWidgets, ns_->name(), Widget("k-" + std::to_string(k), 0)).ok());
  }
  // Hammer every key with updates from several writers.
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int round = 1; round <= 10; ++round) {
        for (int k = w; k < kKeys; k += 4) {
          client_
              ->Patch(kWidgets, ns_->name(), "k-" + std::to_string(k), PatchType::kMerge,
                      {{"spec", {{"value", round}}}})
              .status()
              .IgnoreError();
        }
      }
    });
  }
  for (auto& t : writers) t.join();

  ASSERT_TRUE(Eventually([&] {
    std::lock_guard<std::mutex> g(mu);
    if (static_cast<int>(last_value.size()) != kKeys) return false;
    for (const auto& [name, v] : last_value) {
      if (v != 10) return false;
    }
    return true;
  })) << "every key must be reconciled after its last update";
  runner.request_stop();
  runner.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GT(max_parallel.load(), 1) << "workers should have run in parallel";
  // 440 events: each adds a key at most once, so at most one reconcile each.
  EXPECT_LE(reconciles.load(), kKeys * 11);
  RecordProperty("reconciles", std::to_string(reconciles.load()));
}

TEST_F(InformerTest, ControllerRetriesErrorsAndHonoursTerminalAndRequeueAfter) {
  std::mutex mu;
  std::map<std::string, int> calls;
  // Declared after the state its handlers touch, so it stops before that goes.
  auto inf = std::make_shared<Informer>(client_, Options());
  Controller::Options co;
  co.name = "widget-retry-test";
  Controller ctrl(std::move(co), [&](const Request& req) {
    int n;
    {
      std::lock_guard<std::mutex> g(mu);
      n = ++calls[req.name];
    }
    if (req.name == "flaky") {
      return n < 4 ? Result::Error(Status(StatusCode::kConflict, "try again")) : Result::Done();
    }
    if (req.name == "broken") return Result::Terminal(Status(StatusCode::kInvalid, "bad spec"));
    if (req.name == "periodic") {
      return n < 3 ? Result::RequeueAfter(std::chrono::milliseconds(200)) : Result::Done();
    }
    return Result::Done();
  });
  ctrl.For(inf);
  std::jthread runner([&](std::stop_token stop) { ASSERT_TRUE(ctrl.Run(stop).ok()); });
  for (const char* name : {"flaky", "broken", "periodic"}) {
    ASSERT_TRUE(client_->Create(kWidgets, ns_->name(), Widget(name, 1)).ok());
  }
  auto count = [&](const std::string& name) {
    std::lock_guard<std::mutex> g(mu);
    return calls[name];
  };
  ASSERT_TRUE(Eventually([&] { return count("flaky") == 4 && count("periodic") == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // nothing more may come
  EXPECT_EQ(count("flaky"), 4);
  EXPECT_EQ(count("periodic"), 3);
  EXPECT_EQ(count("broken"), 1);
  EXPECT_EQ(ctrl.queue().NumRequeues(ns_->name() + "/flaky"), 0) << "success forgets";
}

}  // namespace
}  // namespace caphv::kube
