// File: cmd/caphv-manager/logging_flags.h
//
// The logging flags of caphv-manager and what they resolve to. Two families:
//
//  - the Go provider's (controller-runtime's zap flags), with its defaults:
//    --zap-devel (true: console encoder, debug level; false: JSON encoder,
//    info level), --zap-encoder json|console, --zap-log-level
//    debug|info|error|<N > 0> (N = verbosity N, debug = 1, info = 0, error =
//    Error records only), --zap-stacktrace-level info|error|panic (accepted
//    and checked; CAPHV has no Go stack traces to print), --zap-time-encoding
//    epoch|millis|nano(s)|iso8601|rfc3339|rfc3339nano (default rfc3339, as
//    controller-runtime's);
//  - CAPHV's klog flags: -v N and --log-format text|json.
//
// With neither family on the command line the Go provider's defaults apply
// (zap development mode). The klog flags select klog output; mixing the two
// families is an error, so a command line means one thing.
//
// Thread safety: pure functions.

#pragma once

#include <string>
#include <string_view>

#include "kube/log.h"
#include "kube/status.h"

namespace caphv::manager {

// controller-runtime's zap flags as given (empty: not given).
struct ZapFlags {
  bool devel = true;
  std::string encoder;
  std::string level;
  std::string stacktrace_level;
  std::string time_encoding;
};

// What the logger is configured with.
struct LogSettings {
  int verbosity = 1;  // -1: Error records only
  kube::log::Format format = kube::log::Format::kZapConsole;
  kube::log::TimeEncoding time = kube::log::TimeEncoding::kRfc3339;
  bool operator==(const LogSettings&) const = default;
};

// Resolves the flags; errors are kInvalidArgument naming the flag.
// `zap_given` / `klog_given`: whether any flag of that family was on the
// command line.
kube::StatusOr<LogSettings> ResolveLogging(const ZapFlags& zap, bool zap_given, int verbosity,
                                           std::string_view log_format, bool klog_given);

}  // namespace caphv::manager
