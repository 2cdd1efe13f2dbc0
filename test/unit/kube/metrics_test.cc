// Unit tests of the process-wide registry's exposition and the /proc-based
// process metrics.

#include "kube/metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <prometheus/counter.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>

namespace caphv::kube::metrics {
namespace {

std::map<std::string, double> ProcessValues() {
  std::map<std::string, double> out;
  for (const auto& f : CollectProcessMetrics()) {
    EXPECT_EQ(f.metric.size(), 1u) << f.name;
    out[f.name] = f.type == prometheus::MetricType::Counter ? f.metric[0].counter.value
                                                            : f.metric[0].gauge.value;
  }
  return out;
}

TEST(ProcessMetricsTest, ValuesArePlausible) {
  auto v = ProcessValues();
  EXPECT_GT(v["process_resident_memory_bytes"], 1 << 20);
  EXPECT_GE(v["process_virtual_memory_bytes"], v["process_resident_memory_bytes"]);
  EXPECT_GE(v["process_cpu_seconds_total"], 0.0);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(v["process_start_time_seconds"], now + 1);
  EXPECT_GT(v["process_start_time_seconds"], now - 24 * 3600);
  EXPECT_GT(v["process_max_fds"], 0);
}

TEST(ProcessMetricsTest, OpenFdsFollowsTheProcess) {
  const double before = ProcessValues()["process_open_fds"];
  int fds[3];
  for (int& fd : fds) fd = ::open("/dev/null", O_RDONLY);
  EXPECT_EQ(ProcessValues()["process_open_fds"], before + 3);
  for (int fd : fds) ::close(fd);
  EXPECT_EQ(ProcessValues()["process_open_fds"], before);
}

TEST(ProcessMetricsTest, HeapInUseFollowsAllocations) {
  const double before = ProcessValues()["caphv_heap_in_use_bytes"];
  if (before == 0) GTEST_SKIP() << "the heap is the sanitizer's";
  constexpr size_t kBlock = size_t{8} << 20;
  auto block = std::make_unique<char[]>(kBlock);
  block[kBlock - 1] = 1;
  EXPECT_GE(ProcessValues()["caphv_heap_in_use_bytes"], before + static_cast<double>(kBlock));
  block.reset();
  EXPECT_LT(ProcessValues()["caphv_heap_in_use_bytes"], before + static_cast<double>(kBlock));
}

TEST(SerializeTest, IncludesRegisteredFamiliesAndProcessMetrics) {
  auto& counter = prometheus::BuildCounter()
                      .Name("caphv_metrics_test_total")
                      .Help("Test counter.")
                      .Register(Registry())
                      .Add({{"kind", "x"}});
  counter.Increment(3);
  std::string text = Serialize();
  EXPECT_NE(text.find("# TYPE caphv_metrics_test_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("caphv_metrics_test_total{kind=\"x\"} 3"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter"), std::string::npos);
  EXPECT_NE(text.find("process_open_fds "), std::string::npos);
}

}  // namespace
}  // namespace caphv::kube::metrics
