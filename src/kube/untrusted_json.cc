// File: kube/untrusted_json.cc

#include "kube/untrusted_json.h"

#include <boost/json/basic_parser_impl.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace caphv::kube {
namespace {

// Builds a parsed document from SAX events (nlohmann's, or Boost.JSON's
// through BoostEvents below), as nlohmann's own DOM parser does, except that
// it stops at kMaxJsonDepth (so no pre-scan is needed: neither SAX parser
// recurses), builds only what `keep` keeps of the values at keep.at, and,
// given `items`, hands each object of the root's "items" array over instead
// of keeping it, but for the first `skip` (handed over by an earlier parse).
class BoundedDom {
 public:
  using number_integer_t = Object::number_integer_t;
  using number_unsigned_t = Object::number_unsigned_t;
  using number_float_t = Object::number_float_t;
  using string_t = Object::string_t;
  using binary_t = Object::binary_t;

  BoundedDom(JsonKeep keep, const std::function<void(Object&&)>* items, size_t skip)
      : keep_(keep), items_(items), skip_(skip) {}

  bool null() { return Add(nullptr); }
  bool boolean(bool v) { return Add(v); }
  bool number_integer(number_integer_t v) { return Add(v); }
  bool number_unsigned(number_unsigned_t v) { return Add(v); }
  bool number_float(number_float_t v, const string_t& /*text*/) { return Add(v); }
  // Strings and keys are copied, not moved, out of the lexer's buffer: a
  // copy is one allocation of the exact size, while a buffer moved away is
  // grown again, by doublings, for the next long token.
  bool string(string_t& v) { return String(v); }
  bool binary(binary_t& v) { return Add(Object::binary(std::move(v))); }
  bool start_object(std::size_t /*size*/) { return Open(Object::value_t::object); }
  bool start_array(std::size_t /*size*/) { return Open(Object::value_t::array); }
  bool end_object() { return Close(); }
  bool end_array() { return Close(); }

  bool key(string_t& k) { return Key(k); }

  bool String(std::string_view v) { return Add(string_t(v)); }
  bool Double(number_float_t v) { return Add(v); }
  bool Key(std::string_view k) {
    if (skipping_ > 0) return true;
    const Frame& f = stack_.back();
    next_is_items_ = items_ != nullptr && stack_.size() == 1 && k == "items";
    next_ = Below(f, k);
    if (next_.kept) key_ = k;
    return true;
  }

  bool parse_error(std::size_t /*position*/, const std::string& /*token*/,
                   const nlohmann::detail::exception& /*error*/) {
    return false;
  }

  bool too_deep() const { return too_deep_; }
  Object& root() { return root_; }
  // The items handed over (the skipped ones included).
  size_t handed() const { return handed_; }

 private:
  static constexpr uint16_t kNoMatch = UINT16_MAX;

  struct Frame {
    Object* value;
    uint16_t matched;       // leading elements of keep.at the path to it matches
    bool items;             // the root's "items" array, its objects handed over
    bool drop_if_empty;     // a masked object left out when none of its members is kept
    const FieldMask* mask;  // what its members keep; null: everything
    std::string key;        // its key in its parent, when drop_if_empty
  };

  // What becomes of the value about to be read.
  struct Next {
    uint16_t matched = kNoMatch;
    bool kept = true;
    const FieldMask* mask = nullptr;  // null: built whole (but for keep.at below it)
    bool root = false;                // a value at keep.at: the mask's root
  };

  Next Prefixed(uint16_t matched) const {
    Next n;
    n.matched = matched;
    if (keep_.mask != nullptr && matched == keep_.at.size()) {
      n.mask = keep_.mask;
      n.root = true;
    }
    return n;
  }

  // The member of `f` named `element` (a key, or "*" for an array element).
  Next Below(const Frame& f, std::string_view element) const {
    if (f.mask != nullptr) {
      const FieldMask::Fate fate = f.mask->Member(element);
      Next n;
      n.kept = fate.kept;
      n.mask = fate.mask;
      return n;
    }
    if (f.matched == kNoMatch || f.matched >= keep_.at.size() || keep_.at[f.matched] != element) {
      return Next{};
    }
    return Prefixed(static_cast<uint16_t>(f.matched + 1));
  }

  Next NextValue() const {
    if (stack_.empty()) return Prefixed(0);
    const Frame& f = stack_.back();
    if (f.value->is_object()) return next_;
    return Below(f, "*");
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
    if (skipping_ > 0) return true;
    // The "items" array keeps nothing but its objects.
    if (!stack_.empty() && stack_.back().items) return true;
    const Next n = NextValue();
    if (!n.kept) return true;
    // A mask that keeps only some members of an object keeps no scalar.
    if (n.mask != nullptr && !n.root && n.mask->keeps_only()) return LeaveOut();
    *Slot() = Object(std::forward<T>(v));
    return true;
  }

  // Leaves out the value of the pending key, and one read before it under
  // the same key: the last of duplicate keys wins, as in a whole parse.
  bool LeaveOut() {
    if (!stack_.empty() && stack_.back().value->is_object()) stack_.back().value->erase(key_);
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
    const Next n = NextValue();
    const bool in_items = !stack_.empty() && stack_.back().items;
    const bool object = type == Object::value_t::object;
    const bool filtered = n.mask != nullptr && !n.root && n.mask->keeps_only();
    // Masks do not look into arrays: an array is kept whole or left out.
    if (!n.kept || (in_items && !object) || (filtered && !object)) {
      skipping_ = 1;
      return filtered ? LeaveOut() : true;
    }
    const bool items = next_is_items_ && !object && stack_.size() == 1;
    std::string key = filtered ? key_ : std::string();
    Object* slot = Slot();
    *slot = Object(type);
    stack_.push_back({slot, n.matched, items, filtered, object ? n.mask : nullptr, std::move(key)});
    return true;
  }

  bool Close() {
    if (skipping_ > 0) {
      --skipping_;
      return true;
    }
    Frame done = std::move(stack_.back());
    stack_.pop_back();
    if (!stack_.empty() && stack_.back().items) {
      if (handed_++ >= skip_) (*items_)(std::move(*done.value));
    } else if (done.drop_if_empty && done.value->empty()) {
      stack_.back().value->erase(done.key);
    }
    return true;
  }

  JsonKeep keep_;
  const std::function<void(Object&&)>* items_;
  size_t skip_;
  size_t handed_ = 0;
  Object root_;
  Object item_;  // the "items" element being built
  std::vector<Frame> stack_;
  std::string key_;
  Next next_;
  bool next_is_items_ = false;
  int skipping_ = 0;  // open containers of a value left out
  bool too_deep_ = false;
};

// Boost.JSON's tokenizer (basic_parser: the informers' decode of a watch
// event 3.1 times as fast as under nlohmann's SAX parser, bench/README.md,
// "Boost.JSON's tokenizer under the builder") feeding a BoundedDom with the
// values nlohmann's would: an integer without a sign is unsigned, a double is
// read again from its text with strtod (Boost's own conversion may differ
// from it in the last digit), one that overflows is refused, and a string
// or key in parts is joined first.
class BoostEvents {
 public:
  using error_code = boost::system::error_code;
  using string_view = boost::json::string_view;
  static constexpr std::size_t max_array_size = SIZE_MAX;
  static constexpr std::size_t max_object_size = SIZE_MAX;
  static constexpr std::size_t max_string_size = SIZE_MAX;
  static constexpr std::size_t max_key_size = SIZE_MAX;

  BoostEvents(JsonKeep keep, const std::function<void(Object&&)>* items) : dom_(keep, items, 0) {}

  bool on_document_begin(error_code& /*ec*/) { return true; }
  bool on_document_end(error_code& /*ec*/) { return true; }
  bool on_array_begin(error_code& ec) { return Ok(dom_.start_array(0), ec); }
  bool on_array_end(std::size_t /*n*/, error_code& ec) { return Ok(dom_.end_array(), ec); }
  bool on_object_begin(error_code& ec) { return Ok(dom_.start_object(0), ec); }
  bool on_object_end(std::size_t /*n*/, error_code& ec) { return Ok(dom_.end_object(), ec); }
  bool on_string_part(string_view s, std::size_t /*n*/, error_code& /*ec*/) { return Part(s); }
  bool on_string(string_view s, std::size_t /*n*/, error_code& ec) {
    return Ok(dom_.String(Whole(s)), ec);
  }
  bool on_key_part(string_view s, std::size_t /*n*/, error_code& /*ec*/) { return Part(s); }
  bool on_key(string_view s, std::size_t /*n*/, error_code& ec) {
    return Ok(dom_.Key(Whole(s)), ec);
  }
  bool on_number_part(string_view s, error_code& /*ec*/) { return Part(s); }
  bool on_int64(int64_t i, string_view s, error_code& ec) {
    const std::string_view text = Whole(s);
    // Boost reads 0..INT64_MAX as int64; nlohmann as unsigned unless signed.
    if (i < 0 || (!text.empty() && text.front() == '-')) return Ok(dom_.number_integer(i), ec);
    return Ok(dom_.number_unsigned(static_cast<uint64_t>(i)), ec);
  }
  bool on_uint64(uint64_t u, string_view s, error_code& ec) {
    Whole(s);  // only to drop the parts read
    return Ok(dom_.number_unsigned(u), ec);
  }
  bool on_double(double /*d*/, string_view s, error_code& ec) {
    const std::string text(Whole(s));  // strtod needs the terminating NUL
    const double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) return Ok(false, ec);
    return Ok(dom_.Double(d), ec);
  }
  bool on_bool(bool b, error_code& ec) { return Ok(dom_.boolean(b), ec); }
  bool on_null(error_code& ec) { return Ok(dom_.null(), ec); }
  bool on_comment_part(string_view /*s*/, error_code& ec) { return Ok(false, ec); }
  bool on_comment(string_view /*s*/, error_code& ec) { return Ok(false, ec); }

  BoundedDom& dom() { return dom_; }

 private:
  static bool Ok(bool ok, error_code& ec) {
    if (!ok) ec = boost::json::error::syntax;
    return ok;
  }
  bool Part(string_view s) {
    part_.append(s.data(), s.size());
    return true;
  }
  // The token whose last part is `s`; valid until the next event.
  std::string_view Whole(string_view s) {
    if (part_.empty()) return {s.data(), s.size()};
    part_.append(s.data(), s.size());
    joined_.swap(part_);
    part_.clear();
    return joined_;
  }

  BoundedDom dom_;
  std::string part_;    // the parts of the token being read
  std::string joined_;  // the last token read in parts
};

bool OnlyWhitespace(std::string_view rest) {
  return rest.find_first_not_of(" \t\n\r") == std::string_view::npos;
}

// Boost's tokenizer first; what it refuses (not JSON, too deep, a number
// nlohmann would refuse, bytes after the document) nlohmann's parser judges
// again, so that what is accepted, and as what, is nlohmann's word. Items a
// refused parse handed over are not handed over again.
Object Parse(std::string_view text, bool* too_deep, JsonKeep keep,
             const std::function<void(Object&&)>* items) {
  size_t handed = 0;
  {
    boost::json::parse_options options;
    options.max_depth = static_cast<std::size_t>(kMaxJsonDepth) + 1;
    boost::json::basic_parser<BoostEvents> fast(options, keep, items);
    boost::system::error_code ec;
    const size_t read = fast.write_some(false, text.data(), text.size(), ec);
    if (!ec && fast.done() && OnlyWhitespace(text.substr(read))) {
      if (too_deep != nullptr) *too_deep = false;
      return std::move(fast.handler().dom().root());
    }
    handed = fast.handler().dom().handed();
  }
  BoundedDom dom(keep, items, handed);
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

Object ParseUntrustedJson(std::string_view text, bool* too_deep, JsonKeep keep) {
  return Parse(text, too_deep, keep, nullptr);
}

Object ParseUntrustedList(std::string_view text, const std::function<void(Object&&)>& item,
                          bool* too_deep, const FieldMask* item_mask) {
  return Parse(text, too_deep, JsonKeep{kListItems, item_mask}, &item);
}

}  // namespace caphv::kube
