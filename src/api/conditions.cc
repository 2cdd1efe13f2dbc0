// File: api/conditions.cc

#include "api/conditions.h"

#include <ctime>
#include <iomanip>
#include <sstream>

namespace caphv::api {

std::string FormatTime(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::optional<std::chrono::system_clock::time_point> ParseTime(const std::string& text) {
  std::tm tm{};
  std::istringstream in(text);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::string NowRfc3339() { return FormatTime(std::chrono::system_clock::now()); }

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

Condition* FindCondition(std::vector<Condition>& conditions, std::string_view type) {
  for (auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == kConditionTrue;
}

bool SetCondition(std::vector<Condition>& conditions, Condition c, std::string_view now) {
  Condition* existing = FindCondition(conditions, c.type);
  if (existing == nullptr) {
    if (c.last_transition_time.empty()) c.last_transition_time = std::string(now);
    conditions.push_back(std::move(c));
    return true;
  }
  if (existing->status == c.status) {
    c.last_transition_time = existing->last_transition_time;
  } else if (c.last_transition_time.empty()) {
    c.last_transition_time = std::string(now);
  }
  if (*existing == c) return false;
  *existing = std::move(c);
  return true;
}

bool RemoveCondition(std::vector<Condition>& conditions, std::string_view type) {
  for (auto it = conditions.begin(); it != conditions.end(); ++it) {
    if (it->type == type) {
      conditions.erase(it);
      return true;
    }
  }
  return false;
}

bool IsValidConditionReason(std::string_view r) {
  auto alpha = [](char ch) { return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'); };
  auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  if (r.empty() || r.size() > 1024 || !alpha(r.front())) return false;
  for (size_t i = 1; i < r.size(); ++i) {
    char ch = r[i];
    bool ok = alpha(ch) || digit(ch) || ch == '_' || (i + 1 < r.size() && (ch == ',' || ch == ':'));
    if (!ok) return false;
  }
  return true;
}

}  // namespace caphv::api
