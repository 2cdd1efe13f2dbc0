// File: api/quantity.h
//
// Kubernetes resource quantities ("40Gi", "8192Mi", "1.5", "500m", "1e3"):
// a pure parser and exact comparison. Grammar (k8s.io/apimachinery
// resource.ParseQuantity): optional sign, digits with at most one '.', then
// one suffix: binary Ki Mi Gi Ti Pi Ei, decimal n u m k M G T P E (or none),
// or a decimal exponent e<N>/E<N>. Values are held exactly in nano-units;
// anything finer rounds up (as Kubernetes does). Magnitudes above 10^27 units
// are rejected.
//
// Thread safety: plain value.

#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace caphv::api {

class Quantity {
 public:
  __extension__ typedef __int128 Nanos;

  // nullopt when `text` is not a valid quantity.
  static std::optional<Quantity> Parse(std::string_view text);
  // Like Parse, with a reason for the failure.
  static std::optional<Quantity> Parse(std::string_view text, std::string* error);

  // -1, 0 or 1.
  int Sign() const { return nanos_ < 0 ? -1 : (nanos_ > 0 ? 1 : 0); }
  // Value in whole units, rounded up (resource.Quantity.Value()); nullopt if
  // it does not fit in int64.
  std::optional<int64_t> Value() const;
  // Value in milli-units, rounded up; nullopt if it does not fit in int64.
  std::optional<int64_t> MilliValue() const;

  std::strong_ordering operator<=>(const Quantity& other) const { return nanos_ <=> other.nanos_; }
  bool operator==(const Quantity& other) const { return nanos_ == other.nanos_; }

 private:
  explicit Quantity(Nanos nanos) : nanos_(nanos) {}
  Nanos nanos_ = 0;
};

// True when both texts are valid quantities of the same value, or equal texts.
bool SameQuantity(std::string_view a, std::string_view b);

}  // namespace caphv::api
