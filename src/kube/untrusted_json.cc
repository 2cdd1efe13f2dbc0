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

}  // namespace caphv::kube
