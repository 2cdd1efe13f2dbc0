// File: bench/codec_bench.cc
//
// The packed cache's codec, no bed: the objects of
// bench/data/watched_objects.json (a VM, VMI, PVC, HarvesterMachine and
// Machine as a bed's apiservers served them), without managedFields, as a
// packed informer store keeps them. Benchmark:
//
//   BM_UnpackObject/0|1    a cache read's decode of the packed bytes: /0
//                          nlohmann's from_msgpack (kube::Unpack before
//                          kube::DecodeMsgpack), /1 kube::Unpack.
//
// Counters: objects and bytes (of MessagePack) per second.
//
// Run (from the source tree): CAPHV_SOURCE_DIR=. ./build/bench/codec_bench

#include <benchmark/benchmark.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>
#include <vector>

#include "kube/msgpack.h"
#include "kube/store.h"
#include "support/testbed.h"

namespace caphv::kube {
namespace {

// The objects of the file without managedFields; empty when it is missing.
std::vector<Object> CachedObjects() {
  std::ifstream in(testing::SourcePath("bench/data/watched_objects.json"));
  std::stringstream text;
  text << in.rdbuf();
  Object list = Object::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  std::vector<Object> out;
  if (!list.is_object() || !list.contains("items")) return out;
  for (auto& item : list["items"]) {
    CompactObject(item);
    out.push_back(std::move(item));
  }
  return out;
}

size_t PackedSize(const std::vector<Object>& objects) {
  size_t bytes = 0;
  for (const auto& o : objects) bytes += EncodeMsgpack(o).size();
  return bytes;
}

void BM_UnpackObject(benchmark::State& state) {
  const std::vector<Object> objects = CachedObjects();
  if (objects.empty()) {
    state.SkipWithError("bench/data/watched_objects.json is missing (set CAPHV_SOURCE_DIR)");
    return;
  }
  std::vector<ObjectPtr> packed;
  for (const auto& o : objects) packed.push_back(Pack(o));
  for (auto _ : state) {
    for (const auto& p : packed) {
      if (state.range(0) == 0) {
        const auto& bytes = p->get_binary();
        ObjectPtr o =
            std::make_shared<const Object>(Object::from_msgpack(bytes.begin(), bytes.end()));
        benchmark::DoNotOptimize(o);
      } else {
        ObjectPtr o = Unpack(p);
        benchmark::DoNotOptimize(o);
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * objects.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * PackedSize(objects)));
}
BENCHMARK(BM_UnpackObject)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace caphv::kube

BENCHMARK_MAIN();
