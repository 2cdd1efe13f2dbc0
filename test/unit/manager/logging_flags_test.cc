// Unit tests of the logging flags: controller-runtime's zap flag values (what
// the Go provider's manager accepts) and the klog flags, resolved to the
// logger's settings.

#include "logging_flags.h"

#include <gtest/gtest.h>

#include <string>

namespace caphv::manager {
namespace {

using kube::log::Format;
using kube::log::TimeEncoding;

LogSettings Zap(ZapFlags z) {
  auto s = ResolveLogging(z, true, 0, "text", false);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : LogSettings{};
}

TEST(LoggingFlagsTest, DevelopmentAndProductionDefaults) {
  EXPECT_EQ(Zap({}), (LogSettings{1, Format::kZapConsole, TimeEncoding::kRfc3339}));
  EXPECT_EQ(Zap({.devel = false}), (LogSettings{0, Format::kZapJson, TimeEncoding::kRfc3339}));
  // Nothing given at all: the Go manager's default (development mode).
  auto none = ResolveLogging({}, false, 0, "text", false);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, Zap({}));
}

TEST(LoggingFlagsTest, LevelsAsZapAllowsThem) {
  EXPECT_EQ(Zap({.level = "debug"}).verbosity, 1);
  EXPECT_EQ(Zap({.level = "INFO"}).verbosity, 0);
  EXPECT_EQ(Zap({.level = "error"}).verbosity, -1);
  EXPECT_EQ(Zap({.level = "1"}).verbosity, 1);
  EXPECT_EQ(Zap({.level = "7"}).verbosity, 7);
  EXPECT_EQ(Zap({.level = "+2"}).verbosity, 2);
  for (const char* bad : {"0", "-1", "warn", "panic", "1.5", " 3"}) {
    auto s = ResolveLogging({.level = bad}, true, 0, "text", false);
    EXPECT_FALSE(s.ok()) << bad;
  }
}

TEST(LoggingFlagsTest, EncodersAndTimeEncodings) {
  EXPECT_EQ(Zap({.encoder = "json"}).format, Format::kZapJson);
  EXPECT_EQ(Zap({.devel = false, .encoder = "Console"}).format, Format::kZapConsole);
  const std::pair<const char*, TimeEncoding> times[] = {
      {"epoch", TimeEncoding::kEpoch},
      {"millis", TimeEncoding::kMillis},
      {"nano", TimeEncoding::kNanos},
      {"nanos", TimeEncoding::kNanos},
      {"iso8601", TimeEncoding::kIso8601},
      {"rfc3339", TimeEncoding::kRfc3339},
      {"RFC3339Nano", TimeEncoding::kRfc3339Nano},
  };
  for (const auto& [name, want] : times) {
    EXPECT_EQ(Zap({.time_encoding = name}).time, want) << name;
  }
  for (const char* level : {"info", "error", "panic", "PANIC"}) {
    EXPECT_TRUE(ResolveLogging({.stacktrace_level = level}, true, 0, "text", false).ok()) << level;
  }
}

TEST(LoggingFlagsTest, KlogFlagsAndMixing) {
  auto s = ResolveLogging({}, false, 4, "json", true);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->verbosity, 4);
  EXPECT_EQ(s->format, Format::kJson);
  EXPECT_FALSE(ResolveLogging({}, false, 0, "xml", true).ok());
  EXPECT_FALSE(ResolveLogging({}, false, -2, "text", true).ok());
  auto mixed = ResolveLogging({.level = "debug"}, true, 2, "text", true);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.status().message().find("cannot be combined"), std::string::npos);
}

}  // namespace
}  // namespace caphv::manager
