// File: test/unit/kube/controller_test.cc
//
// Pure parts of the controller: request keys, object-to-request mappers and
// predicates. Reconcile scheduling against real watches is covered by
// test/integration/kube/informer_test.cc.

#include "kube/controller.h"

#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <stop_token>
#include <thread>

#include "kube/clock.h"
#include "kube/log.h"

namespace caphv::kube {
namespace {

TEST(RequestTest, KeyRoundTrip) {
  Request r{"ns", "name"};
  EXPECT_EQ(r.Key(), "ns/name");
  EXPECT_EQ(Request::FromKey("ns/name"), r);
  Request c{"", "cluster"};
  EXPECT_EQ(c.Key(), "cluster");
  EXPECT_EQ(Request::FromKey("cluster"), c);
}

TEST(MapperTest, MapToSelf) {
  Object o = {{"metadata", {{"namespace", "ns"}, {"name", "a"}}}};
  EXPECT_EQ(MapToSelf()(o), (std::vector<Request>{{"ns", "a"}}));
}

TEST(MapperTest, MapToOwnerMatchesGroupKindAndController) {
  Object o = {{"metadata",
               {{"namespace", "ns"},
                {"name", "child"},
                {"ownerReferences",
                 {{{"apiVersion", "cluster.x-k8s.io/v1beta1"},
                   {"kind", "Machine"},
                   {"name", "m1"},
                   {"controller", true}},
                  {{"apiVersion", "cluster.x-k8s.io/v1beta1"}, {"kind", "Machine"}, {"name", "m2"}},
                  {{"apiVersion", "other.io/v1"}, {"kind", "Machine"}, {"name", "m3"}},
                  {{"apiVersion", "v1"}, {"kind", "Secret"}, {"name", "s"}}}}}}};
  EXPECT_EQ(MapToOwner("cluster.x-k8s.io", "Machine")(o), (std::vector<Request>{{"ns", "m1"}}));
  EXPECT_EQ(MapToOwner("cluster.x-k8s.io", "Machine", false)(o),
            (std::vector<Request>{{"ns", "m1"}, {"ns", "m2"}}));
  EXPECT_EQ(MapToOwner("", "Secret", false)(o), (std::vector<Request>{{"ns", "s"}}));
  EXPECT_TRUE(MapToOwner("", "Secret", true)(o).empty());
  EXPECT_TRUE(MapToOwner("x", "Y")(Object::object()).empty());
}

TEST(PredicatesTest, GenerationAndResourceVersionChanged) {
  Object a = {{"metadata", {{"generation", 1}, {"resourceVersion", "10"}}}};
  Object b = {{"metadata", {{"generation", 1}, {"resourceVersion", "11"}}}};
  Object c = {{"metadata", {{"generation", 2}, {"resourceVersion", "12"}}}};
  EXPECT_FALSE(GenerationChanged().update(a, b));
  EXPECT_TRUE(GenerationChanged().update(b, c));
  EXPECT_FALSE(ResourceVersionChanged().update(a, a));
  EXPECT_TRUE(ResourceVersionChanged().update(a, b));
}

TEST(PredicatesTest, StatusOnlyChangesAreIgnored) {
  const auto update = IgnoreStatusOnlyChanges().update;
  const Object base = Object::parse(R"({"apiVersion": "v1", "kind": "K",
      "metadata": {"name": "m", "resourceVersion": "10", "generation": 1,
                   "labels": {"a": "1"}, "finalizers": ["f"]},
      "spec": {"cpu": 2}, "status": {"ready": false}})");
  auto with = [&](const char* pointer, const Object& value, const char* rv = "11") {
    Object o = base;
    o[Object::json_pointer(pointer)] = value;
    o["metadata"]["resourceVersion"] = rv;
    return o;
  };
  // Its own status write, whatever it changed in the status.
  EXPECT_FALSE(update(base, with("/status/ready", true)));
  EXPECT_FALSE(update(base, with("/status/addresses", Object::array())));
  EXPECT_FALSE(update(base, with("/metadata/managedFields", Object::array())));
  // Everything else passes: spec, labels, annotations, finalizers, deletion,
  // a key added or removed anywhere outside the status.
  EXPECT_TRUE(update(base, with("/spec/cpu", 4)));
  EXPECT_TRUE(update(base, with("/spec/providerID", "harvester://u")));
  EXPECT_TRUE(update(base, with("/metadata/labels/b", "2")));
  EXPECT_TRUE(update(base, with("/metadata/annotations", {{"cluster.x-k8s.io/paused", ""}})));
  EXPECT_TRUE(update(base, with("/metadata/finalizers", Object::array())));
  EXPECT_TRUE(update(base, with("/metadata/deletionTimestamp", "2026-11-29T00:00:00Z")));
  Object no_spec = base;
  no_spec.erase("spec");
  no_spec["metadata"]["resourceVersion"] = "11";
  EXPECT_TRUE(update(base, no_spec));
  EXPECT_TRUE(update(no_spec, with("/status/ready", true)));
  // A resync (same resourceVersion) passes, as it exists to reconcile again.
  EXPECT_TRUE(update(base, base));
}

TEST(ResultTest, Constructors) {
  EXPECT_TRUE(Result::Done().error.ok());
  EXPECT_EQ(Result::RequeueAfter(std::chrono::seconds(3)).requeue_after, std::chrono::seconds(3));
  Result e = Result::Error(Status(StatusCode::kConflict, "x"));
  EXPECT_FALSE(e.error.ok());
  EXPECT_FALSE(e.terminal);
  EXPECT_TRUE(Result::Terminal(Status(StatusCode::kInvalid, "y")).terminal);
}

// Runs a controller without watches whose reconcile fails once with `first`
// and then succeeds; returns what it logged at verbosity 0.
std::string LogOfOneRetry(const Status& first) {
  std::ostringstream out;
  log::Configure(0, log::Format::kJson, &out);
  std::atomic<int> calls{0};
  Controller::Options options;
  options.name = "retry-test";
  options.register_metrics = false;
  Controller controller(std::move(options), [&](const Request&) {
    return calls.fetch_add(1) == 0 ? Result::Error(first) : Result::Done();
  });
  std::stop_source stop;
  std::jthread runner([&] { controller.Run(stop.get_token()).IgnoreError(); });
  controller.Enqueue(Request{"ns", "a"});
  for (int i = 0; i < 500 && calls.load() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop.request_stop();
  runner.join();
  log::Configure(0, log::Format::kJson, nullptr);
  EXPECT_EQ(calls.load(), 2) << "the failed reconcile is retried";
  return out.str();
}

TEST(ControllerTest, RetriedConflictIsNotLoggedAsAnError) {
  const std::string logged =
      LogOfOneRetry(Status(StatusCode::kConflict, "the object was modified"));
  EXPECT_EQ(logged.find("Reconciler error"), std::string::npos) << logged;
}

// A limiter whose every delay is an hour: what a key reaches after twenty
// failures in a row under the default one (5 ms x 2^19, capped at 1000 s).
class HourLimiter final : public RateLimiter {
 public:
  Duration When(const std::string&) override { return std::chrono::hours(1); }
  Duration Peek(const std::string&) override { return std::chrono::hours(1); }
  void Forget(const std::string&) override {}
  int NumRequeues(const std::string&) override { return 0; }
};

// How many times a controller whose reconcile fails with `error` until it is
// told to stop reconciled one key within `within`, its backoff an hour.
int CallsWithinUnderAnHourOfBackoff(const Status& error, std::chrono::milliseconds within) {
  std::atomic<int> calls{0};
  Controller::Options options;
  options.name = "backoff-test";
  options.register_metrics = false;
  options.rate_limiter = std::make_unique<HourLimiter>();
  Controller controller(std::move(options), [&](const Request&) {
    calls.fetch_add(1);
    return Result::Error(error);
  });
  std::stop_source stop;
  std::jthread runner([&] { controller.Run(stop.get_token()).IgnoreError(); });
  controller.Enqueue(Request{"ns", "a"});
  std::this_thread::sleep_for(within);
  stop.request_stop();
  runner.join();
  return calls.load();
}

TEST(ControllerTest, AConflictIsRetriedWithinASecondWhateverTheBackoff) {
  // Machines reserving addresses of one IPPool conflict with each other; a
  // key that lost many times must not wait minutes for its next try.
  EXPECT_GE(CallsWithinUnderAnHourOfBackoff(Status(StatusCode::kConflict, "modified"),
                                            std::chrono::milliseconds(2500)),
            2);  // an hour's backoff would allow one; 2 leaves a loaded machine 1.5 s
}

TEST(ControllerTest, OtherErrorsWaitTheirWholeBackoff) {
  EXPECT_EQ(CallsWithinUnderAnHourOfBackoff(Status(StatusCode::kInternal, "boom"),
                                            std::chrono::milliseconds(1500)),
            1);
}

TEST(ControllerTest, OtherErrorsAreLoggedAsErrors) {
  const std::string logged = LogOfOneRetry(Status(StatusCode::kInternal, "boom"));
  EXPECT_NE(logged.find("Reconciler error"), std::string::npos) << logged;
  EXPECT_NE(logged.find("boom"), std::string::npos) << logged;
}

// Waits (in real time, up to 5 s) until `calls` reaches `n`.
bool WaitForCalls(const std::atomic<int>& calls, int n) {
  for (int i = 0; i < 500 && calls.load() < n; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return calls.load() >= n;
}

TEST(ControllerTest, AReconcileWokenEarlyReplacesThePendingRequeue) {
  FakeClock clock;
  std::atomic<int> calls{0};
  Controller::Options options;
  options.name = "requeue-test";
  options.register_metrics = false;
  options.clock = &clock;
  // 1st and 2nd: come back in 10 s; 3rd: done.
  Controller controller(std::move(options), [&](const Request&) {
    return calls.fetch_add(1) < 2 ? Result::RequeueAfter(std::chrono::seconds(10)) : Result::Done();
  });
  std::stop_source stop;
  std::jthread runner([&] { controller.Run(stop.get_token()).IgnoreError(); });
  controller.Enqueue(Request{"ns", "a"});
  ASSERT_TRUE(WaitForCalls(calls, 1));
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Step(std::chrono::seconds(10));
  ASSERT_TRUE(WaitForCalls(calls, 2)) << "with no event, the requeue brings the key back";
  controller.Enqueue(Request{"ns", "a"});  // an event before the next requeue
  ASSERT_TRUE(WaitForCalls(calls, 3));
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  clock.Step(std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(calls.load(), 3) << "the third reconcile said done: no stale requeue follows it";
  stop.request_stop();
  runner.join();
}

// Machines contending for one IPPool lose many conflicts in a row; the
// transient error that may come next (a 429) must not inherit their count.
TEST(ControllerTest, AnErrorAfterManyConflictsBacksOffFromAboutASecond) {
  FakeClock clock;
  std::atomic<int> calls{0};
  constexpr int kConflicts = 12;  // counted on: the error would wait 5 ms x 2^12 = 20 s
  Controller::Options options;
  options.name = "conflicts-then-error";
  options.register_metrics = false;
  options.clock = &clock;
  Controller controller(std::move(options), [&](const Request&) {
    const int n = calls.fetch_add(1);
    if (n < kConflicts) return Result::Error(Status(StatusCode::kConflict, "modified"));
    if (n == kConflicts)
      return Result::Error(Status(StatusCode::kUnavailable, "too many requests"));
    return Result::Done();
  });
  std::stop_source stop;
  std::jthread runner([&] { controller.Run(stop.get_token()).IgnoreError(); });
  controller.Enqueue(Request{"ns", "a"});
  for (int i = 1; i <= kConflicts; ++i) {
    ASSERT_TRUE(WaitForCalls(calls, i));
    ASSERT_TRUE(clock.BlockUntilWaiters(1));
    clock.Step(kConflictRetryMax);
  }
  ASSERT_TRUE(WaitForCalls(calls, kConflicts + 1));  // the error
  ASSERT_TRUE(clock.BlockUntilWaiters(1));
  // The conflicts stopped counting once the key's delay reached kConflictRetryMax:
  // at 8 failures (5 ms x 2^8 = 1.28 s).
  clock.Step(std::chrono::milliseconds(1300));
  EXPECT_TRUE(WaitForCalls(calls, kConflicts + 2))
      << "the retry after the error waited for the conflicts' backoff";
  stop.request_stop();
  runner.join();
}

}  // namespace
}  // namespace caphv::kube
