// tests/client_stub/md2_test.cc - MD2 against RFC 1319's test suite, and HMAC-MD2 by its
// definition (RFC 2104) over a message fed in pieces. NVIDIA's runtime accepting the keyed
// hash is tested end to end by cuda.static_runtime.* and cuda.nvidia_runtime.*.
#include "client_stub/md2.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace remora::client_stub {
namespace {

std::string Hex(const Md2Digest& d) {
  std::string s;
  char b[3];
  for (uint8_t x : d) {
    std::snprintf(b, sizeof b, "%02x", x);
    s += b;
  }
  return s;
}

std::string Md2Hex(const std::string& m) {
  return Hex(Md2Of(std::span(reinterpret_cast<const uint8_t*>(m.data()), m.size())));
}

TEST(Md2, MatchesTheRfcTestSuite) {
  EXPECT_EQ(Md2Hex(""), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(Md2Hex("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(Md2Hex("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(Md2Hex("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(Md2Hex("abcdefghijklmnopqrstuvwxyz"), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(Md2Hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
            "da33def2a42df13975352846c30338cd");
  EXPECT_EQ(Md2Hex("1234567890123456789012345678901234567890123456789012345678901234567890"
                   "1234567890"),
            "d5976f79d83d3a0dc9806c3c66f3efd8");
}

TEST(Md2, HmacIsTheRfc2104CompositionWhateverThePieces) {
  std::mt19937 rng(7);
  for (size_t n : {0u, 1u, 15u, 16u, 17u, 48u, 76u, 104u, 1000u}) {
    std::vector<uint8_t> msg(n);
    for (auto& b : msg) b = uint8_t(rng());
    Md2Digest key;
    for (auto& b : key) b = uint8_t(rng());

    std::vector<uint8_t> inner_in(16), outer_in(16);
    for (int i = 0; i < 16; ++i) {
      inner_in[i] = uint8_t(key[i] ^ 0x36);
      outer_in[i] = uint8_t(key[i] ^ 0x5c);
    }
    inner_in.insert(inner_in.end(), msg.begin(), msg.end());
    const Md2Digest inner = Md2Of(inner_in);
    outer_in.insert(outer_in.end(), inner.begin(), inner.end());
    const Md2Digest want = Md2Of(outer_in);

    HmacMd2 mac(key);
    for (size_t at = 0; at < n;) {  // pieces of 1 to 23 bytes
      size_t len = std::min<size_t>(n - at, 1 + rng() % 23);
      mac.Update(std::span(msg.data() + at, len));
      at += len;
    }
    EXPECT_EQ(Hex(mac.Final()), Hex(want)) << n << " bytes";
  }
}

}  // namespace
}  // namespace remora::client_stub
