// File: api/fields.h
//
// Field tables: the single source of truth for CAPHV's API types.
//
// Every API struct declares its fields once, in a static template function
//
//   static constexpr bool kDescribed = true;
//   template <typename Self, typename V>
//   static void Describe(Self& self, V& v) {
//     v(self.cpu, Field("cpu").Required().Minimum(1).Doc("Number of vCPUs."));
//   }
//
// and three visitors walk that table: the encoder (struct -> JSON), the
// decoder (JSON -> struct, with field paths in errors and optional detection
// of unknown fields) and the schema builder (struct -> OpenAPI v3 schema used
// to generate config/crd/bases). Because the JSON names, the optionality and
// the schema facets live in one place, the C++ types and the CRD manifests
// cannot drift: test/unit/api/crd_test.cc regenerates the CRDs and diffs them
// against the checked-in YAML, and walks the YAML schema against the
// (de)serialisation independently.
//
// Encoding rules (Go `omitempty` semantics): a field is written when it is
// Required() or non-empty (non-empty string, non-zero number, true, non-empty
// list/map, engaged optional, non-empty object). Use std::optional<T> where
// "absent" and "zero" must differ (status.ready, nested config blocks).
// JSON null on input is treated as absent.
//
// Field, the type traits and the schema builder are in api/field_schema.h;
// this header adds the encoder, the decoder and JsonAs<T>.
//
// Thread safety: stateless functions over values; safe to call concurrently.

#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "api/field_schema.h"

namespace caphv::api {

// ---------------------------------------------------------------- encoding --

template <typename T>
Json EncodeValue(const T& value);

template <typename T>
bool IsEmptyValue(const T& value) {
  if constexpr (HasCustomCodec<T>) {
    return CustomCodec<T>::Empty(value);
  } else if constexpr (std::is_same_v<T, std::string>) {  // NOLINT(bugprone-branch-clone): per type
    return value.empty();
  } else if constexpr (std::is_same_v<T, bool>) {
    return !value;
  } else if constexpr (std::is_integral_v<T>) {
    return value == 0;
  } else if constexpr (IsOptional<T>::value) {
    return !value.has_value();
  } else if constexpr (IsVector<T>::value || IsStringMap<T>::value) {
    return value.empty();
  } else if constexpr (std::is_same_v<T, Json>) {
    return value.is_null();
  } else {
    static_assert(Described<T>, "unsupported field type");
    return EncodeValue(value).empty();
  }
}

class EncodeVisitor {
 public:
  explicit EncodeVisitor(Json& out) : out_(out) {}
  template <typename T>
  void operator()(const T& value, const Field& f) {
    if (!f.required() && IsEmptyValue(value)) return;
    out_[std::string(f.name())] = EncodeValue(value);
  }

 private:
  Json& out_;
};

template <typename T>
Json EncodeValue(const T& value) {
  if constexpr (HasCustomCodec<T>) {
    return CustomCodec<T>::Encode(value);
  } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> ||
                       std::is_integral_v<T>) {
    return Json(value);
  } else if constexpr (IsOptional<T>::value) {
    return value.has_value() ? EncodeValue(*value) : Json();
  } else if constexpr (IsVector<T>::value) {
    Json arr = Json::array();
    for (const auto& item : value) arr.push_back(EncodeValue(item));
    return arr;
  } else if constexpr (IsStringMap<T>::value) {
    Json obj = Json::object();
    for (const auto& [k, v] : value) obj[k] = EncodeValue(v);
    return obj;
  } else if constexpr (std::is_same_v<T, Json>) {
    return value;
  } else {
    static_assert(Described<T>, "unsupported field type");
    Json obj = Json::object();
    EncodeVisitor visitor(obj);
    T::Describe(value, visitor);
    return obj;
  }
}

// ---------------------------------------------------------------- decoding --

// Collects decode problems. Errors make the decode fail; unknown fields are
// only recorded (and only when `strict`), matching the apiserver's tolerant
// readers while letting tests and the CLI insist on exact manifests.
struct DecodeContext {
  bool strict = false;
  std::vector<std::string> errors;          // "spec.cpu: expected an integer"
  std::vector<std::string> unknown_fields;  // "spec.foo"
};

inline std::string JoinPath(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

template <typename T>
void DecodeValue(const Json& in, T& out, DecodeContext& ctx, const std::string& path);

class DecodeVisitor {
 public:
  DecodeVisitor(const Json& in, DecodeContext& ctx, const std::string& path)
      : in_(in), ctx_(ctx), path_(path) {}

  template <typename T>
  void operator()(T& value, const Field& f) {
    seen_.push_back(f.name());
    auto it = in_.find(f.name());
    if (it == in_.end() || it->is_null()) return;
    std::string path = JoinPath(path_, f.name());
    if constexpr (std::is_same_v<T, std::string>) {
      if (f.int_or_string_quantity() && it->is_number()) {
        value = it->dump();
        return;
      }
    }
    DecodeValue(*it, value, ctx_, path);
  }

  // Records input keys no field claimed (strict mode only).
  void CheckUnknown() {
    if (!ctx_.strict) return;
    for (const auto& [key, unused] : in_.items()) {
      bool known = false;
      for (auto s : seen_) known = known || s == key;
      if (!known) ctx_.unknown_fields.push_back(JoinPath(path_, key));
    }
  }

 private:
  const Json& in_;
  DecodeContext& ctx_;
  const std::string& path_;
  std::vector<std::string_view> seen_;
};

template <typename T>
void DecodeValue(const Json& in, T& out, DecodeContext& ctx, const std::string& path) {
  auto fail = [&](std::string_view what) {
    ctx.errors.push_back(path + ": expected " + std::string(what) + ", got " + in.dump());
  };
  if constexpr (HasCustomCodec<T>) {
    CustomCodec<T>::Decode(in, out, ctx, path);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!in.is_string()) return fail("a string");
    out = in.get<std::string>();
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!in.is_boolean()) return fail("a boolean");
    out = in.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    // Whole numbers within T only. A float-to-integer cast out of range is
    // undefined, and an unsigned number above INT64_MAX must not wrap.
    int64_t v = 0;
    if (in.is_number_float()) {
      const double d = in.get<double>();
      constexpr double kTwo63 = 9223372036854775808.0;
      if (!(d >= -kTwo63 && d < kTwo63)) return fail("an integer in range");  // NaN too
      v = static_cast<int64_t>(d);
      if (static_cast<double>(v) != d) return fail("an integer");
    } else if (in.is_number_unsigned()) {
      const uint64_t u = in.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return fail("an integer in range");
      }
      v = static_cast<int64_t>(u);
    } else if (in.is_number_integer()) {
      v = in.get<int64_t>();
    } else {
      return fail("an integer");
    }
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return fail("an integer in range");
    }
    out = static_cast<T>(v);
  } else if constexpr (IsOptional<T>::value) {
    if (!out.has_value()) out.emplace();
    DecodeValue(in, *out, ctx, path);
  } else if constexpr (IsVector<T>::value) {
    if (!in.is_array()) return fail("a list");
    out.clear();
    out.resize(in.size());
    for (size_t i = 0; i < in.size(); ++i) {
      DecodeValue(in[i], out[i], ctx, path + "[" + std::to_string(i) + "]");
    }
  } else if constexpr (IsStringMap<T>::value) {
    if (!in.is_object()) return fail("an object");
    out.clear();
    for (const auto& [k, v] : in.items()) DecodeValue(v, out[k], ctx, path + "[" + k + "]");
  } else if constexpr (std::is_same_v<T, Json>) {
    out = in;
  } else {
    static_assert(Described<T>, "unsupported field type");
    if (!in.is_object()) return fail("an object");
    DecodeVisitor visitor(in, ctx, path);
    T::Describe(out, visitor);
    visitor.CheckUnknown();
  }
}

// ------------------------------------------------------------- JsonAs<T> --

// A JSON value kept verbatim whose schema and validation come from the
// described type T: used for embedded Kubernetes types (affinities) that are
// passed through to other objects unchanged. Decoding checks the value
// against T (type errors and, when strict, unknown fields, with their paths)
// but stores the original JSON, so nothing is ever lost or reordered.
template <typename T>
class JsonAs {
 public:
  using typed_type = T;
  JsonAs() = default;
  JsonAs(Json value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)

  operator const Json&() const { return value_; }  // NOLINT(google-explicit-constructor)
  const Json& json() const { return value_; }
  bool is_null() const { return value_.is_null(); }
  bool is_object() const { return value_.is_object(); }
  bool empty() const { return value_.empty(); }
  std::string dump() const { return value_.dump(); }

  // The typed view (tolerant decode; default T when null or malformed).
  T Typed() const {
    T out{};
    if (value_.is_object()) {
      DecodeContext ctx;
      DecodeValue(value_, out, ctx, "");
    }
    return out;
  }

  bool operator==(const JsonAs& other) const { return value_ == other.value_; }

 private:
  Json value_;
};

template <typename T>
struct CustomCodec<JsonAs<T>> {
  static constexpr bool kCustom = true;
  static Json Encode(const JsonAs<T>& v) { return v.json(); }
  static bool Empty(const JsonAs<T>& v) { return v.is_null(); }
  static Json Schema() { return SchemaOf<T>(); }
  static void Decode(const Json& in, JsonAs<T>& out, DecodeContext& ctx, const std::string& path) {
    T typed{};
    DecodeValue(in, typed, ctx, path);
    out = JsonAs<T>(in);
  }
};

// ------------------------------------------------------------- convenience --

// Encodes a described value as a JSON object.
template <Described T>
Json ToJson(const T& value) {
  return EncodeValue(value);
}

// Decodes a described value; problems are appended to `ctx`.
template <Described T>
T FromJson(const Json& in, DecodeContext& ctx) {
  T out{};
  DecodeValue(in, out, ctx, "");
  return out;
}

}  // namespace caphv::api
