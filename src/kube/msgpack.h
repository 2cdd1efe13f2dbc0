// File: kube/msgpack.h
//
// The MessagePack codec behind a packed Store's reads (kube/store.h). A
// packed store keeps each object as nlohmann's MessagePack encoding and
// decodes it on every read, the largest share of a cache read's CPU.
// nlohmann's from_msgpack reads through a generic SAX interface, one byte at
// a time (a string is appended character by character) and recurses without
// a bound; this decoder reads the bytes in place and builds the same value:
//
//   positive fixint, uint 8-64   number_unsigned
//   negative fixint, int 8-64    number_integer
//   float 32, float 64           number_float (a float widened to double)
//   fixstr, str 8-32             string;  nil, false, true as themselves
//   bin 8-32                     binary without a subtype
//   fixext, ext 8-32             binary with the ext type as its subtype (uint8)
//   fixarray, array 16-32        array
//   fixmap, map 16-32            object; keys must be strings; a repeated
//                                key keeps its last value
//
// It refuses (a discarded value) what from_msgpack refuses: a truncated
// value, the unused byte 0xc1, a map key that is not a string, bytes after
// the one value; and, unlike it, arrays and maps nested deeper than
// kMaxJsonDepth (`*too_deep` set), so corrupt input cannot exhaust the
// stack. fuzz/msgpack_fuzzer.cc holds the two to the same answer.
//
// EncodeMsgpack is nlohmann's to_msgpack shrunk to its size: a stored
// encoding without the spare capacity of a vector grown by doublings.
//
// Thread safety: pure functions.

#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kube/object.h"

namespace caphv::kube {

// Decodes one MessagePack value that spans all of `bytes`: the value, or a
// discarded value (is_discarded()) when `bytes` is not exactly one value or
// nests deeper than kMaxJsonDepth; `*too_deep` (if given) says the latter.
Object DecodeMsgpack(std::span<const std::uint8_t> bytes, bool* too_deep = nullptr);

// The MessagePack encoding of `o` (what Object::to_msgpack writes), with no
// spare capacity.
std::vector<std::uint8_t> EncodeMsgpack(const Object& o);

}  // namespace caphv::kube
