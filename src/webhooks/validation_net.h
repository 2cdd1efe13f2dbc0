// File: webhooks/validation_net.h
//
// Pure syntax checks used by the validation rules: IP addresses, dotted
// subnet masks (contiguous), CIDRs, Kubernetes names and `name` /
// `namespace/name` references.
//
// Thread safety: stateless.

#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace caphv::webhooks {

// IPv4 dotted quad (no leading zeros) as a host-order integer.
std::optional<uint32_t> ParseIPv4(std::string_view s);
// True for an IPv4 or IPv6 address.
bool IsIP(std::string_view s);

// Prefix length of a contiguous dotted IPv4 mask in 1..32, else nullopt
// (so "255.0.255.0" and "0.0.0.0" are rejected).
std::optional<int> MaskPrefixLength(std::string_view mask);

struct Ipv4Cidr {
  uint32_t network;  // address & mask
  uint32_t address;  // as written
  int prefix;
};
// "10.0.0.0/24" (IPv4 only).
std::optional<Ipv4Cidr> ParseIPv4Cidr(std::string_view s);
// True for an IPv4 or IPv6 CIDR.
bool IsCidr(std::string_view s);

bool InSubnet(uint32_t ip, uint32_t network, int prefix);

// RFC 1123 label (namespaces): [a-z0-9]([-a-z0-9]*[a-z0-9])?, at most 63.
bool IsDns1123Label(std::string_view s);
// RFC 1123 subdomain (most object names): labels joined by '.', at most 253.
bool IsDns1123Subdomain(std::string_view s);

struct ObjectRef {
  std::string namespace_;  // empty for the bare `name` form
  std::string name;
};
// Splits `name` or `namespace/name`. Returns nullopt and sets `why` when the
// reference is malformed: empty parts, more than one '/', a namespace that is
// not a DNS label, or (strict) a name that is not a DNS subdomain. Non-strict
// names only need to be non-empty without whitespace (Harvester image display
// names such as "sles15-sp7.x86_64-cloud.qcow2").
std::optional<ObjectRef> ParseObjectRef(std::string_view s, bool strict_name, std::string* why);

}  // namespace caphv::webhooks
