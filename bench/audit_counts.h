// File: bench/audit_counts.h
//
// Requests of one client counted from an apiserver's side: the audit log a
// test-bed apiserver writes when the bed was started with
// CAPHV_TESTBED_AUDIT=1 (DIR/logs/audit-<cluster>.log, one JSON event per
// line, stage ResponseComplete). AuditWindow remembers where the log ended
// when it was opened; Count() reads what was appended since and counts the
// events whose userAgent starts with a prefix, by verb (get, list, create,
// update, patch, delete...; watches are left out: they are streams, not
// polls); CountByRequest() by verb and resource (`patch
// harvestermachines/status`), for the table of what each write is for.
// A log rotated since the window was opened (another file at the path) makes
// the window unavailable rather than miscounted.
//
// Header-only (bench binaries are single files). Thread safety: one thread.

#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace caphv::bench {

class AuditWindow {
 public:
  explicit AuditWindow(std::filesystem::path path) : path_(std::move(path)) {
    std::error_code ec;
    offset_ = std::filesystem::exists(path_, ec) ? std::filesystem::file_size(path_, ec) : 0;
    inode_ = InodeOf(path_);
  }

  // False when the bed writes no audit log, or the log was rotated since.
  bool available() const {
    std::error_code ec;
    return std::filesystem::exists(path_, ec) && InodeOf(path_) == inode_;
  }

  std::map<std::string, double> Count(const std::string& user_agent_prefix) const {
    std::map<std::string, double> by_verb;
    ForEach(user_agent_prefix, [&](const nlohmann::json& e) { by_verb[e.value("verb", "")] += 1; });
    return by_verb;
  }

  std::map<std::string, double> CountByRequest(const std::string& user_agent_prefix) const {
    std::map<std::string, double> by_request;
    ForEach(user_agent_prefix, [&](const nlohmann::json& e) {
      const auto ref = e.value("objectRef", nlohmann::json::object());
      std::string what = e.value("verb", "") + " " + ref.value("resource", "");
      if (const std::string sub = ref.value("subresource", ""); !sub.empty()) what += "/" + sub;
      const int code = e.value("responseStatus", nlohmann::json::object()).value("code", 0);
      if (code >= 400) what += " (" + std::to_string(code) + ")";
      by_request[what] += 1;
    });
    return by_request;
  }

 private:
  template <typename F>
  void ForEach(const std::string& user_agent_prefix, F&& f) const {
    std::ifstream in(path_);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string line;
    while (std::getline(in, line)) {
      auto e = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!e.is_object() || e.value("stage", "") != "ResponseComplete") continue;
      if (!e.value("userAgent", "").starts_with(user_agent_prefix)) continue;
      if (e.value("verb", "") == "watch") continue;
      f(e);
    }
  }

  static ino_t InodeOf(const std::filesystem::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
  }

  std::filesystem::path path_;
  std::uintmax_t offset_ = 0;
  ino_t inode_ = 0;
};

}  // namespace caphv::bench
