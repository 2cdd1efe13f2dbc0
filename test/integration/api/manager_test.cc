// caphv-manager as a process against the test bed's management apiserver:
// probes and metrics, glibc's thread caches, a clean stop on SIGINT, and
// flag and certificate errors. Leader election, the start order and a cache
// that cannot sync are in manager_leader_test.cc.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>

#include "controllers/metrics.h"
#include "kube/heap.h"
#include "manager_fixture.h"

namespace caphv::testing {
namespace {

TEST_F(ManagerProcessTest, ServesProbesAndEveryMetricFamily) {
  Start({});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << manager_->Log();
  std::string body;
  EXPECT_EQ(HttpGet(Url(probe_port_, "/healthz"), &body), 200);
  EXPECT_EQ(body, "ok");
  EXPECT_EQ(HttpGet(Url(probe_port_, "/readyz?verbose"), &body), 200);
  EXPECT_NE(body.find("[+]webhook ok"), std::string::npos) << body;
  EXPECT_EQ(HttpGet(Url(probe_port_, "/readyz/webhook"), nullptr), 200);

  ASSERT_EQ(HttpGet(Url(metrics_port_, "/metrics"), &body), 200);
  for (const auto& name : controllers::metrics::FamilyNames()) {
    EXPECT_NE(body.find("# TYPE " + name + " "), std::string::npos) << name << " in\n" << body;
  }
  for (const char* name : {"process_resident_memory_bytes", "process_cpu_seconds_total",
                           "process_start_time_seconds", "process_open_fds"}) {
    EXPECT_NE(body.find("# TYPE " + std::string(name) + " "), std::string::npos) << name;
  }
  EXPECT_NE(body.find("caphv_machine_creation_duration_seconds_bucket{le=\"512"),
            std::string::npos);
  EXPECT_NE(body.find("caphv_node_init_duration_seconds_bucket{le=\"0.5"), std::string::npos);
}

// A process's environment as the kernel holds it, NUL-separated. glibc
// splits GLIBC_TUNABLES there at its ':'s while reading it, so a value shows
// as consecutive entries.
std::string EnvironOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(ManagerProcessTest, RunsWithoutGlibcThreadCachesUnlessTheOperatorSetsThem) {
  // Under a sanitizer the heap is the sanitizer's: no glibc caches, no re-exec.
  if (!caphv::kube::HeapIsGlibcs()) GTEST_SKIP() << "the heap is a sanitizer's";
  // Re-executed in place: the pid the test started serves, with the caches off.
  Replica r = Launch({}, "tcache-off", "", {{"GLIBC_TUNABLES", "glibc.malloc.arena_max=2"}});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(r.probe_port, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << r.Log();
  const std::string env = EnvironOf(r.process->pid());
  EXPECT_NE(env.find(std::string("GLIBC_TUNABLES=glibc.malloc.arena_max=2") + '\0' +
                     "glibc.malloc.tcache_count=0"),
            std::string::npos);
  // Named as its binary in ps and top, not after /proc/self/exe.
  std::ifstream comm("/proc/" + std::to_string(r.process->pid()) + "/comm");
  std::string name;
  std::getline(comm, name);
  EXPECT_EQ(name, "caphv-manager");
  std::string body;
  ASSERT_EQ(HttpGet(Url(r.metrics_port, "/metrics"), &body), 200);
  EXPECT_NE(body.find("\ncaphv_heap_in_use_bytes "), std::string::npos) << body;
  r.process->Kill();

  // An operator's own value stands.
  Replica own = Launch({}, "tcache-own", "", {{"GLIBC_TUNABLES", "glibc.malloc.tcache_count=7"}});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(own.probe_port, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)))
      << own.Log();
  const std::string own_env = EnvironOf(own.process->pid());
  EXPECT_NE(own_env.find("GLIBC_TUNABLES=glibc.malloc.tcache_count=7"), std::string::npos);
  EXPECT_EQ(own_env.find("tcache_count=0"), std::string::npos);
}

TEST_F(ManagerProcessTest, SigintStopsCleanly) {
  Start({});
  ASSERT_TRUE(Eventually([&] { return HttpGet(Url(probe_port_, "/readyz"), nullptr) == 200; },
                         std::chrono::seconds(20)));
  manager_->Signal(SIGINT);
  auto code = manager_->Wait(std::chrono::seconds(10));
  ASSERT_TRUE(code.has_value());
  EXPECT_EQ(*code, 0) << manager_->Log();
}

TEST_F(ManagerProcessTest, BadFlagsExitNonZeroWithOneLine) {
  for (const std::string flags :
       {"--webhook-port=abc", "--no-such-flag", "--leader-elect-lease-duration=1s",
        "--log-format=xml", "--metrics-secure=false",
        "--metrics-secure=false --metrics-bind-address=0.0.0.0:8080"}) {
    std::string out;
    int rc = RunCommand("'" + Manager() + "' " + flags, &out);
    EXPECT_EQ(rc, 2) << flags << ": " << out;
    ASSERT_FALSE(out.empty()) << flags;
    EXPECT_EQ(out.find('\n'), out.size() - 1) << flags << ": " << out;
    EXPECT_EQ(out.rfind("caphv-manager: ", 0), 0u) << out;
    if (flags.rfind("--metrics-secure=false", 0) == 0) {
      EXPECT_NE(out.find("--metrics-secure=false"), std::string::npos) << out;
      EXPECT_NE(out.find("--metrics-bind-address"), std::string::npos) << out;
    }
  }
  std::string out;
  EXPECT_EQ(RunCommand("'" + Manager() + "' --version", &out), 0);
  EXPECT_EQ(out.rfind("caphv-manager ", 0), 0u) << out;
  EXPECT_EQ(RunCommand("'" + Manager() + "' --help", &out), 0);
}

TEST_F(ManagerProcessTest, FailsToStartWithoutCertificates) {
  std::string out;
  int rc = RunCommand("'" + Manager() + "' --kubeconfig='" + kubeconfig_ +
                          "' --enable-webhooks --webhook-port=" + std::to_string(FreePort()) +
                          " --metrics-bind-address=0 --health-probe-bind-address=0"
                          " --webhook-cert-dir=" +
                          (dir_ / "missing").string(),
                      &out);
  EXPECT_EQ(rc, 1) << out;
}

}  // namespace
}  // namespace caphv::testing
