// Unit tests of the /healthz and /readyz handler logic.

#include "kube/health.h"

#include <gtest/gtest.h>

#include <atomic>

namespace caphv::kube::health {
namespace {

HttpRequest Get(std::string target) {
  HttpRequest r;
  r.method = "GET";
  r.target = target;
  auto q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) r.query = target.substr(q + 1);
  return r;
}

Checker Failing() {
  return [] { return Status(StatusCode::kUnavailable, "cache not synced"); };
}

TEST(CheckSetTest, NoChecksMeansPing) {
  CheckSet set("healthz");
  auto r = set.Serve(Get("/healthz?verbose"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "[+]ping ok\nhealthz check passed\n");
}

TEST(CheckSetTest, AllHealthyIsPlainOk) {
  CheckSet set("healthz");
  set.Add("ping", Ping());
  set.Add("informers", Ping());
  auto r = set.Serve(Get("/healthz"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "ok");
  EXPECT_EQ(r.content_type, "text/plain; charset=utf-8");
}

TEST(CheckSetTest, FailureIs500AndListsChecksSortedWithoutReasons) {
  CheckSet set("readyz");
  set.Add("webhook", Failing());
  set.Add("cache", Ping());
  auto r = set.Serve(Get("/readyz"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, "[+]cache ok\n[-]webhook failed: reason withheld\nreadyz check failed\n");
  EXPECT_EQ(r.body.find("cache not synced"), std::string::npos);
}

TEST(CheckSetTest, ExcludeSkipsChecksAndWarnsAboutUnknownNames) {
  CheckSet set("readyz");
  set.Add("webhook", Failing());
  set.Add("cache", Ping());
  EXPECT_EQ(set.Serve(Get("/readyz?exclude=webhook")).status, 200);
  EXPECT_EQ(set.Serve(Get("/readyz?exclude=webhook")).body, "ok");
  auto r = set.Serve(Get("/readyz?verbose=1&exclude=webhook&exclude=nope"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body,
            "[+]cache ok\n[+]webhook excluded: ok\n"
            "warn: some health checks cannot be excluded: no matches for \"nope\"\n"
            "readyz check passed\n");
  EXPECT_EQ(set.Serve(Get("/readyz?exclude=cache,webhook")).status, 200);
}

TEST(CheckSetTest, SingleCheckPath) {
  CheckSet set("readyz");
  set.Add("webhook", Failing());
  set.Add("cache", Ping());
  EXPECT_EQ(set.Serve(Get("/readyz/cache")).status, 200);
  EXPECT_EQ(set.Serve(Get("/readyz/cache")).body, "ok");
  EXPECT_EQ(set.Serve(Get("/readyz/webhook")).status, 500);
  EXPECT_EQ(set.Serve(Get("/readyz/missing")).status, 404);
}

TEST(CheckSetTest, ChecksAreEvaluatedPerRequest) {
  std::atomic<bool> healthy{false};
  CheckSet set("readyz");
  set.Add("flag",
          [&] { return healthy ? Status::Ok() : Status(StatusCode::kUnavailable, "not yet"); });
  EXPECT_EQ(set.Serve(Get("/readyz")).status, 500);
  healthy = true;
  EXPECT_EQ(set.Serve(Get("/readyz")).status, 200);
}

TEST(ProbesTest, ShutdownFlipsReadinessButNotLiveness) {
  Probes probes;
  probes.AddHealthzCheck("ping", Ping());
  probes.AddReadyzCheck("ping", Ping());
  EXPECT_EQ(probes.ServeReadyz(Get("/readyz")).status, 200);
  probes.SetShuttingDown();
  auto r = probes.ServeReadyz(Get("/readyz?verbose"));
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("[-]shutdown failed"), std::string::npos);
  EXPECT_EQ(probes.ServeHealthz(Get("/healthz")).status, 200);
}

TEST(MetricsHandlerTest, ServesPrometheusTextWithProcessMetrics) {
  auto r = ServeMetrics(Get("/metrics"));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.content_type.starts_with("text/plain; version=0.0.4"));
  for (const char* name : {"process_resident_memory_bytes", "process_cpu_seconds_total",
                           "process_start_time_seconds", "process_open_fds"}) {
    EXPECT_NE(r.body.find(std::string("# TYPE ") + name), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace caphv::kube::health
