// Integration tests of Lease-based leader election against the test bed's
// real kube-apiserver. Candidates are separate processes (test/lease_candidate)
// whose printed timelines are checked: one leader at a time, takeover after a
// SIGKILL within the lease duration (+ retry), fast takeover after a clean
// release on SIGTERM, and exit 1 when the lease is lost.

#include "kube/leader_election.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kube/metrics.h"
#include "support/process.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

using namespace std::chrono_literals;

// Short timings so tests run in seconds: lease 4 s, renew 3 s, retry 0.5 s.
constexpr int64_t kLeaseMs = 4000;
constexpr int64_t kRetryMs = 500;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct TimelineEntry {
  int64_t ms;
  std::string what;  // "leading" or "stopped leading"
};

// One lease_candidate process; killed (SIGKILL) on destruction if running.
class Candidate {
 public:
  Candidate(const std::string& identity, const std::string& ns, const std::string& lease)
      : identity_(identity) {
    out_path_ =
        std::filesystem::temp_directory_path() / testing::UniqueName("lease-candidate-" + identity);
    std::vector<std::string> args = {testing::BuildPath("test/lease_candidate"),
                                     "--kubeconfig",
                                     testing::Testbed::Get().KubeconfigPath(testing::kMgmt),
                                     "--namespace",
                                     ns,
                                     "--name",
                                     lease,
                                     "--identity",
                                     identity,
                                     "--lease-duration",
                                     "4",
                                     "--renew-deadline",
                                     "3",
                                     "--retry-period",
                                     "0.5"};
    child_.emplace(std::move(args), out_path_, /*append=*/false,
                   std::map<std::string, std::string>{}, out_path_.string() + ".log");
    if (!child_->started())
      ADD_FAILURE() << "cannot start " << testing::BuildPath("test/lease_candidate");
  }

  ~Candidate() {
    child_.reset();  // SIGKILLed and reaped
    std::error_code ec;
    std::filesystem::remove(out_path_, ec);
    std::filesystem::remove(out_path_.string() + ".log", ec);
  }

  std::vector<TimelineEntry> Timeline() const {
    std::vector<TimelineEntry> out;
    std::ifstream in(out_path_);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      TimelineEntry e;
      std::string id;
      fields >> e.ms >> id;
      std::getline(fields, e.what);
      if (!e.what.empty() && e.what[0] == ' ') e.what.erase(0, 1);
      if (id == identity_) out.push_back(e);
    }
    return out;
  }

  // The time of the first line equal to `what`, or -1.
  int64_t First(const std::string& what) const {
    for (const auto& e : Timeline()) {
      if (e.what == what) return e.ms;
    }
    return -1;
  }

  bool IsLeading() const {
    auto t = Timeline();
    return !t.empty() && t.back().what == "leading";
  }

  void Signal(int sig) { child_->Signal(sig); }

  // Waits for the process to exit; returns its exit code, or -1 on timeout
  // or death by signal.
  int Wait(std::chrono::milliseconds timeout) {
    const std::optional<int> code = child_->Wait(timeout);
    return code && *code < 128 ? *code : -1;
  }

  std::string Log() const {
    std::ifstream in(out_path_.string() + ".log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string identity_;
  std::filesystem::path out_path_;
  std::optional<testing::ChildProcess> child_;
};

// Stops and joins a runner thread on every exit path (failed ASSERTs too).
struct StopAndJoin {
  std::stop_source& stop;
  std::thread& thread;
  void Now() {
    stop.request_stop();
    if (thread.joinable()) thread.join();
  }
  ~StopAndJoin() { Now(); }
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  LeaderElectionTest()
      : client_(testing::Testbed::Get().Client(testing::kMgmt)), ns_(client_, "leader") {}

  LeaseRecord Lease() {
    auto got = client_->Get(resources::kLeases, ns_.name(), lease_);
    return got.ok() ? LeaseRecord::FromLease(*got) : LeaseRecord{};
  }

  std::shared_ptr<Client> client_;
  testing::ScopedNamespace ns_;
  std::string lease_ = testing::UniqueName("caphv-leader");
};

TEST_F(LeaderElectionTest, FollowerTakesOverAfterLeaderIsKilled) {
  Candidate a("a", ns_.name(), lease_);
  ASSERT_TRUE(testing::Eventually([&] { return a.IsLeading(); }, 20s)) << a.Log();
  Candidate b("b", ns_.name(), lease_);
  // b keeps following while a renews (several lease durations' worth of retries).
  std::this_thread::sleep_for(std::chrono::milliseconds(kLeaseMs + 1000));
  EXPECT_EQ(b.First("leading"), -1) << "both candidates led at once";
  EXPECT_TRUE(a.IsLeading());
  EXPECT_EQ(Lease().holder_identity, "a");
  EXPECT_EQ(Lease().lease_transitions, 0);

  const int64_t killed_at = NowMs();
  a.Signal(SIGKILL);
  a.Wait(5s);
  ASSERT_TRUE(testing::Eventually([&] { return b.IsLeading(); }, 20s)) << b.Log();
  const int64_t took = b.First("leading") - killed_at;
  std::printf("takeover after SIGKILL of the leader: %lld ms (lease %lld ms)\n",
              static_cast<long long>(took), static_cast<long long>(kLeaseMs));
  // b waits for the lease to expire as it observed it (at most one retry
  // before the kill): the safety property, asserted. How soon after that it
  // takes over (the duration plus two jittered retries and request latency
  // on an idle machine) is printed above, not asserted.
  EXPECT_GE(took, kLeaseMs - kRetryMs - 500) << "took over before the lease expired";
  EXPECT_EQ(Lease().holder_identity, "b");
  EXPECT_EQ(Lease().lease_transitions, 1);
}

TEST_F(LeaderElectionTest, CleanReleaseOnSigtermLetsFollowerTakeOverQuickly) {
  Candidate a("a", ns_.name(), lease_);
  ASSERT_TRUE(testing::Eventually([&] { return a.IsLeading(); }, 20s)) << a.Log();
  Candidate b("b", ns_.name(), lease_);
  std::this_thread::sleep_for(1500ms);
  ASSERT_EQ(b.First("leading"), -1);

  const int64_t term_at = NowMs();
  a.Signal(SIGTERM);
  EXPECT_EQ(a.Wait(10s), 0) << a.Log();
  const int64_t a_stopped = a.First("stopped leading");
  ASSERT_GT(a_stopped, 0) << a.Log();

  ASSERT_TRUE(testing::Eventually([&] { return b.IsLeading(); }, 10s)) << b.Log();
  const int64_t b_leading = b.First("leading");
  EXPECT_GT(b_leading, a_stopped) << "b started leading before a stopped";
  std::printf("takeover after SIGTERM (release): %lld ms\n",
              static_cast<long long>(b_leading - term_at));
  EXPECT_LE(b_leading - term_at, 22 * kRetryMs / 10 + 1000) << "release did not hand over fast";
  LeaseRecord rec = Lease();
  EXPECT_EQ(rec.holder_identity, "b");
  EXPECT_EQ(rec.lease_duration_seconds, 4);
}

TEST_F(LeaderElectionTest, LosingTheLeaseStopsLeadingAndExitsNonZero) {
  Candidate a("a", ns_.name(), lease_);
  ASSERT_TRUE(testing::Eventually([&] { return a.IsLeading(); }, 20s)) << a.Log();

  // An intruder overwrites the lease and keeps renewing it.
  const auto start = std::chrono::steady_clock::now();
  int exit_code = -1;
  while (std::chrono::steady_clock::now() - start < 15s) {
    auto got = client_->Get(resources::kLeases, ns_.name(), lease_);
    if (got.ok()) {
      Object lease = *got;
      LeaseRecord{"intruder", 4, MicroTimeNow(), MicroTimeNow(), 9}.ToLease(lease);
      client_->Update(resources::kLeases, ns_.name(), lease).status().IgnoreError();
    }
    exit_code = a.Wait(300ms);
    if (exit_code != -1) break;
  }
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(exit_code, 1) << a.Log();
  // Renew deadline (3 s) plus a retry and request latency on an idle
  // machine; printed, not asserted.
  std::printf(
      "exited %lld ms after the intruder's first write\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_GT(a.First("stopped leading"), 0);
  EXPECT_EQ(Lease().holder_identity, "intruder");
}

TEST_F(LeaderElectionTest, OnLostRunsAtOnceWithoutWaitingForTheLeadingWork) {
  auto elector = LeaderElector::New(client_, {.lease_namespace = ns_.name(),
                                              .lease_name = lease_,
                                              .identity = "busy",
                                              .lease_duration = 4s,
                                              .renew_deadline = 3s,
                                              .retry_period = 500ms});
  ASSERT_TRUE(elector.ok()) << elector.status().ToString();
  // The leading work ignores its token until released: a long reconcile.
  std::atomic<bool> release{false}, work_done{false}, work_done_at_lost{true};
  std::atomic<int> lost{0}, stopped{0};
  std::stop_source stop;
  Status result;
  std::thread runner;
  StopAndJoin guard{stop, runner};
  runner = std::thread([&] {
    result = (*elector)->Run(stop.get_token(), {.on_started_leading =
                                                    [&](std::stop_token) {
                                                      while (!release.load()) {
                                                        std::this_thread::sleep_for(10ms);
                                                      }
                                                      work_done.store(true);
                                                    },
                                                .on_stopped_leading = [&] { stopped++; },
                                                .on_lost =
                                                    [&] {
                                                      work_done_at_lost.store(work_done.load());
                                                      lost++;
                                                    }});
  });
  // Whatever fails below, the work ends before `guard` joins its thread.
  struct ReleaseOnExit {
    std::atomic<bool>& release;
    ~ReleaseOnExit() { release.store(true); }
  } release_on_exit{release};
  ASSERT_TRUE(testing::Eventually([&] { return (*elector)->IsLeader(); }, 10s));
  // An intruder takes the lease for an hour (again if the elector renewed
  // it between the read and the write: 409 Conflict).
  ASSERT_TRUE(testing::Eventually(
      [&] {
        auto got = client_->Get(resources::kLeases, ns_.name(), lease_);
        if (!got.ok()) return false;
        Object lease = *got;
        LeaseRecord{"intruder", 3600, MicroTimeNow(), MicroTimeNow(), 9}.ToLease(lease);
        return client_->Update(resources::kLeases, ns_.name(), lease).ok();
      },
      5s));
  // Renew deadline (3 s) plus a retry and request latency.
  EXPECT_TRUE(testing::Eventually([&] { return lost.load() == 1; }, 6s));
  EXPECT_FALSE(work_done_at_lost.load()) << "on_lost waited for the leading work";
  EXPECT_EQ(stopped.load(), 0) << "on_stopped_leading comes after the work returned";
  release.store(true);
  guard.Now();
  EXPECT_EQ(result.code(), StatusCode::kUnavailable) << result.ToString();
  EXPECT_EQ(lost.load(), 1);
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_EQ(Lease().holder_identity, "intruder");
}

TEST_F(LeaderElectionTest, InProcessElectorReportsMetricAndReleases) {
  auto elector = LeaderElector::New(client_, {.lease_namespace = ns_.name(),
                                              .lease_name = lease_,
                                              .identity = "solo",
                                              .lease_duration = 4s,
                                              .renew_deadline = 3s,
                                              .retry_period = 500ms});
  ASSERT_TRUE(elector.ok()) << elector.status().ToString();
  std::atomic<int> started{0}, stopped{0};
  std::stop_source stop;
  Status result = Status(StatusCode::kInternal, "not run");
  std::thread runner;
  StopAndJoin guard{stop, runner};
  runner = std::thread([&] {
    result = (*elector)->Run(stop.get_token(), {.on_started_leading =
                                                    [&](std::stop_token t) {
                                                      started++;
                                                      while (!t.stop_requested())
                                                        std::this_thread::sleep_for(10ms);
                                                    },
                                                .on_stopped_leading = [&] { stopped++; }});
  });
  ASSERT_TRUE(testing::Eventually([&] { return (*elector)->IsLeader(); }, 10s));
  const std::string gauge = "leader_election_master_status{name=\"" + lease_ + "\"} 1";
  EXPECT_NE(metrics::Serialize().find(gauge), std::string::npos) << metrics::Serialize();
  EXPECT_EQ(Lease().holder_identity, "solo");
  // Renewals keep it (several retry periods).
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE((*elector)->IsLeader());
  guard.Now();
  EXPECT_TRUE(result.ok()) << result.ToString();
  EXPECT_EQ(started.load(), 1);
  EXPECT_EQ(stopped.load(), 1);
  LeaseRecord rec = Lease();
  EXPECT_EQ(rec.holder_identity, "");
  EXPECT_EQ(rec.lease_duration_seconds, 1);
  EXPECT_NE(metrics::Serialize().find("leader_election_master_status{name=\"" + lease_ + "\"} 0"),
            std::string::npos);
}

TEST_F(LeaderElectionTest, StoppedLeadingRunsEvenWhenNeverLeading) {
  // Someone else holds the lease for a long time.
  Object lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", lease_}, {"namespace", ns_.name()}}}};
  LeaseRecord{"other", 3600, MicroTimeNow(), MicroTimeNow(), 0}.ToLease(lease);
  ASSERT_TRUE(client_->Create(resources::kLeases, ns_.name(), lease).ok());
  auto elector = LeaderElector::New(client_, {.lease_namespace = ns_.name(),
                                              .lease_name = lease_,
                                              .identity = "waiting",
                                              .lease_duration = 4s,
                                              .renew_deadline = 3s,
                                              .retry_period = 500ms});
  ASSERT_TRUE(elector.ok());
  std::stop_source stop;
  std::atomic<int> started{0}, stopped{0};
  std::mutex seen_mu;
  std::string seen;
  std::thread runner;
  StopAndJoin guard{stop, runner};
  runner = std::thread([&] {
    (*elector)
        ->Run(stop.get_token(), {.on_started_leading = [&](std::stop_token) { started++; },
                                 .on_stopped_leading = [&] { stopped++; },
                                 .on_new_leader =
                                     [&](const std::string& leader) {
                                       std::lock_guard lock(seen_mu);
                                       seen = leader;
                                     }})
        .IgnoreError();
  });
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ((*elector)->Leader(), "other");
  {
    std::lock_guard lock(seen_mu);
    EXPECT_EQ(seen, "other");
  }
  guard.Now();
  EXPECT_EQ(started.load(), 0);
  EXPECT_EQ(stopped.load(), 1);
  EXPECT_EQ(Lease().holder_identity, "other");  // never released what it did not hold
}

}  // namespace
}  // namespace caphv::kube
