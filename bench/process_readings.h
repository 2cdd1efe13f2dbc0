// File: bench/process_readings.h
//
// Readings of a benchmarked process (a testing::ChildProcess): its VmRSS and
// CPU from /proc, a peak sampler, and its Prometheus /metrics
// (controller_runtime_reconcile_total).
//
// Header-only (bench binaries are single files). Thread safety: one driver
// thread; ResidentSampler reads /proc on its own thread.

#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "support/process.h"
#include "support/testbed.h"

namespace caphv::bench {

using BenchClock = std::chrono::steady_clock;

inline std::string ReadWholeFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline double SecondsSince(BenchClock::time_point start) {
  return std::chrono::duration<double>(BenchClock::now() - start).count();
}

// A "Key:   123 kB" field of a /proc file of `pid` in KiB, 0 when unreadable.
inline int64_t ProcKiB(pid_t pid, const char* file, std::string_view key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > key.size() && line.compare(0, key.size(), key) == 0 &&
        line[key.size()] == ':') {
      return std::atoll(line.c_str() + key.size() + 1);
    }
  }
  return 0;
}

// VmRSS of `pid` in KiB, 0 when unreadable.
inline int64_t ResidentKiB(pid_t pid) { return ProcKiB(pid, "status", "VmRSS"); }

// VmHWM of `pid` in KiB: the highest RSS the process has had, 0 when
// unreadable.
inline int64_t PeakResidentKiB(pid_t pid) { return ProcKiB(pid, "status", "VmHWM"); }

// The integer value of environment variable `name`, `fallback` when unset or
// empty.
inline int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

inline double MiB(int64_t kib) { return static_cast<double>(kib) / 1024.0; }

// User + system CPU seconds `pid` has used so far, 0 when unreadable.
inline double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the parenthesised command name; utime and stime are the
  // 14th and 15th fields of the whole line, the 12th and 13th after it.
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 1; i <= 13 && fields >> field; ++i) {
    if (i >= 12) ticks += std::atof(field.c_str());
  }
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Samples the VmRSS of a process every 200 ms on its own thread, keeping the
// peak, and the first `timeline_samples` readings with the time each was
// taken (seconds since the sampler started): where in a phase the peak is.
class ResidentSampler {
 public:
  explicit ResidentSampler(pid_t pid, size_t timeline_samples = 0)
      : started_(std::chrono::steady_clock::now()),
        thread_([this, pid, timeline_samples](std::stop_token stop) {
          while (!stop.stop_requested()) {
            const int64_t kib = ResidentKiB(pid);
            int64_t seen = peak_kib_.load();
            while (kib > seen && !peak_kib_.compare_exchange_weak(seen, kib)) {
            }
            {
              std::lock_guard lock(mu_);
              if (timeline_.size() < timeline_samples) {
                timeline_.emplace_back(
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - started_)
                        .count(),
                    kib);
              }
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
          }
        }) {}

  int64_t peak_kib() const { return peak_kib_.load(); }
  // "<seconds>:<MiB>" per reading, space-separated.
  std::string Timeline() const {
    std::lock_guard lock(mu_);
    std::string out;
    char item[48];
    for (const auto& [at, kib] : timeline_) {
      std::snprintf(item, sizeof item, "%s%.1f:%.1f", out.empty() ? "" : " ", at,
                    static_cast<double>(kib) / 1024.0);
      out += item;
    }
    return out;
  }

 private:
  const std::chrono::steady_clock::time_point started_;
  std::atomic<int64_t> peak_kib_{0};
  mutable std::mutex mu_;
  std::vector<std::pair<double, int64_t>> timeline_;
  std::jthread thread_;  // last: stopped before the members it uses go
};

// The manager's Prometheus text; nullopt when /metrics is unreachable.
inline std::optional<std::string> MetricsText(int metrics_port) {
  std::string text;
  if (testing::RunCommand(
          "curl -fs -m 5 http://127.0.0.1:" + std::to_string(metrics_port) + "/metrics", &text) !=
      0) {
    return std::nullopt;
  }
  return text;
}

// The value of an unlabelled family (e.g. caphv_heap_in_use_bytes) in the
// manager's Prometheus text; -1 when /metrics is unreachable or the family
// absent (the Go provider, a sanitizer's heap).
inline double UnlabelledMetric(int metrics_port, const std::string& family) {
  const auto text = MetricsText(metrics_port);
  if (!text) return -1;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > family.size() && line.rfind(family, 0) == 0 && line[family.size()] == ' ') {
      return std::atof(line.c_str() + family.size() + 1);
    }
  }
  return -1;
}

// controller_runtime_reconcile_total{controller="<controller>",result=...}
// from the manager's Prometheus text, by result ("success", "error",
// "requeue", "requeue_after"); nullopt when /metrics is unreachable.
inline std::optional<std::map<std::string, double>> ReconcilesByResult(
    int metrics_port, const std::string& controller) {
  const auto text = MetricsText(metrics_port);
  if (!text) return std::nullopt;
  const std::string series = "controller_runtime_reconcile_total{";
  const std::string controller_label = "controller=\"" + controller + "\"";
  const std::string result_label = "result=\"";
  std::map<std::string, double> totals;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(series, 0) != 0) continue;
    const auto close = line.find('}');
    if (close == std::string::npos) continue;
    const std::string labels = line.substr(series.size(), close - series.size());
    if (labels.find(controller_label) == std::string::npos) continue;
    const auto r = labels.find(result_label);
    if (r == std::string::npos) continue;
    const auto value_start = r + result_label.size();
    const std::string result =
        labels.substr(value_start, labels.find('"', value_start) - value_start);
    totals[result] += std::atof(line.c_str() + close + 1);
  }
  return totals;
}

}  // namespace caphv::bench
