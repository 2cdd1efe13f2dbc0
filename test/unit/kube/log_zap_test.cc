// Unit tests of the zap encoders (what the Go provider's controller-runtime
// logger prints): console and JSON lines, level names, the error key and
// every --zap-time-encoding.

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kube/log.h"

namespace caphv::kube::log {
namespace {

using internal::EncodeZapConsole;
using internal::EncodeZapJson;
using internal::Record;
using internal::ZapTime;

// 2026-11-22T16:04:05.067890Z
std::chrono::system_clock::time_point FixedTime() {
  return std::chrono::system_clock::time_point(std::chrono::microseconds(1795363445067890LL));
}

// Runs the test body with TZ set, restoring the previous zone afterwards.
class ZoneTest : public ::testing::Test {
 protected:
  void SetZone(const char* tz) {
    setenv("TZ", tz, 1);
    tzset();
  }
  void SetUp() override {
    const char* old = std::getenv("TZ");
    had_tz_ = old != nullptr;
    if (had_tz_) old_tz_ = old;
    SetZone("UTC");
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", old_tz_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
    Configure(0, Format::kText, nullptr);
  }

 private:
  bool had_tz_ = false;
  std::string old_tz_;
};

using ZapTimeTest = ZoneTest;

TEST_F(ZapTimeTest, EveryEncodingInUtc) {
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kEpoch), "1795363445.06789");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kMillis), "1795363445067.89");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kNanos), "1795363445067890000");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kIso8601), "2026-11-22T16:04:05.067Z");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kRfc3339), "2026-11-22T16:04:05Z");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kRfc3339Nano), "2026-11-22T16:04:05.06789Z");
  // A whole second has no fraction in rfc3339nano.
  auto whole = std::chrono::system_clock::time_point(std::chrono::seconds(1795363445));
  EXPECT_EQ(ZapTime(whole, TimeEncoding::kRfc3339Nano), "2026-11-22T16:04:05Z");
  EXPECT_EQ(ZapTime(whole, TimeEncoding::kEpoch), "1795363445");
}

TEST_F(ZapTimeTest, LocalZoneOffsets) {
  SetZone("CET-1");  // UTC+1, no daylight saving
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kRfc3339), "2026-11-22T17:04:05+01:00");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kIso8601), "2026-11-22T17:04:05.067+0100");
  EXPECT_EQ(ZapTime(FixedTime(), TimeEncoding::kEpoch), "1795363445.06789");  // zone-free
}

using ZapEncoderTest = ZoneTest;

TEST_F(ZapEncoderTest, ConsoleLineLikeControllerRuntimeDevelopmentMode) {
  Field cluster{"cluster", "ns/c"};
  Field n{"attempt", 3};
  Record r;
  r.time = FixedTime();
  r.msg = "Reconciling";
  r.v = 1;
  r.logger = "harvestermachine";
  r.fields = {&cluster, &n};
  EXPECT_EQ(EncodeZapConsole(r, TimeEncoding::kRfc3339),
            "2026-11-22T16:04:05Z\tDEBUG\tharvestermachine\tReconciling\t"
            "{\"cluster\": \"ns/c\", \"attempt\": 3}\n");
  r.v = 0;
  r.logger = "";
  r.fields = {};
  EXPECT_EQ(EncodeZapConsole(r, TimeEncoding::kEpoch), "1795363445.06789\tINFO\tReconciling\n");
  r.v = 4;
  EXPECT_EQ(EncodeZapConsole(r, TimeEncoding::kRfc3339),
            "2026-11-22T16:04:05Z\tLEVEL(-4)\tReconciling\n");
}

TEST_F(ZapEncoderTest, ConsoleErrorCarriesTheErrorLast) {
  std::string err = "connection refused";
  Field host{"host", "10.0.0.1"};
  Record r;
  r.severity = 'E';
  r.time = FixedTime();
  r.msg = "Failed to reach Harvester";
  r.logger = "setup";
  r.err = &err;
  r.fields = {&host};
  EXPECT_EQ(EncodeZapConsole(r, TimeEncoding::kIso8601),
            "2026-11-22T16:04:05.067Z\tERROR\tsetup\tFailed to reach Harvester\t"
            "{\"host\": \"10.0.0.1\", \"error\": \"connection refused\"}\n");
}

TEST_F(ZapEncoderTest, JsonLineLikeControllerRuntimeProductionMode) {
  Field pod{"pod", "ns/p"};
  Record r;
  r.time = FixedTime();
  r.msg = "Hello \"world\"";
  r.logger = "ctrl";
  r.fields = {&pod};
  EXPECT_EQ(EncodeZapJson(r, TimeEncoding::kRfc3339),
            "{\"level\":\"info\",\"ts\":\"2026-11-22T16:04:05Z\",\"logger\":\"ctrl\","
            "\"msg\":\"Hello \\\"world\\\"\",\"pod\":\"ns/p\"}\n");
  // Numeric time encodings are JSON numbers.
  auto parsed = nlohmann::json::parse(EncodeZapJson(r, TimeEncoding::kMillis));
  EXPECT_TRUE(parsed["ts"].is_number());
  EXPECT_DOUBLE_EQ(parsed["ts"].get<double>(), 1795363445067.89);
  parsed = nlohmann::json::parse(EncodeZapJson(r, TimeEncoding::kNanos));
  EXPECT_EQ(parsed["ts"].get<int64_t>(), 1795363445067890000LL);
  r.v = 2;
  EXPECT_EQ(nlohmann::json::parse(EncodeZapJson(r, TimeEncoding::kEpoch))["level"], "Level(-2)");
  std::string err = "boom";
  r.severity = 'E';
  r.err = &err;
  parsed = nlohmann::json::parse(EncodeZapJson(r, TimeEncoding::kEpoch));
  EXPECT_EQ(parsed["level"], "error");
  EXPECT_EQ(parsed["error"], "boom");
  EXPECT_FALSE(parsed.contains("caller"));
}

TEST_F(ZapEncoderTest, ConfiguredLoggerPrintsZapAndHonoursTheErrorLevel) {
  std::ostringstream out;
  Configure(1, Format::kZapJson, &out, TimeEncoding::kNanos);
  auto logger = Root().WithName("setup");
  logger.Info("Shown");
  logger.V(1).Info("Debug shown");
  logger.V(2).Info("Hidden");
  std::istringstream in(out.str());
  std::vector<nlohmann::json> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 2u) << out.str();
  EXPECT_EQ(lines[0]["level"], "info");
  EXPECT_EQ(lines[1]["level"], "debug");
  EXPECT_TRUE(lines[1]["ts"].is_number_integer());

  // --zap-log-level=error: only Error records.
  std::ostringstream errors_only;
  Configure(-1, Format::kZapConsole, &errors_only);
  logger.Info("Hidden");
  logger.Error("boom", "Shown");
  EXPECT_EQ(errors_only.str().find("Hidden"), std::string::npos);
  EXPECT_NE(errors_only.str().find("\tERROR\tsetup\tShown\t{\"error\": \"boom\"}\n"),
            std::string::npos)
      << errors_only.str();
}

}  // namespace
}  // namespace caphv::kube::log
