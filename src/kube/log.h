// File: kube/log.h
//
// A logr-style structured logger with four encoders: klog text
//   I1122 16:04:05.067890    1234 reconciler.cc:42] "Reconciling" logger="machine" cluster="ns/c"
// component-base JSON, one object per line:
//   {"ts":1700000000000.123,"caller":"reconciler.cc:42","msg":"Reconciling","v":0,...}
// and the two of controller-runtime's zap logger (what the Go provider prints),
// console (development) and JSON (production):
//   2026-11-22T16:04:05Z	DEBUG	machine	Reconciling	{"cluster": "ns/c"}
//   {"level":"debug","ts":"2026-11-22T16:04:05Z","logger":"machine","msg":"Reconciling",...}
// whose time is printed in one of zap's time encodings (--zap-time-encoding).
//
// Usage:
//   auto logger = log::Root().WithName("machine").WithValues({{"cluster", log::KRef(ns, n)}});
//   logger.V(5).Info("Reconciling", {{"attempt", 3}});
//   logger.Error(status, "Failed to patch", {{"machine", name}});
//
// Messages are constant and capitalised, keys lowerCamelCase. V(0) always
// prints, V(n) prints when n <= the configured verbosity; Error always prints.
//
// Thread safety: Configure() may be called at any time; Logger is an
// immutable value that may be copied and used from any thread. Each record
// is formatted in full and written with a single write under a process-wide
// mutex, so lines never interleave.

#pragma once

#include <chrono>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

#include "kube/status.h"

namespace caphv::kube::log {

enum class Format { kText, kJson, kZapConsole, kZapJson };

// zap's time encoders, for the two zap formats: epoch (float seconds), millis
// (float milliseconds), nanos (integer), iso8601 (2006-01-02T15:04:05.000Z0700),
// rfc3339 (2006-01-02T15:04:05Z07:00), rfc3339nano (nanoseconds, trailing zeros
// trimmed). Local time, like Go's time.Now().
enum class TimeEncoding { kEpoch, kMillis, kNanos, kIso8601, kRfc3339, kRfc3339Nano };

// One key/value pair. Strings, numbers, booleans, null, arrays and objects
// are all accepted through nlohmann::json's converting constructors.
struct Field {
  std::string key;
  nlohmann::json value;
};

// Sets the process-wide verbosity, encoder, sink (nullptr = std::cerr) and,
// for the zap formats, time encoding. A negative verbosity prints Error
// records only (zap's "error" level). The sink must outlive all logging.
void Configure(int verbosity, Format format, std::ostream* out = nullptr,
               TimeEncoding time = TimeEncoding::kRfc3339);

// The configured verbosity (0 by default).
int Verbosity();

// Flushes the sink; for a process about to leave through std::_Exit.
void Flush();

class Logger {
 public:
  Logger() = default;

  // Appends a name segment; segments are joined with '/' ("manager/machine").
  [[nodiscard]] Logger WithName(std::string name) const;
  // Adds pairs printed on every record of the returned logger.
  [[nodiscard]] Logger WithValues(std::initializer_list<Field> kv) const;
  [[nodiscard]] Logger WithValues(std::vector<Field> kv) const;
  // A logger whose Info records have verbosity `level` (added to the current).
  [[nodiscard]] Logger V(int level) const;

  // True when Info on this logger would print.
  bool Enabled() const;
  int level() const { return level_; }
  const std::string& name() const { return name_; }

  void Info(std::string_view msg, std::initializer_list<Field> kv = {},
            std::source_location loc = std::source_location::current()) const;
  void Error(const Status& err, std::string_view msg, std::initializer_list<Field> kv = {},
             std::source_location loc = std::source_location::current()) const;
  // For errors that are not a Status (exceptions at thread tops, etc.).
  void Error(std::string_view err, std::string_view msg, std::initializer_list<Field> kv = {},
             std::source_location loc = std::source_location::current()) const;

 private:
  void Emit(char severity, const std::optional<std::string>& err, std::string_view msg,
            std::initializer_list<Field> kv, const std::source_location& loc) const;

  std::string name_;
  int level_ = 0;
  std::shared_ptr<const std::vector<Field>> values_;
};

// The root logger (no name, no values).
Logger Root();

// Object references, printed as "namespace/name" (or "name" when cluster-scoped).
std::string KRef(std::string_view ns, std::string_view name);
// Reads metadata.namespace and metadata.name of a Kubernetes object.
std::string KObj(const nlohmann::json& object);

// Encoders, exposed for tests and for tools that format records themselves.
namespace internal {

struct Record {
  char severity = 'I';  // 'I' info, 'E' error
  std::chrono::system_clock::time_point time;
  long thread_id = 0;
  std::string_view file;  // full path; the encoders print the base name
  unsigned line = 0;
  std::string_view msg;
  int v = 0;
  std::string_view logger;
  const std::string* err = nullptr;  // set for Error records
  std::vector<const Field*> fields;  // WithValues pairs first, then call pairs
};

// One line, terminated by '\n'.
std::string EncodeText(const Record& r);
std::string EncodeJson(const Record& r);
// zap's encoders (log_zap.cc): no caller, the error under "error", level
// names as zap prints them (info, debug, then Level(-N) for V(N >= 2)).
std::string EncodeZapConsole(const Record& r, TimeEncoding time);
std::string EncodeZapJson(const Record& r, TimeEncoding time);
// The time as zap's encoder writes it (a JSON number or an unquoted string).
std::string ZapTime(std::chrono::system_clock::time_point t, TimeEncoding time);
// True when ZapTime's output is a number (epoch, millis, nanos).
bool ZapTimeIsNumber(TimeEncoding time);

// Go-style double-quoted string with \n, \t, \", \\ and \u escapes.
std::string QuoteText(std::string_view s);

}  // namespace internal

}  // namespace caphv::kube::log
