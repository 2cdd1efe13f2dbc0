// Fuzz target: the decoder of every JSON document an apiserver or an
// admission request sends (kube::ParseUntrustedJson, ParseUntrustedList),
// checked against nlohmann's own parser on the same text: the same document,
// type for type (an unsigned integer is not a signed one), or the same refusal, with the watched
// object's or the list items' managedFields left out where asked, a FieldMask's projection where
// one is given (the same as FieldMask::Apply makes), and no crash or sanitizer report on a document
// nested past kMaxJsonDepth.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kube/untrusted_json.h"
#include "support/same_json.h"

namespace {

using caphv::kube::Object;
using caphv::testing::SameJson;

void EraseManagedFields(Object& object) {
  if (!object.is_object()) return;
  if (auto md = object.find("metadata"); md != object.end() && md->is_object()) {
    md->erase("managedFields");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace kube = caphv::kube;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bool too_deep = false;
  const Object parsed = kube::ParseUntrustedJson(text, &too_deep);
  // nlohmann's lexer ends the input at a NUL outside a string: the depth is
  // that of the text before it.
  const std::string_view read = text.substr(0, text.find('\0'));
  if (too_deep != kube::JsonNestsDeeperThan(read, kube::kMaxJsonDepth) &&
      !(too_deep == false && parsed.is_discarded())) {
    __builtin_trap();  // refused for depth exactly when it nests too deep (or is not JSON first)
  }
  if (too_deep) return 0;
  const Object expected = Object::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() != expected.is_discarded()) __builtin_trap();
  if (expected.is_discarded()) return 0;
  if (!SameJson(parsed, expected)) __builtin_trap();

  // The watch event's object without its managedFields.
  Object event = expected;
  if (event.is_object()) {
    if (auto o = event.find("object"); o != event.end()) EraseManagedFields(*o);
  }
  const kube::FieldMask& lean = kube::FieldMask::WithoutManagedFields();
  if (!SameJson(
          kube::ParseUntrustedJson(text, nullptr, kube::JsonKeep{kube::kWatchEventObject, &lean}),
          event)) {
    __builtin_trap();
  }

  // A mask that keeps only some paths builds what applying it afterwards
  // makes, at the root and at a watch event's object.
  static const kube::FieldMask mask({{"metadata", "name"},
                                     {"metadata", "labels", "a"},
                                     {"spec"},
                                     {"status", "x", "y"},
                                     {"status", "z"}});
  Object masked = expected;
  mask.Apply(masked);
  if (!SameJson(kube::ParseUntrustedJson(text, nullptr, kube::JsonKeep{{}, &mask}), masked)) {
    __builtin_trap();
  }
  Object masked_event = expected;
  if (masked_event.is_object()) {
    if (auto o = masked_event.find("object"); o != masked_event.end()) mask.Apply(*o);
  }
  if (!SameJson(
          kube::ParseUntrustedJson(text, nullptr, kube::JsonKeep{kube::kWatchEventObject, &mask}),
          masked_event)) {
    __builtin_trap();
  }

  // A list: its items handed over (objects only, managedFields left out), the
  // rest kept. Compared item by item only without a repeated "items" key.
  std::vector<Object> items;
  Object rest = kube::ParseUntrustedList(
      text, [&](Object&& item) { items.push_back(std::move(item)); }, nullptr, &lean);
  if (rest.is_discarded()) __builtin_trap();
  if (!expected.is_object() || !expected.contains("items") || !expected["items"].is_array()) {
    return 0;
  }
  std::vector<Object> want;
  for (Object item : expected["items"]) {
    if (!item.is_object()) continue;
    EraseManagedFields(item);
    want.push_back(std::move(item));
  }
  if (items.size() < want.size()) __builtin_trap();
  if (items.size() == want.size() &&
      !std::equal(items.begin(), items.end(), want.begin(), SameJson)) {
    __builtin_trap();
  }
  Object others = expected;
  others["items"] = Object::array();
  if (!SameJson(rest, others)) __builtin_trap();
  return 0;
}
