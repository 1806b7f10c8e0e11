// tests/emu_ptx/samples_test.cc - sample-style CUDA kernels (kernels/samples.cu, compute.cu,
// intrin.cu, cg.cu, fp16.cu) run by the interpreter on random data vs CPU references.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include <cuda_fp8.h>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

class Samples : public ::testing::Test {
 protected:
  static std::shared_ptr<const Program> Get(const std::string& name) { return CachedKernel(name); }
  std::mt19937 rng{777};
  TestMemory mem;
};

TEST_F(Samples, TransposeWithPaddedTile) {
  auto prog = Get("samples");
  ASSERT_TRUE(prog);
  const int w = 100, h = 70;
  std::vector<float> in(w * h);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : in) v = u(rng);
  float* din = mem.Upload(in);
  float* out = mem.Alloc<float>(w * h);
  Status s = RunKernel(
      *prog, "transposeNoBankConflicts", {(w + 31) / 32, (h + 31) / 32}, {32, 8},
      [&](Params& p) { p.Add(out).Add(din).Add(w).Add(h); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) ASSERT_EQ(out[x * h + y], in[y * w + x]) << x << "," << y;
}

TEST_F(Samples, BitonicSortInSharedMemory) {
  auto prog = Get("samples");
  const int size = 1024, blocks = 3;
  std::vector<unsigned> keys(size * blocks), vals(size * blocks);
  for (int i = 0; i < size * blocks; ++i) keys[i] = rng() % 5000, vals[i] = unsigned(i);
  unsigned* dk = mem.Upload(keys);
  unsigned* dv = mem.Upload(vals);
  unsigned* ok = mem.Alloc<unsigned>(size * blocks);
  unsigned* ov = mem.Alloc<unsigned>(size * blocks);
  for (unsigned dir : {1u, 0u}) {
    Status s = RunKernel(
        *prog, "bitonicSortShared", {blocks}, {size / 2},
        [&](Params& p) { p.Add(ok).Add(ov).Add(dk).Add(dv).Add(dir); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (int b = 0; b < blocks; ++b) {
      std::vector<unsigned> want(keys.begin() + b * size, keys.begin() + (b + 1) * size);
      std::sort(want.begin(), want.end());
      if (!dir) std::reverse(want.begin(), want.end());
      for (int i = 0; i < size; ++i) {
        ASSERT_EQ(ok[b * size + i], want[i]) << "block " << b << " dir " << dir << " at " << i;
        ASSERT_EQ(keys[ov[b * size + i]], ok[b * size + i]) << "value does not travel with key";
      }
      std::vector<unsigned> seen(ov + b * size, ov + (b + 1) * size);
      std::sort(seen.begin(), seen.end());
      for (int i = 0; i < size; ++i) ASSERT_EQ(seen[i], unsigned(b * size + i));
    }
  }
}

TEST_F(Samples, ShflScan) {
  auto prog = Get("samples");
  const int block = 256, blocks = 5, n = block * blocks;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 201) - 100;
  int* data = mem.Upload(in);
  int* partial = mem.Alloc<int>(blocks);
  Status s = RunKernel(
      *prog, "shfl_scan_test", {blocks}, {block},
      [&](Params& p) { p.Add(data).Add(32).Add(partial); }, &mem, block / 32 * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int b = 0; b < blocks; ++b) {
    int acc = 0;
    for (int i = b * block; i < (b + 1) * block; ++i) {
      acc += in[i];
      ASSERT_EQ(data[i], acc) << i;
    }
    ASSERT_EQ(partial[b], acc) << b;
  }
}

TEST_F(Samples, AtomicIntrinsicsIncludingIncDecWrap) {
  auto prog = Get("samples");
  const int blocks = 4, block = 64, n = blocks * block;
  std::vector<int> init = {0, 0, 0, 0, 1 << 30, 0, 0, 0, 0xff, 0, 0, 0, 0};
  int* g = mem.Upload(init);
  std::vector<unsigned long long> init64 = {0, 0, 0};
  auto* g64 = mem.Upload(init64);
  Status s = RunKernel(
      *prog, "atomicIntrinsics", {blocks}, {block}, [&](Params& p) { p.Add(g).Add(g64); }, &mem, 0,
      nullptr, nullptr, 2);
  ASSERT_TRUE(s.ok()) << s.ToString();
  unsigned inc = 0, dec = 0;
  int and_v = 0xff, xor_v = 0;
  unsigned or_v = 0;
  unsigned long long sum64 = 0, max64 = 0;
  for (int t = 0; t < n; ++t) {
    inc = inc >= 17 ? 0 : inc + 1;
    dec = (dec == 0 || dec > 137) ? 137 : dec - 1;
    and_v &= 2 * t + 7;
    or_v |= 1u << (t % 32);
    xor_v ^= t;
    sum64 += (unsigned long long)t << 20;
    max64 = std::max(max64, (unsigned long long)t * 0x100000001ull);
  }
  unsigned s_inc = 0, olds = 0;
  for (int t = 0; t < block; ++t) {
    olds += s_inc;
    s_inc = s_inc >= 5 ? 0 : s_inc + 1;
  }
  EXPECT_EQ(g[0], 10 * n);
  EXPECT_EQ(g[1], -10 * n);
  EXPECT_TRUE(g[2] >= 0 && g[2] < n) << g[2];
  EXPECT_EQ(g[3], n - 1);
  EXPECT_EQ(g[4], 0);
  EXPECT_EQ(unsigned(g[5]), inc);
  EXPECT_EQ(unsigned(g[6]), dec);
  EXPECT_TRUE(g[7] >= 0 && g[7] < n) << g[7];
  EXPECT_EQ(g[8], and_v);
  EXPECT_EQ(unsigned(g[9]), or_v);
  EXPECT_EQ(g[10], xor_v);
  EXPECT_EQ(unsigned(g[11]), s_inc * blocks);
  EXPECT_EQ(unsigned(g[12]), olds * blocks);
  EXPECT_EQ(g64[0], sum64);
  EXPECT_EQ(g64[1], max64);
  EXPECT_EQ((long long)g64[2], -(long long)(n - 1));
}

TEST_F(Samples, VoteIntrinsics) {
  auto prog = Get("samples");
  const int n = 128;
  std::vector<unsigned> in(n);
  for (auto& v : in) v = rng() & 15;
  in[40] |= 2;
  for (int i = 64; i < 96; ++i) in[i] |= 2;     // warp 2: all true
  for (int i = 96; i < 128; ++i) in[i] &= ~9u;  // warp 3: any false, half-any false
  unsigned* din = mem.Upload(in);
  unsigned* out = mem.Alloc<unsigned>(n * 4);
  Status s = RunKernel(
      *prog, "voteAnyAllBallot", {2}, {64}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < n; ++t) {
    int w = t / 32 * 32, l = t % 32;
    bool any = false, all = true, hany = false;
    unsigned ballot = 0;
    for (int k = 0; k < 32; ++k) {
      any |= (in[w + k] & 1) != 0;
      all &= (in[w + k] & 2) != 0;
      ballot |= unsigned((in[w + k] & 4) != 0) << k;
      if (k < 16) hany |= (in[w + k] & 8) != 0;
    }
    EXPECT_EQ(out[t * 4 + 0], unsigned(any)) << t;
    EXPECT_EQ(out[t * 4 + 1], unsigned(all)) << t;
    EXPECT_EQ(out[t * 4 + 2], ballot) << t;
    EXPECT_EQ(out[t * 4 + 3], l < 16 ? unsigned(hany) : 0u) << t;
  }
}

TEST_F(Samples, ClockTimedReduction) {
  auto prog = Get("samples");
  const int blocks = 8, threads = 256;
  std::vector<float> in(threads * 2);
  std::uniform_real_distribution<float> u(-50, 50);
  for (auto& v : in) v = u(rng);
  float* din = mem.Upload(in);
  float* out = mem.Alloc<float>(blocks);
  long long* timer = mem.Alloc<long long>(blocks * 2);
  Status s = RunKernel(
      *prog, "timedReduction", {blocks}, {threads},
      [&](Params& p) { p.Add(din).Add(out).Add(timer); }, &mem, threads * 2 * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  float want = *std::min_element(in.begin(), in.end());
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(out[b], want) << b;
    EXPECT_GT(timer[b], 0) << b;
    EXPECT_GE(timer[b + blocks], timer[b]) << "clock64 went backwards in block " << b;
  }
}

struct F4 {
  float x, y, z, w;
};

TEST_F(Samples, NbodyFloat4Rsqrt) {
  auto prog = Get("compute");
  const int n = 300, block = 128;
  std::vector<F4> pos(n);
  std::uniform_real_distribution<float> u(-10, 10), m(0.5f, 2);
  for (auto& p : pos) p = {u(rng), u(rng), u(rng), m(rng)};
  F4* dpos = mem.Upload(pos);
  F4* acc = mem.Alloc<F4>(n);
  const float soft2 = 0.01f;
  Status s = RunKernel(
      *prog, "nbodyForces", {(n + block - 1) / block}, {block},
      [&](Params& p) { p.Add(dpos).Add(acc).Add(n).Add(soft2); }, &mem, block * 16);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    double a[3] = {0, 0, 0}, mag[3] = {0, 0, 0};
    for (int j = 0; j < n; ++j) {
      double d[3] = {double(pos[j].x) - pos[i].x, double(pos[j].y) - pos[i].y,
                     double(pos[j].z) - pos[i].z};
      double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + soft2;
      double sc = pos[j].w / (d2 * std::sqrt(d2));
      for (int k = 0; k < 3; ++k) a[k] += d[k] * sc, mag[k] += std::fabs(d[k] * sc);
    }
    const float got[3] = {acc[i].x, acc[i].y, acc[i].z};
    for (int k = 0; k < 3; ++k)  // float accumulation of n terms and rsqrt.approx (2^-22)
      ASSERT_LE(std::fabs(got[k] - a[k]), 2e-5 * mag[k] + 1e-30) << "body " << i << " axis " << k;
    EXPECT_EQ(acc[i].w, 0.0f);
  }
}

TEST_F(Samples, SgemmRegisterTiledFloat4) {
  auto prog = Get("compute");
  const int M = 128, N = 192, K = 64;
  std::vector<float> A(M * K), B(K * N), C(M * N);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : A) v = u(rng);
  for (auto& v : B) v = u(rng);
  for (auto& v : C) v = u(rng);
  float* dA = mem.Upload(A);
  float* dB = mem.Upload(B);
  float* dC = mem.Upload(C);
  const float alpha = 1.25f, beta = -0.5f;
  Status s = RunKernel(
      *prog, "sgemm4x4", {N / 64, M / 64}, {16, 16},
      [&](Params& p) { p.Add(M).Add(N).Add(K).Add(alpha).Add(dA).Add(dB).Add(beta).Add(dC); },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c) {
      float acc = 0;  // the kernel's own order: one fma chain over k
      for (int k = 0; k < K; ++k) acc = std::fma(A[r * K + k], B[k * N + c], acc);
      double want = double(alpha) * acc + double(beta) * C[r * N + c];
      double tol = 1e-6 * (std::fabs(alpha * acc) + std::fabs(beta * C[r * N + c])) + 1e-30;
      ASSERT_LE(std::fabs(dC[r * N + c] - want), tol) << r << "," << c;
    }
}

TEST_F(Samples, Stencil3d) {
  auto prog = Get("compute");
  const int nx = 34, ny = 20, nz = 12;
  std::vector<float> in(nx * ny * nz);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : in) v = u(rng);
  float* din = mem.Upload(in);
  std::vector<float> init(in.size(), -7.0f);
  float* out = mem.Upload(init);
  const float c0 = 0.4f, c1 = 0.1f;
  Status s = RunKernel(
      *prog, "stencil3d", {(nx + 15) / 16, (ny + 7) / 8}, {16, 8},
      [&](Params& p) { p.Add(din).Add(out).Add(nx).Add(ny).Add(nz).Add(c0).Add(c1); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const int plane = nx * ny;
  for (int z = 0; z < nz; ++z)
    for (int y = 0; y < ny; ++y)
      for (int x = 0; x < nx; ++x) {
        int i = z * plane + y * nx + x;
        bool interior = x > 0 && y > 0 && z > 0 && x < nx - 1 && y < ny - 1 && z < nz - 1;
        if (!interior) {
          ASSERT_EQ(out[i], -7.0f) << x << "," << y << "," << z;
          continue;
        }
        double nb =
            double(in[i - 1]) + in[i + 1] + in[i - nx] + in[i + nx] + in[i - plane] + in[i + plane];
        double want = c0 * double(in[i]) + c1 * nb;
        double tol = 1e-6 * (std::fabs(c0 * in[i]) + 6 * std::fabs(c1)) + 1e-30;
        ASSERT_LE(std::fabs(out[i] - want), tol) << x << "," << y << "," << z;
      }
}

TEST_F(Samples, IntegerIntrinsics) {
  auto prog = Get("intrin");
  const int n = 1000;
  std::vector<unsigned> a(n), b(n);
  std::vector<unsigned long long> c(n);
  for (int i = 0; i < n; ++i) {
    a[i] = rng(), b[i] = rng(), c[i] = (uint64_t(rng()) << 32) | rng();
    if (i % 7 == 0) a[i] >>= (rng() % 32);
    if (i % 11 == 0) c[i] >>= (rng() % 64);
  }
  a[0] = 0;
  c[1] = 0;
  unsigned* da = mem.Upload(a);
  unsigned* db = mem.Upload(b);
  auto* dc = mem.Upload(c);
  auto* out = mem.Alloc<unsigned long long>(n * 12);
  Status s = RunKernel(
      *prog, "intIntrinsics", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  using u64 = unsigned long long;
  for (int i = 0; i < n; ++i) {
    unsigned x = a[i], y = b[i];
    u64 z = c[i];
    uint64_t both = (uint64_t(y) << 32) | x;
    unsigned sel = y & 0x7777, perm = 0;
    for (int k = 0; k < 4; ++k)
      perm |= unsigned((both >> (8 * ((sel >> (4 * k)) & 7))) & 0xff) << (8 * k);
    unsigned shl = unsigned(z & 63) & 31;
    unsigned shr = std::min<unsigned>(unsigned(z & 63), 32);
    unsigned brev = 0;
    for (int k = 0; k < 32; ++k) brev |= ((x >> k) & 1u) << (31 - k);
    u64 brevll = 0;
    for (int k = 0; k < 64; ++k) brevll |= ((z >> k) & 1ull) << (63 - k);
    auto ffs64 = [](u64 v) { return v ? std::countr_zero(v) + 1 : 0; };
    u64 zs = z >> (x & 63);
    unsigned ys = y >> (x & 31);
    int sx = int(x), sy = int(y);
    unsigned sad =
        (sx > sy ? unsigned(sx) - unsigned(sy) : unsigned(sy) - unsigned(sx)) + (x & 0xffff);
    unsigned usad = (x > y ? x - y : y - x) + 3;
    auto mul24 = [](int p, int q) {
      int64_t r = int64_t(int32_t(uint32_t(p) << 8) >> 8) * int64_t(int32_t(uint32_t(q) << 8) >> 8);
      return int32_t(uint32_t(r));
    };
    u64 want[12] = {
        perm,
        unsigned(both << shl >> 32),
        unsigned(both >> shr),
        u64(brev) ^ (brevll << 1),
        u64(ffs64(x) + 100 * ffs64(z)),
        u64(std::popcount(z) + 100 * std::popcount(y)),
        u64(std::countl_zero(zs) + 100 * std::countl_zero(ys)),
        u64(unsigned(int32_t((int64_t(sx) * sy) >> 32))),
        u64((unsigned __int128)z * (u64(x) * y + 12345) >> 64),
        u64(sad) + 7ull * usad,
        u64((__int128)(long long)z * (long long)sx >> 64),
        u64(unsigned((u64(x) * y) >> 32)) + u64((long long)mul24(sx, sy)) * 3,
    };
    for (int k = 0; k < 12; ++k)
      ASSERT_EQ(out[i * 12 + k], want[k]) << "element " << i << " intrinsic " << k;
  }
}

void CheckTileReduce(const Program& prog, TestMemory& mem, std::mt19937& rng) {
  const int n = 1000, block = 128, blocks = (n + block - 1) / block;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 20001) - 10000;
  int* din = mem.Upload(in);
  int* sums = mem.Alloc<int>(blocks);
  int* maxes = mem.Alloc<int>(blocks * block / 32);
  Status s = RunKernel(
      prog, "cgTileReduce", {blocks}, {block},
      [&](Params& p) { p.Add(din).Add(sums).Add(maxes).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto v = [&](int i) { return i < n ? in[i] : 0; };
  for (int b = 0; b < blocks; ++b) {
    int sum = 0;
    for (int i = b * block; i < (b + 1) * block; ++i) sum += v(i);
    EXPECT_EQ(sums[b], sum) << b;
  }
  for (int w = 0; w < blocks * block / 32; ++w) {
    int mx = INT32_MIN;
    for (int i = w * 32; i < (w + 1) * 32; ++i) mx = std::max(mx, v(i));
    EXPECT_EQ(maxes[w], mx) << w;
  }
  const int m = 96;
  std::vector<float> f(m);
  for (auto& x : f) x = float(int(rng() % 17) - 8);
  float* df = mem.Upload(f);
  float* out = mem.Alloc<float>(m * 3);
  s = RunKernel(
      prog, "cgTileShuffle", {1}, {m}, [&](Params& p) { p.Add(df).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < m; ++t) {
    int w = t / 32 * 32, l = t % 32;
    float sum = 0;  // small integers: exact in any order
    unsigned ballot = 0;
    bool any = false;
    for (int k = 0; k < 32; ++k) {
      sum += f[w + k];
      ballot |= unsigned(f[w + k] > 0) << k;
      any |= f[w + k] > 3;
    }
    EXPECT_EQ(out[t * 3], sum) << t;
    EXPECT_EQ(out[t * 3 + 1], l == 0 ? f[t] : f[t - 1]) << t;
    EXPECT_EQ(out[t * 3 + 2], float(ballot & 0xffff) + float(any)) << t;
  }
}

TEST_F(Samples, CooperativeGroupsTileReduce) {
  auto prog = Get("cg");
  ASSERT_TRUE(prog);
  CheckTileReduce(*prog, mem, rng);
}

TEST_F(Samples, CooperativeGroupsTileReduceSm90) {  // cg::reduce becomes redux.sync
  auto prog = Get("cg_90");
  ASSERT_TRUE(prog);
  CheckTileReduce(*prog, mem, rng);
}

// A tile of four warps reduces through the block's reserved shared memory, which the driver
// keeps past the block's own (two blocks of 256 threads: two tiles each).
TEST_F(Samples, CooperativeGroupsMultiWarpTileReduceUsesReservedSharedMemory) {
  auto prog = Get("cg_90");
  ASSERT_TRUE(prog);
  const int n = 512;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 20001) - 10000;
  int* din = mem.Upload(in);
  int* sums = mem.Alloc<int>(n / 128);
  Status s = RunKernel(
      *prog, "cgMultiWarpReduce", {2}, {256}, [&](Params& p) { p.Add(din).Add(sums); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < n / 128; ++t) {
    int sum = 0;
    for (int i = t * 128; i < (t + 1) * 128; ++i) sum += in[i];
    EXPECT_EQ(sums[t], sum) << t;
  }
}

// ---- half precision ----
uint16_t H(_Float16 h) {
  return std::bit_cast<uint16_t>(h);
}
_Float16 Hf(uint16_t b) {
  return std::bit_cast<_Float16>(b);
}
bool HNan(uint16_t b) {
  return (b & 0x7c00) == 0x7c00 && (b & 0x3ff);
}
// GPU results: NaN is the canonical 0x7fff.
uint16_t HCanon(_Float16 h) {
  return h != h ? 0x7fff : H(h);
}
uint16_t HMin(uint16_t a, uint16_t b, bool mx) {
  if (HNan(a) && HNan(b)) return 0x7fff;
  if (HNan(a)) return b;
  if (HNan(b)) return a;
  float x = float(Hf(a)), y = float(Hf(b));
  if (x == y) return (std::signbit(x) != mx) ? a : b;
  return (x < y) != mx ? a : b;
}

std::vector<uint16_t> RandomHalves(std::mt19937& rng, int n) {
  const uint16_t specials[] = {0x7c00, 0xfc00, 0x7e00, 0x8000, 0x0000,
                               0x0001, 0x83ff, 0x7bff, 0x3c00, 0x0400};
  std::uniform_real_distribution<float> u(-10, 10);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = rng() % 8 == 0 ? specials[rng() % 10] : H(_Float16(u(rng)));
  return v;
}

class Half : public Samples, public ::testing::WithParamInterface<const char*> {};

TEST_P(Half, ScalarArithmetic) {
  auto prog = Get(GetParam());
  ASSERT_TRUE(prog);
  const int n = 600;
  auto a = RandomHalves(rng, n), b = RandomHalves(rng, n), c = RandomHalves(rng, n);
  auto* da = mem.Upload(a);
  auto* db = mem.Upload(b);
  auto* dc = mem.Upload(c);
  auto* out = mem.Alloc<uint16_t>(n * 10);
  Status s = RunKernel(
      *prog, "halfArith", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    double x = double(Hf(a[i])), y = double(Hf(b[i])), z = double(Hf(c[i]));
    long double fma = (long double)x * y + z;  // exact: the span of f16 fma fits 64 bits
    bool gt = x > y;
    uint16_t want[10] = {
        HCanon(_Float16(x + y)),  // exact in double: one rounding
        HCanon(_Float16(x - y)),
        HCanon(_Float16(x * y)),
        HCanon(_Float16(fma)),
        uint16_t(a[i] ^ 0x8000),
        uint16_t(b[i] & 0x7fff),
        HMin(a[i], b[i], false),
        HMin(a[i], b[i], true),
        gt ? a[i] : c[i],
        HCanon(_Float16(std::fma(float(x), 0.3f, float(z)))),  // nvcc contracts to fma.f32
    };
    for (int k = 0; k < 10; ++k)
      ASSERT_EQ(out[i * 10 + k], want[k]) << "element " << i << " op " << k << std::hex
                                          << " a=" << a[i] << " b=" << b[i] << " c=" << c[i];
  }
}

TEST_P(Half, PairedArithmetic) {
  auto prog = Get(GetParam());
  const int n = 400;
  auto a = RandomHalves(rng, 2 * n), b = RandomHalves(rng, 2 * n), c = RandomHalves(rng, 2 * n);
  auto* da = mem.Upload(a);
  auto* db = mem.Upload(b);
  auto* dc = mem.Upload(c);
  auto* out = mem.Alloc<uint16_t>(n * 12);
  Status s = RunKernel(
      *prog, "half2Arith", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i)
    for (int e = 0; e < 2; ++e) {
      int j = 2 * i + e;
      double x = double(Hf(a[j])), y = double(Hf(b[j])), z = double(Hf(c[j]));
      uint16_t want[6] = {
          HCanon(_Float16(x + y)), HCanon(_Float16(x - y)),
          HCanon(_Float16(x * y)), HCanon(_Float16((long double)x * y + z)),
          uint16_t(a[j] | 0x8000), HMin(HMin(a[j], b[j], false), c[j], true),
      };
      for (int k = 0; k < 6; ++k)
        ASSERT_EQ(out[i * 12 + k * 2 + e], want[k])
            << "element " << j << " op " << k << std::hex << " a=" << a[j] << " b=" << b[j]
            << " c=" << c[j];
    }
}

// bf16 references written independently of the emulator: nearest-even on the float's bits,
// and rounding a double to 8 significant bits for results computed exactly.
uint16_t BfRn(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
uint16_t BfRz(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fff;
  return uint16_t(u >> 16);
}
float BfF(uint16_t b) {
  return std::bit_cast<float>(uint32_t(b) << 16);
}
uint16_t BfRnExact(double v) {  // v normal in float range
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  int e;
  double m = std::frexp(v, &e);
  return BfRz(float(std::ldexp(std::nearbyint(std::ldexp(m, 8)), e - 8)));
}

// float -> f16 toward zero, as a float (v within the f16 range).
float HalfRz(float v) {
  if (v == 0) return v;
  int e;
  std::frexp(v, &e);
  int q = std::max(e - 11, -24);
  return float(std::ldexp(std::trunc(std::ldexp(double(v), -q)), q));
}

TEST_P(Half, Bfloat16Conversions) {
  bool native = std::string(GetParam()) == "fp16_90";  // fma/add/mul.bf16 in hardware
  auto prog = Get(GetParam());
  const int n = 800;
  std::vector<float> in(n);
  std::uniform_real_distribution<float> u(-300, 300);
  for (auto& v : in) v = u(rng);
  in[0] = 0.0f;
  in[1] = -0.0f;
  in[2] = 1.00390625f;  // exactly between two bf16 values
  float* din = mem.Upload(in);
  auto* obf = mem.Alloc<uint16_t>(n * 3);
  float* of = mem.Alloc<float>(n * 3);
  Status s = RunKernel(
      *prog, "bf16Convert", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(din).Add(obf).Add(of).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    float v = in[i];
    uint16_t rn = BfRn(v), rz = BfRz(v), h = BfRn(v * 0.5f);
    double x = BfF(rn), y = BfF(h), z = BfF(rz);
    uint16_t fma = native ? BfRnExact(x * y + z) : BfRn(std::fma(float(x), float(y), float(z)));
    uint16_t sum = native ? BfRnExact(x + y) : BfRn(float(x) + float(y));
    uint16_t prod = native ? BfRnExact(z * y) : BfRn(float(z) * float(y));
    ASSERT_EQ(obf[i * 3 + 0], rn) << v;
    ASSERT_EQ(obf[i * 3 + 1], rz) << v;
    ASSERT_EQ(obf[i * 3 + 2], fma) << v;
    ASSERT_EQ(of[i * 3 + 0], BfF(rn)) << v;
    ASSERT_EQ(of[i * 3 + 1], BfF(sum) + BfF(prod)) << v;
    ASSERT_EQ(of[i * 3 + 2], float(int(BfF(rn))) + HalfRz(v)) << v;
  }
}

// 8-bit floats to and from f32 and f16 pairs, checked bit for bit against cuda_fp8.h's own host
// code: every f16 pattern, and f32s of every exponent the formats reach, their rounding ties,
// overflow thresholds, infinities and NaNs. compute_75 runs the header's software conversions,
// compute_90 the cvt forms the GPU has for them.
TEST_P(Half, Fp8ConversionsMatchCudasOwn) {
  auto prog = Get(GetParam());
  const int n = 32768;  // pairs
  std::vector<float> in(2 * n);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<int> exp(-28, 20);
  for (auto& v : in) {
    const uint32_t b = bits(rng);
    // A random significand at a random exponent; one in eight cut to few bits (ties).
    float m = std::bit_cast<float>(0x3f800000u | (b & 0x7fffffu));
    if (b % 8 == 0) m = std::bit_cast<float>(0x3f800000u | (b & 0x700000u) | 0x80000u);
    v = std::ldexp(m, exp(rng)) * ((b >> 31) ? -1.0f : 1.0f);
  }
  const float special[] = {0.0f,      -0.0f,    INFINITY,    -INFINITY,  NAN,         -NAN,
                           448.0f,    464.0f,   464.5f,      480.0f,     -470.0f,     57344.0f,
                           61440.0f,  61441.0f, -1e30f,      0x1p-10f,   0x1.01p-10f, 0x1p-9f,
                           0x1.8p-9f, 0x1p-17f, 0x1.01p-17f, 0x1.8p-16f, 0x1p-149f,   0x1p-6f,
                           0x1.fp-7f, 3.4e38f};
  for (size_t k = 0; k < std::size(special); ++k) in[k] = special[k];
  std::vector<uint16_t> halves(2 * n);
  for (int k = 0; k < 2 * n; ++k) halves[k] = uint16_t(k);  // every f16 pattern
  auto* din = mem.Upload(in);
  auto* dh = mem.Upload(halves);
  auto* o8 = mem.Alloc<uint16_t>(n * 4);
  auto* oh = mem.Alloc<uint32_t>(n * 4);
  Status s = RunKernel(
      *prog, "fp8Convert", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(din).Add(dh).Add(o8).Add(oh).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  int bad = 0;
  for (int i = 0; i < n && bad < 10; ++i) {
    const float2 f{in[2 * i], in[2 * i + 1]};
    __half2_raw h;
    h.x = halves[2 * i];
    h.y = halves[2 * i + 1];
    const uint16_t want[4] = {__nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E4M3),
                              __nv_cvt_float2_to_fp8x2(f, __NV_SATFINITE, __NV_E5M2),
                              __nv_cvt_halfraw2_to_fp8x2(h, __NV_SATFINITE, __NV_E4M3),
                              __nv_cvt_halfraw2_to_fp8x2(h, __NV_SATFINITE, __NV_E5M2)};
    for (int k = 0; k < 4; ++k) {
      const __half2_raw back = __nv_cvt_fp8x2_to_halfraw2(want[k], k % 2 ? __NV_E5M2 : __NV_E4M3);
      const uint32_t want_h = uint32_t(back.y) << 16 | back.x;
      if (o8[i * 4 + k] != want[k] || oh[i * 4 + k] != want_h) {
        ADD_FAILURE() << "pair " << i << " form " << k << ": inputs " << f.x << ", " << f.y
                      << " (halves 0x" << std::hex << h.x << ", 0x" << h.y << "): got 0x"
                      << o8[i * 4 + k] << " -> 0x" << oh[i * 4 + k] << ", want 0x" << want[k]
                      << " -> 0x" << want_h;
        ++bad;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, Half, ::testing::Values("fp16", "fp16_90"));

}  // namespace
}  // namespace remora::emu::ptx::testing
