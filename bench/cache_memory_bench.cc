// File: bench/cache_memory_bench.cc
//
// What one machine costs in caphv-manager's caches, kind by kind. No bed:
// the objects are bench/data/machine_objects.json, one of each kind a
// machine brings, as the apiservers served them for a running machine of the
// demo (`make demo`: a control-plane machine of ClusterClass harvester-rke2,
// its Secrets' data left out, since no cache keeps it).
//
//   BM_CachedBytesPerObject/<i>/<packed>
//                                the i-th kind of the file: 1000 copies (each
//                                its own name) pass CompactObject and the
//                                manager's mask or transform for that kind, exactly
//                                as its informer caches them, into a
//                                kube::Store, plain (0) or packed (1, as the
//                                manager keeps its per-machine caches).
//                                Counters: KiB of heap per cached object
//                                (mallinfo2 delta / 1000), KiB of its JSON
//                                text once compacted, and microseconds per
//                                read (Get) of one.
//
// Run (from the checkout; or from the build directory without the variable):
//   CAPHV_SOURCE_DIR=$PWD build/bench/cache_memory_bench --benchmark_counters_tabular=true
//
// Thread safety: single-threaded.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "controllers/capi.h"
#include "controllers/harvester_connection.h"
#include "harvester/vm_builder.h"
#include "kube/secret_pool.h"
#include "kube/store.h"
#include "support/testbed.h"
#include "workload/workload_cluster.h"

namespace caphv {
namespace {

constexpr int kCopies = 1000;

size_t HeapInUse() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

// One cached kind: which apiserver, and the mask and transform its informer
// applies after CompactObject (src/controllers/setup.cc, harvester_connection.cc,
// src/workload/workload_cluster.cc).
struct CachedKind {
  const char* label;
  const char* kind;
  const kube::FieldMask* keep;
  std::function<void(kube::Object&)> transform;
};

const std::vector<CachedKind>& Kinds() {
  static const std::vector<CachedKind> kinds = {
      {"mgmt HarvesterMachine", "HarvesterMachine", nullptr, {}},
      {"mgmt Machine", "Machine", &controllers::MachineFields(), {}},
      {"mgmt Secret (bootstrap data)", "Secret", &kube::PoolSecretFields(), {}},
      {"harvester VirtualMachine", "VirtualMachine", &harvester::VmFields(), {}},
      {"harvester VirtualMachineInstance", "VirtualMachineInstance", &harvester::VmiFields(), {}},
      {"harvester PersistentVolumeClaim", "PersistentVolumeClaim", &controllers::PvcFields(), {}},
      {"harvester Secret (cloud-init)", "Secret", nullptr, controllers::CompactManagedSecret},
      {"workload Node", "Node", &workload::NodeFields(), {}},
  };
  return kinds;
}

std::string FixturePath() { return testing::SourcePath("bench/data/machine_objects.json"); }

// The objects of bench/data/machine_objects.json, in the order of Kinds()
// (a kind listed twice takes the file's next object of that kind; null where
// the file has none left). Empty when the file cannot be read.
const std::vector<kube::Object>& Fixtures() {
  static const std::vector<kube::Object> fixtures = [] {
    std::vector<kube::Object> out;
    std::ifstream in(FixturePath());
    std::stringstream text;
    text << in.rdbuf();
    const kube::Object list = kube::Object::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return out;
    const kube::Object& items = list["items"];
    std::vector<bool> used(items.size(), false);
    for (const auto& k : Kinds()) {
      kube::Object found;
      for (size_t i = 0; i < items.size(); ++i) {
        if (!used[i] && items[i].value("kind", "") == k.kind) {
          used[i] = true;
          found = items[i];
          break;
        }
      }
      out.push_back(std::move(found));
    }
    return out;
  }();
  return fixtures;
}

void BM_CachedBytesPerObject(benchmark::State& state) {
  const auto index = static_cast<size_t>(state.range(0));
  const bool packed = state.range(1) != 0;
  const CachedKind& kind = Kinds().at(index);
  if (Fixtures().empty()) {
    state.SkipWithError(("cannot read a List from " + FixturePath() +
                         " (run from the build directory, or set CAPHV_SOURCE_DIR)")
                            .c_str());
    return;
  }
  const kube::Object& fixture = Fixtures().at(index);
  if (!fixture.is_object()) {
    state.SkipWithError((FixturePath() + " has no " + kind.kind + " left for this kind").c_str());
    return;
  }
  state.SetLabel(kind.label);
  double per_object = 0, text = 0, read_us = 0;
  for (auto _ : state) {
    const size_t before = HeapInUse();
    {
      kube::Store store({{std::string(kube::kNamespaceIndex), kube::IndexByNamespace}}, packed);
      std::vector<std::string> keys;
      for (int i = 0; i < kCopies; ++i) {
        kube::Object o = fixture;
        o["metadata"]["name"] = o["metadata"].value("name", "") + "-" + std::to_string(i);
        kube::CompactObject(o);
        if (kind.keep != nullptr) kind.keep->Apply(o);
        if (kind.transform) kind.transform(o);
        if (i == 0) text = static_cast<double>(o.dump().size());
        keys.push_back(kube::KeyOf(o));
        store.Upsert(std::make_shared<const kube::Object>(std::move(o)));
      }
      per_object = static_cast<double>(HeapInUse() - before) / kCopies;
      const auto start = std::chrono::steady_clock::now();
      for (const auto& key : keys) benchmark::DoNotOptimize(store.Get(key));
      read_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count() /
                kCopies;
    }
  }
  state.counters["heap_KiB_per_object"] = per_object / 1024;
  state.counters["json_KiB_compacted"] = text / 1024;
  state.counters["read_us"] = read_us;
}
BENCHMARK(BM_CachedBytesPerObject)
    ->ArgsProduct({benchmark::CreateDenseRange(0, 7, 1), {0, 1}})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace caphv

BENCHMARK_MAIN();
