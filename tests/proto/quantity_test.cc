// tests/proto/quantity_test.cc - the one quantity grammar (Kubernetes quantities).
#include "proto/quantity.h"

#include <gtest/gtest.h>

namespace remora {
namespace {

uint64_t Bytes(std::string_view text) {
  Result<uint64_t> r = ParseQuantity(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().ToString();
  return r.ok() ? *r : ~0ull;
}

TEST(Quantity, KubernetesForms) {
  EXPECT_EQ(Bytes("1073741824"), 1073741824u);
  EXPECT_EQ(Bytes("0"), 0u);
  EXPECT_EQ(Bytes("4G"), 4000000000u);
  EXPECT_EQ(Bytes("4Gi"), 4ull << 30);
  EXPECT_EQ(Bytes("512Mi"), 512ull << 20);
  EXPECT_EQ(Bytes("1.5Gi"), 3ull << 29);
  EXPECT_EQ(Bytes("1.5Ki"), 1536u);
  EXPECT_EQ(Bytes("2k"), 2000u);
  EXPECT_EQ(Bytes("3T"), 3000000000000u);
  EXPECT_EQ(Bytes("1Ei"), 1ull << 60);
  EXPECT_EQ(Bytes("15E"), 15000000000000000000u);
}

TEST(Quantity, EverythingElseIsRefusedNamingTheForms) {
  for (const char* junk : {"", "G", "1GiB", "4GB", "4gb", "4g", "4K", "-1", "4 G", " 4G", "4G ",
                           "abc", "1e9", ".", "99999999999P", "19E", "16Ei", "0x10"}) {
    Result<uint64_t> r = ParseQuantity(junk);
    EXPECT_FALSE(r.ok()) << junk;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), err::kInvalidValue);
      EXPECT_NE(r.status().message().find("512Mi"), std::string::npos) << r.status().message();
    }
  }
}

}  // namespace
}  // namespace remora
