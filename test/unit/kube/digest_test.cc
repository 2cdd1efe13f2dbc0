// File: test/unit/kube/digest_test.cc
//
// Sha256Hex against the FIPS 180-2 test vectors, and from many threads at
// once (the algorithm is fetched once and shared).

#include "kube/digest.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace caphv::kube {
namespace {

TEST(Sha256HexTest, MatchesTheStandardVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256HexTest, GivesTheSameDigestFromManyThreads) {
  std::vector<std::string> got(8);
  {
    std::vector<std::jthread> threads;
    for (auto& g : got) {
      threads.emplace_back([&g] {
        for (int i = 0; i < 100; ++i) g = Sha256Hex("abc");
      });
    }
  }
  for (const auto& g : got) {
    EXPECT_EQ(g, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  }
}

}  // namespace
}  // namespace caphv::kube
