// Fuzz target: the decoder of a packed Store's reads (kube::DecodeMsgpack),
// checked against nlohmann's from_msgpack on the same bytes: the same value,
// type for type, or the same refusal; no crash or sanitizer report on bytes
// nested past kMaxJsonDepth (which from_msgpack, recursing without a bound,
// is not given); and a value that decodes encodes back to what decodes the
// same again.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "kube/msgpack.h"
#include "kube/untrusted_json.h"
#include "support/same_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace kube = caphv::kube;
  using caphv::testing::SameJson;
  const std::span<const std::uint8_t> bytes(data, size);
  bool too_deep = false;
  const kube::Object got = kube::DecodeMsgpack(bytes, &too_deep);
  if (too_deep) {
    if (!got.is_discarded()) __builtin_trap();
    return 0;
  }
  const kube::Object expected =
      kube::Object::from_msgpack(data, data + size, /*strict=*/true, /*allow_exceptions=*/false);
  if (got.is_discarded() != expected.is_discarded()) __builtin_trap();
  if (expected.is_discarded()) return 0;
  if (!SameJson(got, expected)) __builtin_trap();
  const std::vector<std::uint8_t> again = kube::Object::to_msgpack(got);
  if (!SameJson(kube::DecodeMsgpack(again), kube::Object::from_msgpack(again))) __builtin_trap();
  return 0;
}
