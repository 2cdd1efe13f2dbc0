// File: api/field_schema.h
//
// The descriptor side of the field tables of api/fields.h: Field, the
// schema facts one entry of a type's `Describe` table states about a field
// (JSON name, required, documentation, enum, pattern, bounds, defaults, list
// type), the traits that sort field types (Described, optional, list, map,
// CustomCodec) and the schema builder that turns a described type into its
// OpenAPI v3 schema (SchemaOf<T>). The JSON codecs that walk the same tables
// (encoder, decoder) and JsonAs<T> are in api/fields.h, which includes this
// header; include that one.
//
// Thread safety: stateless functions over values; safe to call concurrently.

#pragma once

#include <cstdint>
#include <initializer_list>
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

}  // namespace caphv::api
