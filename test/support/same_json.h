// File: test/support/same_json.h
//
// SameJson: whether two JSON values are the same value, type for type,
// where nlohmann's operator== is lenient: it holds 1 (integer) equal to 1u
// (unsigned) and to 1.0 (float), and a NaN unequal to itself. A decoder that
// must build exactly what another builds is compared with this (the
// MessagePack decoder's unit test and fuzzer).

#pragma once

#include <bit>
#include <cstdint>
#include <vector>

#include "kube/object.h"

namespace caphv::testing {

inline bool SameJson(const kube::Object& a, const kube::Object& b) {
  using kube::Object;
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Object::value_t::object: {
      const auto& x = a.get_ref<const Object::object_t&>();
      const auto& y = b.get_ref<const Object::object_t&>();
      if (x.size() != y.size()) return false;
      for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
        if (i->first != j->first || !SameJson(i->second, j->second)) return false;
      }
      return true;
    }
    case Object::value_t::array: {
      const auto& x = a.get_ref<const Object::array_t&>();
      const auto& y = b.get_ref<const Object::array_t&>();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!SameJson(x[i], y[i])) return false;
      }
      return true;
    }
    case Object::value_t::number_float:
      return std::bit_cast<std::uint64_t>(a.get<double>()) ==
             std::bit_cast<std::uint64_t>(b.get<double>());
    case Object::value_t::binary: {
      const auto& x = a.get_binary();
      const auto& y = b.get_binary();
      return x.has_subtype() == y.has_subtype() &&
             (!x.has_subtype() || x.subtype() == y.subtype()) &&
             static_cast<const std::vector<std::uint8_t>&>(x) ==
                 static_cast<const std::vector<std::uint8_t>&>(y);
    }
    default:
      return a == b;
  }
}

}  // namespace caphv::testing
