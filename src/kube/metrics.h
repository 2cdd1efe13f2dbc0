// File: kube/metrics.h
//
// The process-wide Prometheus registry (prometheus-cpp core) every component
// registers its families in, and the text exposition served on /metrics.
// Serialize() also reports process metrics read from /proc at scrape time:
//   process_resident_memory_bytes, process_virtual_memory_bytes,
//   process_cpu_seconds_total, process_start_time_seconds,
//   process_open_fds, process_max_fds; and caphv_heap_in_use_bytes, malloc's
//   bytes in use (absent under AddressSanitizer).
//
// Usage:
//   auto& family = prometheus::BuildCounter().Name("x_total").Help("...")
//                      .Register(metrics::Registry());
//
// Thread safety: Registry() and Serialize() may be called from any thread;
// prometheus-cpp families and metrics are themselves thread-safe.

#pragma once

#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <string>
#include <vector>

namespace caphv::kube::metrics {

// The process-wide registry; never destroyed.
prometheus::Registry& Registry();

// Prometheus text format 0.0.4 of Registry() plus the process metrics.
std::string Serialize();

// Content type of Serialize()'s output.
inline constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// The process_* families as of now (exposed for tests).
std::vector<prometheus::MetricFamily> CollectProcessMetrics();

}  // namespace caphv::kube::metrics
