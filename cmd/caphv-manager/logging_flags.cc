// File: cmd/caphv-manager/logging_flags.cc
//
// Parsing of the zap flag values (case-insensitive, as controller-runtime's)
// and the choice between the zap and klog families. See logging_flags.h.

#include "logging_flags.h"

#include <cctype>
#include <charconv>

namespace caphv::manager {
namespace {

using kube::log::Format;
using kube::log::TimeEncoding;

kube::Status Bad(std::string message) {
  return kube::Status(kube::StatusCode::kInvalidArgument, std::move(message));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// zap's level names, or an integer > 0 (Go's strconv.Atoi: optional sign).
kube::StatusOr<int> ParseLevel(const std::string& value) {
  const std::string v = Lower(value);
  if (v == "debug") return 1;
  if (v == "info") return 0;
  if (v == "error") return -1;
  std::string_view digits = value;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  int n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n <= 0 || digits.empty() ||
      digits.front() == '-') {
    return Bad("invalid --zap-log-level \"" + value +
               "\": must be debug, info, error or an integer greater than 0");
  }
  return n;
}

kube::StatusOr<TimeEncoding> ParseTimeEncoding(const std::string& value) {
  const std::string v = Lower(value);
  if (v == "epoch") return TimeEncoding::kEpoch;
  if (v == "millis") return TimeEncoding::kMillis;
  // controller-runtime accepts "nanos"; its help text says "nano".
  if (v == "nanos" || v == "nano") return TimeEncoding::kNanos;
  if (v == "iso8601") return TimeEncoding::kIso8601;
  if (v == "rfc3339") return TimeEncoding::kRfc3339;
  if (v == "rfc3339nano") return TimeEncoding::kRfc3339Nano;
  return Bad("invalid --zap-time-encoding \"" + value +
             "\": must be epoch, millis, nano, iso8601, rfc3339 or rfc3339nano");
}

}  // namespace

kube::StatusOr<LogSettings> ResolveLogging(const ZapFlags& zap, bool zap_given, int verbosity,
                                           std::string_view log_format, bool klog_given) {
  if (zap_given && klog_given) {
    return Bad(
        "the --zap-* flags and -v/--log-format cannot be combined: choose one way to configure "
        "logging");
  }
  LogSettings s;
  if (klog_given) {
    if (verbosity < 0) return Bad("invalid -v " + std::to_string(verbosity) + ": must be >= 0");
    if (log_format != "text" && log_format != "json") {
      return Bad("invalid --log-format \"" + std::string(log_format) +
                 "\": must be \"text\" or \"json\"");
    }
    s.verbosity = verbosity;
    s.format = log_format == "json" ? Format::kJson : Format::kText;
    return s;
  }
  // controller-runtime: development mode = console encoder and debug level,
  // production = JSON and info; the other flags override either.
  s.format = zap.devel ? Format::kZapConsole : Format::kZapJson;
  s.verbosity = zap.devel ? 1 : 0;
  if (!zap.encoder.empty()) {
    const std::string e = Lower(zap.encoder);
    if (e == "json") {
      s.format = Format::kZapJson;
    } else if (e == "console") {
      s.format = Format::kZapConsole;
    } else {
      return Bad("invalid --zap-encoder \"" + zap.encoder + "\": must be json or console");
    }
  }
  if (!zap.level.empty()) {
    auto level = ParseLevel(zap.level);
    if (!level.ok()) return level.status();
    s.verbosity = *level;
  }
  if (!zap.stacktrace_level.empty()) {
    const std::string l = Lower(zap.stacktrace_level);
    if (l != "info" && l != "error" && l != "panic") {
      return Bad("invalid --zap-stacktrace-level \"" + zap.stacktrace_level +
                 "\": must be info, error or panic");
    }
  }
  if (!zap.time_encoding.empty()) {
    auto time = ParseTimeEncoding(zap.time_encoding);
    if (!time.ok()) return time.status();
    s.time = *time;
  }
  return s;
}

}  // namespace caphv::manager
