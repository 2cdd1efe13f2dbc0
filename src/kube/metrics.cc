// File: kube/metrics.cc
//
// Process-wide registry, text exposition and /proc-based process metrics.

#include "kube/metrics.h"

#include <dirent.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <sstream>

#include "kube/heap.h"

namespace caphv::kube::metrics {
namespace {

prometheus::MetricFamily Gauge(std::string name, std::string help, double value) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric m;
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

prometheus::MetricFamily Counter(std::string name, std::string help, double value) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = prometheus::MetricType::Counter;
  prometheus::ClientMetric m;
  m.counter.value = value;
  f.metric.push_back(std::move(m));
  return f;
}

// Boot time in seconds since the epoch (the "btime" line of /proc/stat).
double BootTime() {
  static const double boot = [] {
    std::ifstream in("/proc/stat");
    std::string key;
    while (in >> key) {
      if (key == "btime") {
        double v = 0;
        in >> v;
        return v;
      }
      in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return 0.0;
  }();
  return boot;
}

int CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int n = 0;
  while (struct dirent* e = ::readdir(dir)) {  // NOLINT(concurrency-mt-unsafe): own DIR*
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the descriptor opendir itself holds
}

}  // namespace

prometheus::Registry& Registry() {
  static auto* registry = new prometheus::Registry();  // never destroyed
  return *registry;
}

std::vector<prometheus::MetricFamily> CollectProcessMetrics() {
  std::vector<prometheus::MetricFamily> out;
  std::ifstream in("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) is parenthesised and may hold spaces: parse
  // from the last ')'. Fields from 3 on are then space separated.
  auto close = stat.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(stat.substr(close + 2));
    std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                               std::istream_iterator<std::string>());
    // f[0] is field 3 (state); field N is f[N - 3].
    if (f.size() >= 22) {
      const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
      const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
      double utime = std::stod(f[14 - 3]);
      double stime = std::stod(f[15 - 3]);
      double start = std::stod(f[22 - 3]);
      double vsize = std::stod(f[23 - 3]);
      double rss = std::stod(f[24 - 3]);
      out.push_back(Counter("process_cpu_seconds_total",
                            "Total user and system CPU time spent in seconds.",
                            (utime + stime) / ticks));
      out.push_back(
          Gauge("process_resident_memory_bytes", "Resident memory size in bytes.", rss * page));
      out.push_back(Gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", vsize));
      out.push_back(Gauge("process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.",
                          BootTime() + start / ticks));
    }
  }
  int fds = CountOpenFds();
  if (fds >= 0) {
    out.push_back(Gauge("process_open_fds", "Number of open file descriptors.", fds));
  }
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    out.push_back(Gauge("process_max_fds", "Maximum number of open file descriptors.",
                        static_cast<double>(rl.rlim_cur)));
  }
  // What the caches and work hold, against which the resident memory tells
  // how much of it is freed memory malloc still keeps (kube/heap.h). Left
  // out where the heap is the sanitizer's.
  if (const HeapStats heap = ReadHeapStats(); heap.in_use_bytes > 0) {
    out.push_back(Gauge("caphv_heap_in_use_bytes",
                        "Bytes allocated with malloc and not yet freed (mallinfo2).",
                        static_cast<double>(heap.in_use_bytes)));
  }
  return out;
}

std::string Serialize() {
  std::vector<prometheus::MetricFamily> families = Registry().Collect();
  for (auto& f : CollectProcessMetrics()) families.push_back(std::move(f));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace caphv::kube::metrics
