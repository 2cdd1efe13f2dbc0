// File: harvester/ipv4.h
//
// The one module for IP syntax and IPv4 arithmetic, used by the builders,
// the webhooks, `caphv generate` and the simulator: strict dotted-quad parsing
// (four decimal octets, no leading zeros, no spaces, as Go's net.ParseIP since
// Go 1.17), IPv6 recognition, CIDR subnets, masks, network/broadcast
// addresses. IPv4 addresses are host-order uint32_t.
//
// Thread safety: pure functions.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace caphv::harvester {

using Ipv4 = uint32_t;

std::optional<Ipv4> ParseIpv4(std::string_view text);
std::string FormatIpv4(Ipv4 ip);
// True for an IPv4 dotted quad or an IPv6 address.
bool IsIp(std::string_view text);

struct Ipv4Subnet {
  Ipv4 network = 0;  // address with host bits cleared
  int prefix = 0;    // 0..32
  bool operator==(const Ipv4Subnet&) const = default;
};

// "10.0.0.0/24". Host bits set in the address are cleared ("10.0.0.7/24" is
// 10.0.0.0/24), as net.ParseCIDR does.
std::optional<Ipv4Subnet> ParseCidr(std::string_view text);

// Mask of a prefix length (0..32).
Ipv4 MaskFromPrefix(int prefix);
// Prefix length of a contiguous dotted mask; nullopt if not contiguous.
std::optional<int> PrefixFromMask(std::string_view mask);

Ipv4 NetworkAddress(const Ipv4Subnet& subnet);
Ipv4 BroadcastAddress(const Ipv4Subnet& subnet);
bool Contains(const Ipv4Subnet& subnet, Ipv4 ip);

// First and last assignable host of the subnet: network+1 .. broadcast-1 for
// prefixes up to /30; the whole subnet for /31 and /32 (RFC 3021).
Ipv4 FirstHost(const Ipv4Subnet& subnet);
Ipv4 LastHost(const Ipv4Subnet& subnet);

}  // namespace caphv::harvester
