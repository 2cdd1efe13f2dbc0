// File: kube/msgpack.cc
//
// The MessagePack codec of packed caches. See msgpack.h.

#include "kube/msgpack.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

#include "kube/untrusted_json.h"

namespace caphv::kube {
namespace {

class Decoder {
 public:
  explicit Decoder(std::span<const std::uint8_t> bytes)
      : p_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  // Decodes the whole input into `out`; false when it is not one value.
  bool Run(Object& out) { return Value(out, 0) && p_ == end_; }
  bool too_deep() const { return too_deep_; }

 private:
  size_t Left() const { return static_cast<size_t>(end_ - p_); }

  // A big-endian unsigned integer of sizeof(T) bytes.
  template <typename T>
  bool Read(T& v) {
    if (Left() < sizeof(T)) return false;
    T raw = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      raw = static_cast<T>((static_cast<std::uint64_t>(raw) << 8U) | p_[i]);
    }
    p_ += sizeof(T);
    v = raw;
    return true;
  }

  template <typename Signed>
  bool ReadSigned(Object& out) {
    using Unsigned = std::make_unsigned_t<Signed>;
    Unsigned u{};
    if (!Read(u)) return false;
    out = static_cast<Object::number_integer_t>(static_cast<Signed>(u));
    return true;
  }

  template <typename Unsigned>
  bool ReadUnsigned(Object& out) {
    Unsigned u{};
    if (!Read(u)) return false;
    out = static_cast<Object::number_unsigned_t>(u);
    return true;
  }

  template <typename Len>
  bool ReadLength(size_t& n) {
    Len len{};
    if (!Read(len)) return false;
    n = len;
    return true;
  }

  bool String(size_t n, std::string& s) {
    if (Left() < n) return false;
    s.assign(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return true;
  }

  // A string value or key whose format byte `b` was read.
  bool StringOf(std::uint8_t b, std::string& s) {
    size_t n = 0;
    if (b >= 0xa0 && b <= 0xbf) {
      n = b & 0x1fU;
    } else if (b == 0xd9) {
      if (!ReadLength<std::uint8_t>(n)) return false;
    } else if (b == 0xda) {
      if (!ReadLength<std::uint16_t>(n)) return false;
    } else if (b == 0xdb) {
      if (!ReadLength<std::uint32_t>(n)) return false;
    } else {
      return false;
    }
    return String(n, s);
  }

  // n bytes of a bin or ext value; `subtype` < 0 for none.
  bool Binary(size_t n, int subtype, Object& out) {
    if (Left() < n) return false;
    std::vector<std::uint8_t> data(p_, p_ + n);
    p_ += n;
    out = subtype < 0 ? Object::binary(std::move(data))
                      : Object::binary(std::move(data), static_cast<std::uint8_t>(subtype));
    return true;
  }

  // An ext value with its length known: the type byte, then the data.
  bool Ext(size_t n, Object& out) {
    std::uint8_t type = 0;
    if (!Read(type)) return false;
    return Binary(n, type, out);
  }

  template <typename Len>
  bool ExtWithLength(Object& out) {
    size_t n = 0;
    return ReadLength<Len>(n) && Ext(n, out);
  }

  template <typename Len>
  bool BinWithLength(Object& out) {
    size_t n = 0;
    return ReadLength<Len>(n) && Binary(n, -1, out);
  }

  bool Array(size_t n, Object& out, int depth) {
    if (depth >= kMaxJsonDepth) return Deep();
    out = Object::array();
    auto& arr = out.get_ref<Object::array_t&>();
    arr.reserve(std::min(n, Left()));  // every element takes a byte at least
    for (size_t i = 0; i < n; ++i) {
      if (!Value(arr.emplace_back(), depth + 1)) return false;
    }
    return true;
  }

  bool Map(size_t n, Object& out, int depth) {
    if (depth >= kMaxJsonDepth) return Deep();
    out = Object::object();
    auto& obj = out.get_ref<Object::object_t&>();
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      if (p_ == end_ || !StringOf(*p_++, key)) return false;
      // The encoder writes keys in order, so the end is the right hint; a
      // key seen before is reset and takes the value that follows.
      auto it = obj.insert_or_assign(obj.end(), std::move(key), Object());
      if (!Value(it->second, depth + 1)) return false;
    }
    return true;
  }

  template <typename Len>
  bool ArrayWithLength(Object& out, int depth) {
    size_t n = 0;
    return ReadLength<Len>(n) && Array(n, out, depth);
  }

  template <typename Len>
  bool MapWithLength(Object& out, int depth) {
    size_t n = 0;
    return ReadLength<Len>(n) && Map(n, out, depth);
  }

  bool Deep() {
    too_deep_ = true;
    return false;
  }

  template <typename T>
  bool Float(Object& out) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    Bits bits{};
    if (!Read(bits)) return false;
    out = static_cast<Object::number_float_t>(std::bit_cast<T>(bits));
    return true;
  }

  // `depth`: the arrays and maps around this value.
  bool Value(Object& out, int depth) {
    if (p_ == end_) return false;
    const std::uint8_t b = *p_++;
    if (b <= 0x7f) {
      out = static_cast<Object::number_unsigned_t>(b);
      return true;
    }
    if (b >= 0xe0) {
      out = static_cast<Object::number_integer_t>(static_cast<std::int8_t>(b));
      return true;
    }
    if (b <= 0x8f) return Map(b & 0x0fU, out, depth);
    if (b <= 0x9f) return Array(b & 0x0fU, out, depth);
    if (b <= 0xbf || (b >= 0xd9 && b <= 0xdb)) {
      out = Object::string_t();
      return StringOf(b, out.get_ref<Object::string_t&>());
    }
    switch (b) {
      case 0xc0:
        out = nullptr;
        return true;
      case 0xc2:
        out = false;
        return true;
      case 0xc3:
        out = true;
        return true;
      case 0xc4:
        return BinWithLength<std::uint8_t>(out);
      case 0xc5:
        return BinWithLength<std::uint16_t>(out);
      case 0xc6:
        return BinWithLength<std::uint32_t>(out);
      case 0xc7:
        return ExtWithLength<std::uint8_t>(out);
      case 0xc8:
        return ExtWithLength<std::uint16_t>(out);
      case 0xc9:
        return ExtWithLength<std::uint32_t>(out);
      case 0xca:
        return Float<float>(out);
      case 0xcb:
        return Float<double>(out);
      case 0xcc:
        return ReadUnsigned<std::uint8_t>(out);
      case 0xcd:
        return ReadUnsigned<std::uint16_t>(out);
      case 0xce:
        return ReadUnsigned<std::uint32_t>(out);
      case 0xcf:
        return ReadUnsigned<std::uint64_t>(out);
      case 0xd0:
        return ReadSigned<std::int8_t>(out);
      case 0xd1:
        return ReadSigned<std::int16_t>(out);
      case 0xd2:
        return ReadSigned<std::int32_t>(out);
      case 0xd3:
        return ReadSigned<std::int64_t>(out);
      case 0xd4:
        return Ext(1, out);
      case 0xd5:
        return Ext(2, out);
      case 0xd6:
        return Ext(4, out);
      case 0xd7:
        return Ext(8, out);
      case 0xd8:
        return Ext(16, out);
      case 0xdc:
        return ArrayWithLength<std::uint16_t>(out, depth);
      case 0xdd:
        return ArrayWithLength<std::uint32_t>(out, depth);
      case 0xde:
        return MapWithLength<std::uint16_t>(out, depth);
      case 0xdf:
        return MapWithLength<std::uint32_t>(out, depth);
      default:
        return false;  // 0xc1, never used
    }
  }

  const std::uint8_t* p_;
  const std::uint8_t* const end_;
  bool too_deep_ = false;
};

}  // namespace

Object DecodeMsgpack(std::span<const std::uint8_t> bytes, bool* too_deep) {
  Decoder d(bytes);
  Object out;
  const bool ok = d.Run(out);
  if (too_deep) *too_deep = d.too_deep();
  if (!ok) return Object(Object::value_t::discarded);
  return out;
}

std::vector<std::uint8_t> EncodeMsgpack(const Object& o) {
  std::vector<std::uint8_t> bytes = Object::to_msgpack(o);
  bytes.shrink_to_fit();
  return bytes;
}

}  // namespace caphv::kube
