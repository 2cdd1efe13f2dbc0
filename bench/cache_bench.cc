// File: bench/cache_bench.cc
//
// Informer cache throughput and memory against the test bed's mgmt
// apiserver. Setup (not timed) makes sure 10,000 custom objects of ~1 KB of
// data exist in namespace `cache-bench` (kept between runs). Benchmarks:
//
//   BM_ListSyncIntoInformer   a new Informer: paged LIST (500/page) over HTTP,
//                             JSON decode, compaction, indexing, until
//                             HasSynced(). Counters: objects/s, resident
//                             bytes per cached object (mallinfo2 delta while
//                             the informer is alive / object count).
//   BM_DecodeAndCache         the client-side share alone: parse the 10,000
//                             objects' JSON text and Replace() them into an
//                             informer store (no network).
//   BM_WatchEventsIntoCache   merge-patch 500 objects and time until all 500
//                             MODIFIED events are in the cache.
//   BM_MachinesOfACluster/0|1 no bed: the keys of a cluster's 1000 machines
//                             in a packed store, /0 through ListByLabels
//                             (every one decoded), /1 KeysByLabels (the
//                             label index alone). Counter: the heap the
//                             read holds when it returns.
//   BM_DecodeListPage/0|1     no bed: one LIST page of 500 VM-sized objects
//                             (managedFields, spec, status: ~8 KB of JSON
//                             each) decoded and compacted as an informer
//                             does, /0 as one parsed tree compacted
//                             afterwards (the client before it streamed),
//                             /1 item by item (kube::ParseUntrustedList),
//                             /2 item by item leaving managedFields out
//                             (FieldMask::WithoutManagedFields()).
//                             Counters: peak heap above the page's text
//                             while decoding, and what is kept.
//   BM_DecodeWatchEvent/0|1   no bed: watch events (MODIFIED) of the objects
//                             of bench/data/watched_objects.json (a VM, VMI,
//                             PVC, HarvesterMachine and Machine as a bed's
//                             apiservers served them, managedFields and
//                             all), decoded and compacted as a reflector
//                             does: /0 as the client did before
//                             kube::ParseUntrustedJson built the document
//                             itself (a depth pre-scan, then nlohmann's
//                             parser), /1 ParseUntrustedJson, /2 leaving
//                             managedFields out while parsing and then
//                             applying the kind's cache mask (the manager
//                             before parse-time masks), /3 building only
//                             what the kind's cache keeps (its FieldMask)
//                             while parsing.
//
// Run (needs a bed: hack/testbed up --dir DIR, except BM_DecodeListPage):
//   CAPHV_TESTBED=DIR ./build/bench/cache_bench
//
// Thread safety: single-threaded driver; the informer runs its own thread.

#include <benchmark/benchmark.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "controllers/capi.h"
#include "controllers/harvester_connection.h"
#include "harvester/vm_builder.h"
#include "kube/informer.h"
#include "kube/untrusted_json.h"
#include "support/testbed.h"
#include "workload/workload_cluster.h"

namespace caphv::kube {
namespace {

constexpr int kObjects = 10000;
constexpr char kNamespace[] = "cache-bench";
const GroupVersionResource kGizmos{"bench.caphv.io", "v1", "gizmos", true};

size_t HeapInUse() {
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

std::string ObjectName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "gizmo-%05d", i);
  return buf;
}

Object Gizmo(int i) {
  Object data = Object::object();
  for (int k = 0; k < 16; ++k) {
    data["key-" + std::to_string(k)] = std::string(56, static_cast<char>('a' + (i + k) % 26));
  }
  return {{"apiVersion", "bench.caphv.io/v1"},
          {"kind", "Gizmo"},
          {"metadata",
           {{"name", ObjectName(i)},
            {"namespace", kNamespace},
            {"labels", {{"app", "bench"}, {"shard", std::to_string(i % 10)}}}}},
          {"spec", {{"data", data}}}};
}

// Installs the CRD and creates whatever of the 10,000 objects is missing.
std::shared_ptr<Client> SetUpBed() {
  static std::shared_ptr<Client> client = [] {
    if (!std::getenv("CAPHV_TESTBED")) return std::shared_ptr<Client>();
    auto c = testing::Testbed::Get().Client(testing::kMgmt);
    Object crd = Object::parse(R"({
      "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
      "metadata": {"name": "gizmos.bench.caphv.io"},
      "spec": {"group": "bench.caphv.io", "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
        "versions": [{"name": "v1", "served": true, "storage": true,
          "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})");
    if (!c->Apply(resources::kCustomResourceDefinitions, "", crd).ok())
      return std::shared_ptr<Client>();
    Object ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
    c->Create(resources::kNamespaces, "", ns).status().IgnoreError();
    if (!testing::Eventually([&] { return c->List(kGizmos, kNamespace).ok(); })) {
      return std::shared_ptr<Client>();
    }
    auto existing = c->ListAll(kGizmos, kNamespace);
    if (!existing.ok()) return std::shared_ptr<Client>();
    std::vector<bool> have(kObjects, false);
    for (const auto& o : existing->items) {
      const std::string name = NameOf(o);
      if (name.size() == 11) have[std::stoi(name.substr(6))] = true;
    }
    std::atomic<int> failures{0};
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&, w] {
        for (int i = w; i < kObjects; i += 4) {
          if (have[i]) continue;
          auto r = c->Create(kGizmos, kNamespace, Gizmo(i));
          if (!r.ok() && !r.status().IsAlreadyExists()) failures++;
        }
      });
    }
    for (auto& t : writers) t.join();
    return failures.load() == 0 ? c : std::shared_ptr<Client>();
  }();
  return client;
}

InformerOptions GizmoInformer() {
  InformerOptions o;
  o.gvr = kGizmos;
  o.ns = kNamespace;
  return o;
}

void BM_ListSyncIntoInformer(benchmark::State& state) {
  auto client = SetUpBed();
  if (!client) {
    state.SkipWithError("no test bed (set CAPHV_TESTBED) or setup failed");
    return;
  }
  double bytes_per_object = 0;
  size_t cached = 0;
  for (auto _ : state) {
    malloc_trim(0);
    const size_t before = HeapInUse();
    auto inf = std::make_unique<Informer>(client, GizmoInformer());
    inf->Start();
    if (!inf->WaitForSync(std::chrono::minutes(2))) {
      state.SkipWithError("informer did not sync");
      return;
    }
    state.PauseTiming();
    malloc_trim(0);
    cached = inf->store().Size();
    bytes_per_object = static_cast<double>(HeapInUse() - before) / static_cast<double>(cached);
    inf.reset();
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * cached));
  state.counters["objects"] = static_cast<double>(cached);
  state.counters["heap_bytes_per_object"] = bytes_per_object;
}
BENCHMARK(BM_ListSyncIntoInformer)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

void BM_DecodeAndCache(benchmark::State& state) {
  auto client = SetUpBed();
  if (!client) {
    state.SkipWithError("no test bed (set CAPHV_TESTBED) or setup failed");
    return;
  }
  auto list = client->ListAll(kGizmos, kNamespace);
  if (!list.ok()) {
    state.SkipWithError("list failed");
    return;
  }
  std::vector<std::string> texts;
  size_t text_bytes = 0;
  for (const auto& o : list->items) {
    texts.push_back(o.dump());
    text_bytes += texts.back().size();
  }
  list = Status(StatusCode::kCancelled, "released");
  double bytes_per_object = 0;
  for (auto _ : state) {
    malloc_trim(0);
    const size_t before = HeapInUse();
    Informer inf(nullptr, GizmoInformer());
    std::vector<Object> items;
    items.reserve(texts.size());
    for (const auto& t : texts) items.push_back(Object::parse(t));
    inf.Replace(std::move(items), "1");
    state.PauseTiming();
    malloc_trim(0);
    bytes_per_object =
        static_cast<double>(HeapInUse() - before) / static_cast<double>(inf.store().Size());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * texts.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text_bytes));
  state.counters["json_bytes_per_object"] =
      static_cast<double>(text_bytes) / static_cast<double>(texts.size());
  state.counters["heap_bytes_per_object"] = bytes_per_object;
}
BENCHMARK(BM_DecodeAndCache)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// A VM-sized object: the server-side apply record of three managers, a
// spec with disks and cloud-init, a status with conditions.
Object VmLike(int i) {
  Object managed = Object::array();
  for (const char* manager : {"caphv", "harvester", "virt-controller"}) {
    Object fields = Object::object();
    for (int k = 0; k < 24; ++k) fields["f:field-" + std::to_string(k)] = Object::object();
    managed.push_back({{"manager", manager},
                       {"operation", "Apply"},
                       {"apiVersion", "kubevirt.io/v1"},
                       {"time", "2026-11-28T14:00:00Z"},
                       {"fieldsType", "FieldsV1"},
                       {"fieldsV1", {{"f:spec", fields}}}});
  }
  Object disks = Object::array();
  for (int d = 0; d < 3; ++d) {
    disks.push_back({{"name", "disk-" + std::to_string(d)},
                     {"bootOrder", d + 1},
                     {"disk", {{"bus", "virtio"}}}});
  }
  Object conditions = Object::array();
  for (const char* type : {"Ready", "AgentConnected", "LiveMigratable", "Provisioning"}) {
    conditions.push_back({{"type", type},
                          {"status", "True"},
                          {"reason", "Reconciled"},
                          {"lastTransitionTime", "2026-11-28T14:00:00Z"},
                          {"message", std::string(80, 'm')}});
  }
  return {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachine"},
      {"metadata",
       {{"name", ObjectName(i)},
        {"namespace", kNamespace},
        {"uid", "6f1c1d3e-0000-4000-8000-" + std::to_string(100000000000 + i)},
        {"resourceVersion", std::to_string(1000 + i)},
        {"labels", {{"cluster.x-k8s.io/cluster-name", "bench"}}},
        {"annotations", {{"harvesterhci.io/volumeClaimTemplates", std::string(600, 'v')}}},
        {"managedFields", managed}}},
      {"spec",
       {{"runStrategy", "RerunOnFailure"},
        {"template",
         {{"spec",
           {{"domain", {{"cpu", {{"cores", 2}}}, {"devices", {{"disks", disks}}}}},
            {"volumes",
             {{{"name", "cloudinitdisk"},
               {"cloudInitNoCloud", {{"userData", std::string(1500, 'u')}}}}}}}}}}}},
      {"status", {{"printableStatus", "Running"}, {"ready", true}, {"conditions", conditions}}}};
}

// What an informer keeps of each item: compaction, then a transform that
// keeps metadata and status (as the VM cache keeps a few status fields).
void KeepLikeAnInformer(Object& item) {
  CompactObject(item);
  item.erase("spec");
}

void BM_DecodeListPage(benchmark::State& state) {
  constexpr int kItems = 500;
  const bool streamed = state.range(0) >= 1;
  const FieldMask* leave_out = state.range(0) == 2 ? &FieldMask::WithoutManagedFields() : nullptr;
  std::string page;
  {
    Object list = {{"apiVersion", "kubevirt.io/v1"},
                   {"kind", "VirtualMachineList"},
                   {"metadata", {{"resourceVersion", "9999"}}},
                   {"items", Object::array()}};
    for (int i = 0; i < kItems; ++i) list["items"].push_back(VmLike(i));
    page = list.dump();
  }
  double peak_above = 0;
  double kept = 0;
  for (auto _ : state) {
    malloc_trim(0);
    const size_t before = HeapInUse();
    size_t peak = before;
    std::vector<Object> items;
    items.reserve(kItems);
    if (streamed) {
      ParseUntrustedList(
          page,
          [&](Object&& item) {
            peak = std::max(peak, HeapInUse());
            KeepLikeAnInformer(item);
            items.push_back(std::move(item));
          },
          nullptr, leave_out);
    } else {
      Object whole = ParseUntrustedJson(page);
      peak = std::max(peak, HeapInUse());
      for (auto& item : whole["items"]) {
        KeepLikeAnInformer(item);
        items.push_back(std::move(item));
      }
    }
    peak = std::max(peak, HeapInUse());
    state.PauseTiming();
    peak_above = static_cast<double>(peak - before);
    kept = static_cast<double>(HeapInUse() - before);
    if (items.size() != kItems) state.SkipWithError("the page did not decode");
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kItems));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * page.size()));
  state.counters["page_MiB"] = static_cast<double>(page.size()) / (1 << 20);
  state.counters["peak_heap_MiB"] = peak_above / (1 << 20);
  state.counters["kept_MiB"] = kept / (1 << 20);
}
BENCHMARK(BM_DecodeListPage)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->Iterations(5);

// One watch event line per object of bench/data/watched_objects.json.
std::vector<std::string> WatchEventLines() {
  std::ifstream in(testing::SourcePath("bench/data/watched_objects.json"));
  std::stringstream text;
  text << in.rdbuf();
  const Object list = Object::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  std::vector<std::string> lines;
  if (!list.is_object() || !list.contains("items")) return lines;
  for (const auto& item : list["items"]) {
    lines.push_back(Object{{"type", "MODIFIED"}, {"object", item}}.dump());
  }
  return lines;
}

// What the manager's cache of an object's kind keeps (src/controllers/setup.cc,
// harvester_connection.cc, src/workload/workload_cluster.cc); null: the
// object whole but for managedFields.
const FieldMask* CacheMaskOf(const Object& o) {
  const std::string kind = o.value("kind", "");
  if (kind == "VirtualMachine") return &harvester::VmFields();
  if (kind == "VirtualMachineInstance") return &harvester::VmiFields();
  if (kind == "PersistentVolumeClaim") return &controllers::PvcFields();
  if (kind == "Machine") return &controllers::MachineFields();
  if (kind == "Node") return &workload::NodeFields();
  return nullptr;
}

void BM_DecodeWatchEvent(benchmark::State& state) {
  const int64_t mode = state.range(0);
  const std::vector<std::string> lines = WatchEventLines();
  if (lines.empty()) {
    state.SkipWithError("bench/data/watched_objects.json is missing (set CAPHV_SOURCE_DIR)");
    return;
  }
  size_t bytes = 0;
  for (const auto& l : lines) bytes += l.size();
  // The mask of each object's cache (null: kept whole but for managedFields).
  std::vector<const FieldMask*> masks;
  for (const auto& l : lines) masks.push_back(CacheMaskOf(Object::parse(l)["object"]));
  for (auto _ : state) {
    for (const auto& line : lines) {
      Object event;
      const FieldMask* mask = masks[&line - lines.data()];
      if (mode == 0) {
        event = JsonNestsDeeperThan(line, kMaxJsonDepth)
                    ? Object()
                    : Object::parse(line, nullptr, /*allow_exceptions=*/false);
      } else if (mode == 1) {
        event = ParseUntrustedJson(line);
      } else if (mode == 2) {
        event = ParseUntrustedJson(line, nullptr,
                                   JsonKeep{kWatchEventObject, &FieldMask::WithoutManagedFields()});
      } else {
        event = ParseUntrustedJson(line, nullptr, JsonKeep{kWatchEventObject, mask});
      }
      Object& object = event["object"];
      CompactObject(object);
      if (mode == 2 && mask != nullptr) mask->Apply(object);
      benchmark::DoNotOptimize(object);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * lines.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}
BENCHMARK(BM_DecodeWatchEvent)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMicrosecond);

// The machines of one cluster, as the manager's watches map a Cluster's or
// HarvesterCluster's event to them: a packed store of 1000 HarvesterMachines
// (bench/data/watched_objects.json's, renamed), indexed by the cluster label.
// /0 ListByLabels, then the keys (every machine decoded, all at once); /1
// KeysByLabels (the label index alone). Counter held_MiB: the heap the
// read holds when it returns.
void BM_MachinesOfACluster(benchmark::State& state) {
  constexpr int kMachines = 1000;
  const std::string label(controllers::kClusterNameLabel);
  Object machine;
  for (const auto& line : WatchEventLines()) {
    const Object event = Object::parse(line);
    if (event["object"].value("kind", "") == "HarvesterMachine") machine = event["object"];
  }
  if (machine.is_null()) {
    state.SkipWithError("bench/data/watched_objects.json is missing (set CAPHV_SOURCE_DIR)");
    return;
  }
  machine["metadata"]["labels"][label] = "c1";
  Store store({{LabelIndexName(label), IndexByLabel(label)}}, /*packed=*/true);
  for (int i = 0; i < kMachines; ++i) {
    machine["metadata"]["name"] = ObjectName(i);
    store.Upsert(std::make_shared<const Object>(machine));
  }
  const std::string ns = machine["metadata"].value("namespace", "");
  const std::map<std::string, std::string> selector = {{label, "c1"}};
  double held = 0;
  for (auto _ : state) {
    const size_t before = HeapInUse();
    std::vector<std::string> keys;
    if (state.range(0) == 0) {
      const auto objects = store.ListByLabels(ns, selector);
      held = static_cast<double>(HeapInUse() - before);
      for (const auto& o : objects) keys.push_back(KeyOf(*o));
    } else {
      keys = store.KeysByLabels(ns, selector);
      held = static_cast<double>(HeapInUse() - before);
    }
    if (keys.size() != kMachines) state.SkipWithError("not every machine selected");
    benchmark::DoNotOptimize(keys);
  }
  state.counters["held_MiB"] = held / (1024.0 * 1024.0);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kMachines));
}
BENCHMARK(BM_MachinesOfACluster)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_WatchEventsIntoCache(benchmark::State& state) {
  constexpr int kUpdates = 500;
  auto client = SetUpBed();
  if (!client) {
    state.SkipWithError("no test bed (set CAPHV_TESTBED) or setup failed");
    return;
  }
  Informer inf(client, GizmoInformer());
  std::atomic<int> updates{0};
  EventHandler h;
  h.on_update = [&](const ObjectPtr&, const ObjectPtr&) { updates++; };
  inf.AddEventHandler(h);
  inf.Start();
  if (!inf.WaitForSync(std::chrono::minutes(2))) {
    state.SkipWithError("informer did not sync");
    return;
  }
  int round = 0;
  for (auto _ : state) {
    updates = 0;
    ++round;
    std::vector<std::thread> writers;
    for (int w = 0; w < 4; ++w) {
      writers.emplace_back([&, w] {
        for (int i = w; i < kUpdates; i += 4) {
          client
              ->Patch(kGizmos, kNamespace, ObjectName(i), PatchType::kMerge,
                      {{"spec", {{"round", round}}}})
              .status()
              .IgnoreError();
        }
      });
    }
    for (auto& t : writers) t.join();
    while (updates.load() < kUpdates) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kUpdates));
}
BENCHMARK(BM_WatchEventsIntoCache)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

}  // namespace
}  // namespace caphv::kube

BENCHMARK_MAIN();
