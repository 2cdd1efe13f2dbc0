// File: kube/heap.cc
//
// Heap statistics and release; see heap.h.

#include "kube/heap.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#define CAPHV_ASAN_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CAPHV_ASAN_HEAP 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define CAPHV_TSAN_HEAP 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CAPHV_TSAN_HEAP 1
#endif
#endif

namespace caphv::kube {

namespace {

// RssAnon of /proc/self/status, bytes; 0 when unreadable (unused under ASan).
[[maybe_unused]] uint64_t ResidentAnonBytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("RssAnon:", 0) == 0) {
      return static_cast<uint64_t>(std::strtoull(line.c_str() + 8, nullptr, 10)) * 1024;
    }
  }
  return 0;
}

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

}  // namespace

bool HeapIsGlibcs() {
#if defined(CAPHV_ASAN_HEAP) || defined(CAPHV_TSAN_HEAP)
  return false;
#else
  return true;
#endif
}

HeapStats ReadHeapStats() {
#ifdef CAPHV_ASAN_HEAP
  return {};
#else
  const struct mallinfo2 mi = mallinfo2();
  return {static_cast<uint64_t>(mi.uordblks + mi.hblkhd), ResidentAnonBytes()};
#endif
}

void KeepLargeBlocksMapped(size_t bytes) {
#ifndef CAPHV_ASAN_HEAP
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes));
#else
  (void)bytes;
#endif
}

bool TunableIsSet(const char* current, std::string_view name) {
  if (current == nullptr) return false;
  const std::string_view value(current);
  // Settings are name=value pairs separated by colons.
  for (size_t start = 0; start <= value.size();) {
    const size_t end = std::min(value.find(':', start), value.size());
    const std::string_view setting = value.substr(start, end - start);
    if (setting.size() > name.size() && setting.substr(0, name.size()) == name &&
        setting[name.size()] == '=') {
      return true;
    }
    start = end + 1;
  }
  return false;
}

void LimitArenas(int arenas) {
#ifndef CAPHV_ASAN_HEAP
  // No other thread runs yet, so the environment may be read.
  const char* current = std::getenv("GLIBC_TUNABLES");  // NOLINT(concurrency-mt-unsafe)
  if (TunableIsSet(current, "glibc.malloc.arena_max")) return;
  mallopt(M_ARENA_MAX, arenas);
#else
  (void)arenas;
#endif
}

std::optional<std::string> TunablesWithoutThreadCaches(const char* current) {
  constexpr std::string_view kOff = "glibc.malloc.tcache_count=0";
  if (current == nullptr || *current == '\0') return std::string(kOff);
  const std::string_view value(current);
  if (TunableIsSet(current, "glibc.malloc.tcache_count")) return std::nullopt;
  return std::string(value) + ":" + std::string(kOff);
}

void ExecWithoutThreadCaches(char** argv) {
#ifdef CAPHV_ASAN_HEAP
  (void)argv;
#else
  // No other thread runs yet, so the environment may be read and written.
  const char* current = std::getenv("GLIBC_TUNABLES");  // NOLINT(concurrency-mt-unsafe)
  const std::optional<std::string> tunables = TunablesWithoutThreadCaches(current);
  if (!tunables) return;
  const std::optional<std::string> before =
      current == nullptr ? std::nullopt : std::optional<std::string>(current);
  const int set =
      ::setenv("GLIBC_TUNABLES", tunables->c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  if (set != 0) return;
  // The binary's own path, not /proc/self/exe: the kernel names the process
  // (its comm: ps, top, pkill) after the file executed, and "exe" would
  // replace "caphv-manager". /proc/self/exe when the path cannot be read.
  std::array<char, PATH_MAX> path{};
  const ssize_t length = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  ::execv(length > 0 ? path.data() : "/proc/self/exe", argv);
  // Still here: no /proc, or the binary is gone. Run as started.
  if (before) {
    ::setenv("GLIBC_TUNABLES", before->c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  } else {
    ::unsetenv("GLIBC_TUNABLES");  // NOLINT(concurrency-mt-unsafe)
  }
#endif
}

bool ReleaseFreeHeap() {
#ifdef CAPHV_ASAN_HEAP
  return false;
#else
  return malloc_trim(0) != 0;
#endif
}

bool HeapReleaser::Decide(const HeapStats& now) {
  const uint64_t unused = now.Unused();
  if (unused < floor_) floor_ = unused;  // given back (or reused) since
  if (now.in_use_bytes > peak_in_use_) peak_in_use_ = now.in_use_bytes;
  const uint64_t previous = std::exchange(last_in_use_, now.in_use_bytes);
  if (unused < options_.min_unused) return false;
  const uint64_t fall = peak_in_use_ - now.in_use_bytes;
  const uint64_t change =
      now.in_use_bytes > previous ? now.in_use_bytes - previous : previous - now.in_use_bytes;
  const bool quiet = change <= options_.quiet_change;
  return unused >= floor_ + options_.min_growth || fall >= options_.min_growth ||
         (quiet && fall >= options_.min_quiet_fall);
}

void HeapReleaser::Run(std::stop_token stop, const log::Logger& logger,
                       const std::function<void()>& tidy) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  // wait_for returns the predicate's value, also when the stop is requested.
  while (!cv.wait_for(lock, stop, options_.period, [&] { return stop.stop_requested(); })) {
    if (tidy) tidy();
    const HeapStats before = ReadHeapStats();
    if (before.resident_anon == 0) continue;
    const bool release = Decide(before);
    logger.V(2).Info("Heap", {{"inUseMiB", MiB(before.in_use_bytes)},
                              {"residentAnonMiB", MiB(before.resident_anon)},
                              {"floorMiB", MiB(floor_)},
                              {"release", release ? "true" : "false"}});
    if (!release) continue;
    const auto start = std::chrono::steady_clock::now();
    ReleaseFreeHeap();
    const HeapStats after = ReadHeapStats();
    Released(after);
    logger.V(1).Info("Released unused heap memory",
                     {{"inUseMiB", MiB(after.in_use_bytes)},
                      {"residentAnonMiB", MiB(before.resident_anon)},
                      {"releasedMiB", MiB(before.resident_anon > after.resident_anon
                                              ? before.resident_anon - after.resident_anon
                                              : 0)},
                      {"took", std::to_string(std::chrono::duration<double, std::milli>(
                                                  std::chrono::steady_clock::now() - start)
                                                  .count()) +
                                   "ms"}});
  }
}

}  // namespace caphv::kube
