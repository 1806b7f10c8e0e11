// tests/emu_ptx/kernels_test.cc - nvcc-built kernels run by the interpreter vs CPU references.
#include <algorithm>
#include <cmath>
#include <map>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

class Kernels : public ::testing::Test {
 protected:
  static std::shared_ptr<const Program> Get(const std::string& name) { return CachedKernel(name); }
  std::mt19937 rng{12345};
  TestMemory mem;
};

TEST_F(Kernels, VectorAdd) {
  auto prog = Get("basic");
  ASSERT_TRUE(prog);
  const int n = 50000;
  std::uniform_real_distribution<float> u(-100, 100);
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = u(rng), b[i] = u(rng);
  float* da = mem.Upload(a);
  float* db = mem.Upload(b);
  float* dc = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "vecAdd", {(n + 255) / 256}, {256},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) ASSERT_EQ(dc[i], a[i] + b[i]) << i;
}

TEST_F(Kernels, TiledMatmulWithSharedMemory) {
  auto prog = Get("basic");
  const int n = 64;
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> A(n * n), B(n * n);
  for (auto& v : A) v = u(rng);
  for (auto& v : B) v = u(rng);
  float* dA = mem.Upload(A);
  float* dB = mem.Upload(B);
  float* dC = mem.Alloc<float>(n * n);
  Status s = RunKernel(
      *prog, "matmul", {n / 16, n / 16}, {16, 16},
      [&](Params& p) { p.Add(dA).Add(dB).Add(dC).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) {
      float acc = 0;
      for (int k = 0; k < n; ++k) acc = std::fma(A[r * n + k], B[k * n + c], acc);
      ASSERT_EQ(dC[r * n + c], acc) << r << "," << c;  // same fma chain as the GPU
    }
}

struct Params40 {
  float scale;
  int offset;
  double bias;
  const float* src;
  char tag[3];
};

TEST_F(Kernels, StructByValue) {
  auto prog = Get("basic");
  const int n = 300;
  std::uniform_real_distribution<float> u(-10, 10);
  std::vector<float> src(n);
  for (auto& v : src) v = u(rng);
  Params40 ps{1.5f, -7, 0.25, mem.Upload(src), {3, -5, 9}};
  float* out = mem.Alloc<float>(n);
  const auto& k = prog->kernels()[*prog->FindKernel("structArg")];
  ASSERT_EQ(k.params.size(), 3u);
  EXPECT_EQ(k.params[0].size, 32u);
  EXPECT_EQ(k.params[1].offset, 32u);
  Status s = RunKernel(
      *prog, "structArg", {2}, {256},
      [&](Params& p) {
        std::array<char, 32> raw{};
        std::memcpy(raw.data(), &ps, 32);
        p.Add(raw).Add(out).Add(n);
      },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    float f = std::fma(src[i], ps.scale, float(ps.offset));
    float want = float(double(f) + ps.bias) + float(ps.tag[i % 3]);
    ASSERT_EQ(out[i], want) << i;
  }
}

TEST_F(Kernels, Templates) {
  auto prog = Get("basic");
  const int n = 1000;
  std::uniform_real_distribution<double> u(-5, 5);
  std::vector<float> xf(n), yf(n);
  std::vector<double> xd(n), yd(n);
  std::vector<long long> xl(n), yl(n);
  for (int i = 0; i < n; ++i) {
    xf[i] = float(u(rng)), yf[i] = float(u(rng)), xd[i] = u(rng), yd[i] = u(rng);
    xl[i] = (long long)(rng()) << 20, yl[i] = (long long)rng() - (1ll << 31);
  }
  float* dxf = mem.Upload(xf);
  float* dyf = mem.Upload(yf);
  double* dxd = mem.Upload(xd);
  double* dyd = mem.Upload(yd);
  long long* dxl = mem.Upload(xl);
  long long* dyl = mem.Upload(yl);
  ASSERT_TRUE(RunKernel(
                  *prog, "_Z4axpyIfEvT_PKS0_PS0_i", {4}, {256},
                  [&](Params& p) { p.Add(2.5f).Add(dxf).Add(dyf).Add(n); }, &mem)
                  .ok());
  ASSERT_TRUE(RunKernel(
                  *prog, "_Z4axpyIdEvT_PKS0_PS0_i", {4}, {256},
                  [&](Params& p) { p.Add(-1.25).Add(dxd).Add(dyd).Add(n); }, &mem)
                  .ok());
  ASSERT_TRUE(RunKernel(
                  *prog, "_Z4axpyIxEvT_PKS0_PS0_i", {4}, {256},
                  [&](Params& p) { p.Add(-3ll).Add(dxl).Add(dyl).Add(n); }, &mem)
                  .ok());
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(dyf[i], std::fma(2.5f, xf[i], yf[i])) << i;
    ASSERT_EQ(dyd[i], std::fma(-1.25, xd[i], yd[i])) << i;
    ASSERT_EQ(dyl[i], (long long)((unsigned long long)-3ll * xl[i] + yl[i])) << i;
  }
}

TEST_F(Kernels, IntegerAndBitOps) {
  auto prog = Get("basic");
  const int n = 2000;
  std::vector<unsigned> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = rng(), b[i] = rng();
  a[0] = 0;
  b[1] = 0xffffffffu;
  unsigned* da = mem.Upload(a);
  unsigned* db = mem.Upload(b);
  unsigned* out = mem.Alloc<unsigned>(n * 12);
  Status s = RunKernel(
      *prog, "intOps", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    unsigned x = a[i], y = b[i] | 1u;
    int sx = int(x), sy = int(y);
    if (sx == INT32_MIN && sy == -1) continue;
    unsigned brev = 0;
    for (int k = 0; k < 32; ++k) brev |= ((x >> k) & 1u) << (31 - k);
    uint64_t both = (uint64_t(y) << 32) | x;
    unsigned perm = 0;
    for (int k = 0; k < 4; ++k)
      perm |= unsigned((both >> (8 * ((0x5140 >> (4 * k)) & 7))) & 0xff) << (8 * k);
    unsigned sh = unsigned(sy & 31);
    unsigned funnel = unsigned(((uint64_t(y) << 32 | x) << sh) >> 32);
    unsigned ffs = x ? unsigned(std::countr_zero(x)) + 1 : 0;
    unsigned sad = (sx < sy ? y - x : x - y) + 7u;  // __sad takes ints: sad.s32
    unsigned want[12] = {x / y,
                         x % y,
                         unsigned(sx / sy),
                         unsigned(sx % sy),
                         unsigned(std::popcount(x) + std::countl_zero(y)),
                         brev,
                         perm,
                         funnel,
                         unsigned((uint64_t(x) * y) >> 32),
                         unsigned((int64_t(sx) * sy) >> 32),
                         (x >> (y & 31)) ^ unsigned(sx >> (y & 15)),
                         ffs + sad};
    for (int k = 0; k < 12; ++k)
      ASSERT_EQ(out[i * 12 + k], want[k]) << "element " << i << " op " << k;
  }
}

TEST_F(Kernels, WarpShuffleReduction) {
  auto prog = Get("warp");
  const int n = 10000, block = 256, grid = (n + block - 1) / block;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 2001) - 1000;
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(grid);
  Status s = RunKernel(
      *prog, "warpReduce", {uint32_t(grid)}, {block},
      [&](Params& p) { p.Add(din).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int g = 0; g < grid; ++g) {
    int want = 0;
    for (int i = g * block; i < std::min(n, (g + 1) * block); ++i) want += in[i];
    ASSERT_EQ(out[g], want) << g;
  }
}

TEST_F(Kernels, BlockScanWithDynamicShared) {
  auto prog = Get("warp");
  const int n = 3000, block = 512, grid = (n + block - 1) / block;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 100);
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(n);
  Status s = RunKernel(
      *prog, "blockScan", {uint32_t(grid)}, {block}, [&](Params& p) { p.Add(din).Add(out).Add(n); },
      &mem, block * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int g = 0; g < grid; ++g) {
    int acc = 0;
    for (int i = g * block; i < std::min(n, (g + 1) * block); ++i) {
      acc += in[i];
      ASSERT_EQ(out[i], acc) << i;
    }
  }
}

// A spin lock every lane takes: the lanes of a warp that lose spin until the one that holds it
// goes on, in shared memory (block 0) and global (block 1), blocks of one and of three warps.
TEST_F(Kernels, LanesSpinningOnALockAnotherLaneHoldsAllGetIt) {
  auto prog = Get("warp");
  for (int threads : {32, 96}) {
    std::vector<int> in(threads);
    for (auto& v : in) v = int(rng() % 1000);
    int* din = mem.Upload(in);
    int* out = mem.Alloc<int>(2);
    int* locks = mem.Alloc<int>(2);
    locks[0] = locks[1] = 0;
    const int iters = 3;
    Status s = RunKernel(
        *prog, "laneLock", {2}, {uint32_t(threads)},
        [&](Params& p) { p.Add(din).Add(out).Add(locks).Add(iters); }, &mem);
    ASSERT_TRUE(s.ok()) << s.ToString();
    int want = 0;
    for (int t = 0; t < threads; ++t) want += iters * in[t] + iters * (iters - 1) / 2;
    EXPECT_EQ(out[0], want) << threads << " threads, shared lock";
    EXPECT_EQ(out[1], want) << threads << " threads, global lock";
  }
}

TEST_F(Kernels, ShufflesAndVotes) {
  auto prog = Get("warp");
  const int threads = 128;
  std::vector<int> in(threads);
  for (auto& v : in) v = int(rng() % 1000) + 1;
  in[37] = 5000;
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(threads * 6);
  Status s = RunKernel(
      *prog, "shuffles", {2}, {64}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < threads; ++t) {
    int w = t / 32 * 32, l = t % 32;
    auto v = [&](int lane) { return in[w + lane]; };
    unsigned ballot = 0;
    bool all = true, any = false;
    for (int k = 0; k < 32; ++k) {
      ballot |= unsigned(v(k) & 1) << k;
      all &= v(k) > 0;
      any |= v(k) > 1000;
    }
    int want[6] = {l < 3 ? v(l) : v(l - 3),
                   v((l * 7) & 31),
                   (l % 16) + 5 < 16 ? v(l + 5) : v(l),
                   v(l ^ 9),
                   int(ballot),
                   all * 4 + any * 2 + 1};
    for (int k = 0; k < 6; ++k) ASSERT_EQ(out[t * 6 + k], want[k]) << "thread " << t << " op " << k;
  }
}

TEST_F(Kernels, DivergentBallotUsesActiveLanes) {
  auto prog = Get("warp");
  std::vector<int> in(32);
  for (auto& v : in) v = int(rng() % 16);
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(32);
  Status s = RunKernel(
      *prog, "divergentBallot", {1}, {32}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  unsigned odd = 0, odd2 = 0;
  for (int l = 0; l < 32; ++l) {
    if (in[l] & 1) odd |= 1u << l;
    if ((in[l] & 1) && (in[l] & 2)) odd2 |= 1u << l;
  }
  for (int l = 0; l < 32; ++l)
    ASSERT_EQ(out[l], (in[l] & 1) ? int(odd2) : -std::popcount(~odd)) << l;
}

TEST_F(Kernels, SharedAtomicHistogram) {
  auto prog = Get("atomics");
  const int n = 20000;
  std::vector<unsigned char> in(n);
  for (auto& v : in) v = (unsigned char)(rng() % 256);
  unsigned char* din = mem.Upload(in);
  unsigned* bins = mem.Alloc<unsigned>(256);
  Status s = RunKernel(
      *prog, "histogram", {8}, {128}, [&](Params& p) { p.Add(din).Add(bins).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<unsigned> want(256, 0);
  for (auto v : in) ++want[v];
  for (int b = 0; b < 256; ++b) ASSERT_EQ(bins[b], want[b]) << b;
}

TEST_F(Kernels, GlobalAtomicsAcrossWorkers) {
  auto prog = Get("atomics");
  const int n = 4096;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 2000000) - 1000000;
  int* din = mem.Upload(in);
  float* fsum = mem.Alloc<float>(1);
  double* dsum = mem.Alloc<double>(1);
  auto* u64 = mem.Alloc<unsigned long long>(1);
  int* imin = mem.Alloc<int>(1);
  int* imax = mem.Alloc<int>(1);
  unsigned* ored = mem.Alloc<unsigned>(1);
  unsigned* counter = mem.Alloc<unsigned>(1);
  int* cas = mem.Alloc<int>(1);
  *imin = INT32_MAX;
  *imax = INT32_MIN;
  Status s = RunKernel(
      *prog, "globalAtomics", {n / 128}, {128},
      [&](Params& p) {
        p.Add(din)
            .Add(n)
            .Add(fsum)
            .Add(dsum)
            .Add(u64)
            .Add(imin)
            .Add(imax)
            .Add(ored)
            .Add(counter)
            .Add(cas);
      },
      &mem, 0, nullptr, nullptr, 2);
  ASSERT_TRUE(s.ok()) << s.ToString();
  double wf = 0, wd = 0;
  unsigned long long wu = 0;
  int wmin = INT32_MAX, wmax = INT32_MIN, wcas = 0;
  unsigned wor = 0;
  for (int v : in) {
    wf += v & 1023;
    wd += v * 0.5;
    wu += (unsigned long long)(unsigned)v * 3ull;
    wmin = std::min(wmin, v);
    wmax = std::max(wmax, v);
    wor |= 1u << (v & 31);
    wcas += v & 7;
  }
  EXPECT_EQ(*fsum, float(wf));  // integer-valued partial sums below 2^24 are exact in any order
  EXPECT_EQ(*dsum, wd);
  EXPECT_EQ(*u64, wu);
  EXPECT_EQ(*imin, wmin);
  EXPECT_EQ(*imax, wmax);
  EXPECT_EQ(*ored, wor);
  EXPECT_EQ(*counter, unsigned(n));
  EXPECT_EQ(*cas, wcas);
}

// |got - want| in units of the float spacing at `want`.
double UlpDiff(float got, double want) {
  double ulp = std::ldexp(1.0, std::max(std::ilogb(float(want)), -126) - 23);
  return std::fabs(double(got) - want) / ulp;
}

TEST_F(Kernels, MathFunctionsWithinUlpBounds) {
  auto prog = Get("math");
  const int n = 2000;
  std::uniform_real_distribution<float> u(-10, 10);
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  float* dx = mem.Upload(x);
  float* out = mem.Alloc<float>(n * 8);
  Status s = RunKernel(
      *prog, "mathF", {(n + 255) / 256}, {256}, [&](Params& p) { p.Add(dx).Add(out).Add(n); },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    double v = x[i];
    const float* o = out + i * 8;
    // CUDA's documented bounds: sinf/cosf 2 ulp, expf 2, logf 1, powf 4, sqrtf 0 (IEEE),
    // tanhf 2, division 0 (IEEE); plus one ulp of slack for the reference's own rounding.
    EXPECT_LE(UlpDiff(o[0], std::sin(v)), 3) << "sinf(" << v << ")";
    EXPECT_LE(UlpDiff(o[1], std::cos(v)), 3) << "cosf(" << v << ")";
    EXPECT_LE(UlpDiff(o[2], std::exp(double(float(v * 0.1f)))), 3) << "expf";
    EXPECT_LE(UlpDiff(o[3], std::log(double(std::fabs(x[i]) + 1.0f))), 2) << "logf";
    EXPECT_LE(UlpDiff(o[4], std::pow(double(std::fabs(x[i]) + 0.5f), double(1.3f))), 5) << "powf";
    EXPECT_EQ(o[5], std::sqrt(std::fabs(x[i]))) << "sqrtf";
    EXPECT_LE(UlpDiff(o[6], std::tanh(double(float(v * 0.1f)))), 3) << "tanhf";
    EXPECT_EQ(o[7], x[i] / (x[(i + 1) % n] + 100.0f)) << "div";
  }
}

TEST_F(Kernels, DoubleMath) {
  auto prog = Get("math");
  const int n = 1000;
  std::uniform_real_distribution<double> u(-50, 50);
  std::vector<double> x(n);
  for (auto& v : x) v = u(rng);
  double* dx = mem.Upload(x);
  double* out = mem.Alloc<double>(n * 4);
  Status s = RunKernel(
      *prog, "mathD", {(n + 255) / 256}, {256}, [&](Params& p) { p.Add(dx).Add(out).Add(n); },
      &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    const double* o = out + i * 4;
    EXPECT_EQ(o[0], std::sqrt(std::fabs(x[i])));
    EXPECT_EQ(o[1], x[i] / (x[(i + 1) % n] + 100.0));
    EXPECT_EQ(o[2], std::fma(x[i], 1.5, -2.25));
    double want = std::exp(x[i] * 0.01);
    EXPECT_LE(std::fabs(o[3] - want) / want, 4e-16) << "exp(" << x[i] * 0.01 << ")";
  }
}

TEST_F(Kernels, Conversions) {
  auto prog = Get("math");
  const int n = 2000;
  std::uniform_real_distribution<float> u(-1000, 1000);
  std::vector<float> x(n);
  for (auto& v : x) v = u(rng);
  x[0] = 2.5f;
  x[1] = -3.5f;
  x[2] = 65519.0f;
  x[3] = 1e-6f;
  float* dx = mem.Upload(x);
  int* oi = mem.Alloc<int>(n);
  unsigned* ou = mem.Alloc<unsigned>(n);
  long long* ol = mem.Alloc<long long>(n);
  unsigned short* oh = mem.Alloc<unsigned short>(n);
  float* of = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "convert", {(n + 255) / 256}, {256},
      [&](Params& p) { p.Add(dx).Add(oi).Add(ou).Add(ol).Add(oh).Add(of).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) {
    float v = x[i];
    int wi = int(std::nearbyint(v)) + int(v);
    ASSERT_EQ(oi[i], wi) << v;
    ASSERT_EQ(ou[i], unsigned(std::fabs(v)) + unsigned(std::floor(std::fabs(v)))) << v;
    ASSERT_EQ(ol[i], (long long)(v * 1e6f) + (long long)std::nearbyint(v)) << v;
    _Float16 h = (_Float16)v;
    unsigned short hb;
    std::memcpy(&hb, &h, 2);
    ASSERT_EQ(oh[i], hb) << v;
    float wf = float(h) + std::nearbyint(v);
    wf += std::floor(v);
    wf += std::ceil(v);
    wf += std::trunc(v);
    wf += float(double(v));
    wf += float((long long)wi);
    ASSERT_EQ(of[i], wf) << v;
  }
}

TEST_F(Kernels, ConstantAndDeviceGlobalsWithInitialisers) {
  auto prog = Get("misc");
  const int n = 100;
  float* out = mem.Alloc<float>(n);
  Status s = RunKernel(
      *prog, "useGlobals", {1}, {128}, [&](Params& p) { p.Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const float coef[4] = {1.0f, 2.5f, -3.0f, 0.125f};
  const int table[5] = {10, 20, 30, 40, 50};
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(out[i], std::fma(coef[i & 3], float(table[i % 5]), 30.0f)) << i;
  auto g = prog->FindGlobal("gCounter");
  ASSERT_TRUE(g);
  EXPECT_FALSE(prog->globals()[*g].is_const);
  EXPECT_TRUE(prog->globals()[*prog->FindGlobal("kCoef")].is_const);
  const auto* counter = reinterpret_cast<const unsigned long long*>(prog->impl().own_addresses[*g]);
  EXPECT_EQ(*counter, 12ull);
}

TEST_F(Kernels, RecursiveDeviceFunction) {
  auto prog = Get("misc");
  std::vector<int> in(64);
  for (auto& v : in) v = int(rng() % 16);
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(64);
  Status s = RunKernel(
      *prog, "recursive", {1}, {64}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::function<int(int)> fib = [&](int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); };
  for (int t = 0; t < 64; ++t) ASSERT_EQ(out[t], fib(in[t]) + in[t] * (in[t] + 1) / 2) << t;
}

// Device-side alloca: sizes that differ between the lanes of a warp, allocations that live on
// across a loop, and a callee allocating below its caller's (freed at its return), checked
// against the host. One that does not fit the stack is a launch failure (a GPU's would be
// undefined), saying so.
TEST_F(Kernels, AllocaTakesEachLanesStackAndOverflowFails) {
  auto prog = Get("misc");
  const int threads = 64;
  std::vector<int> n(threads);
  for (auto& v : n) v = 1 + int(rng() % 40);
  int* dn = mem.Upload(n);
  int* out = mem.Alloc<int>(threads);
  Status s = RunKernel(
      *prog, "stackAlloc", {1}, {threads}, [&](Params& p) { p.Add(dn).Add(out).Add(0); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < threads; ++t) {
    int total = 0;
    for (int round = 0; round < 3; ++round)
      for (int i = 0; i < n[t] + round; ++i) total += (t + i * (round + 1)) * (t + i * (round + 1));
    ASSERT_EQ(out[t], total + t) << t;
  }
  s = RunKernel(
      *prog, "stackAlloc", {1}, {threads}, [&](Params& p) { p.Add(dn).Add(out).Add(1); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure);
  EXPECT_NE(s.message().find("stack overflow"), std::string::npos) << s.message();
}

TEST_F(Kernels, PrintfGoesToSink) {
  auto prog = Get("misc");
  std::vector<std::string> lines;
  Status s = RunKernel(
      *prog, "hello", {2}, {3}, [&](Params& p) { p.Add(10); }, &mem, 0,
      [&](std::string_view t) { lines.emplace_back(t); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(lines.size(), 6u);
  std::sort(lines.begin(), lines.end());
  std::vector<std::string> want;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 3; ++t) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "t%d b%d v=%d f=%.3f s=%s x=%x c=%c ll=%lld\n", t, b, 10 + t,
                    5.0, "ok", 255, 'Z', -1234567890123ll);
      want.push_back(buf);
    }
  std::sort(want.begin(), want.end());
  EXPECT_EQ(lines, want);
}

TEST_F(Kernels, OutOfBoundsStoreIsIllegalAddress) {
  auto prog = Get("misc");
  int* p = mem.Alloc<int>(4);
  Status s = RunKernel(
      *prog, "oob", {1}, {32}, [&](Params& q) { q.Add(p).Add(1000); }, &mem);
  EXPECT_EQ(s.code(), err::kIllegalAddress);
  EXPECT_NE(s.message().find("oob"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("global"), std::string::npos) << s.message();
  EXPECT_EQ(p[0], 1);
}

TEST_F(Kernels, DeviceAssertFails) {
  auto prog = Get("misc");
  std::vector<int> v(32, 1);
  v[17] = 500;
  v[30] = 101;
  int* p = mem.Upload(v);
  std::string printed;
  Status s = RunKernel(
      *prog, "checker", {1}, {32}, [&](Params& q) { q.Add(p); }, &mem, 0,
      [&](std::string_view t) { printed += t; });
  EXPECT_EQ(s.code(), err::kAssert);
  EXPECT_NE(s.message().find("p[threadIdx.x] < 100"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("block: [0,0,0], thread: [17,0,0]"), std::string::npos) << s.message();
  // Each failing thread's line reaches the program's output, as a GPU's driver prints it.
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 2) << printed;
  EXPECT_NE(printed.find("thread: [17,0,0] Assertion `p[threadIdx.x] < 100` failed.\n"),
            std::string::npos)
      << printed;
  EXPECT_NE(printed.find("thread: [30,0,0] Assertion"), std::string::npos) << printed;
}

TEST_F(Kernels, DynamicSharedReverse) {
  auto prog = Get("misc");
  const int block = 200, grid = 3;
  std::vector<float> in(block * grid);
  std::uniform_real_distribution<float> u(-1, 1);
  for (auto& v : in) v = u(rng);
  float* din = mem.Upload(in);
  float* out = mem.Alloc<float>(in.size());
  Status s = RunKernel(
      *prog, "dynShared", {grid}, {block}, [&](Params& p) { p.Add(din).Add(out); }, &mem,
      block * 4);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int g = 0; g < grid; ++g)
    for (int t = 0; t < block; ++t)
      ASSERT_EQ(out[g * block + t], in[g * block + block - 1 - t] * 2.0f);
}

TEST_F(Kernels, RdcPairLinkedByLoad) {
  auto prog = MustLoad({KernelPtx("rdc_a"), KernelPtx("rdc_b")});
  ASSERT_TRUE(prog);
  const int n = 500;
  std::vector<int> in(n);
  for (auto& v : in) v = int(rng() % 10000);
  int* din = mem.Upload(in);
  int* out = mem.Alloc<int>(n);
  Status s = RunKernel(
      *prog, "rdcKernel", {2}, {256}, [&](Params& p) { p.Add(din).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], in[i] * 3 - 1 + 1000);
  auto alone = Load(std::vector<std::string>{KernelPtx("rdc_a")});
  EXPECT_EQ(alone.status().code(), err::kInvalidPtx);
}

TEST_F(Kernels, LaunchValidation) {
  auto prog = Get("basic");
  Status s = RunKernel(
      *prog, "vecAdd", {1}, {2048},
      [&](Params& p) { p.Add((float*)nullptr).Add((float*)nullptr).Add((float*)nullptr).Add(0); },
      &mem);
  EXPECT_EQ(s.code(), err::kInvalidValue);
}

}  // namespace
}  // namespace remora::emu::ptx::testing
