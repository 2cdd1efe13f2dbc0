// File: webhooks/validation_net.cc

#include "webhooks/validation_net.h"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>

namespace caphv::webhooks {

std::optional<uint32_t> ParseIPv4(std::string_view s) {
  if (s.empty() || s.size() > 15) return std::nullopt;
  std::string str(s);
  in_addr addr{};
  // glibc's inet_pton accepts only the strict dotted quad (no leading zeros).
  if (inet_pton(AF_INET, str.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

bool IsIP(std::string_view s) {
  if (ParseIPv4(s)) return true;
  if (s.empty() || s.size() > 45) return false;
  std::string str(s);
  in6_addr addr{};
  return inet_pton(AF_INET6, str.c_str(), &addr) == 1;
}

std::optional<int> MaskPrefixLength(std::string_view mask) {
  auto m = ParseIPv4(mask);
  if (!m || *m == 0) return std::nullopt;
  uint32_t inverted = ~*m;
  if ((inverted & (inverted + 1)) != 0) return std::nullopt;  // not 1...10...0
  int prefix = 0;
  for (uint32_t v = *m; v & 0x80000000u; v <<= 1) ++prefix;
  return prefix;
}

std::optional<Ipv4Cidr> ParseIPv4Cidr(std::string_view s) {
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto ip = ParseIPv4(s.substr(0, slash));
  std::string_view bits = s.substr(slash + 1);
  if (!ip || bits.empty() || bits.size() > 2) return std::nullopt;
  int prefix = 0;
  for (char c : bits) {
    if (c < '0' || c > '9') return std::nullopt;
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix > 32 || (bits.size() == 2 && bits[0] == '0')) return std::nullopt;
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return Ipv4Cidr{*ip & mask, *ip, prefix};
}

bool IsCidr(std::string_view s) {
  if (ParseIPv4Cidr(s)) return true;
  auto slash = s.find('/');
  if (slash == std::string_view::npos) return false;
  std::string_view bits = s.substr(slash + 1);
  if (bits.empty() || bits.size() > 3) return false;
  int prefix = 0;
  for (char c : bits) {
    if (c < '0' || c > '9') return false;
    prefix = prefix * 10 + (c - '0');
  }
  std::string ip(s.substr(0, slash));
  in6_addr addr{};
  return prefix <= 128 && inet_pton(AF_INET6, ip.c_str(), &addr) == 1;
}

bool InSubnet(uint32_t ip, uint32_t network, int prefix) {
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (ip & mask) == (network & mask);
}

bool IsDns1123Label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s) {
    if (!alnum(c) && c != '-') return false;
  }
  return true;
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!IsDns1123Label(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::optional<ObjectRef> ParseObjectRef(std::string_view s, bool strict_name, std::string* why) {
  auto fail = [&](const char* reason) -> std::optional<ObjectRef> {
    if (why != nullptr) *why = reason;
    return std::nullopt;
  };
  if (s.empty()) return fail("must not be empty");
  ObjectRef ref;
  auto slash = s.find('/');
  std::string_view name = s;
  if (slash != std::string_view::npos) {
    std::string_view ns = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (name.find('/') != std::string_view::npos) {
      return fail("has more than one '/'");
    }
    if (!IsDns1123Label(ns)) return fail("namespace part must be a lowercase RFC 1123 label");
    ref.namespace_ = std::string(ns);
  }
  if (name.empty()) return fail("name part must not be empty");
  if (strict_name) {
    if (!IsDns1123Subdomain(name)) return fail("name part must be a lowercase RFC 1123 subdomain");
  } else {
    for (char c : name) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        return fail("name part must not contain whitespace");
      }
    }
  }
  ref.name = std::string(name);
  return ref;
}

}  // namespace caphv::webhooks
