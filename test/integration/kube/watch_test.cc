// File: test/integration/kube/watch_test.cc
//
// An informer's watch across apiserver disruption on the real test bed:
//   - a kube-apiserver restart: the informer reconnects (resuming from its
//     last resourceVersion, or relisting if the new apiserver's watch cache
//     no longer covers it) and loses no event;
//   - a forced 410: etcd compacted and the apiserver restarted, a watch from
//     an old resourceVersion gets 410 Gone, the informer relists and
//     converges.

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "kube/informer.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

using testing::Eventually;
using testing::RunCommand;
using testing::ScopedNamespace;
using testing::SourcePath;
using testing::Testbed;

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = Testbed::Get().Client(testing::kMgmt);
    ns_ = std::make_unique<ScopedNamespace>(client_, "watch");
  }

  static Object ConfigMap(const std::string& name, const std::string& value) {
    return {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata", {{"name", name}}},
            {"data", {{"value", value}}}};
  }

  // Retries while the apiserver comes back.
  void MustCreate(const std::string& ns, const std::string& name) {
    ASSERT_TRUE(Eventually(
        [&] {
          auto c = client_->Create(resources::kConfigMaps, ns, ConfigMap(name, "v"));
          return c.ok() || c.status().IsAlreadyExists();
        },
        std::chrono::seconds(60), std::chrono::milliseconds(200)))
        << name;
  }

  std::map<std::string, std::string> ListVersions() {
    auto list = client_->ListAll(resources::kConfigMaps, ns_->name());
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

  bool Converged(const Informer& inf) {
    auto expected = ListVersions();
    return !expected.empty() && CacheVersions(inf) == expected;
  }

  static void RunTestbed(const std::string& args) {
    std::string out;
    const std::string cmd =
        SourcePath("hack/testbed") + " " + args + " --dir " + Testbed::Get().dir() + " 2>&1";
    ASSERT_EQ(RunCommand(cmd, &out), 0) << cmd << "\n" << out;
  }

  InformerOptions Options() const {
    InformerOptions o;
    o.gvr = resources::kConfigMaps;
    o.ns = ns_->name();
    return o;
  }

  std::shared_ptr<Client> client_;
  std::unique_ptr<ScopedNamespace> ns_;
};

struct Seen {
  std::mutex mu;
  std::set<std::string> added;
  std::set<std::string> deleted;
  int unknown_deletes = 0;
  EventHandler Handler() {
    EventHandler h;
    h.on_add = [this](const ObjectPtr& o, bool) {
      std::lock_guard<std::mutex> g(mu);
      added.insert(NameOf(*o));
    };
    h.on_delete = [this](const DeletedObject& d) {
      std::lock_guard<std::mutex> g(mu);
      deleted.insert(NameOf(*d.object));
      if (d.final_state_unknown) ++unknown_deletes;
    };
    return h;
  }
  bool Has(const std::set<std::string>& names, bool in_deleted) {
    std::lock_guard<std::mutex> g(mu);
    const auto& s = in_deleted ? deleted : added;
    for (const auto& n : names) {
      if (!s.count(n)) return false;
    }
    return true;
  }
};

TEST_F(WatchTest, ResumesAcrossApiserverRestartWithoutLosingEvents) {
  Seen seen;  // outlives the informer, whose threads call its handler until stopped
  Informer inf(client_, Options());
  inf.AddEventHandler(seen.Handler());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(30)));

  std::set<std::string> before, after, removed;
  for (int i = 0; i < 20; ++i) {
    before.insert("before-" + std::to_string(i));
    MustCreate(ns_->name(), "before-" + std::to_string(i));
  }
  ASSERT_TRUE(Eventually([&] { return seen.Has(before, false); }));
  const Reflector::Counters c0 = inf.counters();

  RunTestbed("restart --cluster mgmt");

  for (int i = 0; i < 20; ++i) {
    after.insert("after-" + std::to_string(i));
    MustCreate(ns_->name(), "after-" + std::to_string(i));
  }
  for (int i = 0; i < 5; ++i) {
    const std::string name = "before-" + std::to_string(i);
    ASSERT_TRUE(client_->Delete(resources::kConfigMaps, ns_->name(), name).ok());
    removed.insert(name);
  }
  ASSERT_TRUE(Eventually([&] { return seen.Has(after, false) && seen.Has(removed, true); },
                         std::chrono::seconds(90)))
      << "events after the restart must reach the handlers";
  ASSERT_TRUE(Eventually([&] { return Converged(inf); }, std::chrono::seconds(60)));

  const Reflector::Counters c1 = inf.counters();
  EXPECT_GT(c1.watches, c0.watches) << "the watch must have been re-established";
  RecordProperty("relists_after_restart", std::to_string(c1.lists - c0.lists));
  RecordProperty("gone_after_restart", std::to_string(c1.gone - c0.gone));
}

TEST_F(WatchTest, RelistsAfterForcedGoneAndConverges) {
  Seen seen;  // outlives the informer, whose threads call its handler until stopped
  Informer inf(client_, Options());
  inf.AddEventHandler(seen.Handler());
  inf.Start();
  ASSERT_TRUE(inf.WaitForSync(std::chrono::seconds(30)));
  for (int i = 0; i < 10; ++i) MustCreate(ns_->name(), "cm-" + std::to_string(i));
  ASSERT_TRUE(Eventually([&] { return Converged(inf); }));

  auto list = client_->List(resources::kConfigMaps, ns_->name());
  ASSERT_TRUE(list.ok());
  const std::string old_rv = list->resource_version;
  const Reflector::Counters c0 = inf.counters();

  // Move the revision on where this informer does not look, so its resume
  // point falls behind; then restart the apiserver with etcd compacted while
  // it is down (`--compact`: a compaction before the stop is not enough, the
  // stopping apiserver may send the informer a bookmark at its newest
  // revision), so that its fresh watch cache starts past the resume point.
  ScopedNamespace elsewhere(client_, "watch-other");
  for (int i = 0; i < 10; ++i) MustCreate(elsewhere.name(), "x-" + std::to_string(i));
  RunTestbed("restart --cluster mgmt --compact");

  // A watch from the old resourceVersion is refused with 410, either on
  // connect or as an ERROR event.
  bool gone = false;
  ASSERT_TRUE(Eventually(
      [&] {
        WatchOptions wo;
        wo.resource_version = old_rv;
        wo.timeout_seconds = 5;
        Status s = client_->Watch(resources::kConfigMaps, ns_->name(), wo, [&](WatchEvent&& ev) {
          if (ev.type == WatchEvent::Type::kError && ev.object.value("code", 0) == 410) {
            gone = true;
          }
          return false;
        });
        if (s.IsGone()) gone = true;
        return gone || s.ok();
      },
      std::chrono::seconds(60), std::chrono::milliseconds(250)));
  EXPECT_TRUE(gone) << "a watch from compacted resourceVersion " << old_rv << " must get 410";

  // The informer hits the same wall, relists and converges with new writes.
  for (int i = 10; i < 15; ++i) MustCreate(ns_->name(), "cm-" + std::to_string(i));
  ASSERT_TRUE(client_->Delete(resources::kConfigMaps, ns_->name(), "cm-0").ok());
  ASSERT_TRUE(Eventually([&] { return Converged(inf); }, std::chrono::seconds(90)));
  ASSERT_TRUE(Eventually([&] { return seen.Has({"cm-10", "cm-14"}, false); }));
  ASSERT_TRUE(Eventually([&] { return seen.Has({"cm-0"}, true); }));

  const Reflector::Counters c1 = inf.counters();
  EXPECT_GE(c1.gone - c0.gone, 1) << "the informer's resume point should have expired";
  EXPECT_GE(c1.lists - c0.lists, 1) << "the informer must relist after 410";
}

}  // namespace
}  // namespace caphv::kube
