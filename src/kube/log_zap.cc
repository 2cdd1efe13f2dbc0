// File: kube/log_zap.cc
//
// The encoders of controller-runtime's zap logger, which the Go provider
// prints: console (zap's development encoder: tab-separated time, level,
// logger, message, then the pairs as spaced JSON) and JSON (zap's production
// encoder: level, ts, logger, msg, then the pairs). See log.h.

#include <charconv>
#include <cstdio>
#include <ctime>

#include "kube/log.h"

namespace caphv::kube::log::internal {
namespace {

std::string Dump(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Go's strconv.FormatFloat(f, 'f', -1, 64): the shortest decimal that reads
// back as f, never in exponent form.
std::string ShortestFixed(double value) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
  if (ec != std::errc()) return "0";
  return {buf, end};
}

// "Z" for UTC, else "+hh:mm" (colon) or "+hhmm" (no colon).
std::string Offset(long gmtoff, bool colon) {
  if (gmtoff == 0) return "Z";
  char sign = gmtoff < 0 ? '-' : '+';
  long abs = gmtoff < 0 ? -gmtoff : gmtoff;
  char buf[16];
  std::snprintf(buf, sizeof buf, colon ? "%c%02ld:%02ld" : "%c%02ld%02ld", sign, abs / 3600,
                abs / 60 % 60);
  return buf;
}

// zap's level names: lowercase for JSON, capitals for the console; V(n >= 2)
// is zap level -n, which zap prints as Level(-n) / LEVEL(-n).
std::string LevelName(const Record& r, bool capital) {
  if (r.severity == 'E') return capital ? "ERROR" : "error";
  if (r.v <= 0) return capital ? "INFO" : "info";
  if (r.v == 1) return capital ? "DEBUG" : "debug";
  return (capital ? "LEVEL(-" : "Level(-") + std::to_string(r.v) + ")";
}

}  // namespace

bool ZapTimeIsNumber(TimeEncoding time) {
  return time == TimeEncoding::kEpoch || time == TimeEncoding::kMillis ||
         time == TimeEncoding::kNanos;
}

std::string ZapTime(std::chrono::system_clock::time_point t, TimeEncoding time) {
  using namespace std::chrono;
  const int64_t nanos = duration_cast<nanoseconds>(t.time_since_epoch()).count();
  switch (time) {
    case TimeEncoding::kEpoch:
      return ShortestFixed(static_cast<double>(nanos) / 1e9);
    case TimeEncoding::kMillis:
      return ShortestFixed(static_cast<double>(nanos) / 1e6);
    case TimeEncoding::kNanos:
      return std::to_string(nanos);
    case TimeEncoding::kIso8601:
    case TimeEncoding::kRfc3339:
    case TimeEncoding::kRfc3339Nano:
      break;
  }
  int64_t secs = nanos / 1000000000;
  int64_t frac = nanos % 1000000000;
  if (frac < 0) {
    frac += 1000000000;
    --secs;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  localtime_r(&tt, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = date;
  if (time == TimeEncoding::kIso8601) {
    char ms[8];
    std::snprintf(ms, sizeof ms, ".%03lld", static_cast<long long>(frac / 1000000));
    return out + ms + Offset(tm.tm_gmtoff, false);
  }
  if (time == TimeEncoding::kRfc3339Nano && frac != 0) {
    char ns[16];
    std::snprintf(ns, sizeof ns, ".%09lld", static_cast<long long>(frac));
    std::string f = ns;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out + Offset(tm.tm_gmtoff, true);
}

std::string EncodeZapConsole(const Record& r, TimeEncoding time) {
  std::string out = ZapTime(r.time, time);
  out += '\t';
  out += LevelName(r, true);
  if (!r.logger.empty()) {
    out += '\t';
    out += r.logger;
  }
  out += '\t';
  out += r.msg;
  // zap's console encoder writes the context as spaced JSON; the error of an
  // Error record comes last, under "error" (zapr's errorKey).
  if (!r.fields.empty() || r.err) {
    out += "\t{";
    bool first = true;
    auto pair = [&](const std::string& key, const nlohmann::json& value) {
      if (!first) out += ", ";
      first = false;
      out += Dump(key);
      out += ": ";
      out += Dump(value);
    };
    for (const Field* f : r.fields) pair(f->key, f->value);
    if (r.err) pair("error", *r.err);
    out += '}';
  }
  out += '\n';
  return out;
}

std::string EncodeZapJson(const Record& r, TimeEncoding time) {
  std::string out = "{\"level\":";
  out += Dump(LevelName(r, false));
  out += ",\"ts\":";
  const std::string ts = ZapTime(r.time, time);
  out += ZapTimeIsNumber(time) ? ts : Dump(ts);
  if (!r.logger.empty()) {
    out += ",\"logger\":";
    out += Dump(std::string(r.logger));
  }
  out += ",\"msg\":";
  out += Dump(std::string(r.msg));
  for (const Field* f : r.fields) {
    out += ',';
    out += Dump(f->key);
    out += ':';
    out += Dump(f->value);
  }
  if (r.err) {
    out += ",\"error\":";
    out += Dump(*r.err);
  }
  out += "}\n";
  return out;
}

}  // namespace caphv::kube::log::internal
