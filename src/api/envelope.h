// File: api/envelope.h
//
// The envelopes every CAPHV kind shares, so that a kind's header declares
// only its spec and status:
//   KindObject        apiVersion, kind, metadata, spec (required), status
//   TemplateObject    the same without status, spec.template (required)
//   TemplateResource  the template: metadata and spec given to the objects
//                     it stamps, with their descriptions in the schema
//
// Thread safety: plain values.

#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

#include "api/fields.h"
#include "api/object_meta.h"

namespace caphv::api {

// A string literal as a template argument (a schema description).
template <std::size_t N>
struct Text {
  // NOLINTNEXTLINE(google-explicit-constructor): written as a literal
  constexpr Text(const char (&s)[N]) { std::copy_n(s, N, chars); }
  constexpr std::string_view view() const { return {chars, N - 1}; }
  char chars[N]{};
};

// The status of a kind that has none (templates): not in the schema.
struct NoStatus {
  bool operator==(const NoStatus&) const = default;
};

template <typename Spec, typename Status>
struct KindObject {
  std::string api_version;
  std::string kind;
  ObjectMeta metadata;
  Spec spec;
  [[no_unique_address]] Status status;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.api_version, Field("apiVersion"));
    v(self.kind, Field("kind"));
    v(self.metadata, Field("metadata"));
    v(self.spec, Field("spec").Required());
    if constexpr (!std::is_same_v<Status, NoStatus>) v(self.status, Field("status"));
  }
  bool operator==(const KindObject&) const = default;
};

template <typename Spec, Text kMetadataDoc, Text kSpecDoc>
struct TemplateResource {
  TemplateMeta metadata;
  Spec spec;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.metadata, Field("metadata").Doc(kMetadataDoc.view()));
    v(self.spec, Field("spec").Required().Doc(kSpecDoc.view()));
  }
  bool operator==(const TemplateResource&) const = default;
};

template <typename Resource>
struct TemplateSpec {
  Resource template_;

  static constexpr bool kDescribed = true;
  template <typename Self, typename V>
  static void Describe(Self& self, V& v) {
    v(self.template_, Field("template").Required());
  }
  bool operator==(const TemplateSpec&) const = default;
};

// A template's object: a KindObject without status.
template <typename Resource>
using TemplateObject = KindObject<TemplateSpec<Resource>, NoStatus>;

}  // namespace caphv::api
