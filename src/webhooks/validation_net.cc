// File: webhooks/validation_net.cc

#include "webhooks/validation_net.h"

#include <cctype>

#include "harvester/ipv4.h"
#include "harvester/naming.h"

namespace caphv::webhooks {

using harvester::IsDns1123Label;
using harvester::IsDns1123Subdomain;

std::optional<int> SubnetMaskPrefix(std::string_view mask) {
  auto prefix = harvester::PrefixFromMask(mask);
  if (!prefix || *prefix == 0) return std::nullopt;
  return prefix;
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
