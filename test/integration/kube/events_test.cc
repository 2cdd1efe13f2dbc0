// Integration tests of EventRecorder against the test bed's real apiserver:
// repeats aggregate into one Event whose count grows, distinct messages make
// distinct Events, ForgetObject ends aggregation for a deleted object,
// Event() never waits for the API, and a full queue drops.

#include "kube/events.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "support/testbed.h"

namespace caphv::kube {
namespace {

using namespace std::chrono_literals;

class EventsTest : public ::testing::Test {
 protected:
  EventsTest() : client_(testing::Testbed::Get().Client(testing::kMgmt)), ns_(client_, "events") {}

  Object MakeConfigMap(const std::string& name) {
    Object cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata", {{"name", name}, {"namespace", ns_.name()}}}};
    auto created = client_->Create(resources::kConfigMaps, ns_.name(), cm);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : cm;
  }

  std::vector<Object> EventsFor(const std::string& name) {
    ListOptions opts;
    opts.field_selector = "involvedObject.name=" + name;
    auto list = client_->List(resources::kEvents, ns_.name(), opts);
    EXPECT_TRUE(list.ok()) << list.status().ToString();
    return list.ok() ? list->items : std::vector<Object>{};
  }

  std::shared_ptr<Client> client_;
  testing::ScopedNamespace ns_;
};

TEST_F(EventsTest, RepeatsAggregateIntoOneEventWithGrowingCount) {
  Object cm = MakeConfigMap("subject");
  EventRecorder recorder(client_, {.component = "caphv-controller-manager"});
  recorder.Event(cm, EventType::kNormal, "VMCreated", "Created VM vm-1");
  ASSERT_TRUE(recorder.Flush(10s));
  auto events = EventsFor("subject");
  ASSERT_EQ(events.size(), 1u);
  const std::string name = events[0]["metadata"]["name"];
  const std::string first = events[0]["firstTimestamp"];
  EXPECT_EQ(events[0]["count"], 1);

  for (int i = 0; i < 4; ++i) {
    recorder.Event(cm, EventType::kNormal, "VMCreated", "Created VM vm-1");
  }
  ASSERT_TRUE(recorder.Flush(10s));
  events = EventsFor("subject");
  ASSERT_EQ(events.size(), 1u) << "repeats created new Event objects";
  const Object& e = events[0];
  EXPECT_EQ(e["metadata"]["name"], name);
  EXPECT_EQ(e["count"], 5);
  EXPECT_EQ(e["firstTimestamp"], first);
  EXPECT_GE(e["lastTimestamp"].get<std::string>(), first);
  EXPECT_EQ(e["type"], "Normal");
  EXPECT_EQ(e["reason"], "VMCreated");
  EXPECT_EQ(e["source"]["component"], "caphv-controller-manager");
  EXPECT_EQ(e["reportingComponent"], "caphv-controller-manager");
  EXPECT_EQ(e["involvedObject"]["kind"], "ConfigMap");
  EXPECT_EQ(e["involvedObject"]["uid"], cm["metadata"]["uid"]);
  EXPECT_EQ(recorder.written(), 5u);
  EXPECT_EQ(recorder.dropped(), 0u);
}

TEST_F(EventsTest, DifferentMessageOrTypeMakesAnotherEvent) {
  Object cm = MakeConfigMap("subject2");
  EventRecorder recorder(client_, {.component = "caphv-test"});
  recorder.Event(cm, EventType::kNormal, "Provisioning", "Waiting for IP");
  recorder.Event(cm, EventType::kNormal, "Provisioning", "Waiting for IP");
  recorder.Event(cm, EventType::kNormal, "Provisioning", "IP assigned");
  recorder.Event(cm, EventType::kWarning, "Provisioning", "IP assigned");
  ASSERT_TRUE(recorder.Flush(10s));
  auto events = EventsFor("subject2");
  ASSERT_EQ(events.size(), 3u);
  int counts = 0, warnings = 0;
  for (const auto& e : events) {
    counts += e["count"].get<int>();
    if (e["type"] == "Warning") ++warnings;
  }
  EXPECT_EQ(counts, 4);
  EXPECT_EQ(warnings, 1);
}

TEST_F(EventsTest, RecreatesTheEventWhenItWasDeleted) {
  Object cm = MakeConfigMap("subject3");
  EventRecorder recorder(client_, {.component = "caphv-test"});
  recorder.Event(cm, EventType::kNormal, "Synced", "ok");
  ASSERT_TRUE(recorder.Flush(10s));
  auto events = EventsFor("subject3");
  ASSERT_EQ(events.size(), 1u);
  ASSERT_TRUE(
      client_
          ->Delete(resources::kEvents, ns_.name(), events[0]["metadata"]["name"].get<std::string>())
          .ok());
  recorder.Event(cm, EventType::kNormal, "Synced", "ok");
  ASSERT_TRUE(recorder.Flush(10s));
  events = EventsFor("subject3");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 2);
}

TEST_F(EventsTest, ForgetObjectEndsAggregationAfterTheEventsQueuedBeforeIt) {
  Object cm = MakeConfigMap("subject5");
  EventRecorder recorder(client_, {.component = "caphv-test"});
  recorder.Event(cm, EventType::kNormal, "Deleting", "deleting the VM");
  recorder.Event(cm, EventType::kNormal, "Deleting", "deleting the VM");  // aggregates
  recorder.ForgetObject("ConfigMap", ns_.name(), "subject5");
  recorder.Event(cm, EventType::kNormal, "Deleting", "deleting the VM");  // a new Event
  ASSERT_TRUE(recorder.Flush(10s));
  auto events = EventsFor("subject5");
  ASSERT_EQ(events.size(), 2u);
  std::vector<int> counts;
  for (const auto& e : events) counts.push_back(e["count"].get<int>());
  std::sort(counts.begin(), counts.end());
  EXPECT_EQ(counts, (std::vector<int>{1, 2}));
  EXPECT_EQ(recorder.written(), 3u);
  EXPECT_EQ(recorder.dropped(), 0u);
}

TEST_F(EventsTest, CallerNeverWaitsAndFullQueueDrops) {
  Object cm = MakeConfigMap("subject4");
  EventRecorder recorder(client_, {.component = "caphv-test", .queue_capacity = 2});
  for (int i = 0; i < 200; ++i) {
    recorder.Event(cm, EventType::kNormal, "Burst", "event " + std::to_string(i));
  }
  ASSERT_TRUE(recorder.Flush(20s));
  // A caller that waited for room in the queue would have dropped nothing.
  EXPECT_GT(recorder.dropped(), 0u);
  EXPECT_EQ(recorder.dropped() + recorder.written(), 200u);
  EXPECT_EQ(EventsFor("subject4").size(), recorder.written());
}

}  // namespace
}  // namespace caphv::kube
