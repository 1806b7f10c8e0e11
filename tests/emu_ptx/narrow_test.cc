// tests/emu_ptx/narrow_test.cc - the 16-bit and packed forms CUDA's headers emit: .f16/.bf16
// atomics and atom.cas.b16, set with half-precision operands, ex2/tanh.approx on half types,
// .u16x2/.s16x2 add/min/max, the SIMD video instructions (vadd4 ... vmax2) and the scalar ones
// (vadd ... vset). Each runs
// hand-written PTX on random and edge-case inputs against a CPU reference of the PTX ISA.
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <random>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

// ---- 16-bit float references ----
struct Fmt {
  int man, ebits;
};
constexpr Fmt kH{10, 5}, kB{7, 8};

int Bias(Fmt f) {
  return (1 << (f.ebits - 1)) - 1;
}
uint16_t InfBits(Fmt f) {
  return uint16_t(((1 << f.ebits) - 1) << f.man);
}
bool IsSub16(uint16_t h, Fmt f) {
  return (h & InfBits(f)) == 0 && (h & 0x7fff) != 0;
}
// The exact value of a 16-bit float.
long double Real(uint16_t h, Fmt f) {
  uint32_t e = (h >> f.man) & ((1u << f.ebits) - 1), m = h & ((1u << f.man) - 1);
  long double v;
  if (e == (1u << f.ebits) - 1)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = std::ldexp((long double)m, 1 - Bias(f) - f.man);
  else
    v = std::ldexp((long double)(m | (1u << f.man)), int(e) - Bias(f) - f.man);
  return (h & 0x8000) ? -v : v;
}
// `v` rounded to nearest even in format f (overflow to infinity); NaN is 0x7fff.
uint16_t Round16(long double v, Fmt f) {
  if (v != v) return 0x7fff;
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  long double a = std::fabs(v);
  if (std::isinf(a)) return sign | InfBits(f);
  if (a == 0) return sign;
  int q = std::max(std::ilogb(a) - f.man, 1 - Bias(f) - f.man);
  uint64_t n = uint64_t(std::nearbyint(std::ldexp(a, -q)));
  if (n == (uint64_t{1} << (f.man + 1))) {
    n >>= 1;
    ++q;
  }
  if (q + f.man > Bias(f)) return sign | InfBits(f);
  if (n < (uint64_t{1} << f.man)) return uint16_t(sign | n);
  return uint16_t(sign | uint32_t(q + f.man + Bias(f)) << f.man | (n - (uint64_t{1} << f.man)));
}
// f16 a + b through the host's own binary16 (the sum is exact in double).
uint16_t HalfAdd(uint16_t a, uint16_t b) {
  double s = double(Real(a, kH)) + double(Real(b, kH));
  if (s != s) return 0x7fff;
  return std::bit_cast<uint16_t>(_Float16(s));
}
// bf16 a + b: the double sum is exact or far from a bf16 rounding boundary.
uint16_t BfAdd(uint16_t a, uint16_t b) {
  return Round16(double(Real(a, kB)) + double(Real(b, kB)), kB);
}

// Random 16-bit floats, a third of them from the edge cases.
uint16_t Pick16(std::mt19937& rng, Fmt f) {
  const uint16_t inf = InfBits(f);
  const uint16_t one = uint16_t(Bias(f)) << f.man;
  const uint16_t specials[] = {0,
                               0x8000,
                               inf,
                               uint16_t(inf | 0x8000),
                               uint16_t(inf | (1 << (f.man - 1))),  // quiet NaN
                               uint16_t(inf | 1),                   // signalling NaN
                               uint16_t(0x8000 | inf | 5),
                               1,
                               0x8001,
                               uint16_t((1 << f.man) - 1),  // largest subnormal
                               uint16_t(1 << f.man),        // smallest normal
                               one,
                               uint16_t(one | 0x8000),
                               uint16_t(inf - 1),  // largest finite
                               uint16_t((inf - 1) | 0x8000)};
  if (rng() % 3 == 0) return specials[rng() % std::size(specials)];
  return uint16_t(rng());
}
// A second operand: often equal to the first, its negation or a neighbour.
uint16_t Partner(std::mt19937& rng, uint16_t a, Fmt f) {
  switch (rng() % 6) {
    case 0:
      return a;
    case 1:
      return a ^ 0x8000;
    case 2:
      return uint16_t(a + 1);
    default:
      return Pick16(rng, f);
  }
}

// Runs `body` on in.size() / 3 threads in blocks of 256: each loads three b32 inputs into
// %r1..%r3 and stores %r4 and %r5. Returns the outputs, two per thread (none if it failed).
std::vector<uint32_t> RunWords(const std::string& body, const std::vector<uint32_t>& in) {
  const std::string ptx = R"(.version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out, .param .u32 k_n) {
  .reg .b32 %r<24>; .reg .b64 %rd<8>; .reg .f32 %f<8>; .reg .pred %p<8>; .reg .b16 %h<16>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  ld.param.u32 %r20, [k_n];
  mov.u32 %r21, %tid.x;
  mov.u32 %r22, %ctaid.x;
  mov.u32 %r23, %ntid.x;
  mad.lo.u32 %r9, %r22, %r23, %r21;
  setp.ge.u32 %p7, %r9, %r20;
  @%p7 bra DONE;
  mul.wide.u32 %rd3, %r9, 12;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %r1, [%rd4];
  ld.global.u32 %r2, [%rd4+4];
  ld.global.u32 %r3, [%rd4+8];
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
)" + body + R"(
  mul.wide.u32 %rd5, %r9, 8;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v2.u32 [%rd6], {%r4, %r5};
DONE:
  ret;
})";
  auto prog = MustLoad({ptx});
  if (!prog) return {};
  const uint32_t n = uint32_t(in.size() / 3);
  TestMemory mem;
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(2 * n);
  Status s = RunKernel(
      *prog, "k", {(n + 255) / 256}, {256}, [&](Params& p) { p.Add(din).Add(out).Add(n); }, &mem);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return {};
  return std::vector<uint32_t>(out, out + 2 * n);
}

// Replaces every "{c}" in `text` with `with`.
std::string Subst(std::string text, const std::string& with) {
  for (size_t at; (at = text.find("{c}")) != std::string::npos;) text.replace(at, 3, with);
  return text;
}

// ---- atomics ----
const char* const kAtomHeader = R"(.version 9.0
.target sm_90
.address_size 64
)";

// Many threads of several blocks add to one address of each type, with values whose sums are
// exact in any order, so the final value is known; `old` values must chain (no lost update).
TEST(NarrowAtomics, HalfAddsFromManyBlocksAreAtomic) {
  const std::string ptx = std::string(kAtomHeader) + R"(
.visible .entry k(.param .u64 k_in, .param .u64 k_acc, .param .u64 k_old) {
  .reg .b16 %h<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_acc];
  ld.param.u64 %rd3, [k_old];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  mul.wide.u32 %rd4, %r4, 16;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u16 %h1, [%rd5];
  ld.global.u16 %h2, [%rd5+2];
  ld.global.u32 %r5, [%rd5+4];
  ld.global.u32 %r6, [%rd5+8];
  atom.global.add.noftz.f16 %h3, [%rd2], %h1;
  atom.global.add.noftz.bf16 %h4, [%rd2+2], %h2;
  atom.global.add.noftz.f16x2 %r7, [%rd2+4], %r5;
  atom.global.add.noftz.bf16x2 %r8, [%rd2+8], %r6;
  red.global.add.noftz.f16 [%rd2+12], %h1;
  red.add.noftz.bf16x2 [%rd2+16], %r6;
  atom.add.noftz.f16x2 %r9, [%rd2+20], %r5;
  add.s64 %rd6, %rd3, %rd4;
  st.global.u16 [%rd6], %h3;
  st.global.u16 [%rd6+2], %h4;
  st.global.u32 [%rd6+4], %r7;
  st.global.u32 [%rd6+8], %r8;
  st.global.u32 [%rd6+12], %r9;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int blocks = 16, threads = 128, n = blocks * threads;
  std::mt19937 rng(71);
  // Values -1, 0 and 1: every partial sum, in any order, lies between minus the count of -1s
  // and the count of 1s, an integer exact in f16 (below 2048 threads) and in bf16 (one thread
  // in eight: below 256).
  auto h = [&] { return Round16(int(rng() % 3) - 1, kH); };
  auto b = [&](int t) { return Round16(t % 8 ? 0 : (rng() & 1) ? 1 : -1, kB); };
  std::vector<uint16_t> in(size_t(n) * 8);
  for (int t = 0; t < n; ++t) {
    in[t * 8 + 0] = h();
    in[t * 8 + 1] = b(t);
    in[t * 8 + 2] = h();
    in[t * 8 + 3] = h();
    in[t * 8 + 4] = b(t);
    in[t * 8 + 5] = b(t + 1);  // another eighth of the threads for the high half
  }
  TestMemory mem;
  uint16_t* din = mem.Upload(in);
  uint16_t* acc = mem.Alloc<uint16_t>(12);
  std::fill_n(acc, 12, 0);
  acc[0] = Round16(7, kH);  // start away from zero
  uint16_t* old = mem.Alloc<uint16_t>(size_t(n) * 8);
  Status s = RunKernel(
      *prog, "k", {blocks}, {threads}, [&](Params& p) { p.Add(din).Add(acc).Add(old); }, &mem, 0,
      nullptr, nullptr, 2);
  ASSERT_TRUE(s.ok()) << s.ToString();
  double want[6] = {7, 0, 0, 0, 0, 0};  // f16, bf16, f16x2 lo/hi, bf16x2 lo/hi
  for (int t = 0; t < n; ++t) {
    want[0] += double(Real(in[t * 8 + 0], kH));
    want[1] += double(Real(in[t * 8 + 1], kB));
    want[2] += double(Real(in[t * 8 + 2], kH));
    want[3] += double(Real(in[t * 8 + 3], kH));
    want[4] += double(Real(in[t * 8 + 4], kB));
    want[5] += double(Real(in[t * 8 + 5], kB));
  }
  EXPECT_EQ(acc[0], Round16(want[0], kH));
  EXPECT_EQ(acc[1], Round16(want[1], kB));
  EXPECT_EQ(acc[2], Round16(want[2], kH));
  EXPECT_EQ(acc[3], Round16(want[3], kH));
  EXPECT_EQ(acc[4], Round16(want[4], kB));
  EXPECT_EQ(acc[5], Round16(want[5], kB));
  EXPECT_EQ(acc[6], Round16(want[0] - 7, kH));  // red.global.add.noftz.f16
  EXPECT_EQ(acc[8], Round16(want[4], kB));      // red.add.noftz.bf16x2 (generic)
  EXPECT_EQ(acc[9], Round16(want[5], kB));
  EXPECT_EQ(acc[10], Round16(want[2], kH));  // atom.add.noftz.f16x2 (generic)
  EXPECT_EQ(acc[11], Round16(want[3], kH));
  // Every f16 add saw the sum of those before it: the old values and the values after each
  // add are the same multiset, but for the first old (7) and the last new (the final value).
  std::vector<double> before, after;
  for (int t = 0; t < n; ++t) {
    double o = double(Real(old[t * 8], kH));
    before.push_back(o);
    after.push_back(o + double(Real(in[t * 8], kH)));
  }
  before.push_back(want[0]);
  after.push_back(7);
  std::sort(before.begin(), before.end());
  std::sort(after.begin(), after.end());
  EXPECT_EQ(before, after);
}

// Each block adds into its own shared words (directly and through a generic address); thread 0
// then copies them out.
TEST(NarrowAtomics, HalfAddsToSharedMemory) {
  const std::string ptx = std::string(kAtomHeader) + R"(
.visible .entry k(.param .u64 k_in, .param .u64 k_out) {
  .shared .align 4 .b8 acc[16];
  .reg .b16 %h<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra ADD;
  st.shared.v4.u32 [acc], {%r1, %r1, %r1, %r1};
ADD:
  bar.sync 0;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  mul.wide.u32 %rd4, %r4, 8;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u16 %h1, [%rd5];
  ld.global.u16 %h2, [%rd5+2];
  ld.global.u16 %h5, [%rd5+4];
  ld.global.u16 %h6, [%rd5+6];
  mov.b32 %r5, {%h5, %h1};
  mov.b32 %r6, {%h6, %h2};
  atom.shared.add.noftz.f16 %h3, [acc], %h1;
  atom.shared.add.noftz.bf16 %h4, [acc+2], %h2;
  atom.shared.add.noftz.f16x2 %r7, [acc+4], %r5;
  mov.u64 %rd6, acc;
  cvta.shared.u64 %rd7, %rd6;
  atom.add.noftz.bf16x2 %r7, [%rd7+8], %r6;
  red.shared.add.noftz.bf16 [acc+12], %h6;
  red.shared.add.noftz.f16 [acc+14], %h5;
  bar.sync 0;
  @%p1 bra DONE;
  ld.shared.v4.u32 {%r8, %r9, %r10, %r11}, [acc];
  mul.wide.u32 %rd8, %r2, 16;
  add.s64 %rd9, %rd2, %rd8;
  st.global.v4.u32 [%rd9], {%r8, %r9, %r10, %r11};
DONE:
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int blocks = 6, threads = 256, n = blocks * threads;
  std::mt19937 rng(72);
  std::vector<uint16_t> in(size_t(n) * 4);
  // Per thread: a (f16, multiples of 0.25 in [-1, 1]), b (bf16, -1..1), c (f16, -1..1) and
  // d (bf16, -1..1). A block's partial sums stay within +-256: exact in both formats.
  const Fmt fmts[4] = {kH, kB, kH, kB};
  for (int t = 0; t < n; ++t) {
    in[t * 4 + 0] = Round16(0.25L * int(rng() % 9) - 1, kH);
    in[t * 4 + 1] = Round16(int(rng() % 3) - 1, kB);
    in[t * 4 + 2] = Round16(int(rng() % 3) - 1, kH);
    in[t * 4 + 3] = Round16(int(rng() % 3) - 1, kB);
  }
  TestMemory mem;
  uint16_t* din = mem.Upload(in);
  uint16_t* out = mem.Alloc<uint16_t>(size_t(blocks) * 8);
  Status s = RunKernel(
      *prog, "k", {blocks}, {threads}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int blk = 0; blk < blocks; ++blk) {
    double w[4] = {};
    for (int t = blk * threads; t < (blk + 1) * threads; ++t)
      for (int k = 0; k < 4; ++k) w[k] += double(Real(in[t * 4 + k], fmts[k]));
    const uint16_t* o = out + blk * 8;
    EXPECT_EQ(o[0], Round16(w[0], kH)) << blk;  // f16 a
    EXPECT_EQ(o[1], Round16(w[1], kB)) << blk;  // bf16 b
    EXPECT_EQ(o[2], Round16(w[2], kH)) << blk;  // f16x2 {c, a}
    EXPECT_EQ(o[3], Round16(w[0], kH)) << blk;
    EXPECT_EQ(o[4], Round16(w[3], kB)) << blk;  // bf16x2 {d, b}, generic address
    EXPECT_EQ(o[5], Round16(w[1], kB)) << blk;
    EXPECT_EQ(o[6], Round16(w[3], kB)) << blk;  // red bf16 d
    EXPECT_EQ(o[7], Round16(w[2], kH)) << blk;  // red f16 c
  }
}

// One thread per address: the rounding of every kind of operand pair, and the old value.
TEST(NarrowAtomics, HalfAddRoundsToNearestEvenKeepingSubnormals) {
  const std::string ptx = std::string(kAtomHeader) + R"(
.visible .entry k(.param .u64 k_acc, .param .u64 k_b, .param .u64 k_old) {
  .reg .b16 %h<8>; .reg .b32 %r<16>; .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [k_acc];
  ld.param.u64 %rd2, [k_b];
  ld.param.u64 %rd3, [k_old];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  mul.wide.u32 %rd4, %r4, 12;
  add.s64 %rd5, %rd1, %rd4;
  add.s64 %rd6, %rd2, %rd4;
  add.s64 %rd7, %rd3, %rd4;
  ld.global.u16 %h1, [%rd6];
  ld.global.u16 %h2, [%rd6+2];
  ld.global.u32 %r5, [%rd6+4];
  ld.global.u32 %r6, [%rd6+8];
  atom.global.add.noftz.f16 %h3, [%rd5], %h1;
  atom.add.noftz.bf16 %h4, [%rd5+2], %h2;
  atom.global.add.noftz.f16x2 %r7, [%rd5+4], %r5;
  atom.global.add.noftz.bf16x2 %r8, [%rd5+8], %r6;
  st.global.u16 [%rd7], %h3;
  st.global.u16 [%rd7+2], %h4;
  st.global.u32 [%rd7+4], %r7;
  st.global.u32 [%rd7+8], %r8;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int n = 4096;
  std::mt19937 rng(73);
  // Per thread 6 (a, b) pairs: f16, bf16, f16x2 lo/hi, bf16x2 lo/hi.
  const Fmt fmts[6] = {kH, kB, kH, kH, kB, kB};
  std::vector<uint16_t> a(size_t(n) * 6), b(size_t(n) * 6);
  for (int i = 0; i < n * 6; ++i) {
    Fmt f = fmts[i % 6];
    a[i] = Pick16(rng, f);
    switch (rng() % 4) {
      case 0: {  // about half an ulp of a (a power of two: an exact tie), either sign
        uint16_t mag = a[i] & 0x7fff, shift = uint16_t((f.man + 1) << f.man);
        b[i] = mag > shift && mag < InfBits(f) ? uint16_t(mag - shift) : uint16_t(rng() % 64);
        if (rng() & 1) b[i] &= uint16_t(~((1u << f.man) - 1));
        b[i] ^= uint16_t(rng() & 0x8000);
        break;
      }
      case 1:  // overflow
        b[i] = uint16_t((InfBits(f) - 1 - (rng() & 3)) | (a[i] & 0x8000));
        break;
      default:
        b[i] = Partner(rng, a[i], f);
    }
  }
  TestMemory mem;
  uint16_t* acc = mem.Upload(a);
  uint16_t* db = mem.Upload(b);
  uint16_t* old = mem.Alloc<uint16_t>(size_t(n) * 6);
  Status s = RunKernel(
      *prog, "k", {n / 128}, {128}, [&](Params& p) { p.Add(acc).Add(db).Add(old); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int i = 0; i < n * 6; ++i) {
    uint16_t want = fmts[i % 6].ebits == 5 ? HalfAdd(a[i], b[i]) : BfAdd(a[i], b[i]);
    ASSERT_EQ(acc[i], want) << "pair " << i % 6 << std::hex << ": " << a[i] << " + " << b[i];
    ASSERT_EQ(old[i], a[i]) << i;
  }
}

// atom.cas.b16 in a CAS loop from many blocks: two 16-bit counters sharing one 32-bit word
// (global), one per block in shared memory (direct and generic), and immediate operands.
TEST(NarrowAtomics, CasB16LoopsFromManyBlocks) {
  const std::string ptx = std::string(kAtomHeader) + R"(
.visible .entry k(.param .u64 k_cnt, .param .u64 k_old, .param .u64 k_blk) {
  .shared .align 4 .b8 cnt[4];
  .reg .b16 %h<12>; .reg .b32 %r<16>; .reg .b64 %rd<16>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [k_cnt];
  ld.param.u64 %rd2, [k_old];
  ld.param.u64 %rd3, [k_blk];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mad.lo.u32 %r4, %r2, %r3, %r1;
  setp.ne.u32 %p3, %r1, 0;
  @%p3 bra START;
  st.shared.u32 [cnt], 0;
START:
  bar.sync 0;
  and.b32 %r5, %r4, 1;
  mul.wide.u32 %rd4, %r5, 2;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u16 %h1, [%rd5];
GLOBAL:
  add.u16 %h2, %h1, 1;
  atom.global.cas.b16 %h3, [%rd5], %h1, %h2;
  setp.ne.s16 %p1, %h3, %h1;
  mov.b16 %h1, %h3;
  @%p1 bra GLOBAL;
  mul.wide.u32 %rd6, %r4, 2;
  add.s64 %rd7, %rd2, %rd6;
  st.global.u16 [%rd7], %h3;
  mov.u64 %rd8, cnt;
  cvta.shared.u64 %rd9, %rd8;
  add.s64 %rd10, %rd9, %rd4;
  mov.u16 %h4, 0;
SHARED:
  add.u16 %h5, %h4, 3;
  atom.cas.b16 %h6, [%rd10], %h4, %h5;
  setp.ne.s16 %p2, %h6, %h4;
  mov.b16 %h4, %h6;
  @%p2 bra SHARED;
  bar.sync 0;
  @%p3 bra DONE;
  atom.shared.cas.b16 %h8, [cnt+2], 240, 9;
  atom.shared.cas.b16 %h9, [cnt], 0xffff, 1;
  ld.shared.u32 %r6, [cnt];
  cvt.u32.u16 %r7, %h8;
  cvt.u32.u16 %r8, %h9;
  shl.b32 %r8, %r8, 16;
  or.b32 %r7, %r7, %r8;
  mul.wide.u32 %rd11, %r2, 8;
  add.s64 %rd12, %rd3, %rd11;
  st.global.v2.u32 [%rd12], {%r6, %r7};
DONE:
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int blocks = 12, threads = 160, n = blocks * threads;
  TestMemory mem;
  uint16_t* cnt = mem.Alloc<uint16_t>(4);
  cnt[0] = 0xfff0;  // wraps past 0xffff
  cnt[1] = 5;
  cnt[2] = 0x1234;  // the neighbouring word stays as it is
  cnt[3] = 0x5678;
  uint16_t* old = mem.Alloc<uint16_t>(n);
  uint32_t* blk = mem.Alloc<uint32_t>(blocks * 2);
  Status s = RunKernel(
      *prog, "k", {blocks}, {threads}, [&](Params& p) { p.Add(cnt).Add(old).Add(blk); }, &mem, 0,
      nullptr, nullptr, 2);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(cnt[0], uint16_t(0xfff0 + n / 2));
  EXPECT_EQ(cnt[1], uint16_t(5 + n / 2));
  EXPECT_EQ(cnt[2], 0x1234);
  EXPECT_EQ(cnt[3], 0x5678);
  // Each successful CAS replaced a distinct value: the olds of each counter are its run.
  for (int k = 0; k < 2; ++k) {
    std::vector<uint16_t> got, want;
    for (int t = k; t < n; t += 2) {
      got.push_back(old[t]);
      want.push_back(uint16_t((k ? 5 : 0xfff0) + t / 2));
    }
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << "counter " << k;
  }
  // Per block: threads / 2 adds of 3 to each shared counter (240), then thread 0's cas of the
  // high one from 240 to 9 succeeds and its cas of the low one from 0xffff fails: each returns
  // the value it found.
  for (int b = 0; b < blocks; ++b) {
    EXPECT_EQ(blk[b * 2], 240u | 9u << 16) << b;
    EXPECT_EQ(blk[b * 2 + 1], 240u | 240u << 16) << b;
  }
}

// ---- set with half-precision operands ----
const char* const kCmps[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                             "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

bool CmpRef(const std::string& c, long double a, long double b) {
  bool un = a != a || b != b;
  if (c == "num") return !un;
  if (c == "nan") return un;
  bool r = c.starts_with("eq")   ? a == b
           : c.starts_with("ne") ? a != b
           : c.starts_with("lt") ? a < b
           : c.starts_with("le") ? a <= b
           : c.starts_with("gt") ? a > b
                                 : a >= b;
  return c.size() == 3 ? (un || r) : (!un && r);
}

// One form of set: its PTX (with {c} for the comparison) and a reference of %r4 and %r5 from
// the comparison, the inputs and the predicate %p1 (bit 0 of %r3).
struct SetForm {
  const char* name;
  const char* body;
  Fmt fmt;  // of the 16-bit halves of %r1 and %r2
  std::function<std::pair<uint32_t, uint32_t>(const std::string&, uint32_t, uint32_t, bool)> ref;
};

TEST(NarrowSet, HalfOperandsMatchReference) {
  auto lo = [](uint32_t v) { return uint16_t(v); };
  auto hi = [](uint32_t v) { return uint16_t(v >> 16); };
  auto cmp = [](const std::string& c, uint16_t a, uint16_t b, Fmt f, bool ftz = false) {
    if (ftz && IsSub16(a, f)) a &= 0x8000;
    if (ftz && IsSub16(b, f)) b &= 0x8000;
    return CmpRef(c, Real(a, f), Real(b, f));
  };
  const SetForm forms[] = {
      {"f16 dest", R"(
  mov.b32 {%h1, %h2}, %r1;
  mov.b32 {%h3, %h4}, %r2;
  set.{c}.f16.f16 %h5, %h1, %h3;
  set.{c}.f16.f16 %h6, %h2, %h4;
  mov.b32 %r4, {%h5, %h6};
  set.{c}.ftz.f16.f16 %h7, %h1, %h3;
  set.{c}.ftz.u16.f16 %h8, %h2, %h4;
  mov.b32 %r5, {%h7, %h8};)",
       kH,
       [&](const std::string& c, uint32_t a, uint32_t b, bool) {
         auto one = [](bool v) { return v ? 0x3c00u : 0u; };
         return std::pair<uint32_t, uint32_t>{
             one(cmp(c, lo(a), lo(b), kH)) | one(cmp(c, hi(a), hi(b), kH)) << 16,
             one(cmp(c, lo(a), lo(b), kH, true)) | (cmp(c, hi(a), hi(b), kH, true) ? 0xffffu : 0u)
                                                       << 16};
       }},
      {"integer dest", R"(
  mov.b32 {%h1, %h2}, %r1;
  mov.b32 {%h3, %h4}, %r2;
  set.{c}.u32.f16 %r4, %h1, %h3;
  set.{c}.s16.f16 %h5, %h2, %h4;
  setp.ne.b32 %p1, %r3, 0;
  set.{c}.and.s32.f16 %r6, %h2, %h4, %p1;
  cvt.u32.u16 %r7, %h5;
  xor.b32 %r5, %r6, %r7;)",
       kH,
       [&](const std::string& c, uint32_t a, uint32_t b, bool p) {
         bool v1 = cmp(c, hi(a), hi(b), kH);
         return std::pair<uint32_t, uint32_t>{cmp(c, lo(a), lo(b), kH) ? 0xffffffffu : 0u,
                                              (v1 && p ? 0xffffffffu : 0u) ^ (v1 ? 0xffffu : 0u)};
       }},
      {"f16x2", R"(
  set.{c}.f16x2.f16x2 %r4, %r1, %r2;
  setp.ne.b32 %p1, %r3, 0;
  set.{c}.or.ftz.u32.f16x2 %r5, %r1, %r2, !%p1;)",
       kH,
       [&](const std::string& c, uint32_t a, uint32_t b, bool p) {
         auto one = [](bool v) { return v ? 0x3c00u : 0u; };
         auto ones = [](bool v) { return v ? 0xffffu : 0u; };
         return std::pair<uint32_t, uint32_t>{
             one(cmp(c, lo(a), lo(b), kH)) | one(cmp(c, hi(a), hi(b), kH)) << 16,
             ones(cmp(c, lo(a), lo(b), kH, true) || !p) | ones(cmp(c, hi(a), hi(b), kH, true) || !p)
                                                              << 16};
       }},
      {"bf16", R"(
  mov.b32 {%h1, %h2}, %r1;
  mov.b32 {%h3, %h4}, %r2;
  setp.ne.b32 %p1, %r3, 0;
  set.{c}.bf16.bf16 %h5, %h1, %h3;
  set.{c}.xor.u16.bf16 %h6, %h2, %h4, %p1;
  mov.b32 %r4, {%h5, %h6};
  set.{c}.bf16x2.bf16x2 %r5, %r1, %r2;)",
       kB,
       [&](const std::string& c, uint32_t a, uint32_t b, bool p) {
         auto one = [](bool v) { return v ? 0x3f80u : 0u; };
         return std::pair<uint32_t, uint32_t>{
             one(cmp(c, lo(a), lo(b), kB)) | (cmp(c, hi(a), hi(b), kB) != p ? 0xffffu : 0u) << 16,
             one(cmp(c, lo(a), lo(b), kB)) | one(cmp(c, hi(a), hi(b), kB)) << 16};
       }},
      {"bf16x2 integer dest", R"(
  setp.ne.b32 %p1, %r3, 0;
  set.{c}.and.s32.bf16x2 %r4, %r1, %r2, %p1;
  set.{c}.s32.bf16x2 %r5, %r1, %r2;)",
       kB,
       [&](const std::string& c, uint32_t a, uint32_t b, bool p) {
         auto ones = [](bool v) { return v ? 0xffffu : 0u; };
         uint32_t plain = ones(cmp(c, lo(a), lo(b), kB)) | ones(cmp(c, hi(a), hi(b), kB)) << 16;
         return std::pair<uint32_t, uint32_t>{p ? plain : 0u, plain};
       }},
      // A 16-bit float destination from wider sources (the low halves widened exactly).
      {"f16/bf16 dest of f32 and s32", R"(
  mov.b32 {%h1, %h2}, %r1;
  mov.b32 {%h3, %h4}, %r2;
  cvt.f32.f16 %f1, %h1;
  cvt.f32.f16 %f2, %h3;
  set.{c}.ftz.f16.f32 %h5, %f1, %f2;
  mov.b32 %r4, {%h5, %h5};
  setp.ne.b32 %p1, %r3, 0;
  set.{c}.or.bf16.f32 %h6, %f1, %f2, %p1;
  cvt.u32.u16 %r5, %h6;)",
       kH,
       [&](const std::string& c, uint32_t a, uint32_t b, bool p) {
         // .ftz flushes f32 subnormals only: every f16 value is a normal f32.
         uint32_t v = cmp(c, lo(a), lo(b), kH) ? 0x3c00u : 0u;
         return std::pair<uint32_t, uint32_t>{v | v << 16,
                                              cmp(c, lo(a), lo(b), kH) || p ? 0x3f80u : 0u};
       }},
  };
  std::mt19937 rng(74);
  for (const SetForm& form : forms) {
    const int n = 700;
    std::vector<uint32_t> in(n * 3);
    for (int t = 0; t < n; ++t) {
      uint16_t a0 = Pick16(rng, form.fmt), a1 = Pick16(rng, form.fmt);
      in[t * 3] = a0 | uint32_t(a1) << 16;
      in[t * 3 + 1] = Partner(rng, a0, form.fmt) | uint32_t(Partner(rng, a1, form.fmt)) << 16;
      in[t * 3 + 2] = rng() & 1;
    }
    for (const char* c : kCmps) {
      SCOPED_TRACE(std::string(form.name) + " " + c);
      auto out = RunWords(Subst(form.body, c), in);
      ASSERT_EQ(out.size(), size_t(2 * n));
      for (int t = 0; t < n; ++t) {
        auto [w4, w5] = form.ref(c, in[t * 3], in[t * 3 + 1], in[t * 3 + 2] != 0);
        ASSERT_EQ(out[t * 2], w4) << std::hex << in[t * 3] << " " << in[t * 3 + 1];
        ASSERT_EQ(out[t * 2 + 1], w5)
            << std::hex << in[t * 3] << " " << in[t * 3 + 1] << " p " << in[t * 3 + 2];
      }
    }
  }
}

// ---- ex2.approx and tanh.approx on 16-bit floats: every input ----
uint16_t Ex2Ref(uint16_t x, Fmt f, bool ftz) {
  if (ftz && IsSub16(x, f)) x &= 0x8000;
  uint16_t r = Round16(std::exp2(Real(x, f)), f);
  if (ftz && IsSub16(r, f)) r &= 0x8000;
  return r;
}
uint16_t TanhRef(uint16_t x, Fmt f) {
  return Round16(std::tanh(Real(x, f)), f);
}

// All 65536 inputs of each format, in both the scalar and the packed form: the result must be
// the exactly rounded value (the accuracy the emulator provides, within PTX's bounds).
TEST(NarrowApprox, Ex2AndTanhOnEveryHalfInput) {
  struct Case {
    const char* name;
    const char* body;
    Fmt f;
    bool ftz;
  };
  const Case cases[] = {
      {"f16", R"(
  mov.b32 {%h1, %h2}, %r1;
  ex2.approx.f16 %h3, %h1;
  ex2.approx.f16 %h4, %h2;
  mov.b32 %r4, {%h3, %h4};
  tanh.approx.f16 %h5, %h1;
  tanh.approx.f16 %h6, %h2;
  mov.b32 %r5, {%h5, %h6};)",
       kH, false},
      {"f16x2", "ex2.approx.f16x2 %r4, %r1; tanh.approx.f16x2 %r5, %r1;", kH, false},
      {"bf16", R"(
  mov.b32 {%h1, %h2}, %r1;
  ex2.approx.ftz.bf16 %h3, %h1;
  ex2.approx.ftz.bf16 %h4, %h2;
  mov.b32 %r4, {%h3, %h4};
  tanh.approx.bf16 %h5, %h1;
  tanh.approx.bf16 %h6, %h2;
  mov.b32 %r5, {%h5, %h6};)",
       kB, true},
      {"bf16x2", "ex2.approx.ftz.bf16x2 %r4, %r1; tanh.approx.bf16x2 %r5, %r1;", kB, true},
  };
  const int n = 32768;  // two inputs per thread
  std::vector<uint32_t> in(n * 3);
  for (int t = 0; t < n; ++t) in[t * 3] = uint32_t(2 * t) | uint32_t(2 * t + 1) << 16;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto out = RunWords(c.body, in);
    ASSERT_EQ(out.size(), size_t(2 * n));
    for (int t = 0; t < n; ++t) {
      for (int k = 0; k < 2; ++k) {
        uint16_t x = uint16_t(2 * t + k);
        ASSERT_EQ(uint16_t(out[t * 2] >> (16 * k)), Ex2Ref(x, c.f, c.ftz))
            << "ex2 " << std::hex << x;
        ASSERT_EQ(uint16_t(out[t * 2 + 1] >> (16 * k)), TanhRef(x, c.f))
            << "tanh " << std::hex << x;
      }
    }
  }
}

// ---- packed 16-bit integers ----
TEST(NarrowInt, AddMinMaxOnU16x2AndS16x2) {
  struct Case {
    const char* body;
    std::function<uint16_t(uint16_t, uint16_t)> f4, f5;  // per half: %r4, %r5
  };
  auto s = [](uint16_t v) { return int16_t(v); };
  const Case cases[] = {
      {"add.u16x2 %r4, %r1, %r2; add.s16x2 %r5, %r1, %r2;",
       [](uint16_t a, uint16_t b) { return uint16_t(a + b); },
       [](uint16_t a, uint16_t b) { return uint16_t(a + b); }},
      {"min.u16x2 %r4, %r1, %r2; min.s16x2 %r5, %r1, %r2;",
       [](uint16_t a, uint16_t b) { return std::min(a, b); },
       [&](uint16_t a, uint16_t b) { return uint16_t(std::min(s(a), s(b))); }},
      {"max.u16x2 %r4, %r1, %r2; max.s16x2 %r5, %r1, %r2;",
       [](uint16_t a, uint16_t b) { return std::max(a, b); },
       [&](uint16_t a, uint16_t b) { return uint16_t(std::max(s(a), s(b))); }},
      {"min.relu.s16x2 %r4, %r1, %r2; max.relu.s16x2 %r5, %r1, %r2;",
       [&](uint16_t a, uint16_t b) { return uint16_t(std::max<int>(0, std::min(s(a), s(b)))); },
       [&](uint16_t a, uint16_t b) { return uint16_t(std::max<int>(0, std::max(s(a), s(b)))); }},
  };
  std::mt19937 rng(75);
  const int n = 1024;
  std::vector<uint32_t> in(n * 3);
  const uint16_t edges[] = {0, 1, 0x7fff, 0x8000, 0xffff, 0x8001};
  for (auto& v : in) {
    uint16_t h0 = rng() % 4 ? uint16_t(rng()) : edges[rng() % 6];
    uint16_t h1 = rng() % 4 ? uint16_t(rng()) : edges[rng() % 6];
    v = h0 | uint32_t(h1) << 16;
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    auto out = RunWords(c.body, in);
    ASSERT_EQ(out.size(), size_t(2 * n));
    for (int t = 0; t < n; ++t) {
      uint32_t a = in[t * 3], b = in[t * 3 + 1];
      auto pack = [&](const std::function<uint16_t(uint16_t, uint16_t)>& f) {
        return f(uint16_t(a), uint16_t(b)) | uint32_t(f(uint16_t(a >> 16), uint16_t(b >> 16)))
                                                 << 16;
      };
      ASSERT_EQ(out[t * 2], pack(c.f4)) << std::hex << a << " " << b;
      ASSERT_EQ(out[t * 2 + 1], pack(c.f5)) << std::hex << a << " " << b;
    }
  }
}

TEST(NarrowInt, MinMaxReluS32) {
  std::mt19937 rng(76);
  const int n = 512;
  std::vector<uint32_t> in(n * 3);
  for (auto& v : in) v = rng() % 8 ? uint32_t(rng()) : uint32_t(int32_t(rng() % 5) - 2);
  auto out = RunWords("min.relu.s32 %r4, %r1, %r2; max.relu.s32 %r5, %r1, %r2;", in);
  ASSERT_EQ(out.size(), size_t(2 * n));
  for (int t = 0; t < n; ++t) {
    int32_t a = int32_t(in[t * 3]), b = int32_t(in[t * 3 + 1]);
    ASSERT_EQ(out[t * 2], uint32_t(std::max(0, std::min(a, b)))) << a << " " << b;
    ASSERT_EQ(out[t * 2 + 1], uint32_t(std::max(0, std::max(a, b)))) << a << " " << b;
  }
}

// ---- the same through nvcc: cuda_fp16.h / cuda_bf16.h (kernels/fp16.cu) ----
class NarrowNvcc : public ::testing::TestWithParam<const char*> {};

// How far `got` is from the exact value, in units of format f's spacing there (0 when both
// are the same infinity or both NaN; infinite when only one is).
double UlpsOff(uint16_t got, long double exact, Fmt f) {
  long double g = Real(got, f);
  if (g != g || exact != exact) return (g != g && exact != exact) ? 0 : INFINITY;
  uint16_t r = Round16(exact, f);
  if (std::isinf(Real(r, f)) || std::isinf(g)) return got == r ? 0 : INFINITY;
  int e = std::max(std::ilogb(std::fabs(exact == 0 ? g : exact)), 2 - (1 << (f.ebits - 1)));
  return double(std::fabs(g - exact) / std::ldexp(1.0L, e - f.man));
}

// Every function within 2 units of the 16-bit format of the exact value: the headers' f32
// approximations and fix-ups, and tanh.approx, all load and run.
TEST_P(NarrowNvcc, HalfAndBfloat16MathFunctions) {
  auto prog = CachedKernel(GetParam());
  ASSERT_TRUE(prog);
  std::mt19937 rng(79);
  const int n = 600;
  std::vector<uint16_t> a(n), b(n);
  std::uniform_real_distribution<float> u(-6, 6);
  for (int i = 0; i < n; ++i) {
    a[i] = Round16(u(rng), kH);
    b[i] = Round16(u(rng), kB);
  }
  const uint16_t ha[] = {0, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x03ff, 0x4900};
  const uint16_t hb[] = {0, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x4780, 0x4049};
  std::copy(std::begin(ha), std::end(ha), a.begin());
  std::copy(std::begin(hb), std::end(hb), b.begin());
  TestMemory mem;
  uint16_t* da = mem.Upload(a);
  uint16_t* db = mem.Upload(b);
  uint16_t* oh = mem.Alloc<uint16_t>(n * 16);
  uint16_t* ob = mem.Alloc<uint16_t>(n * 16);
  int16_t* os = mem.Alloc<int16_t>(n * 3);
  Status st = RunKernel(
      *prog, "halfMath", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(oh).Add(ob).Add(os).Add(n); }, &mem);
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto want = [](long double x, long double y, int k) -> long double {
    switch (k) {
      case 0:
        return std::exp(x);
      case 1:
        return std::exp2(x);
      case 2:
        return std::pow(10.0L, x);
      case 3:
        return std::log(y);
      case 4:
        return std::log2(y);
      case 5:
        return std::log10(y);
      case 6:
        return std::sqrt(y);
      case 7:
        return 1 / std::sqrt(y);
      case 8:
        return 1 / x;
      case 9:
        return std::sin(x);
      case 10:
        return std::cos(x);
      case 11:
        return std::tanh(x);
      case 12:
        return std::exp(x);
      case 13:
        return std::exp(-x);
      case 14:
        return std::log(y);
      default:
        return std::tanh(x);
    }
  };
  const char* const names[] = {"exp",      "exp2",     "exp10", "log",   "log2", "log10",
                               "sqrt",     "rsqrt",    "rcp",   "sin",   "cos",  "tanh",
                               "h2exp lo", "h2exp hi", "h2log", "h2tanh"};
  for (int i = 0; i < n; ++i) {
    long double x = Real(a[i], kH);
    for (int k = 0; k < 16; ++k)
      ASSERT_LE(UlpsOff(oh[i * 16 + k], want(x, std::fabs(x), k), kH), 2.0)
          << "f16 " << names[k] << std::hex << " of " << a[i] << ": " << oh[i * 16 + k];
    long double v = Real(b[i], kB);
    for (int k = 0; k < 16; ++k) {
      long double w = k == 15   ? std::pow(10.0L, v)
                      : k == 14 ? std::log(std::fabs(v))
                                : want(v, std::fabs(v), k);
      ASSERT_LE(UlpsOff(ob[i * 16 + k], w, kB), 2.0)
          << "bf16 " << (k >= 14 ? (k == 14 ? "h2log" : "h2exp10") : names[k]) << std::hex << " of "
          << b[i] << ": " << ob[i * 16 + k];
    }
    // bf16 to short: nearest even and down, saturating, NaN to 0; |v| to unsigned short.
    auto to_int = [](long double r, long double lo, long double hi) {
      return r != r ? 0 : int(std::clamp(r, lo, hi));
    };
    ASSERT_EQ(os[i * 3], to_int(std::nearbyint(v), -32768, 32767)) << std::hex << b[i];
    ASSERT_EQ(os[i * 3 + 1], to_int(std::floor(v), -32768, 32767)) << std::hex << b[i];
    ASSERT_EQ(uint16_t(os[i * 3 + 2]), to_int(std::nearbyint(std::fabs(v)), 0, 65535))
        << std::hex << b[i];
  }
}

TEST_P(NarrowNvcc, HalfAtomicAddsAndShortCas) {
  auto prog = CachedKernel(GetParam());
  ASSERT_TRUE(prog);
  std::mt19937 rng(80);
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
  std::vector<uint16_t> a(n), b(n);
  for (int i = 0; i < n; ++i) {
    a[i] = Round16(int(rng() % 3) - 1, kH);              // integer partial sums below 2048: exact
    b[i] = Round16(i % 4 ? 0 : int(rng() % 3) - 1, kB);  // below 256: exact
  }
  TestMemory mem;
  uint16_t* da = mem.Upload(a);
  uint16_t* db = mem.Upload(b);
  uint16_t* acc_h = mem.Alloc<uint16_t>(4);
  uint16_t* acc_b = mem.Alloc<uint16_t>(4);
  uint16_t* counter = mem.Alloc<uint16_t>(2);
  uint16_t* block_h = mem.Alloc<uint16_t>(blocks * 2);
  std::fill_n(acc_h, 4, 0);
  std::fill_n(acc_b, 4, 0);
  counter[0] = 65000;  // wraps
  counter[1] = 0x4242;
  Status st = RunKernel(
      *prog, "halfAtomics", {uint32_t(blocks)}, {threads},
      [&](Params& p) { p.Add(da).Add(db).Add(acc_h).Add(acc_b).Add(counter).Add(block_h).Add(n); },
      &mem, 0, nullptr, nullptr, 2);
  ASSERT_TRUE(st.ok()) << st.ToString();
  long double sa = 0, sb = 0;
  for (int i = 0; i < n; ++i) {
    sa += Real(a[i], kH);
    sb += Real(b[i], kB);
  }
  EXPECT_EQ(acc_h[0], Round16(sa, kH));
  EXPECT_EQ(acc_h[2], Round16(sa, kH));
  EXPECT_EQ(acc_h[3], Round16(-sa, kH));
  EXPECT_EQ(acc_b[0], Round16(sb, kB));
  EXPECT_EQ(acc_b[2], Round16(sb, kB));
  EXPECT_EQ(acc_b[3], Round16(sb, kB));
  EXPECT_EQ(counter[0], uint16_t(65000 + n));
  EXPECT_EQ(counter[1], 0x4242);
  for (int k = 0; k < blocks; ++k) {
    long double s = 0;
    int active = std::min(n, (k + 1) * threads) - k * threads;
    for (int i = k * threads; i < k * threads + active; ++i) s += Real(a[i], kH);
    EXPECT_EQ(block_h[k * 2], Round16(s, kH)) << k;
    EXPECT_EQ(block_h[k * 2 + 1], active) << k;
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, NarrowNvcc, ::testing::Values("fp16", "fp16_90"));

// ---- SIMD video instructions ----
enum class VOp { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax };

// The PTX ISA's semantics of vop4 (kN 4) and vop2 (kN 2): elements selected from the bytes
// (half-words) of b:a by sel[i], the results merged into c by mask, or added to it with .add.
struct VForm {
  int n;  // elements: 4 bytes or 2 half-words
  VOp op;
  bool ds, as, bs, sat, add;
  int asel[4], bsel[4];
  unsigned mask;
};
uint32_t VRef(const VForm& f, uint32_t a, uint32_t b, uint32_t c) {
  const int bits = 32 / f.n;
  const uint64_t ab = uint64_t(b) << 32 | a;
  auto elem = [&](int sel, bool sign) -> int64_t {
    uint64_t u = (ab >> (bits * sel)) & ((1u << bits) - 1);
    return sign && (u >> (bits - 1)) ? int64_t(u) - (int64_t(1) << bits) : int64_t(u);
  };
  uint32_t d = f.add ? c : 0;
  for (int i = 0; i < f.n; ++i) {
    int64_t x = elem(f.asel[i], f.as), y = elem(f.bsel[i], f.bs), t = 0;
    switch (f.op) {
      case VOp::kAdd:
        t = x + y;
        break;
      case VOp::kSub:
        t = x - y;
        break;
      case VOp::kAvrg:
        t = x + y >= 0 ? (x + y + 1) >> 1 : (x + y) >> 1;
        break;
      case VOp::kAbsdiff:
        t = x > y ? x - y : y - x;
        break;
      case VOp::kMin:
        t = std::min(x, y);
        break;
      case VOp::kMax:
        t = std::max(x, y);
        break;
    }
    if (f.sat) {
      int64_t lo = f.ds ? -(int64_t(1) << (bits - 1)) : 0;
      int64_t hi = f.ds ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
      t = std::clamp(t, lo, hi);
    }
    const uint32_t emask = (1u << bits) - 1;
    if (f.add) {
      if (f.mask >> i & 1) d += uint32_t(t);
    } else {
      d |= (((f.mask >> i & 1) ? uint32_t(t) : c >> (bits * i)) & emask) << (bits * i);
    }
  }
  return d;
}

std::string VName(const VForm& f) {
  static const char* const kOps[] = {"vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"};
  std::string s = std::string(kOps[int(f.op)]) + char('0' + f.n) + (f.ds ? ".s32" : ".u32") +
                  (f.as ? ".s32" : ".u32") + (f.bs ? ".s32" : ".u32");
  if (f.sat) s += ".sat";
  if (f.add) s += ".add";
  return s;
}

// A selector suffix (".b3210", ".h10") for elements sel[n-1]..sel[0]; empty for the default.
std::string Sel(const VForm& f, const int* sel, bool is_b) {
  bool dflt = true;
  for (int i = 0; i < f.n; ++i) dflt &= sel[i] == i + (is_b ? f.n : 0);
  if (dflt) return "";
  std::string s = f.n == 4 ? ".b" : ".h";
  for (int i = f.n - 1; i >= 0; --i) s += char('0' + sel[i]);
  return s;
}
std::string MaskSel(const VForm& f) {
  if (f.mask == (1u << f.n) - 1) return "";
  std::string s = f.n == 4 ? ".b" : ".h";
  for (int i = f.n - 1; i >= 0; --i)
    if (f.mask >> i & 1) s += char('0' + i);
  return s;
}

TEST(NarrowVideo, SimdVideoMatchesIsaSemantics) {
  std::mt19937 rng(77);
  std::vector<VForm> forms;
  for (int n : {4, 2})
    for (int op = 0; op < 6; ++op)
      for (int types = 0; types < 8; ++types)
        for (int mode = 0; mode < 3; ++mode) {  // plain, .sat, .add
          VForm f{
              n,  VOp(op), bool(types & 1), bool(types & 2), bool(types & 4), mode == 1, mode == 2,
              {}, {},      (1u << n) - 1};
          for (int i = 0; i < n; ++i) {
            f.asel[i] = i;
            f.bsel[i] = i + n;
          }
          forms.push_back(f);
          // The same with random selectors and mask.
          for (int i = 0; i < n; ++i) {
            f.asel[i] = int(rng() % (2 * n));
            f.bsel[i] = int(rng() % (2 * n));
          }
          f.mask = 1 + rng() % ((1u << n) - 1);
          forms.push_back(f);
        }
  const int n = 512;
  std::vector<uint32_t> in(n * 3);
  const uint8_t edges[] = {0, 1, 0x7f, 0x80, 0x81, 0xff};
  for (auto& v : in) {
    v = 0;
    for (int k = 0; k < 4; ++k)
      v |= uint32_t(rng() % 3 ? uint8_t(rng()) : edges[rng() % 6]) << (8 * k);
  }
  // Many forms per kernel: one load for each group of 8.
  for (size_t g = 0; g < forms.size(); g += 8) {
    std::string body;
    size_t end = std::min(forms.size(), g + 8);
    for (size_t k = g; k < end; ++k) {
      const VForm& f = forms[k];
      body += VName(f) + " %r10" + MaskSel(f) + ", %r1" + Sel(f, f.asel, false) + ", %r2" +
              Sel(f, f.bsel, true) + ", %r3;\n";
      body += "xor.b32 %r4, %r4, %r10; shf.l.wrap.b32 %r4, %r4, %r4, 7; add.u32 %r5, %r5, %r10;\n";
    }
    auto out = RunWords(body, in);
    ASSERT_EQ(out.size(), size_t(2 * n)) << body;
    for (int t = 0; t < n; ++t) {
      uint32_t w4 = 0, w5 = 0;
      for (size_t k = g; k < end; ++k) {
        uint32_t r = VRef(forms[k], in[t * 3], in[t * 3 + 1], in[t * 3 + 2]);
        w4 ^= r;
        w4 = std::rotl(w4, 7);
        w5 += r;
      }
      ASSERT_EQ(out[t * 2], w4) << body << std::hex << in[t * 3] << " " << in[t * 3 + 1] << " "
                                << in[t * 3 + 2];
      ASSERT_EQ(out[t * 2 + 1], w5) << body;
    }
  }
}

// What __vabsdiffu4, __vabsdiffs4 (bias by 0x80 first), __vsadu4 and __vsadu2 compile to.
TEST(NarrowVideo, NvccAbsdiffForms) {
  std::mt19937 rng(78);
  const int n = 1024;
  std::vector<uint32_t> in(n * 3);
  for (auto& v : in) v = rng();
  auto out = RunWords(R"(
  mov.u32 %r6, 0;
  vabsdiff4.u32.u32.u32 %r4, %r1, %r2, %r6;
  vabsdiff4.u32.u32.u32.add %r7, %r1, %r2, %r6;
  vabsdiff2.u32.u32.u32.add %r8, %r1, %r2, %r3;
  add.u32 %r5, %r7, %r8;)",
                      in);
  ASSERT_EQ(out.size(), size_t(2 * n));
  for (int t = 0; t < n; ++t) {
    uint32_t a = in[t * 3], b = in[t * 3 + 1], c = in[t * 3 + 2], d = 0, sad = 0;
    for (int k = 0; k < 4; ++k) {
      int x = (a >> (8 * k)) & 0xff, y = (b >> (8 * k)) & 0xff;
      d |= uint32_t(std::abs(x - y)) << (8 * k);
      sad += uint32_t(std::abs(x - y));
    }
    for (int k = 0; k < 2; ++k)
      sad += uint32_t(std::abs(int((a >> (16 * k)) & 0xffff) - int((b >> (16 * k)) & 0xffff)));
    ASSERT_EQ(out[t * 2], d);
    ASSERT_EQ(out[t * 2 + 1], sad + c);
  }
}

// ---- SIMD intrinsics through nvcc (kernels/intrin.cu, compute_75 and compute_90) ----
class NarrowNvccSimd : public ::testing::TestWithParam<const char*> {};

TEST_P(NarrowNvccSimd, VideoAndPackedIntrinsics) {
  auto prog = CachedKernel(GetParam());
  ASSERT_TRUE(prog);
  std::mt19937 rng(81);
  const int n = 1000;
  std::vector<uint32_t> a(n), b(n), c(n);
  const uint32_t edges[] = {0, 0xffffffffu, 0x80808080u, 0x7f7f7f7fu, 0x80007fffu, 0x00ff8001u};
  for (int i = 0; i < n; ++i) {
    a[i] = i % 9 ? rng() : edges[rng() % 6];
    b[i] = i % 7 ? rng() : edges[rng() % 6];
    c[i] = i % 5 ? rng() : edges[rng() % 6];
  }
  TestMemory mem;
  uint32_t* da = mem.Upload(a);
  uint32_t* db = mem.Upload(b);
  uint32_t* dc = mem.Upload(c);
  uint32_t* out = mem.Alloc<uint32_t>(n * 14);
  Status st = RunKernel(
      *prog, "simdIntrinsics", {(n + 127) / 128}, {128},
      [&](Params& p) { p.Add(da).Add(db).Add(dc).Add(out).Add(n); }, &mem);
  ASSERT_TRUE(st.ok()) << st.ToString();
  // Element k of v, `bits` wide, sign-extended if `sign`.
  auto el = [](uint32_t v, int bits, int k, bool sign) {
    int32_t u = int32_t((v >> (bits * k)) & ((1u << bits) - 1));
    return sign && u >> (bits - 1) ? u - (1 << bits) : u;
  };
  // Per element f(x, y, z) of `bits`-wide elements, packed back.
  auto each = [&](int bits, bool sign, uint32_t x, uint32_t y, uint32_t z, auto f) {
    uint32_t r = 0;
    for (int k = 0; k < 32 / bits; ++k)
      r |= (uint32_t(f(el(x, bits, k, sign), el(y, bits, k, sign), el(z, bits, k, sign))) &
            ((1u << bits) - 1))
           << (bits * k);
    return r;
  };
  auto sad = [&](int bits, bool sign, uint32_t x, uint32_t y) {
    uint32_t r = 0;
    for (int k = 0; k < 32 / bits; ++k)
      r += uint32_t(std::abs(el(x, bits, k, sign) - el(y, bits, k, sign)));
    return r;
  };
  auto absdiff = [](int32_t p, int32_t q, int32_t) { return std::abs(p - q); };
  for (int i = 0; i < n; ++i) {
    uint32_t x = a[i], y = b[i], z = c[i];
    const uint32_t want[14] = {
        each(8, false, x, y, z, absdiff),
        each(8, true, x, y, z, absdiff),
        each(16, false, x, y, z, absdiff),
        each(16, true, x, y, z, absdiff),
        sad(8, false, x, y),
        sad(8, true, x, y),
        sad(16, false, x, y),
        sad(16, true, x, y),
        each(8, false, x, y, z, [](int32_t p, int32_t q, int32_t) { return (p + q + 1) >> 1; }),
        each(8, false, x, y, z, [](int32_t p, int32_t q, int32_t) { return (p + q) >> 1; }),
        each(16, false, x, y, z,
             [](int32_t p, int32_t q, int32_t r) {
               return std::max({p, q, r});
             }),
        each(16, true, x, y, z,
             [](int32_t p, int32_t q, int32_t r) {
               return std::max({int32_t(int16_t(p + q)), r, 0});  // the add wraps
             }),
        uint32_t(std::max(0, std::min(int32_t(x), int32_t(y)))),
        each(16, true, x, y, z,
             [](int32_t p, int32_t q, int32_t r) {
               return std::max(0, std::min({p, q, r}));
             }),
    };
    for (int k = 0; k < 14; ++k)
      ASSERT_EQ(out[i * 14 + k], want[k])
          << "column " << k << std::hex << ": " << x << " " << y << " " << z;
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, NarrowNvccSimd, ::testing::Values("intrin", "intrin_90"));

TEST(NarrowVideo, BadSelectorsAreRefusedAtLoad) {
  for (const char* bad :
       {"vadd4.u32.u32.u32 %r4, %r1.b01, %r2, %r3;", "vadd4.u32.u32.u32 %r4.b00, %r1, %r2, %r3;",
        "vadd2.u32.u32.u32 %r4, %r1.h4, %r2, %r3;", "add.u32 %r4, %r1.b0, %r2;"}) {
    auto r = Load(std::vector<std::string>{Wrap(bad)});
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// ---- Scalar video instructions ----
enum class SOp { kAdd, kSub, kAbsdiff, kMin, kMax, kShl, kShr, kSet };

// One scalar video form. Selectors: 0 the whole word, 1..4 .b0-.b3, 5..6 .h0-.h1.
struct SForm {
  SOp op;
  bool ds, as, bs, sat;
  int asel, bsel, dsel;
  int op2;      // 0 none, 1 .add, 2 .min, 3 .max
  bool clamp;   // shifts: .clamp, else .wrap
  int cmp;      // vset: .eq .ne .lt .le .gt .ge
  bool with_c;  // c given without a secondary operation or merge: ignored, as ptxas takes it
};

int64_t SPart(uint32_t v, int sel, bool sign) {
  if (sel == 0) return sign ? int64_t(int32_t(v)) : int64_t(v);
  const int bits = sel <= 4 ? 8 : 16, at = sel <= 4 ? 8 * (sel - 1) : 16 * (sel - 5);
  const int64_t u = (v >> at) & ((1u << bits) - 1);
  return sign && (u >> (bits - 1)) ? u - (int64_t(1) << bits) : u;
}

// The PTX ISA's pseudo-code: partSelectSignExtend, the operation in a wide intermediate,
// optSaturate to d's range (narrowed by d's selector), then optSecondaryOp or optMerge with c.
uint32_t SRef(const SForm& f, uint32_t a, uint32_t b, uint32_t c) {
  const bool shift = f.op == SOp::kShl || f.op == SOp::kShr;
  const int64_t x = SPart(a, f.asel, f.as), y = SPart(b, f.bsel, f.bs && !shift);
  __int128 t = 0;
  switch (f.op) {
    case SOp::kAdd:
      t = __int128(x) + y;
      break;
    case SOp::kSub:
      t = __int128(x) - y;
      break;
    case SOp::kAbsdiff:
      t = x > y ? __int128(x) - y : __int128(y) - x;
      break;
    case SOp::kMin:
      t = std::min(x, y);
      break;
    case SOp::kMax:
      t = std::max(x, y);
      break;
    case SOp::kShl:
    case SOp::kShr: {
      const int n = f.clamp ? int(std::min<int64_t>(y, 32)) : int(y % 32);
      t = f.op == SOp::kShl ? __int128(x) * (__int128(1) << n) : __int128(x >> n);
      break;
    }
    case SOp::kSet: {
      const bool r[] = {x == y, x != y, x<y, x <= y, x> y, x >= y};
      t = r[f.cmp];
      break;
    }
  }
  const bool ds = f.ds && f.op != SOp::kSet;
  const int bits = f.dsel == 0 ? 32 : f.dsel <= 4 ? 8 : 16;
  if (f.sat) {
    const __int128 lo = ds ? -(__int128(1) << (bits - 1)) : 0;
    const __int128 hi = ds ? (__int128(1) << (bits - 1)) - 1 : (__int128(1) << bits) - 1;
    t = std::clamp(t, lo, hi);
  }
  if (f.dsel) {
    const int at = f.dsel <= 4 ? 8 * (f.dsel - 1) : 16 * (f.dsel - 5);
    const uint32_t m = uint32_t((uint64_t(1) << bits) - 1) << at;
    return (c & ~m) | ((uint32_t(uint64_t(t)) << at) & m);
  }
  const __int128 cw = ds ? __int128(int32_t(c)) : __int128(c);
  if (f.op2 == 1) t += cw;
  if (f.op2 == 2) t = std::min(t, cw);
  if (f.op2 == 3) t = std::max(t, cw);
  return uint32_t(uint64_t(t));
}

std::string SSel(int sel) {
  static const char* const kSel[] = {"", ".b0", ".b1", ".b2", ".b3", ".h0", ".h1"};
  return kSel[sel];
}

std::string SInst(const SForm& f) {
  static const char* const kOps[] = {"vadd", "vsub", "vabsdiff", "vmin",
                                     "vmax", "vshl", "vshr",     "vset"};
  static const char* const kOp2[] = {"", ".add", ".min", ".max"};
  static const char* const kCmp[] = {".eq", ".ne", ".lt", ".le", ".gt", ".ge"};
  auto ty = [](bool sign) { return sign ? ".s32" : ".u32"; };
  std::string s = kOps[int(f.op)];
  if (f.op == SOp::kSet) {
    s += std::string(ty(f.as)) + ty(f.bs) + kCmp[f.cmp];
  } else {
    const bool shift = f.op == SOp::kShl || f.op == SOp::kShr;
    s += std::string(ty(f.ds)) + ty(f.as) + (shift ? ".u32" : ty(f.bs));
    if (f.sat) s += ".sat";
    if (shift) s += f.clamp ? ".clamp" : ".wrap";
  }
  s += kOp2[f.op2];
  s += " %r10" + SSel(f.dsel) + ", %r1" + SSel(f.asel) + ", %r2" + SSel(f.bsel);
  if (f.op2 || f.dsel || f.with_c) s += ", %r3";
  return s + ";\n";
}

// Runs `insts` (each writing %r10) in groups of 8 on `in`, each group folding its results into
// %r4 and %r5, and checks every thread against `ref`.
template <class Ref>
void CheckScalarVideo(const std::vector<std::string>& insts, const std::vector<uint32_t>& in,
                      Ref&& ref) {
  const size_t n = in.size() / 3;
  for (size_t g = 0; g < insts.size(); g += 8) {
    std::string body;
    const size_t end = std::min(insts.size(), g + 8);
    for (size_t k = g; k < end; ++k)
      body += insts[k] +
              "xor.b32 %r4, %r4, %r10; shf.l.wrap.b32 %r4, %r4, %r4, 7; add.u32 %r5, %r5, %r10;\n";
    auto out = RunWords(body, in);
    ASSERT_EQ(out.size(), 2 * n) << body;
    for (size_t t = 0; t < n; ++t) {
      uint32_t w4 = 0, w5 = 0;
      for (size_t k = g; k < end; ++k) {
        const uint32_t r = ref(k, in[t * 3], in[t * 3 + 1], in[t * 3 + 2]);
        w4 = std::rotl(w4 ^ r, 7);
        w5 += r;
      }
      ASSERT_EQ(out[t * 2], w4) << body << std::hex << in[t * 3] << " " << in[t * 3 + 1] << " "
                                << in[t * 3 + 2];
      ASSERT_EQ(out[t * 2 + 1], w5) << body;
    }
  }
}

// Inputs: random words, a third of them edge cases, and small shift amounts in b half the time.
std::vector<uint32_t> ScalarInputs(std::mt19937& rng, int n) {
  const uint32_t edges[] = {0,           1,           0x7f,       0x80,        0xff,
                            0x7fff,      0x8000,      0xffff,     0x7fffffffu, 0x80000000u,
                            0xffffffffu, 0x80ff7f01u, 0x00008080u};
  std::vector<uint32_t> in(size_t(n) * 3);
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = rng() % 3 ? uint32_t(rng()) : edges[rng() % std::size(edges)];
    if (i % 3 == 1 && rng() % 2) in[i] = (in[i] & ~0x3fu) | (rng() % 40);  // amounts near 32
  }
  return in;
}

TEST(NarrowVideo, ScalarVideoMatchesIsaSemantics) {
  std::mt19937 rng(91);
  std::vector<SForm> forms;
  for (int op = 0; op < 8; ++op)
    for (int types = 0; types < 8; ++types)
      for (int variant = 0; variant < 5; ++variant) {
        SForm f{
            SOp(op), bool(types & 1), bool(types & 2), bool(types & 4), false, 0, 0, 0, 0, true, 0,
            false};
        if (variant > 0) {
          f.asel = int(rng() % 7);
          f.bsel = int(rng() % 7);
        }
        // plain, .sat, a secondary operation, a merge into c at d's selector, c ignored
        f.sat = op != int(SOp::kSet) && (variant == 1 || (variant >= 2 && rng() % 2));
        if (variant == 2) f.op2 = 1 + int(rng() % 3);
        if (variant == 3) f.dsel = 1 + int(rng() % 6);
        f.clamp = rng() % 2;
        f.cmp = int(rng() % 6);
        f.with_c = variant == 4;
        forms.push_back(f);
      }
  std::vector<std::string> insts;
  for (const SForm& f : forms) insts.push_back(SInst(f));
  CheckScalarVideo(
      insts, ScalarInputs(rng, 512),
      [&](size_t k, uint32_t a, uint32_t b, uint32_t c) { return SRef(forms[k], a, b, c); });
}

// vmad: one negation (of the product or of c) or .po, .shr7/.shr15 and .sat, by the ISA's
// pseudo-code in 128 bits.
TEST(NarrowVideo, VmadMatchesIsaSemantics) {
  struct MForm {
    bool ds, as, bs, sat;
    int asel, bsel;
    int neg;  // 0 none, 1 -a, 2 -b, 3 -c, 4 .po
    int scale;
  };
  std::mt19937 rng(92);
  std::vector<MForm> forms;
  std::vector<std::string> insts;
  for (int types = 0; types < 8; ++types)
    for (int neg = 0; neg < 5; ++neg)
      for (int scale = 0; scale < 3; ++scale) {
        MForm f{bool(types & 1),
                bool(types & 2),
                bool(types & 4),
                bool(rng() % 2),
                int(rng() % 7),
                int(rng() % 7),
                neg,
                scale};
        forms.push_back(f);
        auto ty = [](bool sign) { return sign ? ".s32" : ".u32"; };
        std::string s = std::string("vmad") + ty(f.ds) + ty(f.as) + ty(f.bs);
        if (neg == 4) s += ".po";
        if (f.sat) s += ".sat";
        if (scale) s += scale == 1 ? ".shr7" : ".shr15";
        s += std::string(" %r10, ") + (neg == 1 ? "-" : "") + "%r1" + SSel(f.asel) + ", " +
             (neg == 2 ? "-" : "") + "%r2" + SSel(f.bsel) + ", " + (neg == 3 ? "-" : "") + "%r3;\n";
        insts.push_back(s);
      }
  CheckScalarVideo(insts, ScalarInputs(rng, 512),
                   [&](size_t k, uint32_t a, uint32_t b, uint32_t c) {
                     const MForm& f = forms[k];
                     const bool neg_ab = f.neg == 1 || f.neg == 2, neg_c = f.neg == 3;
                     const bool sign = f.as || f.bs || neg_ab || neg_c;
                     __int128 t = __int128(SPart(a, f.asel, f.as)) * SPart(b, f.bsel, f.bs);
                     int lsb = 0;
                     if (f.neg == 4) {
                       lsb = 1;
                     } else if (neg_ab) {
                       t = ~t;
                       lsb = 1;
                     } else if (neg_c) {
                       c = ~c;
                       lsb = 1;
                     }
                     t = t + (sign ? __int128(int32_t(c)) : __int128(c)) + lsb;
                     t >>= f.scale == 1 ? 7 : f.scale == 2 ? 15 : 0;
                     uint64_t r = uint64_t(t);
                     if (f.sat)
                       r = sign ? uint64_t(std::clamp<int64_t>(int64_t(r), INT32_MIN, INT32_MAX))
                                : std::min<uint64_t>(r, UINT32_MAX);
                     return uint32_t(r);
                   });
}

// What cuSPARSE's SpGEMM runs: a clamped shift whose result is added to c, immediates included.
TEST(NarrowVideo, ClampedShiftAddWithImmediates) {
  std::mt19937 rng(93);
  auto in = ScalarInputs(rng, 1024);
  auto out = RunWords(R"(
  vshr.u32.u32.u32.clamp.add %r4, %r1, %r2, %r3;
  vshl.u32.u32.u32.wrap.add %r5, %r1, 35, 7;)",
                      in);
  ASSERT_EQ(out.size(), in.size() / 3 * 2);
  for (size_t t = 0; t < in.size() / 3; ++t) {
    const uint32_t a = in[t * 3], b = in[t * 3 + 1], c = in[t * 3 + 2];
    EXPECT_EQ(out[t * 2], (b >= 32 ? 0 : a >> b) + c) << a << " " << b;
    EXPECT_EQ(out[t * 2 + 1], (a << 3) + 7) << a;
  }
}

// Forms outside the ISA's grammar, which ptxas refuses, are refused at load, naming why.
TEST(NarrowVideo, BadScalarVideoIsRefusedAtLoad) {
  for (const char* bad :
       {"vadd.u32.u32.u32 %r4, %r1.b4, %r2;", "vadd.u32.u32.u32 %r4.b10, %r1, %r2, %r3;",
        "vadd.u32.u32.u32 %r4, -%r1, %r2;", "vadd.u32.u32 %r4, %r1, %r2;",
        "vadd.u32.u32.u32.add %r4, %r1, %r2;", "vadd.u32.u32.u32 %r4, %r1, %r2.b0, %r3.b1;",
        "vmad.u32.u32.u32 %r4, %r1, %r2;", "vmin.u32.u32.u32.add %r4.b0, %r1, %r2, %r3;",
        "vshr.u32.u32.u32 %r4, %r1, %r2;", "vset.u32.u32.lt.sat %r4, %r1, %r2;",
        "vmad.s32.s32.s32 %r4, -%r1, %r2, -%r3;", "vmad.s32.s32.s32.po %r4, -%r1, %r2, %r3;",
        "vadd.u32.u32.u32.rn %r4, %r1, %r2;"}) {
    auto r = Load(std::vector<std::string>{Wrap(bad)});
    EXPECT_FALSE(r.ok()) << bad;
  }
}

}  // namespace
}  // namespace remora::emu::ptx::testing
