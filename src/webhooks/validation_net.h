// File: webhooks/validation_net.h
//
// Syntax checks of the validation rules beyond harvester/ipv4.h and
// harvester/naming.h (which hold the one parser of each format): subnet masks
// as the webhooks take them and `name` / `namespace/name` references.
//
// Thread safety: stateless.

#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace caphv::webhooks {

// Prefix length of a dotted IPv4 subnet mask the webhooks take: contiguous,
// 1..32 (so "255.0.255.0" and "0.0.0.0" are refused). The syntax itself is
// harvester/ipv4.h's.
std::optional<int> SubnetMaskPrefix(std::string_view mask);

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
