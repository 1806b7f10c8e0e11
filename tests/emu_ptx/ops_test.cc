// tests/emu_ptx/ops_test.cc - one row per instruction: tiny hand-written PTX, random inputs,
// outputs checked against a CPU reference of the PTX ISA semantics.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include <cuda_fp8.h>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

enum class Gen { kBits, kFloat, kSmall, kMixedFloat };
using Ref = std::function<std::pair<uint32_t, uint32_t>(uint32_t, uint32_t, uint32_t)>;
struct Row {
  const char* name;
  const char* body;
  Gen gen;
  Ref ref;
};

// cvt.pack.sat as the PTX ISA writes it out: a and b clamped to `bits` (signed or not), b in
// bits [0, bits), a in [bits, 2 bits), then c's low bits up to bit 31 (below 16 bits only).
uint32_t PackSat(int32_t a, int32_t b, uint32_t c, int bits, bool is_signed) {
  const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
  const int64_t hi = is_signed ? (int64_t(1) << (bits - 1)) - 1 : (int64_t(1) << bits) - 1;
  const uint64_t mask = (uint64_t(1) << bits) - 1;
  const uint64_t ta = uint64_t(std::clamp<int64_t>(a, lo, hi)) & mask;
  const uint64_t tb = uint64_t(std::clamp<int64_t>(b, lo, hi)) & mask;
  uint64_t d = tb | ta << bits;
  if (bits < 16) d |= uint64_t(c) << (2 * bits);
  return uint32_t(d);
}

// f32 `v` rounded to tf32's 10 mantissa bits by arithmetic, not on its bits: the quantum is
// 2^(exponent - 10), 2^-136 below the normal range; `mode` is FE_TONEAREST, FE_TOWARDZERO, or -1
// for nearest with ties away from zero. Returns the f32 bits; an overflow gives infinity.
uint32_t Tf32(float v, int mode) {
  if (std::isinf(v) || v == 0) return std::bit_cast<uint32_t>(v);
  const int q = std::max(std::ilogb(v) - 10, -136);
  const double m = std::ldexp(double(v), -q);
  // std::nearbyint: the test runs in round-to-nearest-even.
  const double r = mode == -1              ? std::round(m)
                   : mode == FE_TOWARDZERO ? std::trunc(m)
                                           : std::nearbyint(m);
  const double out = std::ldexp(r, q);
  if (std::fabs(out) >= 0x1p128) return std::signbit(v) ? 0xff800000u : 0x7f800000u;
  return std::bit_cast<uint32_t>(float(out));
}

// The generic prmt with four byte selectors (no sign replication), d's byte 0 in the low nibble.
uint32_t PrmtBySelectors(uint32_t a, uint32_t b, uint32_t selectors) {
  const uint64_t t = (uint64_t(b) << 32) | a;
  uint32_t r = 0;
  for (int n = 0; n < 4; ++n)
    r |= uint32_t(t >> (8 * ((selectors >> (4 * n)) & 7)) & 0xff) << (8 * n);
  return r;
}

float F(uint32_t v) {
  return std::bit_cast<float>(v);
}
uint32_t B(float f) {
  return std::bit_cast<uint32_t>(f);
}
uint32_t Canon(float f) {
  return f != f ? 0x7fffffffu : B(f);
}
std::pair<uint32_t, uint32_t> One(uint32_t v) {
  return {v, 0};
}
std::pair<uint32_t, uint32_t> Two(uint64_t v) {
  return {uint32_t(v), uint32_t(v >> 32)};
}
template <class Fn>
uint32_t Rounded(int mode, Fn fn) {
  std::fesetround(mode);
  volatile float r = fn();
  std::fesetround(FE_TONEAREST);
  return Canon(r);
}

const Row kRows[] = {
    {"add.s32", "add.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(a + b); }},
    {"sub.s32", "sub.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(a - b); }},
    {"add.sat.s32", "add.sat.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       int64_t r = int64_t(int32_t(a)) + int32_t(b);
       return One(uint32_t(int32_t(std::clamp<int64_t>(r, INT32_MIN, INT32_MAX))));
     }},
    {"mul.lo.s32", "mul.lo.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(a * b); }},
    {"mul.hi.u32", "mul.hi.u32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(uint32_t((uint64_t(a) * b) >> 32)); }},
    {"mul.hi.s32", "mul.hi.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return One(uint32_t((int64_t(int32_t(a)) * int32_t(b)) >> 32));
     }},
    {"mul.wide.s32", "mul.wide.s32 %rd7, %r1, %r2; mov.b64 {%r4, %r5}, %rd7;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return Two(uint64_t(int64_t(int32_t(a)) * int32_t(b)));
     }},
    {"mad.wide.u32",
     "cvt.u64.u32 %rd8, %r3; mad.wide.u32 %rd7, %r1, %r2, %rd8; mov.b64 {%r4, %r5}, %rd7;",
     Gen::kBits, [](uint32_t a, uint32_t b, uint32_t c) { return Two(uint64_t(a) * b + c); }},
    {"mad.lo.s32", "mad.lo.s32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) { return One(a * b + c); }},
    {"mad.hi.u32", "mad.hi.u32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) { return One(uint32_t((uint64_t(a) * b) >> 32) + c); }},
    // Extended precision: the carry (borrow for sub) flows through CC.CF between instructions.
    {"add.cc+addc.cc+addc.u32",
     "add.cc.u32 %r4, %r1, %r2; addc.cc.u32 %r5, %r2, %r3; addc.u32 %r6, 0, 0; shl.b32 %r6, "
     "%r6, 31; or.b32 %r5, %r5, %r6;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint64_t lo = uint64_t(a) + b;
       uint64_t hi = uint64_t(b) + c + (lo >> 32);
       uint32_t carry_out = uint32_t(hi >> 32);
       return std::pair<uint32_t, uint32_t>{uint32_t(lo), uint32_t(hi) | (carry_out << 31)};
     }},
    {"sub.cc+subc.cc+subc.u32",
     "sub.cc.u32 %r4, %r1, %r2; subc.cc.u32 %r5, %r3, %r1; subc.u32 %r6, 0, 0; xor.b32 %r5, %r5, "
     "%r6;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t b1 = a < b;
       uint32_t hi = c - a - b1;
       uint32_t b2 = uint64_t(c) < uint64_t(a) + b1;
       return std::pair<uint32_t, uint32_t>{a - b, hi ^ (0u - b2)};
     }},
    {"mad.lo.cc+madc.hi.u32 (a*b+c as 64 bits)",
     "mad.lo.cc.u32 %r4, %r1, %r2, %r3; madc.hi.u32 %r5, %r1, %r2, 0;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) { return Two(uint64_t(a) * b + c); }},
    {"madc.lo.cc+madc.hi.cc.u32 (128-bit a*b + (c:c) + 1)",
     "add.cc.u32 %r7, 0xffffffff, 1; madc.lo.cc.u32 %r4, %r1, %r2, %r3; madc.hi.cc.u32 %r5, %r1, "
     "%r2, %r3; addc.u32 %r6, 0, 0; add.u32 %r5, %r5, %r6;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       unsigned __int128 v =
           (unsigned __int128)(uint64_t(a) * b) + ((unsigned __int128)c << 32 | c) + 1;
       return std::pair<uint32_t, uint32_t>{uint32_t(v), uint32_t(v >> 32) + uint32_t(v >> 64)};
     }},
    {"mad.hi.cc.s32+addc.s32", "mad.hi.cc.s32 %r4, %r1, %r2, %r3; addc.s32 %r5, %r3, %r1;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t hi = uint32_t(uint64_t(int64_t(int32_t(a)) * int32_t(b)) >> 32);
       uint64_t s = uint64_t(hi) + c;
       return std::pair<uint32_t, uint32_t>{uint32_t(s), c + a + uint32_t(s >> 32)};
     }},
    {"add.cc+addc.u64 (128-bit add)",
     "mul.wide.u32 %rd7, %r1, %r2; mul.wide.u32 %rd8, %r3, %r3; add.cc.u64 %rd9, %rd7, %rd8; "
     "addc.u64 %rd10, %rd7, %rd8; mov.b64 {%r6, %r7}, %rd9; mov.b64 {%r8, %r10}, %rd10; xor.b32 "
     "%r4, %r6, %r7; xor.b32 %r5, %r8, %r10;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint64_t x = uint64_t(a) * b, y = uint64_t(c) * c;
       unsigned __int128 s = (unsigned __int128)x + y;
       uint64_t lo = uint64_t(s), hi = x + y + uint64_t(s >> 64);
       return std::pair<uint32_t, uint32_t>{uint32_t(lo) ^ uint32_t(lo >> 32),
                                            uint32_t(hi) ^ uint32_t(hi >> 32)};
     }},
    {"WARP_SZ", "mov.u32 %r4, WARP_SZ; add.s32 %r5, %r1, WARP_SZ;", Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t) {
       return std::pair<uint32_t, uint32_t>{32u, a + 32u};
     }},
    {"mul24.lo.u32", "mul24.lo.u32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return One(uint32_t(uint64_t(a & 0xffffff) * (b & 0xffffff)));
     }},
    {"mad24.lo.s32", "mad24.lo.s32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       int64_t p = int64_t(int32_t(a << 8) >> 8) * int64_t(int32_t(b << 8) >> 8);
       return One(uint32_t(p) + c);
     }},
    {"sad.u32", "sad.u32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) { return One((a > b ? a - b : b - a) + c); }},
    {"div.u32", "or.b32 %r6, %r2, 1; div.u32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(a / (b | 1)); }},
    {"div.s32", "or.b32 %r6, %r2, 2; div.s32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(uint32_t(int32_t(a) / int32_t(b | 2))); }},
    {"rem.u32", "or.b32 %r6, %r2, 1; rem.u32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(a % (b | 1)); }},
    {"rem.s32", "or.b32 %r6, %r2, 2; rem.s32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(uint32_t(int32_t(a) % int32_t(b | 2))); }},
    {"abs.s32", "abs.s32 %r4, %r1;", Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t) { return One(int32_t(a) < 0 ? 0u - a : a); }},
    {"neg.s32", "neg.s32 %r4, %r1;", Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t) { return One(0u - a); }},
    {"min.s32", "min.s32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return One(uint32_t(std::min(int32_t(a), int32_t(b))));
     }},
    {"max.u32", "max.u32 %r4, %r1, %r2;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) { return One(std::max(a, b)); }},
    {"and/or/xor/not",
     "and.b32 %r6, %r1, %r2; or.b32 %r7, %r6, %r3; xor.b32 %r8, %r7, %r1; not.b32 %r4, %r8;",
     Gen::kBits, [](uint32_t a, uint32_t b, uint32_t c) { return One(~(((a & b) | c) ^ a)); }},
    {"cnot.b32", "and.b32 %r6, %r1, 1; cnot.b32 %r4, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t) { return One((a & 1) ? 0 : 1); }},
    {"shl.b32", "and.b32 %r6, %r2, 63; shl.b32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       uint32_t s = b & 63;
       return One(s >= 32 ? 0 : a << s);
     }},
    {"shr.u32", "and.b32 %r6, %r2, 63; shr.u32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       uint32_t s = b & 63;
       return One(s >= 32 ? 0 : a >> s);
     }},
    {"shr.s32", "and.b32 %r6, %r2, 63; shr.s32 %r4, %r1, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       uint32_t s = std::min(b & 63, 31u);
       return One(uint32_t(int32_t(a) >> s));
     }},
    // Constant counts, some past the width (PTX clamps them): 64-bit and 32-bit, left and right.
    {"shl/shr by constants",
     "mov.b64 %rd7, {%r1, %r2}; shl.b64 %rd8, %rd7, 5; shr.s64 %rd9, %rd7, 70; xor.b64 %rd8, "
     "%rd8, %rd9; shr.u64 %rd9, %rd7, 64; xor.b64 %rd8, %rd8, %rd9; shl.b64 %rd9, %rd7, 64; "
     "xor.b64 %rd8, %rd8, %rd9; shr.s64 %rd9, %rd7, 13; xor.b64 %rd8, %rd8, %rd9; mov.b64 {%r4, "
     "%r5}, %rd8; shr.s32 %r6, %r1, 40; xor.b32 %r4, %r4, %r6; shr.u32 %r7, %r2, 33; xor.b32 "
     "%r5, %r5, %r7; shl.b32 %r7, %r1, 32; xor.b32 %r5, %r5, %r7;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       const uint64_t v = uint64_t(b) << 32 | a;
       const uint64_t r = (v << 5) ^ uint64_t(int64_t(v) >> 63) ^ uint64_t(int64_t(v) >> 13);
       return std::pair<uint32_t, uint32_t>{uint32_t(r) ^ uint32_t(int32_t(a) >> 31),
                                            uint32_t(r >> 32)};
     }},
    {"shf.l.wrap", "shf.l.wrap.b32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return One(uint32_t(((uint64_t(b) << 32 | a) << (c & 31)) >> 32));
     }},
    {"shf.r.clamp", "and.b32 %r6, %r3, 63; shf.r.clamp.b32 %r4, %r1, %r2, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return One(uint32_t((uint64_t(b) << 32 | a) >> std::min(c & 63, 32u)));
     }},
    {"bfe.u32", "bfe.u32 %r4, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t pos = b & 0xff, len = c & 0xff, r = 0;
       for (uint32_t i = 0; i < 32; ++i)
         if (i < len && pos + i < 32) r |= ((a >> (pos + i)) & 1u) << i;
       return One(r);
     }},
    {"bfe.s32", "and.b32 %r6, %r2, 31; and.b32 %r7, %r3, 31; bfe.s32 %r4, %r1, %r6, %r7;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t pos = b & 31, len = c & 31, r = 0;
       uint32_t sbit = len ? (a >> std::min(pos + len - 1, 31u)) & 1 : 0;
       for (uint32_t i = 0; i < 32; ++i)
         r |= ((i < len && pos + i < 32) ? (a >> (pos + i)) & 1u : sbit) << i;
       return One(r);
     }},
    // Inputs 0..39: positions and widths at and past 32 hit both modes' edge cases.
    {"bmsk.clamp/wrap", "bmsk.clamp.b32 %r4, %r1, %r2; bmsk.wrap.b32 %r5, %r1, %r2;", Gen::kSmall,
     [](uint32_t a, uint32_t b, uint32_t) {
       auto bits = [](uint32_t pos, uint32_t width) {
         uint32_t r = 0;
         for (uint32_t i = pos; i < pos + width && i < 32; ++i) r |= 1u << i;
         return r;
       };
       uint32_t clamp = a >= 32 ? 0 : bits(a, std::min(b, 32u));
       return std::pair<uint32_t, uint32_t>{clamp, bits(a & 31, b & 31)};
     }},
    {"bfi.b32",
     "and.b32 %r6, %r3, 31; shr.u32 %r7, %r3, 8; and.b32 %r7, %r7, 31; bfi.b32 %r4, %r1, %r2, %r6, "
     "%r7;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t pos = c & 31, len = (c >> 8) & 31, r = b;
       for (uint32_t i = 0; i < len && pos + i < 32; ++i)
         r = (r & ~(1u << (pos + i))) | (((a >> i) & 1u) << (pos + i));
       return One(r);
     }},
    {"brev/popc/clz/bfind",
     "brev.b32 %r4, %r1; popc.b32 %r6, %r2; clz.b32 %r7, %r3; bfind.u32 %r8, %r3; shl.b32 %r6, "
     "%r6, 16; or.b32 %r5, %r6, %r7; xor.b32 %r5, %r5, %r8;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint32_t r = 0;
       for (int i = 0; i < 32; ++i) r |= ((a >> i) & 1u) << (31 - i);
       uint32_t bf = c ? 31u - uint32_t(std::countl_zero(c)) : 0xffffffffu;
       return std::pair<uint32_t, uint32_t>{
           r, ((uint32_t(std::popcount(b)) << 16) | uint32_t(std::countl_zero(c))) ^ bf};
     }},
    {"prmt.b32", "and.b32 %r6, %r3, 0xffff; prmt.b32 %r4, %r1, %r2, %r6;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       uint64_t t = (uint64_t(b) << 32) | a;
       uint32_t r = 0;
       for (int n = 0; n < 4; ++n) {
         uint32_t sel = (c >> (4 * n)) & 0xf, byte = uint32_t(t >> (8 * (sel & 7))) & 0xff;
         if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
         r |= byte << (8 * n);
       }
       return One(r);
     }},
    // prmt's modes against the PTX ISA's table of the bytes each picks for c & 3 (a nibble per
    // byte of d, most significant first), read as the generic form's selectors.
    {"prmt.b32.f4e/b4e", "prmt.b32.f4e %r4, %r1, %r2, %r3; prmt.b32.b4e %r5, %r1, %r2, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       const uint32_t f4e[] = {0x3210, 0x4321, 0x5432, 0x6543};
       const uint32_t b4e[] = {0x5670, 0x6701, 0x7012, 0x0123};
       return std::pair{PrmtBySelectors(a, b, f4e[c & 3]), PrmtBySelectors(a, b, b4e[c & 3])};
     }},
    {"prmt.b32.rc8/ecl", "prmt.b32.rc8 %r4, %r1, %r2, %r3; prmt.b32.ecl %r5, %r1, %r2, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       const uint32_t rc8[] = {0x0000, 0x1111, 0x2222, 0x3333};
       const uint32_t ecl[] = {0x3210, 0x3211, 0x3222, 0x3333};
       return std::pair{PrmtBySelectors(a, b, rc8[c & 3]), PrmtBySelectors(a, b, ecl[c & 3])};
     }},
    {"prmt.b32.ecr/rc16", "prmt.b32.ecr %r4, %r1, %r2, %r3; prmt.b32.rc16 %r5, %r1, %r2, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       const uint32_t ecr[] = {0x0000, 0x1110, 0x2210, 0x3210};
       const uint32_t rc16[] = {0x1010, 0x3232, 0x1010, 0x3232};
       return std::pair{PrmtBySelectors(a, b, ecr[c & 3]), PrmtBySelectors(a, b, rc16[c & 3])};
     }},
    // cvt.pack.sat: b saturated into the low bits, a above it, c's low bits above both. The
    // inputs are narrowed by arithmetic shifts so that both in-range and saturated values come.
    {"cvt.pack.sat.s16/u16",
     "shr.s32 %r6, %r1, 14; shr.s32 %r7, %r2, 14; cvt.pack.sat.s16.s32 %r4, %r6, %r7; "
     "cvt.pack.sat.u16.s32 %r5, %r6, %r7;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return std::pair{PackSat(int32_t(a) >> 14, int32_t(b) >> 14, 0, 16, true),
                        PackSat(int32_t(a) >> 14, int32_t(b) >> 14, 0, 16, false)};
     }},
    {"cvt.pack.sat.s8/u8.b32",
     "shr.s32 %r6, %r1, 22; shr.s32 %r7, %r2, 22; cvt.pack.sat.s8.s32.b32 %r4, %r6, %r7, %r3; "
     "cvt.pack.sat.u8.s32.b32 %r5, %r6, %r7, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return std::pair{PackSat(int32_t(a) >> 22, int32_t(b) >> 22, c, 8, true),
                        PackSat(int32_t(a) >> 22, int32_t(b) >> 22, c, 8, false)};
     }},
    {"cvt.pack.sat.s4/u4.b32",
     "shr.s32 %r6, %r1, 27; shr.s32 %r7, %r2, 27; cvt.pack.sat.s4.s32.b32 %r4, %r6, %r7, %r3; "
     "cvt.pack.sat.u4.s32.b32 %r5, %r6, %r7, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return std::pair{PackSat(int32_t(a) >> 27, int32_t(b) >> 27, c, 4, true),
                        PackSat(int32_t(a) >> 27, int32_t(b) >> 27, c, 4, false)};
     }},
    {"cvt.pack.sat.s2/u2.b32",
     "shr.s32 %r6, %r1, 29; shr.s32 %r7, %r2, 29; cvt.pack.sat.s2.s32.b32 %r4, %r6, %r7, %r3; "
     "cvt.pack.sat.u2.s32.b32 %r5, %r6, %r7, %r3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return std::pair{PackSat(int32_t(a) >> 29, int32_t(b) >> 29, c, 2, true),
                        PackSat(int32_t(a) >> 29, int32_t(b) >> 29, c, 2, false)};
     }},
    // szext: a's low n bits extended, n = b mod 32 (.wrap) or min(b, 32) (.clamp), b in 0..63.
    {"szext.wrap.s32/clamp.u32",
     "and.b32 %r6, %r3, 63; szext.wrap.s32 %r4, %r1, %r6; szext.clamp.u32 %r5, %r1, %r6;",
     Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t c) {
       const uint32_t b = c & 63, w = b % 32, k = std::min(b, 32u);
       const uint32_t s = w == 0 ? 0 : uint32_t(int32_t(a << (32 - w)) >> (32 - w));
       const uint32_t u = k == 32 ? a : a & ((1u << k) - 1);
       return std::pair{s, u};
     }},
    {"lop3.b32", "lop3.b32 %r4, %r1, %r2, %r3, 0xe8;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) { return One((a & b) | (a & c) | (b & c)); }},
    {"setp/selp",
     "setp.lt.s32 %p1, %r1, %r2; setp.hi.u32 %p2, %r1, %r3; and.pred %p3, %p1, %p2; selp.b32 %r4, "
     "%r1, %r3, %p3; setp.ne.and.s32 %p4|%p5, %r2, %r3, %p1; selp.u32 %r5, 7, 9, %p5;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       bool p1 = int32_t(a)<int32_t(b), p2 = a> c;
       return std::pair<uint32_t, uint32_t>{(p1 && p2) ? a : c, (b == c && p1) ? 7u : 9u};
     }},
    {"set/slct", "set.gt.u32.s32 %r4, %r1, %r2; slct.b32.s32 %r5, %r1, %r2, %r3;", Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return std::pair<uint32_t, uint32_t>{int32_t(a) > int32_t(b) ? 0xffffffffu : 0u,
                                            int32_t(c) >= 0 ? a : b};
     }},
    {"setp.f32 unordered",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; setp.ltu.f32 %p1, %f1, %f2; setp.lt.f32 %p2, %f1, %f2; "
     "setp.nan.f32 %p3, %f1, %f2; selp.u32 %r4, 1, 0, %p1; selp.u32 %r6, 2, 0, %p2; selp.u32 %r7, "
     "4, 0, %p3; or.b32 %r4, %r4, %r6; or.b32 %r4, %r4, %r7;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       float x = F(a), y = F(b);
       bool un = x != x || y != y;
       return One((un || x < y ? 1u : 0u) | (!un && x < y ? 2u : 0u) | (un ? 4u : 0u));
     }},
    {"add.f32", "mov.b32 %f1, %r1; mov.b32 %f2, %r2; add.f32 %f3, %f1, %f2; mov.b32 %r4, %f3;",
     Gen::kMixedFloat, [](uint32_t a, uint32_t b, uint32_t) { return One(Canon(F(a) + F(b))); }},
    {"sub.rz.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; sub.rz.f32 %f3, %f1, %f2; mov.b32 %r4, %f3;", Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       return One(Rounded(FE_TOWARDZERO, [&] { return F(a) - F(b); }));
     }},
    {"mul.rm.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; mul.rm.f32 %f3, %f1, %f2; mov.b32 %r4, %f3;", Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       return One(Rounded(FE_DOWNWARD, [&] { return F(a) * F(b); }));
     }},
    {"fma.rn.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; mov.b32 %f3, %r3; fma.rn.f32 %f4, %f1, %f2, %f3; mov.b32 "
     "%r4, %f4;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t c) { return One(Canon(std::fma(F(a), F(b), F(c)))); }},
    {"fma.rp.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; mov.b32 %f3, %r3; fma.rp.f32 %f4, %f1, %f2, %f3; mov.b32 "
     "%r4, %f4;",
     Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t c) {
       return One(Rounded(FE_UPWARD, [&] { return std::fma(F(a), F(b), F(c)); }));
     }},
    {"div.rn.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; div.rn.f32 %f3, %f1, %f2; mov.b32 %r4, %f3;",
     Gen::kMixedFloat, [](uint32_t a, uint32_t b, uint32_t) { return One(Canon(F(a) / F(b))); }},
    {"sqrt.rn/rcp.rn.f32",
     "mov.b32 %f1, %r1; abs.f32 %f1, %f1; sqrt.rn.f32 %f3, %f1; mov.b32 %r4, %f3; mov.b32 %f2, "
     "%r2; rcp.rn.f32 %f4, %f2; mov.b32 %r5, %f4;",
     Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       return std::pair<uint32_t, uint32_t>{Canon(std::sqrt(std::fabs(F(a)))), Canon(1.0f / F(b))};
     }},
    {"min/max.f32 NaN",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; min.f32 %f3, %f1, %f2; max.f32 %f4, %f1, %f2; mov.b32 "
     "%r4, %f3; mov.b32 %r5, %f4;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       float x = F(a), y = F(b);
       float mn = x != x   ? y
                  : y != y ? x
                           : std::fmin(x, y),
             mx = x != x   ? y
                  : y != y ? x
                           : std::fmax(x, y);
       return std::pair<uint32_t, uint32_t>{Canon(mn), Canon(mx)};
     }},
    {"abs/neg.f32",
     "mov.b32 %f1, %r1; abs.f32 %f2, %f1; neg.f32 %f3, %f1; mov.b32 %r4, %f2; mov.b32 %r5, %f3;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t, uint32_t) {
       return std::pair<uint32_t, uint32_t>{a & 0x7fffffffu, a ^ 0x80000000u};
     }},
    {"add.sat/ftz.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; add.sat.f32 %f3, %f1, %f2; mov.b32 %r4, %f3; mul.ftz.f32 "
     "%f4, %f1, 0f00800000; mov.b32 %r5, %f4;",
     Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       float s = F(a) + F(b);
       s = s != s || s < 0 ? 0.0f : s > 1 ? 1.0f : s;
       float m = F(a) * F(0x00800000u);
       if (std::fabs(m) < std::numeric_limits<float>::min()) m = std::copysign(0.0f, m);
       return std::pair<uint32_t, uint32_t>{B(s), B(m)};
     }},
    {"f64 add/mul/div",
     "mov.b64 %fd1, {%r1, %r2}; mov.b64 %fd2, {%r3, %r1}; mul.rn.f64 %fd3, %fd1, %fd2; div.rn.f64 "
     "%fd4, %fd3, %fd2; add.f64 %fd5, %fd4, %fd1; mov.b64 {%r4, %r5}, %fd5;",
     Gen::kFloat,
     [](uint32_t a, uint32_t b, uint32_t c) {
       double x = std::bit_cast<double>(uint64_t(b) << 32 | a),
              y = std::bit_cast<double>(uint64_t(a) << 32 | c);
       double r = x * y / y + x;
       return Two(r != r ? 0x7fffffffffffffffull : std::bit_cast<uint64_t>(r));
     }},
    {"cvt float->int", "mov.b32 %f1, %r1; cvt.rni.s32.f32 %r4, %f1; cvt.rzi.u32.f32 %r5, %f1;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t, uint32_t) {
       auto sat = [](double v, double lo, double hi) {
         return v != v ? 0.0 : std::clamp(v, lo, hi);
       };
       return std::pair<uint32_t, uint32_t>{
           uint32_t(int32_t(sat(std::nearbyint(F(a)), INT32_MIN, INT32_MAX))),
           uint32_t(sat(std::trunc(F(a)), 0, UINT32_MAX))};
     }},
    {"cvt int->float",
     "cvt.rn.f32.s32 %f1, %r1; cvt.rz.f32.u32 %f2, %r2; mov.b32 %r4, %f1; mov.b32 %r5, %f2;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return std::pair<uint32_t, uint32_t>{B(float(int32_t(a))),
                                            Rounded(FE_TOWARDZERO, [&] { return float(b); })};
     }},
    {"cvt f16",
     "mov.b32 %f1, %r1; cvt.rn.f16.f32 %h1, %f1; cvt.f32.f16 %f2, %h1; cvt.u32.u16 %r4, %h1; "
     "mov.b32 %r5, %f2;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t, uint32_t) {
       _Float16 h = (_Float16)F(a);
       uint16_t hb;
       std::memcpy(&hb, &h, 2);
       if (F(a) != F(a)) return std::pair<uint32_t, uint32_t>{0x7fffu, 0x7fffffffu};
       return std::pair<uint32_t, uint32_t>{hb, B(float(h))};
     }},
    {"cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; cvt.rn.f16x2.f32 %r4, %f1, %f2; cvt.rn.bf16x2.f32 %r5, "
     "%f1, %f2;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       auto h = [](uint32_t f) {
         _Float16 v = _Float16(F(f));
         return v != v ? 0x7fffu : uint32_t(std::bit_cast<uint16_t>(v));
       };
       auto bf = [](uint32_t u) {  // nearest even on the float's bits
         if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
         return (u + 0x7fffu + ((u >> 16) & 1)) >> 16;
       };
       return std::pair<uint32_t, uint32_t>{(h(a) << 16) | h(b), (bf(a) << 16) | bf(b)};
     }},
    {"cvt.rn.satfinite.f16x2.f32 / cvt.rz.satfinite.bf16x2.f32",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; cvt.rn.satfinite.f16x2.f32 %r4, %f1, %f2; "
     "cvt.rz.satfinite.bf16x2.f32 %r5, %f1, %f2;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       auto h = [](uint32_t f) {  // an infinity becomes the largest finite value of its sign
         _Float16 v = _Float16(F(f));
         if (v != v) return 0x7fffu;
         const uint32_t u = std::bit_cast<uint16_t>(v);
         return (u & 0x7fffu) == 0x7c00u ? u - 1 : u;
       };
       auto bf = [](uint32_t u) {  // toward zero on the float's bits
         if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
         const uint32_t r = u >> 16;
         return (r & 0x7fffu) == 0x7f80u ? r - 1 : r;
       };
       return std::pair<uint32_t, uint32_t>{(h(a) << 16) | h(b), (bf(a) << 16) | bf(b)};
     }},
    // Single values: random bits reach every exponent, so most overflow f16.
    {"cvt.rn.satfinite.f16.f32 / cvt.rz.relu.satfinite.f16.f32",
     "mov.b32 %f1, %r1; cvt.rn.satfinite.f16.f32 %h1, %f1; cvt.u32.u16 %r4, %h1; "
     "cvt.rz.relu.satfinite.f16.f32 %h2, %f1; cvt.u32.u16 %r5, %h2;",
     Gen::kBits,
     [](uint32_t a, uint32_t, uint32_t) {
       if (F(a) != F(a)) return std::pair<uint32_t, uint32_t>{0x7fffu, 0x7fffu};
       auto sat = [](_Float16 v) {
         const uint32_t u = std::bit_cast<uint16_t>(v);
         return (u & 0x7fffu) == 0x7c00u ? u - 1 : u;
       };
       // Toward zero: 11 significant bits, quanta no finer than f16's least subnormal.
       const float v = F(a);
       float rz = std::isinf(v) ? v : 0.0f;
       if (v != 0 && !std::isinf(v)) {
         const int q = std::max(std::ilogb(v) - 10, -24);
         rz = float(std::ldexp(std::trunc(std::ldexp(double(v), -q)), q));
       }
       return std::pair<uint32_t, uint32_t>{sat(_Float16(v)),
                                            (a >> 31) ? 0u : sat(_Float16(rz))};
     }},
    // Near FLT_MAX (exponent 254, the top mantissa bits set): rounding to bf16 or tf32 may
    // overflow, and .satfinite keeps the largest finite value.
    {"cvt.rn.satfinite.bf16.f32 / cvt.rn.satfinite.tf32.f32 near FLT_MAX",
     "and.b32 %r6, %r1, 0x8000ffff; or.b32 %r6, %r6, 0x7f7f0000; mov.b32 %f1, %r6; "
     "cvt.rn.satfinite.bf16.f32 %h1, %f1; cvt.u32.u16 %r4, %h1; "
     "and.b32 %r7, %r2, 0x80001fff; or.b32 %r7, %r7, 0x7f7fe000; mov.b32 %f2, %r7; "
     "cvt.rn.satfinite.tf32.f32 %r5, %f2;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       const uint32_t fa = (a & 0x8000ffffu) | 0x7f7f0000u, fb = (b & 0x80001fffu) | 0x7f7fe000u;
       const uint32_t bf = (fa + 0x7fffu + ((fa >> 16) & 1)) >> 16;
       const uint32_t tf = Tf32(F(fb), FE_TONEAREST);
       return std::pair<uint32_t, uint32_t>{(bf & 0x7fffu) == 0x7f80u ? bf - 1 : bf,
                                            (tf & 0x7fffffffu) == 0x7f800000u ? tf - 0x2000u : tf};
     }},
    {"cvt.rz.relu.tf32.f32 / cvt.rna.satfinite.tf32.f32",
     "mov.b32 %f1, %r1; cvt.rz.relu.tf32.f32 %r4, %f1; cvt.rna.satfinite.tf32.f32 %r5, %f1;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t, uint32_t) {
       if (F(a) != F(a)) return std::pair<uint32_t, uint32_t>{0x7fffffffu, 0x7fffffffu};
       const uint32_t rz = (a >> 31) ? 0u : Tf32(F(a), FE_TOWARDZERO);
       uint32_t rna = Tf32(F(a), -1);
       if ((rna & 0x7fffffffu) == 0x7f800000u) rna -= 0x2000u;
       return std::pair<uint32_t, uint32_t>{rz, rna};
     }},
    {"cvt.rn.satfinite.relu.e4m3x2.f32 / cvt.rn.relu.f16x2.e5m2x2",
     "mov.b32 %f1, %r1; mov.b32 %f2, %r2; cvt.rn.satfinite.relu.e4m3x2.f32 %h1, %f1, %f2; "
     "cvt.u32.u16 %r4, %h1; cvt.rn.satfinite.e5m2x2.f32 %h2, %f1, %f2; "
     "cvt.rn.relu.f16x2.e5m2x2 %r5, %h2;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t) {
       // cuda_fp8.h's conversions, then .relu: a negative result is +0, a NaN stays NaN.
       auto e4 = [](uint32_t u) -> uint32_t {
         if (F(u) != F(u)) return 0x7f;
         return (u >> 31) ? 0 : __nv_cvt_float_to_fp8(F(u), __NV_SATFINITE, __NV_E4M3);
       };
       auto back = [](uint32_t u) -> uint32_t {
         const uint8_t q = __nv_cvt_float_to_fp8(F(u), __NV_SATFINITE, __NV_E5M2);
         const uint16_t h = __nv_cvt_fp8_to_halfraw(q, __NV_E5M2).x;
         return h != 0x7fff && (h >> 15) ? 0 : h;
       };
       return std::pair<uint32_t, uint32_t>{(e4(a) << 8) | e4(b), (back(a) << 16) | back(b)};
     }},
    {"cvt int widths",
     "cvt.s64.s32 %rd7, %r1; cvt.u16.u32 %h1, %r2; cvt.s32.s16 %r6, %h1; cvt.sat.s8.s32 %r7, %r3; "
     "cvt.s32.s8 %r8, %r7; add.s32 %r5, %r6, %r8; mov.b64 {%r4, %r10}, %rd7; xor.b32 %r5, %r5, "
     "%r10;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t c) {
       int64_t w = int32_t(a);
       int32_t s16 = int16_t(b), s8 = std::clamp<int32_t>(int32_t(c), -128, 127);
       return std::pair<uint32_t, uint32_t>{uint32_t(w),
                                            uint32_t(s16 + s8) ^ uint32_t(uint64_t(w) >> 32)};
     }},
    // nvcc writes "not p" as xor with the immediate -1 (any nonzero immediate is true).
    {"xor/and/or.pred with immediates",
     "setp.lt.u32 %p1, %r1, %r2; xor.pred %p2, %p1, -1; and.pred %p3, %p1, 1; "
     "or.pred %p4, %p2, 0; and.pred %p3, %p3, %p4; selp.u32 %r4, 1, 0, %p2; "
     "selp.u32 %r5, 1, 0, %p3;",
     Gen::kBits,
     [](uint32_t a, uint32_t b, uint32_t) {
       return std::pair<uint32_t, uint32_t>{a < b ? 0u : 1u, 0u};
     }},
    // One bit per test: of the f32 %r1, and of the f64 whose high word is %r2 (specials give
    // normal, zero and subnormal doubles).
    {"testp.f32/f64",
     "mov.b32 %f1, %r1; testp.finite.f32 %p0, %f1; testp.infinite.f32 %p1, %f1; "
     "testp.number.f32 %p2, %f1; testp.notanumber.f32 %p3, %f1; testp.normal.f32 %p4, %f1; "
     "testp.subnormal.f32 %p5, %f1; selp.u32 %r4, 1, 0, %p0; selp.u32 %r6, 2, 0, %p1; "
     "or.b32 %r4, %r4, %r6; selp.u32 %r6, 4, 0, %p2; or.b32 %r4, %r4, %r6; "
     "selp.u32 %r6, 8, 0, %p3; or.b32 %r4, %r4, %r6; selp.u32 %r6, 16, 0, %p4; "
     "or.b32 %r4, %r4, %r6; selp.u32 %r6, 32, 0, %p5; or.b32 %r4, %r4, %r6; "
     "mov.b64 %fd1, {%r3, %r2}; testp.finite.f64 %p0, %fd1; testp.notanumber.f64 %p1, %fd1; "
     "testp.normal.f64 %p2, %fd1; testp.subnormal.f64 %p3, %fd1; selp.u32 %r5, 1, 0, %p0; "
     "selp.u32 %r6, 2, 0, %p1; or.b32 %r5, %r5, %r6; selp.u32 %r6, 4, 0, %p2; "
     "or.b32 %r5, %r5, %r6; selp.u32 %r6, 8, 0, %p3; or.b32 %r5, %r5, %r6;",
     Gen::kMixedFloat,
     [](uint32_t a, uint32_t b, uint32_t c) {
       const float f = F(a);
       const double d = std::bit_cast<double>(uint64_t(b) << 32 | c);
       auto bits = [](auto v) {
         const int k = std::fpclassify(v);
         return std::array<bool, 6>{k != FP_INFINITE && k != FP_NAN,
                                    k == FP_INFINITE,
                                    k != FP_NAN,
                                    k == FP_NAN,
                                    k == FP_NORMAL,
                                    k == FP_SUBNORMAL};
       };
       const auto fb = bits(f), db = bits(d);
       uint32_t r4 = 0;
       for (int i = 0; i < 6; ++i) r4 |= uint32_t(fb[i]) << i;
       const uint32_t r5 =
           uint32_t(db[0]) | uint32_t(db[3]) << 1 | uint32_t(db[4]) << 2 | uint32_t(db[5]) << 3;
       return std::pair<uint32_t, uint32_t>{r4, r5};
     }},
};

class Ops : public ::testing::TestWithParam<size_t> {};

TEST_P(Ops, MatchesReference) {
  const Row& row = kRows[GetParam()];
  SCOPED_TRACE(row.name);
  auto prog = MustLoad({Wrap(row.body)});
  ASSERT_TRUE(prog);
  const int n = 64;
  std::mt19937 rng(uint32_t(GetParam()) * 7919u + 1);
  std::uniform_real_distribution<float> uf(-1000, 1000);
  const uint32_t specials[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u,
                               0u,          0x00000001u, 0x3f800000u};
  std::vector<uint32_t> in(n * 3);
  for (int i = 0; i < n * 3; ++i) {
    switch (row.gen) {
      case Gen::kBits:
        in[i] = rng();
        break;
      case Gen::kSmall:
        in[i] = rng() % 40;
        break;
      case Gen::kFloat:
        in[i] = B(uf(rng));
        break;
      case Gen::kMixedFloat:
        in[i] = (rng() % 5 == 0) ? specials[rng() % 7] : B(uf(rng));
        break;
    }
  }
  TestMemory mem;
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(n * 2);
  Status s = RunKernel(
      *prog, "k", {1}, {n}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (int t = 0; t < n; ++t) {
    auto [w0, w1] = row.ref(in[t * 3], in[t * 3 + 1], in[t * 3 + 2]);
    ASSERT_EQ(out[t * 2], w0) << "thread " << t << " inputs " << std::hex << in[t * 3] << " "
                              << in[t * 3 + 1] << " " << in[t * 3 + 2];
    ASSERT_EQ(out[t * 2 + 1], w1) << "thread " << t << " inputs " << std::hex << in[t * 3] << " "
                                  << in[t * 3 + 1] << " " << in[t * 3 + 2];
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, Ops, ::testing::Range<size_t>(0, std::size(kRows)),
                         [](const ::testing::TestParamInfo<size_t>& i) {
                           std::string n = kRows[i.param].name;
                           for (char& c : n)
                             if (!std::isalnum(uint8_t(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace remora::emu::ptx::testing
