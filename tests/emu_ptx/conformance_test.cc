// tests/emu_ptx/conformance_test.cc - kernels/conformance.cu for every value width, at
// compute_75 and compute_90, against CPU references on random data.
//
// Values are drawn so that every sum is exact in any order (floats hold small integers,
// doubles halves), and 64-bit values use their high words; unsigned sums wrap, as on a GPU.
#include <bit>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

template <class T>
struct Kind;
template <>
struct Kind<int32_t> {
  static constexpr const char* kSuffix = "i32";
  static int32_t Draw(std::mt19937_64& r) { return int32_t(r() % 20001) - 10000; }
};
template <>
struct Kind<uint32_t> {
  static constexpr const char* kSuffix = "u32";
  static uint32_t Draw(std::mt19937_64& r) { return uint32_t(r()); }
};
template <>
struct Kind<int64_t> {
  static constexpr const char* kSuffix = "i64";
  static int64_t Draw(std::mt19937_64& r) { return int64_t(r() % (1ull << 41)) - (1ll << 40); }
};
template <>
struct Kind<uint64_t> {
  static constexpr const char* kSuffix = "u64";
  static uint64_t Draw(std::mt19937_64& r) { return r(); }
};
template <>
struct Kind<float> {
  static constexpr const char* kSuffix = "f32";
  static float Draw(std::mt19937_64& r) { return float(int(r() % 201) - 100); }
};
template <>
struct Kind<double> {
  static constexpr const char* kSuffix = "f64";
  static double Draw(std::mt19937_64& r) {
    return double(int64_t(r() % (1u << 21)) - (1 << 20)) / 2;
  }
};

// Sums as the device does: wrapping for integers (signed through unsigned), exact for ours.
template <class T>
T Add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return T(U(a) + U(b));
  } else {
    return a + b;
  }
}

class Conformance : public ::testing::TestWithParam<const char*> {
 protected:
  const Program& Prog() {
    auto p = CachedKernel(GetParam());
    EXPECT_TRUE(p);
    return *p;
  }
  template <class T>
  std::string Name(const char* kernel) {
    return std::string(kernel) + "_" + Kind<T>::kSuffix;
  }
  template <class T>
  std::vector<T> Draw(size_t n) {
    std::vector<T> v(n);
    for (auto& x : v) x = Kind<T>::Draw(rng);
    return v;
  }

  template <class T>
  void ReduceClassic(const char* kernel, uint32_t block, uint32_t per_block, uint32_t grid,
                     uint32_t n) {
    SCOPED_TRACE(Name<T>(kernel));
    std::vector<T> in = Draw<T>(n);
    T* din = mem.Upload(in);
    T* out = mem.Alloc<T>(grid);
    Status s = RunKernel(
        Prog(), Name<T>(kernel), {grid}, {block}, [&](Params& p) { p.Add(din).Add(out).Add(n); },
        &mem, block * sizeof(T));
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<T> want(grid, T(0));
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t b = i % (per_block * grid) / per_block;
      want[b] = Add(want[b], in[i]);
    }
    for (uint32_t b = 0; b < grid; ++b) ASSERT_EQ(out[b], want[b]) << "block " << b;
  }

  template <class T>
  void WarpCollectives() {
    SCOPED_TRACE(Name<T>("warpCollectives"));
    const uint32_t blocks = 3, block = 64, n = blocks * block;
    std::vector<T> in = Draw<T>(n);
    for (uint32_t i = 0; i < n; i += 3) in[i] = in[i / 3];  // repeats for match_any
    T* din = mem.Upload(in);
    T* out = mem.Alloc<T>(n * 8);
    Status s = RunKernel(
        Prog(), Name<T>("warpCollectives"), {blocks}, {block},
        [&](Params& p) { p.Add(din).Add(out); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (uint32_t g = 0; g < n; ++g) {
      const uint32_t base = g / 32 * 32, l = g % 32;
      auto v = [&](uint32_t lane) { return in[base + lane]; };
      T sum = T(0);
      uint32_t ballot = 0, match = 0;
      for (uint32_t k = 0; k < 32; ++k) {
        sum = Add(sum, v(k));
        ballot |= uint32_t((static_cast<long long>(v(k)) & 1) != 0) << k;
        match |= uint32_t(std::memcmp(&in[base + k], &in[g], sizeof(T)) == 0) << k;
      }
      const T want[8] = {l < 31 ? v(l + 1) : v(l),
                         l >= 3 ? v(l - 3) : v(l),
                         v(l ^ 5),
                         v((l * 7) & 31),
                         v(l ^ 2),
                         sum,
                         T(ballot),
                         T(match)};
      for (int k = 0; k < 8; ++k) ASSERT_EQ(out[g * 8 + k], want[k]) << "lane " << g << " op " << k;
    }
  }

  template <class T>
  void SharedMixed() {
    SCOPED_TRACE(Name<T>("sharedMixed"));
    const uint32_t blocks = 4, block = 128, n = blocks * block;
    std::vector<T> in = Draw<T>(n);
    T* din = mem.Upload(in);
    T* rev = mem.Alloc<T>(n);
    T* sums = mem.Alloc<T>(blocks);
    Status s = RunKernel(
        Prog(), Name<T>("sharedMixed"), {blocks}, {block},
        [&](Params& p) { p.Add(din).Add(rev).Add(sums); }, &mem, block * sizeof(T));
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (uint32_t b = 0; b < blocks; ++b) {
      T sum = T(0);
      for (uint32_t t = 0; t < block; ++t) {
        sum = Add(sum, in[b * block + t]);
        ASSERT_EQ(rev[b * block + t], in[b * block + block - 1 - t]) << b << "," << t;
      }
      ASSERT_EQ(sums[b], sum) << "block " << b;
    }
  }

  template <class T>
  void CgTiles() {
    SCOPED_TRACE(Name<T>("cgTiles"));
    const uint32_t blocks = 3, block = 96, n = blocks * block;
    std::vector<T> in = Draw<T>(n);
    T* din = mem.Upload(in);
    T* s32 = mem.Alloc<T>(n / 32);
    T* s8 = mem.Alloc<T>(n / 8);
    T* scan = mem.Alloc<T>(n);
    Status s = RunKernel(
        Prog(), Name<T>("cgTiles"), {blocks}, {block},
        [&](Params& p) { p.Add(din).Add(s32).Add(s8).Add(scan); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    auto tile_sum = [&](uint32_t first, uint32_t size) {
      T sum = T(0);
      for (uint32_t i = first; i < first + size; ++i) sum = Add(sum, in[i]);
      return sum;
    };
    for (uint32_t t = 0; t < n / 32; ++t) ASSERT_EQ(s32[t], tile_sum(t * 32, 32)) << "tile32 " << t;
    for (uint32_t t = 0; t < n / 8; ++t) ASSERT_EQ(s8[t], tile_sum(t * 8, 8)) << "tile8 " << t;
    for (uint32_t g = 0; g < n; ++g)
      ASSERT_EQ(scan[g], tile_sum(g / 16 * 16, g % 16 + 1)) << "scan16 " << g;
  }

  template <class T>
  void CubReduce(uint32_t n) {
    SCOPED_TRACE(Name<T>("cubReduce") + " n=" + std::to_string(n));
    const uint32_t grid = 8, threads = grid * 256;
    std::vector<T> in = Draw<T>(n);
    T* din = mem.Upload(in);
    T* bsums = mem.Alloc<T>(grid);
    T* wsums = mem.Alloc<T>(threads / 32);
    Status s = RunKernel(
        Prog(), Name<T>("cubReduce"), {grid}, {256},
        [&](Params& p) { p.Add(din).Add(n).Add(bsums).Add(wsums); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::vector<T> want(grid, T(0));
    for (uint32_t i = 0; i < n; ++i) want[i % threads / 256] = Add(want[i % threads / 256], in[i]);
    for (uint32_t b = 0; b < grid; ++b) ASSERT_EQ(bsums[b], want[b]) << "block " << b;
    for (uint32_t w = 0; w * 32 < std::min(n, threads); ++w) {
      T sum = T(0);
      for (uint32_t i = w * 32; i < std::min(n, w * 32 + 32); ++i) sum = Add(sum, in[i]);
      ASSERT_EQ(wsums[w], sum) << "warp " << w;
    }
  }

  template <class T>
  void All() {
    // The classic sample's default shape (n = 65536, 256 threads, 64 blocks), then a block that
    // is not a whole number of warps over a length that is not a power of two.
    ReduceClassic<T>("reduceClassic", 256, 512, 64, 65536);
    ReduceClassic<T>("reduceClassicNp2", 96, 96, 7, 10007);
    WarpCollectives<T>();
    SharedMixed<T>();
    CgTiles<T>();
    CubReduce<T>(8 * 256 - 13);
    CubReduce<T>(3 * 8 * 256 + 77);
  }

  std::mt19937_64 rng{20261127};
  TestMemory mem;
};

TEST_P(Conformance, Int32) {
  All<int32_t>();
}
TEST_P(Conformance, Uint32) {
  All<uint32_t>();
}
TEST_P(Conformance, Int64) {
  All<int64_t>();
}
TEST_P(Conformance, Uint64) {
  All<uint64_t>();
}
TEST_P(Conformance, Float) {
  All<float>();
}
TEST_P(Conformance, Double) {
  All<double>();
}

TEST_P(Conformance, NarrowValuesWidenedIntoSums) {
  const uint32_t n = 50000;
  std::vector<int8_t> a(n);
  std::vector<int16_t> b(n);
  int32_t want32 = 0;
  int64_t want64 = 0;
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = int8_t(rng());
    b[i] = int16_t(rng());
    want32 += a[i] + b[i];
    want64 += int64_t(a[i]) * b[i];
  }
  int8_t* da = mem.Upload(a);
  int16_t* db = mem.Upload(b);
  int32_t* o32 = mem.Upload(std::vector<int32_t>{0});
  int64_t* o64 = mem.Upload(std::vector<int64_t>{0});
  Status s = RunKernel(
      Prog(), "widenSum", {13}, {160},
      [&](Params& p) { p.Add(da).Add(db).Add(o32).Add(o64).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(*o32, want32);
  EXPECT_EQ(*o64, want64);
}

TEST_P(Conformance, SignedLoadsIntoWideRegistersSignExtend) {
  struct Cell {
    int32_t value;
    int16_t half;
    int8_t byte;
    const Cell* next;
  };
  const int n = 300;
  Cell* cells = mem.Alloc<Cell>(n);
  int64_t want[3] = {0, 0, 0};
  for (int i = 0; i < n; ++i) {
    cells[i] = {int32_t(rng()), int16_t(rng()), int8_t(rng()), i + 1 < n ? &cells[i + 1] : nullptr};
    want[0] += cells[i].value;
    want[1] += cells[i].half;
    want[2] += cells[i].byte;
  }
  int64_t* out = mem.Alloc<int64_t>(3);
  Status s = RunKernel(
      Prog(), "listSum", {1}, {1}, [&](Params& p) { p.Add(cells).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(out[0], want[0]) << "s32";
  EXPECT_EQ(out[1], want[1]) << "s16";
  EXPECT_EQ(out[2], want[2]) << "s8";
}

INSTANTIATE_TEST_SUITE_P(Arch, Conformance, ::testing::Values("conformance", "conformance_90"),
                         [](const auto& info) {
                           return std::string(info.param) == "conformance" ? "compute75"
                                                                           : "compute90";
                         });

}  // namespace
}  // namespace remora::emu::ptx::testing
