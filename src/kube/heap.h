// File: kube/heap.h
//
// Giving the heap back to the system after large deletions.
//
// A controller's caches hold many small JSON nodes allocated by watch and
// worker threads across glibc's per-thread arenas. When a cluster of
// hundreds of machines is deleted those objects are freed, but glibc returns
// memory to the system only from the top of an arena: the free pages between
// chunks still in use stay resident. Measured with bench/memory_cycle_bench
// (200 machines provisioned and deleted): the manager's RSS stayed ~17 MiB
// above its level before the cycle while malloc's in-use bytes were back at
// theirs; malloc_trim(0) gave those pages back.
//
//   HeapStats ReadHeapStats()   malloc's in-use bytes (mallinfo2: arenas +
//                               mmapped chunks) and the process's RssAnon;
//   ReleaseFreeHeap()           malloc_trim(0): every arena's free pages;
//   KeepLargeBlocksMapped(),
//   LimitArenas()               start-up settings that leave fewer holes;
//   HeapReleaser                decides when that is worth doing: when the
//                               resident memory not in use (RssAnon - in
//                               use) is at least `min_unused` and either has
//                               grown by `min_growth` above what was left
//                               after the last release (or the lowest seen
//                               since), or the memory in use has fallen by
//                               `min_growth` from its highest since then.
//                               Decide() is pure (tests feed it stats);
//                               Run() checks every `period` until stopped.
//
// RssAnon also counts thread stacks and partly used pages, so what a release
// leaves behind becomes a floor: the releaser does not trim again and again
// for memory it cannot give back. The floor follows the unused memory down.
// Freed memory does not always show as unused growth (glibc gives back the
// top of an arena itself, and frees in partly used pages fill them), so a
// fall of the memory in use counts too: measured with bench/provision_bench
// at 200 machines, the last deletions freed 2.96 MiB while the unused memory
// grew by 1.9, below the floor's 2 MiB, and the manager kept 5.4 MiB unused
// against 2.3 at its start. What stays resident after the work is at most
// about max(min_unused, floor + min_growth) and, once in use has fallen by
// min_growth, what a release cannot give back.
//
// Under AddressSanitizer the heap is ASan's: stats read 0 and nothing is
// released.
//
// Thread safety: ReadHeapStats and ReleaseFreeHeap may be called from any
// thread (glibc locks each arena in turn). A HeapReleaser is used by one
// thread.

#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stop_token>

#include "kube/log.h"

namespace caphv::kube {

struct HeapStats {
  uint64_t in_use_bytes = 0;   // allocated and not freed, malloc's view
  uint64_t resident_anon = 0;  // RssAnon of the process, bytes
  uint64_t Unused() const {
    return resident_anon > in_use_bytes ? resident_anon - in_use_bytes : 0;
  }
};

HeapStats ReadHeapStats();

// malloc_trim(0). True when glibc released memory.
bool ReleaseFreeHeap();

// Fixes glibc's mmap threshold at `bytes`: every block at least that large is
// mapped on its own and unmapped when freed. Left alone, glibc raises the
// threshold to the size of each mapped block freed (up to 32 MiB), and from
// then on the multi-MiB bodies of a start-up's LIST pages come from the
// arenas, with the small objects the caches keep allocated between them:
// freed, they leave holes malloc_trim cannot give back. Measured with
// bench/provision_bench at 1000 machines: the restarted manager held
// 76 MiB of anonymous memory for 16 MiB in use, and 50 MiB after a trim.
// Call once, at start-up. No-op under AddressSanitizer.
void KeepLargeBlocksMapped(size_t bytes = size_t{128} << 10);

// Caps glibc's malloc arenas at `arenas` (glibc's default: eight per core).
// Each allocating thread takes an arena of its own up to the cap, and the
// holes a burst of work leaves stay in the arena that made them; with
// fewer arenas the next burst reuses them. Measured with
// bench/provision_bench (GLIBC_TUNABLES=glibc.malloc.arena_max=2 against
// the default, same build, one run each): at 200 machines RSS ready 25.6
// against 27.7 MiB, after the restart 24.1 against 26.7, after deleting all
// 23.0 against 23.5, the same CPU (4.80 against 4.74 s); at 1000 RssAnon
// after deleting all 9.7 against 12.8 MiB. Call once, at start-up, before
// threads are started. No-op under AddressSanitizer.
void LimitArenas(int arenas = 2);

class HeapReleaser {
 public:
  struct Options {
    uint64_t min_unused = uint64_t{3} << 20;  // 3 MiB
    uint64_t min_growth = uint64_t{2} << 20;  // 2 MiB
    // Short enough that the holes a burst of work leaves (14-17 MiB after a
    // restart over 1000 machines) go back soon; a reading costs a read of
    // /proc/self/status, a release 1-17 ms.
    std::chrono::seconds period{10};
  };

  HeapReleaser() : HeapReleaser(Options()) {}
  explicit HeapReleaser(Options options) : options_(options) {}

  // Whether to release now, given the current stats; updates the floor.
  bool Decide(const HeapStats& now);
  // Records what a release left behind: the new floor, and the memory in use
  // that later falls are measured from.
  void Released(const HeapStats& after) {
    floor_ = after.Unused();
    peak_in_use_ = after.in_use_bytes;
  }
  uint64_t floor() const { return floor_; }

  // Every `period` until `stop`: calls `tidy` (if any: what frees memory
  // before it is counted, e.g. closing idle connections), reads the stats
  // (logged at V(2)), releases when Decide() says so, and logs (V(1)) what
  // it gave back.
  void Run(std::stop_token stop, const log::Logger& logger, const std::function<void()>& tidy = {});

 private:
  Options options_;
  uint64_t floor_ = 0;
  uint64_t peak_in_use_ = 0;  // the highest in use since the last release
};

}  // namespace caphv::kube
