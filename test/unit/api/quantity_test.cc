// Unit tests of the Kubernetes quantity parser.

#include "api/quantity.h"

#include <gtest/gtest.h>

namespace caphv::api {
namespace {

TEST(QuantityTest, ParsesSuffixes) {
  struct Case {
    const char* text;
    int64_t value;
  } cases[] = {
      {"0", 0},
      {"1", 1},
      {"40Gi", 40LL << 30},
      {"8192Mi", 8192LL << 20},
      {"4Gi", 4LL << 30},
      {"1Ki", 1024},
      {"1Ei", 1LL << 60},
      {"1k", 1000},
      {"1M", 1000000},
      {"2G", 2000000000},
      {"1T", 1000000000000LL},
      {"1P", 1000000000000000LL},
      {"1E", 1000000000000000000LL},
      {"1e3", 1000},
      {"1E3", 1000},
      {"1.5Gi", 3LL << 29},
      {".5Ki", 512},
      {"5.", 5},
      {"+7", 7},
      {"-7", -7},
      {"500m", 1},
      {"1500m", 2},
      {"1n", 1},
      {"1u", 1},
      {"0.000000001", 1},
      {"12e-1", 2},
  };
  for (const auto& c : cases) {
    auto q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.has_value()) << c.text;
    ASSERT_TRUE(q->Value().has_value()) << c.text;
    EXPECT_EQ(*q->Value(), c.value) << c.text;
  }
}

TEST(QuantityTest, MilliValues) {
  EXPECT_EQ(*Quantity::Parse("500m")->MilliValue(), 500);
  EXPECT_EQ(*Quantity::Parse("1.5")->MilliValue(), 1500);
  EXPECT_EQ(*Quantity::Parse("1n")->MilliValue(), 1);  // rounds up
  EXPECT_EQ(*Quantity::Parse("2k")->MilliValue(), 2000000);
}

TEST(QuantityTest, RejectsMalformed) {
  for (const char* bad :
       {"",     "Gi",    "4 GB",   "4GB",  "4gi",
        "4Gb",  "1.2.3", "--1",    "1e",   "1e+",
        "1ee3", "0x10",  "four",   " 4Gi", "4Gi ",
        "1Ki2", ".",     "1e1000", "1Zi",  "99999999999999999999999999999999999999999999"}) {
    EXPECT_FALSE(Quantity::Parse(bad).has_value()) << '"' << bad << '"';
  }
  std::string why;
  EXPECT_FALSE(Quantity::Parse("4 GB", &why).has_value());
  EXPECT_EQ(why, "unknown suffix");
}

TEST(QuantityTest, ComparesByValue) {
  EXPECT_EQ(*Quantity::Parse("4Gi"), *Quantity::Parse("4096Mi"));
  EXPECT_EQ(*Quantity::Parse("1k"), *Quantity::Parse("1000"));
  EXPECT_EQ(*Quantity::Parse("1e3"), *Quantity::Parse("1k"));
  EXPECT_LT(*Quantity::Parse("1G"), *Quantity::Parse("1Gi"));
  EXPECT_GT(*Quantity::Parse("1"), *Quantity::Parse("999m"));
  EXPECT_TRUE(SameQuantity("40Gi", "40960Mi"));
  EXPECT_FALSE(SameQuantity("40Gi", "40G"));
  EXPECT_TRUE(SameQuantity("junk", "junk"));
  EXPECT_FALSE(SameQuantity("junk", "4Gi"));
}

TEST(QuantityTest, Sign) {
  EXPECT_EQ(Quantity::Parse("0Gi")->Sign(), 0);
  EXPECT_EQ(Quantity::Parse("-1Mi")->Sign(), -1);
  EXPECT_EQ(Quantity::Parse("1m")->Sign(), 1);
}

TEST(QuantityTest, ValueOverflowIsReported) {
  auto q = Quantity::Parse("100Ei");
  ASSERT_TRUE(q.has_value());
  EXPECT_FALSE(q->Value().has_value());
}

}  // namespace
}  // namespace caphv::api
