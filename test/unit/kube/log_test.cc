// Unit tests of the logger's klog-text and JSON encoders and its front end.

#include "kube/log.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

namespace caphv::kube::log {
namespace {

using internal::EncodeJson;
using internal::EncodeText;
using internal::QuoteText;
using internal::Record;

// 2026-11-22T16:04:05.067890Z
std::chrono::system_clock::time_point FixedTime() {
  return std::chrono::system_clock::time_point(std::chrono::microseconds(1795363445067890LL));
}

TEST(QuoteTextTest, EscapesLikeGo) {
  EXPECT_EQ(QuoteText("plain"), R"("plain")");
  EXPECT_EQ(QuoteText("a \"b\" \\c"), R"("a \"b\" \\c")");
  EXPECT_EQ(QuoteText("l1\nl2\tx\r"), R"("l1\nl2\tx\r")");
  EXPECT_EQ(QuoteText(std::string("\x01\x7f", 2)), R"("\x01\x7f")");
  EXPECT_EQ(QuoteText("héllo ✓"), "\"héllo ✓\"");           // valid UTF-8 kept
  EXPECT_EQ(QuoteText("bad\xff\xc3"), R"("bad\xff\xc3")");  // invalid bytes escaped
}

TEST(EncodeTextTest, KlogHeaderMessageAndPairs) {
  Field pod{"pod", "kube-system/kubedns"};
  Field count{"count", 3};
  Field ok{"ready", true};
  Record r;
  r.time = FixedTime();
  r.thread_id = 1234;
  r.file = "/work/src/kube/reconciler.cc";
  r.line = 42;
  r.msg = "Reconciling";
  r.fields = {&pod, &count, &ok};
  EXPECT_EQ(EncodeText(r),
            "I1122 16:04:05.067890    1234 reconciler.cc:42] \"Reconciling\" "
            "pod=\"kube-system/kubedns\" count=3 ready=true\n");
}

TEST(EncodeTextTest, ErrorLoggerNameAndEscaping) {
  std::string err = "NotFound: machines \"m\" not found";
  Field msg{"detail", "two\nlines"};
  Field obj{"spec", nlohmann::json{{"a", "x y"}}};
  Field odd{"bad key", nullptr};
  Record r;
  r.severity = 'E';
  r.time = FixedTime();
  r.thread_id = 7;
  r.file = "x.cc";
  r.line = 1;
  r.msg = "Failed to \"patch\"";
  r.logger = "manager/machine";
  r.err = &err;
  r.fields = {&msg, &obj, &odd};
  EXPECT_EQ(EncodeText(r),
            "E1122 16:04:05.067890       7 x.cc:1] \"Failed to \\\"patch\\\"\" "
            "logger=\"manager/machine\" err=\"NotFound: machines \\\"m\\\" not found\" "
            "detail=\"two\\nlines\" spec=\"{\\\"a\\\":\\\"x y\\\"}\" \"bad key\"=<nil>\n");
}

TEST(EncodeJsonTest, FieldOrderAndTypes) {
  Field pod{"pod", "ns/p"};
  Field n{"n", 1.5};
  Record r;
  r.time = FixedTime();
  r.file = "/a/b/c.cc";
  r.line = 9;
  r.msg = "Hello \"world\"\n";
  r.v = 2;
  r.logger = "ctrl";
  r.fields = {&pod, &n};
  std::string line = EncodeJson(r);
  EXPECT_EQ(line,
            "{\"ts\":1795363445067.890,\"caller\":\"c.cc:9\",\"msg\":\"Hello \\\"world\\\"\\n\","
            "\"v\":2,\"logger\":\"ctrl\",\"pod\":\"ns/p\",\"n\":1.5}\n");
  auto parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["msg"], "Hello \"world\"\n");
  EXPECT_DOUBLE_EQ(parsed["ts"].get<double>(), 1795363445067.890);
}

TEST(EncodeJsonTest, ErrorHasErrNotVAndSurvivesInvalidUtf8) {
  std::string err = "boom\xff";
  Field f{"k", std::string("v\xfe")};
  Record r;
  r.severity = 'E';
  r.time = FixedTime();
  r.file = "e.cc";
  r.line = 3;
  r.msg = "Failed";
  r.err = &err;
  r.fields = {&f};
  std::string line = EncodeJson(r);
  auto parsed = nlohmann::json::parse(line);  // must be valid JSON
  EXPECT_FALSE(parsed.contains("v"));
  EXPECT_TRUE(parsed.contains("err"));
  EXPECT_EQ(line.find("\"err\""), line.find("\"msg\"") + std::string("\"msg\":\"Failed\",").size());
}

class LoggerTest : public ::testing::Test {
 protected:
  void TearDown() override { Configure(0, Format::kText, nullptr); }
};

TEST_F(LoggerTest, VerbosityNamesValuesAndCaller) {
  std::ostringstream out;
  Configure(2, Format::kJson, &out);
  auto logger = Root().WithName("manager").WithName("machine").WithValues({{"cluster", "ns/c"}});
  logger.Info("Shown", {{"a", 1}});
  logger.V(2).Info("Shown too");
  logger.V(3).Info("Hidden");
  EXPECT_FALSE(logger.V(3).Enabled());
  logger.V(5).Error(Status(StatusCode::kConflict, "stale"), "Errors always print");
  std::vector<nlohmann::json> lines;
  std::istringstream in(out.str());
  for (std::string l; std::getline(in, l);) lines.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["logger"], "manager/machine");
  EXPECT_EQ(lines[0]["cluster"], "ns/c");
  EXPECT_EQ(lines[0]["a"], 1);
  EXPECT_EQ(lines[0]["v"], 0);
  EXPECT_TRUE(lines[0]["caller"].get<std::string>().starts_with("log_test.cc:"));
  EXPECT_EQ(lines[1]["v"], 2);
  EXPECT_EQ(lines[2]["msg"], "Errors always print");
  EXPECT_NE(lines[2]["err"].get<std::string>().find("stale"), std::string::npos);
}

TEST_F(LoggerTest, ConcurrentWritersNeverInterleave) {
  std::ostringstream out;
  Configure(0, Format::kText, &out);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < 200; ++i)
        Root().Info("Line", {{"t", t}, {"i", i}, {"pad", std::string(100, 'x')}});
    });
  }
  for (auto& th : threads) th.join();
  std::istringstream in(out.str());
  int n = 0;
  for (std::string l; std::getline(in, l); ++n) {
    ASSERT_EQ(l[0], 'I');
    ASSERT_NE(l.find("] \"Line\" t="), std::string::npos) << l;
    ASSERT_TRUE(l.ends_with(std::string(100, 'x') + "\"")) << l;
  }
  EXPECT_EQ(n, 800);
}

TEST(KRefTest, NamespacedAndClusterScoped) {
  EXPECT_EQ(KRef("ns", "name"), "ns/name");
  EXPECT_EQ(KRef("", "node-1"), "node-1");
  EXPECT_EQ(KObj({{"metadata", {{"namespace", "a"}, {"name", "b"}}}}), "a/b");
  EXPECT_EQ(KObj(nlohmann::json::array()), "");
}

}  // namespace
}  // namespace caphv::kube::log
