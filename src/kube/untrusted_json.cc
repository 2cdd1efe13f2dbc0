// File: kube/untrusted_json.cc

#include "kube/untrusted_json.h"

namespace caphv::kube {

bool JsonNestsDeeperThan(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, whatever it is
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

Object ParseUntrustedJson(std::string_view text, bool* too_deep) {
  const bool deep = JsonNestsDeeperThan(text, kMaxJsonDepth);
  if (too_deep != nullptr) *too_deep = deep;
  if (deep) return Object(Object::value_t::discarded);
  return Object::parse(text, nullptr, /*allow_exceptions=*/false);
}

Object ParseUntrustedList(std::string_view text, const std::function<void(Object&&)>& item,
                          bool* too_deep) {
  const bool deep = JsonNestsDeeperThan(text, kMaxJsonDepth);
  if (too_deep != nullptr) *too_deep = deep;
  if (deep) return Object(Object::value_t::discarded);
  // Depth 1 is the document's own keys; an element of its "items" array
  // opens and closes at depth 2.
  bool in_items = false;
  auto on_event = [&](int depth, Object::parse_event_t event, Object& parsed) {
    if (depth == 1 && event == Object::parse_event_t::key) {
      in_items = parsed.is_string() && parsed.get_ref<const std::string&>() == "items";
      return true;
    }
    if (depth == 2 && in_items) {
      if (event == Object::parse_event_t::object_end) {
        item(std::move(parsed));
        return false;  // handed over: not kept in the array
      }
      // A scalar element, or an array element once closed.
      return event != Object::parse_event_t::value && event != Object::parse_event_t::array_end;
    }
    return true;
  };
  return Object::parse(text, on_event, /*allow_exceptions=*/false);
}

}  // namespace caphv::kube
