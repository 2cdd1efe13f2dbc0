// File: bench/watch_stop_bench.cc
//
// How long an idle watch takes to end once its stop is requested: what each
// informer of a stopping manager waits out (SIGTERM, a replica's hand-off, a
// deleted cluster's Harvester and workload connections). Against the test
// bed's management apiserver: a watch on the ConfigMaps of an empty
// namespace, left idle for the argument's milliseconds, then stopped.
// Benchmark:
//
//   BM_StopIdleWatch/<idle ms>   the time from request_stop() to Watch()
//                                returning (manual time, one watch an
//                                iteration).
//
// Run: CAPHV_TESTBED=DIR ./build/bench/watch_stop_bench

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <stop_token>
#include <thread>

#include "kube/client.h"
#include "kube/resource.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

constexpr const char* kNamespace = "bench-watch-stop";

std::shared_ptr<Client> SetUpBed() {
  static std::shared_ptr<Client> client = [] {
    if (std::getenv("CAPHV_TESTBED") == nullptr) return std::shared_ptr<Client>();
    auto c = testing::Testbed::Get().Client(testing::kMgmt);
    Object ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
    c->Create(resources::kNamespaces, "", ns).status().IgnoreError();
    return c;
  }();
  return client;
}

void BM_StopIdleWatch(benchmark::State& state) {
  auto client = SetUpBed();
  if (!client) {
    state.SkipWithError("no test bed (set CAPHV_TESTBED)");
    return;
  }
  const std::chrono::milliseconds idle(state.range(0));
  for (auto _ : state) {
    std::stop_source stop;
    Status result;
    std::thread watcher([&] {
      result = client->Watch(
          resources::kConfigMaps, kNamespace, {}, [](WatchEvent&&) { return true; },
          stop.get_token());
    });
    std::this_thread::sleep_for(idle);
    const auto asked = std::chrono::steady_clock::now();
    stop.request_stop();
    watcher.join();
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count());
    if (!result.IsCancelled()) state.SkipWithError(("watch ended: " + result.ToString()).c_str());
  }
}
BENCHMARK(BM_StopIdleWatch)
    ->Arg(300)
    ->Arg(1300)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(20);

}  // namespace
}  // namespace caphv::kube

BENCHMARK_MAIN();
