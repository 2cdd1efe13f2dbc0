// File: api/quantity.cc

#include "api/quantity.h"

#include <limits>

namespace caphv::api {
namespace {

using Nanos = Quantity::Nanos;

// 10^27 units in nanos = 10^36, well inside int128 (~1.7e38).
constexpr Nanos Pow10(int n) {
  Nanos r = 1;
  for (int i = 0; i < n; ++i) r *= 10;
  return r;
}
const Nanos kLimit = Pow10(36);

bool MulChecked(Nanos a, Nanos b, Nanos* out) {
  if (__builtin_mul_overflow(a, b, out)) return false;
  return *out <= kLimit && *out >= -kLimit;
}

// Ceil division for a non-negative numerator.
Nanos CeilDiv(Nanos num, Nanos den) { return (num + den - 1) / den; }

bool Fail(std::string* error, const char* why) {
  if (error != nullptr) *error = why;
  return false;
}

}  // namespace

std::optional<Quantity> Quantity::Parse(std::string_view text) { return Parse(text, nullptr); }

std::optional<Quantity> Quantity::Parse(std::string_view s, std::string* error) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  Nanos mantissa = 0;
  int frac_digits = 0, digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (dot) {
        Fail(error, "more than one '.'");
        return std::nullopt;
      }
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    ++digits;
    if (mantissa == 0 && c == '0') {
      if (dot) ++frac_digits;
      continue;  // leading zeros do not count towards precision
    }
    if (!MulChecked(mantissa, 10, &mantissa)) {
      Fail(error, "too many digits");
      return std::nullopt;
    }
    mantissa += c - '0';
    if (dot) ++frac_digits;
  }
  if (digits == 0) {
    Fail(error, "no digits");
    return std::nullopt;
  }
  std::string_view suffix = s.substr(i);
  int binary_power = 0;  // multiplier 2^(10*binary_power)
  int exp10 = 0;
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBin = "KMGTPE";
    auto pos = kBin.find(suffix[0]);
    if (pos == std::string_view::npos) {
      Fail(error, "unknown suffix");
      return std::nullopt;
    }
    binary_power = static_cast<int>(pos) + 1;
  } else if (suffix.size() == 1) {
    switch (suffix[0]) {
      case 'n':
        exp10 = -9;
        break;
      case 'u':
        exp10 = -6;
        break;
      case 'm':
        exp10 = -3;
        break;
      case 'k':
        exp10 = 3;
        break;
      case 'M':
        exp10 = 6;
        break;
      case 'G':
        exp10 = 9;
        break;
      case 'T':
        exp10 = 12;
        break;
      case 'P':
        exp10 = 15;
        break;
      case 'E':
        exp10 = 18;
        break;
      default:
        Fail(error, "unknown suffix");
        return std::nullopt;
    }
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    size_t j = 1;
    bool neg_exp = false;
    if (j < suffix.size() && (suffix[j] == '+' || suffix[j] == '-')) neg_exp = suffix[j++] == '-';
    if (j >= suffix.size()) {
      Fail(error, "empty exponent");
      return std::nullopt;
    }
    int e = 0;
    for (; j < suffix.size(); ++j) {
      if (suffix[j] < '0' || suffix[j] > '9' || e > 1000) {
        Fail(error, "invalid exponent");
        return std::nullopt;
      }
      e = e * 10 + (suffix[j] - '0');
    }
    exp10 = neg_exp ? -e : e;
  } else {
    Fail(error, "unknown suffix");
    return std::nullopt;
  }

  // nanos = mantissa * 10^(9 - frac_digits + exp10) * 2^(10*binary_power)
  Nanos value = mantissa;
  for (int b = 0; b < binary_power; ++b) {
    if (!MulChecked(value, 1024, &value)) {
      Fail(error, "too large");
      return std::nullopt;
    }
  }
  int scale = 9 - frac_digits + exp10;
  if (value != 0) {
    if (scale >= 0) {
      if (scale > 40) {
        Fail(error, "too large");
        return std::nullopt;
      }
      if (!MulChecked(value, Pow10(scale), &value)) {
        Fail(error, "too large");
        return std::nullopt;
      }
    } else {
      int down = -scale;
      value = down > 38 ? 1 : CeilDiv(value, Pow10(down));
    }
  }
  return Quantity(negative ? -value : value);
}

std::optional<int64_t> Quantity::Value() const {
  Nanos units = nanos_ >= 0 ? CeilDiv(nanos_, Pow10(9)) : -((-nanos_) / Pow10(9));
  if (units > std::numeric_limits<int64_t>::max() || units < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(units);
}

std::optional<int64_t> Quantity::MilliValue() const {
  Nanos milli = nanos_ >= 0 ? CeilDiv(nanos_, Pow10(6)) : -((-nanos_) / Pow10(6));
  if (milli > std::numeric_limits<int64_t>::max() || milli < std::numeric_limits<int64_t>::min()) {
    return std::nullopt;
  }
  return static_cast<int64_t>(milli);
}

bool SameQuantity(std::string_view a, std::string_view b) {
  if (a == b) return true;
  auto qa = Quantity::Parse(a);
  auto qb = Quantity::Parse(b);
  return qa && qb && *qa == *qb;
}

}  // namespace caphv::api
