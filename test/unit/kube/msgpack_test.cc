// File: test/unit/kube/msgpack_test.cc
//
// DecodeMsgpack: what nlohmann's from_msgpack builds, type for type, for
// every format its encoder writes and the ones it only reads (float 32,
// fixext, ext), for a Kubernetes object; the same refusals; a bound on
// nesting where from_msgpack has none.

#include "kube/msgpack.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <vector>

#include "kube/untrusted_json.h"
#include "support/same_json.h"

namespace caphv::kube {
namespace {

using Bytes = std::vector<std::uint8_t>;
using caphv::testing::SameJson;

// Decodes `bytes` both ways and expects the same value.
void ExpectAsNlohmann(const Bytes& bytes) {
  const Object expected = Object::from_msgpack(bytes, /*strict=*/true, /*allow_exceptions=*/false);
  bool too_deep = true;
  const Object got = DecodeMsgpack(bytes, &too_deep);
  EXPECT_FALSE(too_deep);
  EXPECT_TRUE(SameJson(got, expected)) << "got " << got.dump() << ", expected " << expected.dump();
}

TEST(MsgpackTest, DecodesWhatTheEncoderWritesAsNlohmannDoes) {
  const Object vm = {
      {"apiVersion", "kubevirt.io/v1"},
      {"kind", "VirtualMachine"},
      {"metadata",
       {{"name", "md-0-abcde"},
        {"namespace", "default"},
        {"labels", {{"cluster.x-k8s.io/cluster-name", "c1"}}},
        {"annotations", {{"long", std::string(70000, 'x')}}}}},
      {"spec",
       {{"running", true},
        {"template",
         {{"spec",
           {{"domain", {{"cpu", {{"cores", 4}}}, {"memory", {{"guest", "8Gi"}}}}},
            {"volumes", Object::array({{{"name", "disk-0"}}, {{"name", "cloudinit"}}})}}}}}}},
      {"status", {{"ready", false}, {"printableStatus", nullptr}, {"ratio", 0.25}}}};
  ExpectAsNlohmann(Object::to_msgpack(vm));
  EXPECT_EQ(DecodeMsgpack(Object::to_msgpack(vm)), vm);
}

TEST(MsgpackTest, NumbersKeepTheirKind) {
  for (const std::int64_t v :
       std::initializer_list<std::int64_t>{0,
                                           1,
                                           127,
                                           128,
                                           255,
                                           256,
                                           65535,
                                           65536,
                                           4294967295LL,
                                           4294967296LL,
                                           -1,
                                           -32,
                                           -33,
                                           -128,
                                           -129,
                                           -32768,
                                           -32769,
                                           std::numeric_limits<std::int32_t>::min(),
                                           std::numeric_limits<std::int64_t>::min(),
                                           std::numeric_limits<std::int64_t>::max()}) {
    SCOPED_TRACE(v);
    ExpectAsNlohmann(Object::to_msgpack(Object(v)));
  }
  ExpectAsNlohmann(Object::to_msgpack(Object(std::numeric_limits<std::uint64_t>::max())));
  ExpectAsNlohmann(Object::to_msgpack(Object(1.5)));
  ExpectAsNlohmann(Object::to_msgpack(Object(-0.0)));
  ExpectAsNlohmann(Object::to_msgpack(Object(std::numeric_limits<double>::quiet_NaN())));
  // A small non-negative number decodes unsigned and a negative one signed,
  // whatever kind it was encoded from.
  EXPECT_TRUE(DecodeMsgpack(Object::to_msgpack(Object(std::int64_t{5}))).is_number_unsigned());
  EXPECT_TRUE(DecodeMsgpack(Object::to_msgpack(Object(-5))).is_number_integer());
  // float 32 (nlohmann writes it for a double a float holds exactly; other
  // encoders do too): widened to the double it stands for.
  ExpectAsNlohmann({0xca, 0x3f, 0xc0, 0x00, 0x00});
  EXPECT_EQ(DecodeMsgpack(Bytes{0xca, 0x3f, 0xc0, 0x00, 0x00}).get<double>(), 1.5);
}

TEST(MsgpackTest, StringsOfEveryLengthFormat) {
  for (const size_t n : {0UL, 1UL, 31UL, 32UL, 255UL, 256UL, 65535UL, 65536UL}) {
    SCOPED_TRACE(n);
    const Object s = std::string(n, 'k');
    ExpectAsNlohmann(Object::to_msgpack(s));
    ExpectAsNlohmann(Object::to_msgpack(Object{{std::string(n, 'k'), 1}}));
  }
  // str 8 for a short string, which nlohmann's encoder would write as fixstr.
  ExpectAsNlohmann({0xd9, 0x02, 'h', 'i'});
}

TEST(MsgpackTest, ArraysAndMapsOfEveryLengthFormat) {
  for (const size_t n : {0UL, 15UL, 16UL, 65535UL, 65536UL}) {
    SCOPED_TRACE(n);
    Object arr = Object::array();
    Object map = Object::object();
    for (size_t i = 0; i < n; ++i) {
      arr.push_back(i % 3 == 0 ? Object(i) : Object(nullptr));
      map[std::to_string(i)] = i;
    }
    ExpectAsNlohmann(Object::to_msgpack(arr));
    ExpectAsNlohmann(Object::to_msgpack(map));
  }
}

TEST(MsgpackTest, BinaryAndExtKeepTheirSubtype) {
  ExpectAsNlohmann(Object::to_msgpack(Object::binary({1, 2, 3})));
  ExpectAsNlohmann(Object::to_msgpack(Object::binary({1, 2, 3}, 7)));
  ExpectAsNlohmann(Object::to_msgpack(Object::binary(Bytes(300, 9), 200)));
  ExpectAsNlohmann(Object::to_msgpack(Object::binary(Bytes(70000, 1))));
  for (const std::uint8_t format :
       std::initializer_list<std::uint8_t>{0xd4, 0xd5, 0xd6, 0xd7, 0xd8}) {
    Bytes b = {format, 0xff};
    b.resize(2 + (size_t{1} << (format - 0xd4)), 0x42);
    ExpectAsNlohmann(b);
  }
  ExpectAsNlohmann({0xc7, 0x02, 0x80, 'a', 'b'});          // ext 8, type -128
  ExpectAsNlohmann({0xc8, 0x00, 0x01, 0x05, 'z'});         // ext 16
  ExpectAsNlohmann({0xc9, 0x00, 0x00, 0x00, 0x00, 0x05});  // ext 32, empty
  const Object ext = DecodeMsgpack(Bytes{0xc7, 0x02, 0x80, 'a', 'b'});
  ASSERT_TRUE(ext.is_binary());
  EXPECT_EQ(ext.get_binary().subtype(), 0x80U);
}

TEST(MsgpackTest, ARepeatedKeyKeepsItsLastValue) {
  // {"b": 1, "a": [1], "a": 2}
  const Bytes b = {0x83, 0xa1, 'b', 0x01, 0xa1, 'a', 0x91, 0x01, 0xa1, 'a', 0x02};
  ExpectAsNlohmann(b);
  EXPECT_EQ(DecodeMsgpack(b), (Object{{"a", 2}, {"b", 1}}));
}

TEST(MsgpackTest, RefusesWhatNlohmannRefuses) {
  for (const Bytes& b : std::initializer_list<Bytes>{
           {},                                    // nothing
           {0xc1},                                // never used
           {0x01, 0x02},                          // two values
           {0xa3, 'a', 'b'},                      // a string cut short
           {0xcd, 0x01},                          // a uint 16 cut short
           {0xcb, 0, 0, 0},                       // a float 64 cut short
           {0x92, 0x01},                          // an array missing an element
           {0x81, 0x01, 0x02},                    // a map key that is a number
           {0x81, 0xa1, 'k'},                     // a map key without its value
           {0xdd, 0xff, 0xff, 0xff, 0xff, 0x01},  // a length far past the input
           {0xc6, 0x7f, 0xff, 0xff, 0xff},        // bin 32 past the input
           {0xd8, 0x01, 0x02}}) {                 // fixext 16 cut short
    SCOPED_TRACE(Object(b).dump());
    EXPECT_TRUE(Object::from_msgpack(b, true, false).is_discarded());
    bool too_deep = true;
    EXPECT_TRUE(DecodeMsgpack(b, &too_deep).is_discarded());
    EXPECT_FALSE(too_deep);
  }
}

TEST(MsgpackTest, NestingIsBoundedWhereNlohmannRecurses) {
  // kMaxJsonDepth arrays around a null decode; one more is refused as too
  // deep, not followed down the stack (a million here).
  Bytes ok(kMaxJsonDepth, 0x91);
  ok.push_back(0xc0);
  ExpectAsNlohmann(ok);
  Bytes deep(1'000'000, 0x91);
  deep.push_back(0xc0);
  bool too_deep = false;
  EXPECT_TRUE(DecodeMsgpack(deep, &too_deep).is_discarded());
  EXPECT_TRUE(too_deep);
  Bytes maps;
  for (int i = 0; i <= kMaxJsonDepth; ++i) maps.insert(maps.end(), {0x81, 0xa1, 'k'});
  maps.push_back(0xc0);
  EXPECT_TRUE(DecodeMsgpack(maps, &too_deep).is_discarded());
  EXPECT_TRUE(too_deep);
}

}  // namespace
}  // namespace caphv::kube
