// File: kube/untrusted_json.h
//
// Decoding JSON that arrives from outside (an AdmissionReview, an
// apiserver's answer) with a bound on its nesting. Kubernetes objects nest a
// few dozen levels; copying and walking a JSON value recurses once per
// level, so a document nested 100,000 deep would overflow the stack.
//
// The text is read by Boost.JSON's tokenizer; a document it refuses is read
// again by nlohmann's parser, whose verdict and value types stand (the
// differential fuzzer, fuzz/untrusted_json_fuzzer.cc, compares both with
// nlohmann's own DOM parser, type for type).
//
// Thread safety: pure functions.

#pragma once

#include <functional>
#include <span>
#include <string_view>

#include "kube/field_mask.h"
#include "kube/object.h"

namespace caphv::kube {

// The deepest nesting of arrays and objects a document from outside may have.
inline constexpr int kMaxJsonDepth = 512;

// True when `text` nests arrays and objects deeper than `max_depth` (a
// linear scan that skips strings; it does not check the JSON otherwise).
// The parsers below bound the depth themselves; this is the independent
// reference their differential fuzzer (fuzz/untrusted_json_fuzzer.cc) and
// the decode benchmark's baseline (bench/cache_bench.cc) compare against.
bool JsonNestsDeeperThan(std::string_view text, int max_depth);

// A path of object keys from a document's root; "*" stands for any element
// of an array.
using JsonPath = std::span<const std::string_view>;

// Where the objects of a watch event and of a list page are.
inline constexpr std::string_view kWatchEventObject[] = {"object"};
inline constexpr std::string_view kListItems[] = {"items", "*"};

// What a parse builds of the values at `at` (every value there, the root
// when `at` is empty): only what `mask` keeps (kube/field_mask.h); the rest
// is read and never built. A null mask keeps everything. The mask must
// outlive the parse.
struct JsonKeep {
  JsonPath at;
  const FieldMask* mask = nullptr;
};

// Parses a JSON document from outside: a discarded value (is_discarded())
// when it is not JSON or nests deeper than kMaxJsonDepth; `*too_deep` (if
// given) says which. Builds only what `keep` keeps. The parse itself does
// not recurse: it stops at the first value deeper than kMaxJsonDepth.
Object ParseUntrustedJson(std::string_view text, bool* too_deep = nullptr, JsonKeep keep = {});

// Parses a collection from outside (an apiserver's "...List" answer) one
// item at a time: each object of the top-level "items" array is handed to
// `item` as soon as its closing brace is read and is not kept in the
// document, so a page of 500 large objects is never held as one parsed tree
// beside what the caller keeps of it. Returns the rest of the document
// (kind, metadata, an empty "items"), or a discarded value as
// ParseUntrustedJson does; items already handed over stay handed over.
// Elements of "items" that are not objects are dropped; each item keeps only
// what `item_mask` keeps (everything when null).
Object ParseUntrustedList(std::string_view text, const std::function<void(Object&&)>& item,
                          bool* too_deep = nullptr, const FieldMask* item_mask = nullptr);

}  // namespace caphv::kube
