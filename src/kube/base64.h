// File: kube/base64.h
//
// Standard base64 (RFC 4648) encoding and decoding, as used by kubeconfig
// `*-data` fields, Secret data and AdmissionReview patches. Pure functions.

#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace caphv::kube {

std::string Base64Encode(std::string_view data);
// Ignores whitespace; nullopt on malformed input.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace caphv::kube
