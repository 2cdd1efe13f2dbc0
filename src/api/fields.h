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

namespace caphv::api {

using Json = nlohmann::json;

// Schema facts about one field. Built fluently at the call site; holds only
// views, so it must not outlive the full expression that created it.
class Field {
 public:
  explicit constexpr Field(std::string_view name) : name_(name) {}

  Field& Doc(std::string_view d) {
    doc_ = d;
    return *this;
  }
  Field& Required() {
    required_ = true;
    return *this;
  }
  Field& Enum(std::initializer_list<std::string_view> values) {
    enum_ = values;
    return *this;
  }
  Field& Format(std::string_view f) {
    format_ = f;
    return *this;
  }
  Field& Pattern(std::string_view p) {
    pattern_ = p;
    return *this;
  }
  Field& Minimum(int64_t m) {
    minimum_ = m;
    return *this;
  }
  Field& Maximum(int64_t m) {
    maximum_ = m;
    return *this;
  }
  Field& MinLength(int64_t m) {
    min_length_ = m;
    return *this;
  }
  Field& MaxLength(int64_t m) {
    max_length_ = m;
    return *this;
  }
  Field& MinItems(int64_t m) {
    min_items_ = m;
    return *this;
  }
  // Default value as JSON text, e.g. "\"TCP\"".
  Field& Default(std::string_view json_text) {
    default_ = json_text;
    return *this;
  }
  // A Kubernetes resource.Quantity held as a string: the schema accepts an
  // integer or a string, and the decoder turns an integer into its decimal text.
  Field& IntOrStringQuantity() {
    int_or_string_quantity_ = true;
    return *this;
  }
  // Required in the concrete kinds only: the template kinds' schemas leave it
  // out of `required` (a ClusterClass patch may fill it). See BuildCrd.
  Field& OptionalInTemplates() {
    optional_in_templates_ = true;
    return *this;
  }
  // x-kubernetes-list-type (atomic, set, map) and, for map, its keys.
  Field& ListType(std::string_view t) {
    list_type_ = t;
    return *this;
  }
  Field& ListMapKeys(std::initializer_list<std::string_view> keys) {
    list_map_keys_ = keys;
    return *this;
  }

  std::string_view name() const { return name_; }
  std::string_view doc() const { return doc_; }
  bool required() const { return required_; }
  std::initializer_list<std::string_view> enum_values() const { return enum_; }
  std::string_view format() const { return format_; }
  std::string_view pattern() const { return pattern_; }
  std::optional<int64_t> minimum() const { return minimum_; }
  std::optional<int64_t> maximum() const { return maximum_; }
  std::optional<int64_t> min_length() const { return min_length_; }
  std::optional<int64_t> max_length() const { return max_length_; }
  std::optional<int64_t> min_items() const { return min_items_; }
  std::string_view default_json() const { return default_; }
  bool int_or_string_quantity() const { return int_or_string_quantity_; }
  bool optional_in_templates() const { return optional_in_templates_; }
  std::string_view list_type() const { return list_type_; }
  std::initializer_list<std::string_view> list_map_keys() const { return list_map_keys_; }

 private:
  std::string_view name_;
  std::string_view doc_;
  bool required_ = false;
  std::initializer_list<std::string_view> enum_;
  std::string_view format_;
  std::string_view pattern_;
  std::optional<int64_t> minimum_, maximum_, min_length_, max_length_, min_items_;
  std::string_view default_;
  bool int_or_string_quantity_ = false;
  bool optional_in_templates_ = false;
  std::string_view list_type_;
  std::initializer_list<std::string_view> list_map_keys_;
};

// Regular expression of a Kubernetes resource quantity (as in the apiserver's
// OpenAPI for resource.Quantity).
inline constexpr std::string_view kQuantityPattern =
    R"(^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)";

// Schema key SchemaVisitor sets on OptionalInTemplates() fields.
inline constexpr std::string_view kOptionalInTemplatesMarker = "x-caphv-optional-in-templates";

template <typename T>
concept Described = T::kDescribed;

template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsStringMap : std::false_type {};
template <typename T>
struct IsStringMap<std::map<std::string, T>> : std::true_type {};

// Types that provide their own JSON mapping (e.g. ObjectMeta) specialise this.
// A specialisation sets `static constexpr bool kCustom = true` and provides
//   static Json Encode(const T&);  static bool Empty(const T&);  static Json Schema();
//   static void Decode(const Json&, T&, DecodeContext&, const std::string& path);
template <typename T>
struct CustomCodec {};

template <typename T>
concept HasCustomCodec = requires {
  requires CustomCodec<T>::kCustom;
};

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

// ------------------------------------------------------------------ schema --

template <typename T>
Json SchemaOf();

class SchemaVisitor {
 public:
  explicit SchemaVisitor(Json& object_schema) : schema_(object_schema) {}

  template <typename T>
  void operator()(const T&, const Field& f) {
    Json s = SchemaOf<T>();
    if (!f.doc().empty()) s["description"] = std::string(f.doc());
    if (f.int_or_string_quantity()) {
      s = Json{{"anyOf", Json::array({{{"type", "integer"}}, {{"type", "string"}}})},
               {"pattern", std::string(kQuantityPattern)},
               {"x-kubernetes-int-or-string", true}};
      if (!f.doc().empty()) s["description"] = std::string(f.doc());
    }
    if (f.enum_values().size() > 0) {
      Json values = Json::array();
      for (auto e : f.enum_values()) values.push_back(std::string(e));
      s["enum"] = values;
    }
    if (!f.format().empty()) s["format"] = std::string(f.format());
    if (!f.pattern().empty()) s["pattern"] = std::string(f.pattern());
    if (f.minimum()) s["minimum"] = *f.minimum();
    if (f.maximum()) s["maximum"] = *f.maximum();
    if (f.min_length()) s["minLength"] = *f.min_length();
    if (f.max_length()) s["maxLength"] = *f.max_length();
    if (f.min_items()) s["minItems"] = *f.min_items();
    if (!f.default_json().empty()) s["default"] = Json::parse(f.default_json());
    if (!f.list_type().empty()) s["x-kubernetes-list-type"] = std::string(f.list_type());
    if (f.list_map_keys().size() > 0) {
      Json keys = Json::array();
      for (auto k : f.list_map_keys()) keys.push_back(std::string(k));
      s["x-kubernetes-list-map-keys"] = keys;
    }
    // A marker for BuildCrd, removed from every generated CRD.
    if (f.optional_in_templates()) s[std::string(kOptionalInTemplatesMarker)] = true;
    schema_["properties"][std::string(f.name())] = std::move(s);
    if (f.required()) schema_["required"].push_back(std::string(f.name()));
  }

 private:
  Json& schema_;
};

template <typename T>
Json SchemaOf() {
  if constexpr (HasCustomCodec<T>) {
    return CustomCodec<T>::Schema();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return {{"type", "string"}};
  } else if constexpr (std::is_same_v<T, bool>) {
    return {{"type", "boolean"}};
  } else if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>) {
    return {{"type", "integer"}, {"format", "int32"}};
  } else if constexpr (std::is_integral_v<T>) {
    return {{"type", "integer"}, {"format", "int64"}};
  } else if constexpr (IsOptional<T>::value) {
    return SchemaOf<typename T::value_type>();
  } else if constexpr (IsVector<T>::value) {
    return {{"type", "array"}, {"items", SchemaOf<typename T::value_type>()}};
  } else if constexpr (IsStringMap<T>::value) {
    return {{"type", "object"}, {"additionalProperties", SchemaOf<typename T::mapped_type>()}};
  } else if constexpr (std::is_same_v<T, Json>) {
    return {{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  } else {
    static_assert(Described<T>, "unsupported field type");
    Json s = {{"type", "object"}};
    T probe{};
    SchemaVisitor visitor(s);
    T::Describe(probe, visitor);
    return s;
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
