// `caphv-manager --version` and the start-up log line: the version, commit
// and build date CMake fixed when it configured the build directory
// (cmd/caphv-manager/CMakeLists.txt), checked against the build's cache
// (CAPHV_VERSION) and the source tree's git (commit, and the commit's date
// unless $SOURCE_DATE_EPOCH is set, which then gives the date).

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/testbed.h"

namespace caphv::testing {
namespace {

using Json = nlohmann::json;

std::string Manager() { return BuildPath("cmd/caphv-manager/caphv-manager"); }

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The version the build reports: CAPHV_VERSION of the build's CMakeCache.txt
// when set (-DCAPHV_VERSION=...), else "v" + the project version of CMakeLists.txt.
std::string ExpectedVersion() {
  std::ifstream cache(BuildPath("CMakeCache.txt"));
  std::string line;
  while (std::getline(cache, line)) {
    if (line.rfind("CAPHV_VERSION:", 0) == 0 && line.find('=') + 1 < line.size()) {
      return line.substr(line.find('=') + 1);
    }
  }
  std::ifstream lists(SourcePath("CMakeLists.txt"));
  const std::regex project(R"(^project\(caphv .*VERSION ([0-9]+\.[0-9]+\.[0-9]+)\))");
  while (std::getline(lists, line)) {
    std::smatch m;
    if (std::regex_search(line, m, project)) return "v" + m[1].str();
  }
  return "";
}

// What the binary should report for commit and date.
struct Expected {
  std::string version, commit, date;
};

Expected ExpectedBuild() {
  Expected e{ExpectedVersion(), "unknown", "unknown"};
  const std::string git = "git -C '" + SourcePath("") + "' ";
  std::string out;
  if (RunCommand(git + "rev-parse --short HEAD 2>/dev/null", &out) == 0) e.commit = Trimmed(out);
  long long epoch = -1;
  if (const char* sde = std::getenv("SOURCE_DATE_EPOCH"); sde != nullptr && *sde != '\0') {
    epoch = std::atoll(sde);
  } else if (e.commit != "unknown") {
    out.clear();
    if (RunCommand(git + "log -1 --format=%ct HEAD 2>/dev/null", &out) == 0) {
      epoch = std::atoll(out.c_str());
    }
  }
  if (epoch >= 0) {
    std::time_t t = static_cast<std::time_t>(epoch);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    e.date = buf;
  }
  return e;
}

TEST(VersionTest, VersionPrintsVersionCommitAndBuildDate) {
  std::string out;
  ASSERT_EQ(RunCommand("'" + Manager() + "' --version", &out), 0) << out;
  static const std::regex kLine(
      R"(caphv-manager (v\d+\.\d+\.\d+\S*) \(commit ([0-9a-f]{7,40}|unknown), built )"
      R"((\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|unknown)\)\n)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(out, m, kLine)) << "[" << out << "]";
  const Expected want = ExpectedBuild();
  EXPECT_EQ(m[1].str(), want.version)
      << "CAPHV_VERSION of " << BuildPath("CMakeCache.txt") << " or the project version";
  EXPECT_EQ(m[2].str(), want.commit) << "the source tree's HEAD";
  EXPECT_EQ(m[3].str(), want.date);
  if (want.commit != "unknown") {
    EXPECT_NE(m[3].str(), "unknown") << "a commit has a date";
  }
}

TEST(VersionTest, StartupLogCarriesTheSameFields) {
  // The manager logs its start, then fails to load a kubeconfig that does
  // not exist (exit 1).
  std::string version;
  ASSERT_EQ(RunCommand("'" + Manager() + "' --version", &version), 0);
  std::string out;
  EXPECT_EQ(RunCommand("'" + Manager() +
                           "' --kubeconfig=/nonexistent/kubeconfig --log-format=json"
                           " --metrics-bind-address=0 --health-probe-bind-address=0",
                       &out),
            1)
      << out;
  Json start;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    Json j = Json::parse(line, nullptr, false);
    if (j.is_object() && j.value("msg", "") == "Starting caphv-manager") start = j;
  }
  ASSERT_TRUE(start.is_object()) << out;
  const std::string fields = "caphv-manager " + start.value("version", "?") + " (commit " +
                             start.value("commit", "?") + ", built " +
                             start.value("buildDate", "?") + ")\n";
  EXPECT_EQ(fields, version) << start.dump();
}

}  // namespace
}  // namespace caphv::testing
