// File: generate/interactive_internal.h
//
// What the files of the interview (interactive.cc, interactive_answer.cc)
// share: the list helpers for comma-separated answers, the CNI choices and
// the name of the Harvester list each question offers. Internal to
// generate/.
//
// Thread safety: pure functions and constants.

#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace caphv::generate::internal {

inline std::string Trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

inline std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in{std::string(text)};
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

inline std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const auto& i : items) {
    if (!out.empty()) out += sep;
    out += i;
  }
  return out;
}

inline const std::vector<std::string> kCnis = {"calico", "canal", "cilium", "none"};

// The list `key` offers, and the name of that list in Inventory::errors.
inline std::string_view ListName(std::string_view key) {
  if (key == "image") return "images";
  if (key == "ssh-keypair") return "key pairs";
  if (key == "network") return "networks";
  if (key == "ip-pool") return "ip pools";
  return "";
}

inline std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}
}  // namespace caphv::generate::internal
