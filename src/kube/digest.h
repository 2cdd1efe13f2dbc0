// File: kube/digest.h
//
// SHA-256 as lowercase hex: the digest CAPHV uses for names derived from an
// identity (harvester::HexHash) and for the keys of cached access decisions
// (kube::AccessDecisionCache), where the token itself must not be kept.
//
// Thread safety: pure function; the algorithm is fetched from OpenSSL once.

#pragma once

#include <string>
#include <string_view>

namespace caphv::kube {

// The SHA-256 of `data`, 64 lowercase hex characters.
std::string Sha256Hex(std::string_view data);

}  // namespace caphv::kube
