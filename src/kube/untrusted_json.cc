// File: kube/untrusted_json.cc

#include "kube/untrusted_json.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace caphv::kube {
namespace {

// Builds a parsed document from nlohmann's SAX events, as its own DOM parser
// does, except that it stops at kMaxJsonDepth (so no pre-scan is needed: the
// SAX parser itself does not recurse), builds nothing for the value at
// `leave_out`, and, given `items`, hands each object of the root's "items"
// array over instead of keeping it.
class BoundedDom {
 public:
  using number_integer_t = Object::number_integer_t;
  using number_unsigned_t = Object::number_unsigned_t;
  using number_float_t = Object::number_float_t;
  using string_t = Object::string_t;
  using binary_t = Object::binary_t;

  BoundedDom(JsonPath leave_out, const std::function<void(Object&&)>* items)
      : leave_out_(leave_out), items_(items) {}

  bool null() { return Add(nullptr); }
  bool boolean(bool v) { return Add(v); }
  bool number_integer(number_integer_t v) { return Add(v); }
  bool number_unsigned(number_unsigned_t v) { return Add(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) { return Add(v); }
  bool string(string_t& v) { return Add(std::move(v)); }
  bool binary(binary_t& v) { return Add(Object::binary(std::move(v))); }
  bool start_object(std::size_t /*size*/) { return Open(Object::value_t::object); }
  bool start_array(std::size_t /*size*/) { return Open(Object::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(string_t& k) {
    if (skipping_ > 0) return true;
    const Frame& f = stack_.back();
    next_is_items_ = items_ != nullptr && stack_.size() == 1 && k == "items";
    next_matched_ = MatchBelow(f, k);
    key_ = std::move(k);
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  bool too_deep() const { return too_deep_; }
  Object& root() { return root_; }

 private:
  static constexpr uint16_t kNoMatch = UINT16_MAX;

  struct Frame {
    Object* value;
    uint16_t matched;  // leading elements of leave_out_ the path to it matches
    bool items;        // the root's "items" array, its objects handed over
  };

  // How much of leave_out_ the path to the value about to be added matches;
  // leave_out_.size() when it is the value to leave out.
  uint16_t MatchOfNext() const {
    if (stack_.empty()) return 0;
    const Frame& f = stack_.back();
    if (f.value->is_object()) return next_matched_;
    return MatchBelow(f, "*");
  }

  // How much of the left-out path a member of `f` named `element` (a key,
  // or "*" for an array element) has matched: one more element than `f`
  // when the path continues with `element`, else kNoMatch.
  uint16_t MatchBelow(const Frame& f, std::string_view element) const {
    if (f.matched == kNoMatch || f.matched >= leave_out_.size() ||
        leave_out_[f.matched] != element) {
      return kNoMatch;
    }
    return static_cast<uint16_t>(f.matched + 1);
  }

  bool LeftOut(uint16_t matched) const {
    return !leave_out_.empty() && matched == leave_out_.size();
  }

  // Where the next value goes: the root, the end of the open array, or the
  // open object's pending key.
  Object* Slot() {
    if (stack_.empty()) return &root_;
    Frame& f = stack_.back();
    if (f.items) return &item_;
    if (f.value->is_array()) {
      f.value->push_back(nullptr);
      return &f.value->back();
    }
    return &(*f.value)[std::move(key_)];
  }

  template <typename T>
  bool Add(T&& v) {
    if (skipping_ > 0 || LeftOut(MatchOfNext())) return true;
    // The "items" array keeps nothing but its objects.
    if (!stack_.empty() && stack_.back().items) return true;
    *Slot() = Object(std::forward<T>(v));
    return true;
  }

  bool Open(Object::value_t type) {
    // A value left out counts too: the document is refused as a whole.
    if (stack_.size() + static_cast<size_t>(skipping_) >= static_cast<size_t>(kMaxJsonDepth)) {
      too_deep_ = true;
      return false;
    }
    if (skipping_ > 0) {
      ++skipping_;
      return true;
    }
    const uint16_t matched = MatchOfNext();
    const bool in_items = !stack_.empty() && stack_.back().items;
    if (LeftOut(matched) || (in_items && type != Object::value_t::object)) {
      skipping_ = 1;
      return true;
    }
    const bool items = next_is_items_ && type == Object::value_t::array && stack_.size() == 1;
    Object* slot = Slot();
    *slot = Object(type);
    stack_.push_back({slot, matched, items});
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    const Frame done = stack_.back();
    stack_.pop_back();
    if (!stack_.empty() && stack_.back().items) (*items_)(std::move(*done.value));
    return true;
  }

  JsonPath leave_out_;
  const std::function<void(Object&&)>* items_;
  Object root_;
  Object item_;  // the "items" element being built
  std::vector<Frame> stack_;
  std::string key_;
  uint16_t next_matched_ = kNoMatch;
  bool next_is_items_ = false;
  int skipping_ = 0;  // open containers of a value left out
  bool too_deep_ = false;
};

Object Parse(std::string_view text, bool* too_deep, JsonPath leave_out,
             const std::function<void(Object&&)>* items) {
  BoundedDom dom(leave_out, items);
  const bool ok = Object::sax_parse(text, &dom, nlohmann::detail::input_format_t::json,
                                    /*strict=*/true);
  if (too_deep != nullptr) *too_deep = dom.too_deep();
  if (!ok) return Object(Object::value_t::discarded);
  return std::move(dom.root());
}

}  // namespace

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

Object ParseUntrustedJson(std::string_view text, bool* too_deep, JsonPath leave_out) {
  return Parse(text, too_deep, leave_out, nullptr);
}

Object ParseUntrustedList(std::string_view text, const std::function<void(Object&&)>& item,
                          bool* too_deep, JsonPath leave_out) {
  return Parse(text, too_deep, leave_out, &item);
}

}  // namespace caphv::kube
