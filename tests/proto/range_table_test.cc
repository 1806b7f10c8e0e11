// tests/proto/range_table_test.cc - RangeTable against a brute-force model on random ranges,
// and the out-of-range refusal's code.
#include "proto/range_table.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace remora {
namespace {

struct Model {
  std::vector<RangeTable::Range> ranges;
  std::optional<RangeTable::Range> Find(uint64_t p) const {
    for (const auto& r : ranges)
      if (p >= r.base && p - r.base < std::max<uint64_t>(r.size, 1)) return r;
    return std::nullopt;
  }
  bool Covers(uint64_t p, uint64_t n) const {
    for (const auto& r : ranges)
      if (p >= r.base && p - r.base < r.size && n <= r.size - (p - r.base)) return true;
    return false;
  }
};

TEST(RangeTable, AgreesWithAModelOnRandomRanges) {
  std::mt19937_64 rng(7);
  RangeTable t;
  Model m;
  uint64_t next = 0x7000'0000'0000ull;
  for (int i = 0; i < 200; ++i) {  // disjoint ranges with gaps, some empty
    uint64_t size = rng() % 4 == 0 ? 0 : 1 + rng() % 5000;
    t.Add(next, size);
    m.ranges.push_back({next, size});
    next += size + 1 + rng() % 300;
  }
  for (int i = 0; i < 50; ++i) {  // remove some
    size_t k = rng() % m.ranges.size();
    EXPECT_TRUE(t.Remove(m.ranges[k].base));
    EXPECT_FALSE(t.Remove(m.ranges[k].base));
    m.ranges.erase(m.ranges.begin() + long(k));
  }
  ASSERT_EQ(t.size(), m.ranges.size());
  for (int i = 0; i < 20000; ++i) {
    uint64_t p = 0x7000'0000'0000ull - 100 + rng() % (next - 0x7000'0000'0000ull + 200);
    uint64_t n = rng() % 3 == 0 ? rng() : rng() % 6000;  // huge sizes must not wrap
    auto want = m.Find(p);
    auto got = t.Find(p);
    ASSERT_EQ(got.has_value(), want.has_value()) << std::hex << p;
    if (want) {
      EXPECT_EQ(got->base, want->base);
    }
    ASSERT_EQ(t.Covers(p, n), m.Covers(p, n)) << std::hex << p << " +" << n;
  }
  for (const auto& r : m.ranges) EXPECT_EQ(t.SizeAt(r.base), r.size);
  EXPECT_FALSE(t.SizeAt(next).has_value());
  t.Clear();
  EXPECT_EQ(t.size(), 0u);
}

TEST(RangeTable, SharedTableFindsWhatWasAdded) {
  SharedRangeTable t;
  t.Add(4096, 256);
  ASSERT_TRUE(t.Find(4096 + 255).has_value());
  EXPECT_EQ(t.Find(4096 + 255)->base, 4096u);
  EXPECT_FALSE(t.Find(4096 + 256).has_value());
  EXPECT_TRUE(t.Remove(4096));
  EXPECT_FALSE(t.Find(4096).has_value());
}

TEST(RangeTable, OutsideAllocationsIsNvidiasInvalidValue) {
  Status s = OutsideAllocations("cudaMemcpy destination", 0x1000, 64);
  EXPECT_EQ(s.code(), 1);  // cudaErrorInvalidValue
  EXPECT_EQ(s.code(), err::kInvalidValue);
  EXPECT_NE(s.message().find("cudaMemcpy destination [0x1000, +64)"), std::string::npos);
}

}  // namespace
}  // namespace remora
