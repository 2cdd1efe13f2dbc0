// Unit tests of giving freed heap memory back: the releaser's decision (when
// the resident memory not in use grew enough above what the last release
// left), and that ReleaseFreeHeap returns the pages of a hole glibc keeps
// after a large free, and that blocks above the fixed mmap threshold are
// mapped on their own even after a larger one was freed.

#include "kube/heap.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <vector>

namespace caphv::kube {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

HeapStats Stats(uint64_t in_use_mib, uint64_t resident_mib) {
  return {in_use_mib * kMiB, resident_mib * kMiB};
}

// Readings in KiB, as the manager's V(2) log shows them (rounded).
HeapStats KiB(uint64_t in_use_kib, uint64_t resident_kib) {
  return {in_use_kib << 10, resident_kib << 10};
}

HeapReleaser Releaser() {
  HeapReleaser::Options o;
  o.min_unused = 8 * kMiB;
  o.min_growth = 2 * kMiB;
  return HeapReleaser(o);
}

TEST(HeapStatsTest, UnusedIsResidentMinusInUseNeverNegative) {
  EXPECT_EQ(Stats(5, 12).Unused(), 7 * kMiB);
  EXPECT_EQ(Stats(12, 5).Unused(), 0u);
}

TEST(HeapReleaserTest, ReleasesOnlyWhenUnusedReachesTheThreshold) {
  HeapReleaser r = Releaser();
  EXPECT_FALSE(r.Decide(Stats(5, 12)));  // 7 MiB unused: thread stacks, small holes
  EXPECT_TRUE(r.Decide(Stats(5, 13)));   // 8 MiB
}

TEST(HeapReleaserTest, WhatAReleaseLeavesBecomesTheFloor) {
  HeapReleaser r = Releaser();
  ASSERT_TRUE(r.Decide(Stats(5, 28)));  // after deleting a large cluster
  r.Released(Stats(5, 15));             // 10 MiB could not be given back
  EXPECT_EQ(r.floor(), 10 * kMiB);
  EXPECT_FALSE(r.Decide(Stats(5, 15)));  // never again for what cannot go
  EXPECT_FALSE(r.Decide(Stats(6, 17)));  // 11 MiB unused: < floor + 2
  EXPECT_TRUE(r.Decide(Stats(6, 18)));   // 12 MiB
}

TEST(HeapReleaserTest, AReleaseDuringADeletionIsFollowedByAnotherAfterIt) {
  HeapReleaser r = Releaser();
  ASSERT_TRUE(r.Decide(Stats(20, 30)));  // half of the cluster deleted
  r.Released(Stats(20, 29));             // 9 MiB left: partly used pages
  // 10 MiB unused, below the floor's 11, but 8 MiB freed since the release.
  ASSERT_TRUE(r.Decide(Stats(12, 22)));
  r.Released(Stats(12, 21));
  EXPECT_TRUE(r.Decide(Stats(5, 16)));  // all deleted: 11 MiB unused, 7 freed
}

TEST(HeapReleaserTest, AFallOfTheMemoryInUseIsReleasedThoughUnusedGrewLess) {
  HeapReleaser::Options o;  // the manager's: 3 MiB unused, 2 MiB growth
  HeapReleaser r(o);
  // The last deletions of provision_bench at 200 machines, in KiB.
  ASSERT_TRUE(r.Decide(KiB(4275, 9164)));
  r.Released(KiB(4273, 7872));              // floor 3599 KiB
  EXPECT_FALSE(r.Decide(KiB(4273, 7872)));  // nothing freed since
  EXPECT_FALSE(r.Decide(KiB(2823, 7780)));  // 1.4 MiB freed: not yet
  EXPECT_TRUE(r.Decide(KiB(1242, 6816)));   // 5.4 MiB unused < floor + 2, but 2.96 freed
}

TEST(HeapReleaserTest, ASmallerFallIsReleasedOnceTheProcessIsQuiet) {
  HeapReleaser::Options o;  // the manager's: 3 MiB unused, 2 MiB growth
  HeapReleaser r(o);
  // The end of a provision_bench deletion at 200 machines with glibc's
  // thread caches off, in KiB: the last release, then the cluster's
  // connections closed (1.96 MiB freed, 1.9 MiB more unused).
  ASSERT_TRUE(r.Decide(KiB(3543, 8653)));
  r.Released(KiB(3543, 7281));              // floor 3738 KiB
  EXPECT_FALSE(r.Decide(KiB(3543, 7281)));  // nothing freed since
  EXPECT_FALSE(r.Decide(KiB(2058, 7219)));  // 1.45 MiB freed: still moving
  EXPECT_FALSE(r.Decide(KiB(1540, 7219)));  // 0.5 MiB more: still moving
  EXPECT_TRUE(r.Decide(KiB(1536, 7219)));   // quiet, 1.96 MiB below the last release
  r.Released(KiB(1536, 4100));
  EXPECT_FALSE(r.Decide(KiB(1536, 4100)));  // once: nothing has fallen since
  EXPECT_FALSE(r.Decide(KiB(1540, 5000)));  // 3.4 MiB unused, quiet, nothing freed
}

TEST(HeapReleaserTest, AQuietFallBelowTheThresholdsIsKept) {
  HeapReleaser r(HeapReleaser::Options{});
  ASSERT_TRUE(r.Decide(KiB(3000, 8000)));
  r.Released(KiB(3000, 6500));              // floor 3500 KiB
  EXPECT_FALSE(r.Decide(KiB(2700, 6500)));  // 300 KiB freed
  EXPECT_FALSE(r.Decide(KiB(2700, 6500)));  // quiet, but less than 512 KiB
  EXPECT_FALSE(r.Decide(KiB(2000, 4800)));  // 1 MiB freed, 2.8 MiB unused: < min_unused
  EXPECT_FALSE(r.Decide(KiB(2000, 4800)));  // quiet, and still < min_unused
}

TEST(TunablesWithoutThreadCachesTest, AddsTheSettingUnlessOneIsThere) {
  EXPECT_EQ(TunablesWithoutThreadCaches(nullptr), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(TunablesWithoutThreadCaches(""), "glibc.malloc.tcache_count=0");
  EXPECT_EQ(TunablesWithoutThreadCaches("glibc.malloc.arena_max=2"),
            "glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0");
  // An operator's own setting stands, and the re-executed process finds its
  // own: no second exec.
  EXPECT_EQ(TunablesWithoutThreadCaches("glibc.malloc.tcache_count=7"), std::nullopt);
  EXPECT_EQ(TunablesWithoutThreadCaches("glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0"),
            std::nullopt);
}

TEST(TunableIsSetTest, FindsANameOnlyAsAWholeSetting) {
  EXPECT_FALSE(TunableIsSet(nullptr, "glibc.malloc.arena_max"));
  EXPECT_FALSE(TunableIsSet("", "glibc.malloc.arena_max"));
  EXPECT_TRUE(TunableIsSet("glibc.malloc.arena_max=1", "glibc.malloc.arena_max"));
  EXPECT_TRUE(TunableIsSet("glibc.malloc.tcache_count=0:glibc.malloc.arena_max=4",
                           "glibc.malloc.arena_max"));
  // A longer name that begins with it, or the name without a value, is not it.
  EXPECT_FALSE(TunableIsSet("glibc.malloc.arena_max_x=1", "glibc.malloc.arena_max"));
  EXPECT_FALSE(TunableIsSet("glibc.malloc.arena_max", "glibc.malloc.arena_max"));
  EXPECT_FALSE(TunableIsSet("x.glibc.malloc.arena_max=1", "glibc.malloc.arena_max"));
}

TEST(HeapReleaserTest, InUseGrowingAfterAReleaseIsNoFall) {
  HeapReleaser r = Releaser();
  ASSERT_TRUE(r.Decide(Stats(5, 28)));
  r.Released(Stats(5, 15));              // floor 10 MiB
  EXPECT_FALSE(r.Decide(Stats(9, 19)));  // provisioning: in use grows
  EXPECT_FALSE(r.Decide(Stats(8, 18)));  // 1 MiB down from its highest
  EXPECT_TRUE(r.Decide(Stats(7, 18)));   // 2 MiB down, 11 MiB unused
}

TEST(HeapReleaserTest, TheFloorFollowsUnusedMemoryDown) {
  HeapReleaser r = Releaser();
  ASSERT_TRUE(r.Decide(Stats(5, 28)));
  r.Released(Stats(5, 15));               // floor 10 MiB
  EXPECT_FALSE(r.Decide(Stats(30, 32)));  // the next cluster reuses the holes: 2 MiB unused
  EXPECT_EQ(r.floor(), 2 * kMiB);
  EXPECT_FALSE(r.Decide(Stats(30, 37)));  // 7 MiB: below min_unused
  EXPECT_TRUE(r.Decide(Stats(5, 15)));    // deleted again: 10 MiB
}

TEST(HeapReleaserTest, RunReturnsAtOnceWhenStopped) {
  std::stop_source stop;
  stop.request_stop();
  HeapReleaser().Run(stop.get_token(), log::Root());
}

// glibc trims an arena only from its top: a live block above a large freed
// region keeps that region resident until ReleaseFreeHeap.
TEST(ReleaseFreeHeapTest, GivesBackAHoleBelowALiveBlock) {
  if (!HeapIsGlibcs()) GTEST_SKIP() << "no glibc heap (sanitizer build)";
  constexpr size_t kBlocks = size_t{64} * 1024;
  constexpr size_t kBlockSize = 512;  // below the mmap threshold: from the arena
  std::vector<void*> blocks(kBlocks);
  for (auto& b : blocks) {
    b = std::malloc(kBlockSize);
    ASSERT_NE(b, nullptr);
    static_cast<volatile char*>(b)[0] = 1;
    static_cast<volatile char*>(b)[kBlockSize - 1] = 1;
  }
  void* pin = std::malloc(kBlockSize);  // above the others: the top cannot shrink
  ASSERT_NE(pin, nullptr);
  for (void* b : blocks) std::free(b);
  const HeapStats freed = ReadHeapStats();
  ReleaseFreeHeap();
  const HeapStats released = ReadHeapStats();
  std::free(pin);
  // 32 MiB were freed; most of it stayed resident until the release.
  ASSERT_GT(freed.resident_anon, released.resident_anon);
  EXPECT_GT(freed.resident_anon - released.resident_anon, 24 * kMiB)
      << "resident before " << freed.resident_anon << ", after " << released.resident_anon;
}

TEST(KeepLargeBlocksMappedTest, ABlockAboveTheThresholdIsMappedAfterALargerOneWasFreed) {
  if (!HeapIsGlibcs()) GTEST_SKIP() << "no glibc heap (sanitizer build)";
  KeepLargeBlocksMapped(size_t{128} << 10);
  // Freeing a mapped 8 MiB block would raise glibc's own threshold to 8 MiB.
  void* large = std::malloc(8 * kMiB);
  ASSERT_NE(large, nullptr);
  static_cast<volatile char*>(large)[0] = 1;
  std::free(large);
  constexpr size_t kBody = 512 << 10;  // a LIST body
  const size_t mapped_before = mallinfo2().hblkhd;
  void* body = std::malloc(kBody);
  ASSERT_NE(body, nullptr);
  const size_t mapped_after = mallinfo2().hblkhd;
  std::free(body);
  EXPECT_GE(mapped_after - mapped_before, kBody) << "the block came from an arena";
}

}  // namespace
}  // namespace caphv::kube
