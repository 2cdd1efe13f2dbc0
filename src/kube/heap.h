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
//                               `min_growth` from its highest since then,
//                               or by `min_quiet_fall` once it is quiet
//                               (changed by at most `quiet_change` since
//                               the reading before).
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
// min_growth, what a release cannot give back. The last frees of a burst
// often fall short of min_growth (measured at 200 machines with glibc's
// thread caches off: 1.96 MiB freed after the last release, 5.5 MiB unused
// kept for good); once the memory in use stops moving, a smaller fall is
// enough, and a quiet process is trimmed once, not at every reading.
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
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

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

// Whether this build allocates from glibc's malloc: false under Address- or
// ThreadSanitizer, whose allocators replace it (ReadHeapStats then reads 0
// and the glibc settings below do nothing).
bool HeapIsGlibcs();

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
// after deleting all 9.7 against 12.8 MiB. An operator's
// glibc.malloc.arena_max in GLIBC_TUNABLES stands (mallopt would override
// it). Call once, at start-up, before threads are started. No-op under
// AddressSanitizer.
void LimitArenas(int arenas = 2);

// Whether GLIBC_TUNABLES' value `current` (null when unset) sets `name`.
bool TunableIsSet(const char* current, std::string_view name);

// glibc's per-thread caches (tcache: up to 7 freed blocks of each size up
// to 1 KiB, per thread) keep memory that malloc counts as in use and that
// malloc_trim cannot give back. Measured with bench/provision_bench at 200
// machines: the manager's 37 threads held about 1 MiB that way after
// deleting all (malloc's in use 2.48 MiB against 1.52 at its start, while a
// heap profile counted the same live objects at both times), and RssAnon
// stayed 3.4 MiB above its start. With the caches off: in use back to the
// start's, RssAnon +1.7 MiB, RSS ready 24.3 against 26.0-26.4 MiB, and no
// more CPU to see (bench/README.md). The caches are a tunable glibc reads
// only at start-up (GLIBC_TUNABLES), so:
//
// The GLIBC_TUNABLES value that turns the thread caches off, given the
// current one (null when unset); nullopt when it sets tcache_count already
// (an operator's choice, or this process after its re-exec).
std::optional<std::string> TunablesWithoutThreadCaches(const char* current);
// Re-executes this program (the path /proc/self/exe links to, so that the
// process keeps its name; the same argv) with those
// tunables, once, before any thread starts; returns when there is nothing
// to do or the exec failed (then the environment is as it was). No-op
// under AddressSanitizer.
void ExecWithoutThreadCaches(char** argv);

class HeapReleaser {
 public:
  struct Options {
    uint64_t min_unused = uint64_t{3} << 20;  // 3 MiB
    uint64_t min_growth = uint64_t{2} << 20;  // 2 MiB
    // A fall of the memory in use that is released once the process is
    // quiet: in use moved by at most quiet_change since the reading before.
    uint64_t min_quiet_fall = uint64_t{512} << 10;  // 512 KiB
    uint64_t quiet_change = uint64_t{64} << 10;     // 64 KiB
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
  uint64_t last_in_use_ = 0;  // in use at the reading before
};

}  // namespace caphv::kube
