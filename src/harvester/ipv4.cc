// File: harvester/ipv4.cc

#include "harvester/ipv4.h"

#include <arpa/inet.h>

namespace caphv::harvester {
namespace {

// inet_pton reads a C string: an embedded NUL would end the text early.
bool HasNul(std::string_view text) { return text.find('\0') != std::string_view::npos; }

}  // namespace

std::optional<Ipv4> ParseIpv4(std::string_view text) {
  if (text.empty() || text.size() > 15 || HasNul(text)) return std::nullopt;
  const std::string str(text);
  in_addr addr{};
  // glibc's inet_pton takes only the strict dotted quad: four decimal octets,
  // no leading zeros, nothing around them.
  if (inet_pton(AF_INET, str.c_str(), &addr) != 1) return std::nullopt;
  return ntohl(addr.s_addr);
}

bool IsIp(std::string_view text) {
  if (ParseIpv4(text)) return true;
  if (text.empty() || text.size() > 45 || HasNul(text)) return false;
  const std::string str(text);
  in6_addr addr{};
  return inet_pton(AF_INET6, str.c_str(), &addr) == 1;
}

std::string FormatIpv4(Ipv4 ip) {
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xff) + "." +
         std::to_string((ip >> 8) & 0xff) + "." + std::to_string(ip & 0xff);
}

Ipv4 MaskFromPrefix(int prefix) {
  if (prefix <= 0) return 0;
  if (prefix >= 32) return 0xffffffffu;
  return ~((1u << (32 - prefix)) - 1);
}

std::optional<Ipv4Subnet> ParseCidr(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto ip = ParseIpv4(text.substr(0, slash));
  std::string_view p = text.substr(slash + 1);
  if (!ip || p.empty() || p.size() > 2) return std::nullopt;
  int prefix = 0;
  for (char c : p) {
    if (c < '0' || c > '9') return std::nullopt;
    prefix = prefix * 10 + (c - '0');
  }
  if (prefix > 32 || (p.size() == 2 && p[0] == '0')) return std::nullopt;
  return Ipv4Subnet{*ip & MaskFromPrefix(prefix), prefix};
}

std::optional<int> PrefixFromMask(std::string_view mask) {
  auto m = ParseIpv4(mask);
  if (!m) return std::nullopt;
  int prefix = 0;
  while (prefix < 32 && (*m & (0x80000000u >> prefix))) ++prefix;
  if (MaskFromPrefix(prefix) != *m) return std::nullopt;
  return prefix;
}

Ipv4 NetworkAddress(const Ipv4Subnet& subnet) {
  return subnet.network & MaskFromPrefix(subnet.prefix);
}

Ipv4 BroadcastAddress(const Ipv4Subnet& subnet) {
  return NetworkAddress(subnet) | ~MaskFromPrefix(subnet.prefix);
}

bool Contains(const Ipv4Subnet& subnet, Ipv4 ip) {
  return (ip & MaskFromPrefix(subnet.prefix)) == NetworkAddress(subnet);
}

Ipv4 FirstHost(const Ipv4Subnet& subnet) {
  return subnet.prefix >= 31 ? NetworkAddress(subnet) : NetworkAddress(subnet) + 1;
}

Ipv4 LastHost(const Ipv4Subnet& subnet) {
  return subnet.prefix >= 31 ? BroadcastAddress(subnet) : BroadcastAddress(subnet) - 1;
}

}  // namespace caphv::harvester
