// File: kube/log.cc
//
// Logger implementation: the process-wide sink and the klog-text and JSON
// encoders. See log.h for the contract.

#include "kube/log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <mutex>

namespace caphv::kube::log {
namespace {

struct Sink {
  std::mutex mu;
  std::atomic<int> verbosity{0};
  std::atomic<Format> format{Format::kText};
  std::atomic<TimeEncoding> time{TimeEncoding::kRfc3339};
  std::ostream* out = nullptr;  // guarded by mu; nullptr = std::cerr
};

Sink& GlobalSink() {
  static Sink* sink = new Sink();  // never destroyed: logging may run at exit
  return *sink;
}

long ThreadId() {
  thread_local long tid = static_cast<long>(::syscall(SYS_gettid));
  return tid;
}

std::string_view BaseName(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  // Reject overlong forms, surrogates and out-of-range code points.
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return n;
}

std::string DumpJson(const nlohmann::json& v) {
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A value as klog text prints it: strings quoted, numbers/bools/null bare,
// arrays and objects as quoted compact JSON.
void AppendTextValue(std::string& out, const nlohmann::json& v) {
  if (v.is_string()) {
    out += internal::QuoteText(v.get_ref<const std::string&>());
  } else if (v.is_number() || v.is_boolean()) {
    out += DumpJson(v);
  } else if (v.is_null()) {
    out += "<nil>";
  } else {
    out += internal::QuoteText(DumpJson(v));
  }
}

bool IsPlainKey(std::string_view key) {
  if (key.empty()) return false;
  for (char c : key) {
    if (c <= ' ' || c == '=' || c == '"' || static_cast<unsigned char>(c) >= 0x7f) return false;
  }
  return true;
}

void AppendTextKey(std::string& out, std::string_view key) {
  if (IsPlainKey(key)) {
    out += key;
  } else {
    out += internal::QuoteText(key);
  }
}

}  // namespace

void Configure(int verbosity, Format format, std::ostream* out, TimeEncoding time) {
  Sink& sink = GlobalSink();
  std::lock_guard lock(sink.mu);
  sink.verbosity.store(verbosity, std::memory_order_relaxed);
  sink.format.store(format, std::memory_order_relaxed);
  sink.time.store(time, std::memory_order_relaxed);
  sink.out = out;
}

int Verbosity() { return GlobalSink().verbosity.load(std::memory_order_relaxed); }

void Flush() {
  Sink& sink = GlobalSink();
  std::lock_guard lock(sink.mu);
  (sink.out ? *sink.out : std::cerr).flush();
}

Logger Logger::WithName(std::string name) const {
  Logger l = *this;
  l.name_ = name_.empty() ? std::move(name) : name_ + "/" + name;
  return l;
}

Logger Logger::WithValues(std::initializer_list<Field> kv) const {
  return WithValues(std::vector<Field>(kv));
}

Logger Logger::WithValues(std::vector<Field> kv) const {
  Logger l = *this;
  auto merged = std::make_shared<std::vector<Field>>();
  if (values_) *merged = *values_;
  for (auto& f : kv) merged->push_back(std::move(f));
  l.values_ = std::move(merged);
  return l;
}

Logger Logger::V(int level) const {
  Logger l = *this;
  l.level_ += level < 0 ? 0 : level;
  return l;
}

bool Logger::Enabled() const { return level_ <= Verbosity(); }

void Logger::Info(std::string_view msg, std::initializer_list<Field> kv,
                  std::source_location loc) const {
  if (!Enabled()) return;
  Emit('I', std::nullopt, msg, kv, loc);
}

void Logger::Error(const Status& err, std::string_view msg, std::initializer_list<Field> kv,
                   std::source_location loc) const {
  Emit('E', err.ToString(), msg, kv, loc);
}

void Logger::Error(std::string_view err, std::string_view msg, std::initializer_list<Field> kv,
                   std::source_location loc) const {
  Emit('E', std::string(err), msg, kv, loc);
}

void Logger::Emit(char severity, const std::optional<std::string>& err, std::string_view msg,
                  std::initializer_list<Field> kv, const std::source_location& loc) const {
  internal::Record r;
  r.severity = severity;
  r.time = std::chrono::system_clock::now();
  r.thread_id = ThreadId();
  r.file = loc.file_name();
  r.line = loc.line();
  r.msg = msg;
  r.v = level_;
  r.logger = name_;
  r.err = err ? &*err : nullptr;
  if (values_) {
    for (const auto& f : *values_) r.fields.push_back(&f);
  }
  for (const auto& f : kv) r.fields.push_back(&f);

  Sink& sink = GlobalSink();
  const TimeEncoding time = sink.time.load(std::memory_order_relaxed);
  std::string line;
  switch (sink.format.load(std::memory_order_relaxed)) {
    case Format::kText:
      line = internal::EncodeText(r);
      break;
    case Format::kJson:
      line = internal::EncodeJson(r);
      break;
    case Format::kZapConsole:
      line = internal::EncodeZapConsole(r, time);
      break;
    case Format::kZapJson:
      line = internal::EncodeZapJson(r, time);
      break;
  }
  std::lock_guard lock(sink.mu);
  std::ostream& out = sink.out ? *sink.out : std::cerr;
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
  out.flush();
}

Logger Root() { return Logger(); }

std::string KRef(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string s;
  s.reserve(ns.size() + 1 + name.size());
  s.append(ns).append("/").append(name);
  return s;
}

std::string KObj(const nlohmann::json& object) {
  std::string_view ns, name;
  if (object.is_object()) {
    auto md = object.find("metadata");
    if (md != object.end() && md->is_object()) {
      auto n = md->find("namespace");
      if (n != md->end() && n->is_string()) ns = n->get_ref<const std::string&>();
      auto m = md->find("name");
      if (m != md->end() && m->is_string()) name = m->get_ref<const std::string&>();
    }
  }
  return KRef(ns, name);
}

namespace internal {

std::string QuoteText(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\a':
        out += "\\a";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      case '\v':
        out += "\\v";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {  // invalid UTF-8: escape the byte, like Go's strconv.Quote
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
      ++i;
      continue;
    }
    out.append(s.substr(i, n));
    i += n;
  }
  out += '"';
  return out;
}

std::string EncodeText(const Record& r) {
  using namespace std::chrono;
  auto since_epoch = r.time.time_since_epoch();
  auto secs = duration_cast<seconds>(since_epoch);
  auto micros = duration_cast<microseconds>(since_epoch - secs).count();
  std::time_t t = static_cast<std::time_t>(secs.count());
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::string file(BaseName(r.file));
  char header[96];
  std::snprintf(header, sizeof(header), "%c%02d%02d %02d:%02d:%02d.%06ld %7ld ", r.severity,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(micros), r.thread_id);
  std::string out = header;
  out += file;
  out += ':';
  out += std::to_string(r.line);
  out += "] ";
  out += QuoteText(r.msg);
  if (!r.logger.empty()) {
    out += " logger=";
    out += QuoteText(r.logger);
  }
  if (r.err) {
    out += " err=";
    out += QuoteText(*r.err);
  }
  for (const Field* f : r.fields) {
    out += ' ';
    AppendTextKey(out, f->key);
    out += '=';
    AppendTextValue(out, f->value);
  }
  out += '\n';
  return out;
}

std::string EncodeJson(const Record& r) {
  using namespace std::chrono;
  auto micros = duration_cast<microseconds>(r.time.time_since_epoch()).count();
  char ts[48];
  std::snprintf(ts, sizeof(ts), "%lld.%03lld", static_cast<long long>(micros / 1000),
                static_cast<long long>(micros % 1000));
  std::string out = "{\"ts\":";
  out += ts;
  out += ",\"caller\":";
  out += DumpJson(std::string(BaseName(r.file)) + ":" + std::to_string(r.line));
  out += ",\"msg\":";
  out += DumpJson(std::string(r.msg));
  if (r.err) {
    out += ",\"err\":";
    out += DumpJson(*r.err);
  } else {
    out += ",\"v\":";
    out += std::to_string(r.v);
  }
  if (!r.logger.empty()) {
    out += ",\"logger\":";
    out += DumpJson(std::string(r.logger));
  }
  for (const Field* f : r.fields) {
    out += ',';
    out += DumpJson(f->key);
    out += ':';
    out += DumpJson(f->value);
  }
  out += "}\n";
  return out;
}

}  // namespace internal
}  // namespace caphv::kube::log
