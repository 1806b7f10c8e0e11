// tests/emu_ptx/ops_test.cc - one row per instruction: tiny hand-written PTX, random inputs,
// outputs checked against a CPU reference of the PTX ISA semantics.
#include <atomic>
#include <cfenv>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include "tests/emu_ptx/harness.h"

namespace remora::emu::ptx::testing {
namespace {

// Each thread loads three b32 inputs into %r1..%r3, runs BODY, stores %r4 and %r5.
std::string Wrap(const std::string& body) {
  return R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_in, .param .u64 k_out) {
  .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .f32 %f<12>; .reg .f64 %fd<8>; .reg .pred %p<6>;
  .reg .b16 %h<4>;
  ld.param.u64 %rd1, [k_in];
  ld.param.u64 %rd2, [k_out];
  mov.u32 %r9, %tid.x;
  mul.wide.u32 %rd3, %r9, 12;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v2.u32 {%r1, %r2}, [%rd4];
  ld.global.u32 %r3, [%rd4+8];
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
)" + body +
         R"(
  mul.wide.u32 %rd5, %r9, 8;
  add.s64 %rd6, %rd2, %rd5;
  st.global.v2.u32 [%rd6], {%r4, %r5};
  ret;
})";
}

enum class Gen { kBits, kFloat, kSmall, kMixedFloat };
using Ref = std::function<std::pair<uint32_t, uint32_t>(uint32_t, uint32_t, uint32_t)>;
struct Row {
  const char* name;
  const char* body;
  Gen gen;
  Ref ref;
};

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

// Warp and CTA collectives on one 64-thread block: inputs in[t], outputs out[t*2..].
TEST(Collectives, ReduxMatchBarRedShflIdx) {
  const std::string ptx = Wrap(R"(
  and.b32 %r6, %r1, 7;
  redux.sync.add.u32 %r4, %r6, 0xffffffff;
  match.any.sync.b32 %r7, %r6, 0xffffffff;
  setp.ne.u32 %p1, %r6, 0;
  bar.red.popc.u32 %r8, 0, %p1;
  shfl.sync.idx.b32 %r10, %r6, 3, 0x181f, 0xffffffff;
  vote.sync.uni.pred %p2, %p1, 0xffffffff;
  selp.u32 %r11, 1000000, 0, %p2;
  add.s32 %r5, %r8, %r11;
  shl.b32 %r10, %r10, 24;
  xor.b32 %r5, %r5, %r10;
  xor.b32 %r5, %r5, %r7;)");
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  const int n = 64;
  std::mt19937 rng(5);
  std::vector<uint32_t> in(n * 3);
  for (auto& v : in) v = rng();
  TestMemory mem;
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(n * 2);
  Status s = RunKernel(
      *prog, "k", {1}, {n}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto v = [&](int t) { return in[t * 3] & 7; };
  uint32_t popc = 0;
  for (int t = 0; t < n; ++t) popc += v(t) != 0;
  for (int t = 0; t < n; ++t) {
    int w = t / 32 * 32, l = t % 32;
    uint32_t sum = 0, match = 0;
    bool all = true, any = false;
    for (int k = 0; k < 32; ++k) {
      sum += v(w + k);
      match |= uint32_t(v(w + k) == v(t)) << k;
      all &= v(w + k) != 0;
      any |= v(w + k) != 0;
    }
    int src = (l & 0x18) | 3;  // width 8 segments: c = ((32-8)<<8) | 31
    uint32_t uni = (all || !any) ? 1000000u : 0u;
    EXPECT_EQ(out[t * 2], sum) << t;
    EXPECT_EQ(out[t * 2 + 1], ((popc + uni) ^ (v(w + src) << 24)) ^ match) << t;
  }
}

TEST(Errors, UnknownInstructionIsRefusedAtLoad) {
  auto r = Load(std::vector<std::string>{Wrap("frobnicate.b32 %r4, %r1;")});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInvalidPtx);
  EXPECT_NE(r.status().message().find("frobnicate"), std::string::npos) << r.status().message();
}

TEST(Errors, UnknownModifierIsRefusedAtLoad) {
  auto r = Load(std::vector<std::string>{Wrap("add.wobble.s32 %r4, %r1, %r2;")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(".wobble"), std::string::npos) << r.status().message();
}

TEST(Errors, UnimplementedFormFailsWhenReached) {
  // mad.hi.sat.s32 decodes (known mnemonic and modifiers) but has no exec function: loading
  // works, threads that never reach it are fine, reaching it is a named launch failure.
  auto prog = MustLoad(
      {Wrap("setp.gt.u32 %p1, %r9, 40; @!%p1 bra SKIP; mad.hi.sat.s32 %r4, %r1, %r1, %r1; SKIP:")});
  ASSERT_TRUE(prog);
  TestMemory mem;
  std::vector<uint32_t> in(64 * 3, 1);
  uint32_t* din = mem.Upload(in);
  uint32_t* out = mem.Alloc<uint32_t>(64 * 2);
  Status ok = RunKernel(
      *prog, "k", {1}, {32}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  EXPECT_TRUE(ok.ok()) << ok.ToString();
  Status s = RunKernel(
      *prog, "k", {1}, {64}, [&](Params& p) { p.Add(din).Add(out); }, &mem);
  EXPECT_EQ(s.code(), err::kLaunchFailure);
  EXPECT_NE(s.message().find("mad.hi.sat.s32"), std::string::npos) << s.message();
}

TEST(Errors, GenericSharedAndLocalWindowsRoundTrip) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 k_out) {
  .local .align 8 .b8 depot[16];
  .shared .align 4 .b32 sm[64];
  .reg .b32 %r<8>; .reg .b64 %rd<12>; .reg .pred %p<2>;
  ld.param.u64 %rd1, [k_out];
  mov.u32 %r1, %tid.x;
  mov.u64 %rd2, sm;
  cvta.shared.u64 %rd3, %rd2;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd3, %rd4;
  mul.lo.s32 %r2, %r1, 3;
  st.u32 [%rd5], %r2;
  bar.sync 0;
  mov.u64 %rd6, depot;
  cvta.local.u64 %rd7, %rd6;
  add.s32 %r3, %r1, 100;
  st.u32 [%rd7+4], %r3;
  ld.local.u32 %r4, [depot+4];
  isspacep.shared %p1, %rd5;
  xor.b32 %r5, %r1, 1;
  mul.wide.u32 %rd8, %r5, 4;
  add.s64 %rd9, %rd2, %rd8;
  ld.shared.u32 %r6, [%rd9];
  add.s32 %r6, %r6, %r4;
  @!%p1 mov.u32 %r6, 0;
  add.s64 %rd10, %rd1, %rd4;
  st.global.u32 [%rd10], %r6;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(64);
  Status s = RunKernel(
      *prog, "k", {1}, {64}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (uint32_t t = 0; t < 64; ++t) EXPECT_EQ(out[t], (t ^ 1) * 3 + t + 100) << t;
}

// Each kernel's static shared memory holds only the .shared variables it reaches (directly or
// through the functions it calls), as ptxas lays it out; a variable two kernels reach is at the
// same offset in both.
TEST(SharedLayout, PerKernelAndReachable) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.shared .align 4 .b8 big_a[40960];
.shared .align 4 .b8 big_b[40960];
.shared .align 8 .b8 common[128];
.func (.param .b32 r) twice(.param .b32 x) {
  .reg .b32 %r<6>;
  ld.param.b32 %r1, [x];
  mov.u32 %r2, %tid.x;
  shl.b32 %r2, %r2, 2;
  mov.u32 %r3, common;
  add.u32 %r3, %r3, %r2;
  st.shared.u32 [%r3], %r1;
  ld.shared.u32 %r4, [%r3];
  add.u32 %r4, %r4, %r4;
  st.param.b32 [r], %r4;
  ret;
}
.visible .entry ka(.param .u64 out) {
  .reg .b32 %r<8>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, big_a;
  add.s64 %rd4, %rd3, %rd2;
  mul.lo.s32 %r2, %r1, 3;
  st.shared.u32 [%rd4], %r2;
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), twice, (p0);
  ld.param.b32 %r3, [r0];
  }
  ld.shared.u32 %r4, [%rd4];
  add.s32 %r5, %r4, %r3;
  add.s64 %rd5, %rd1, %rd2;
  st.global.u32 [%rd5], %r5;
  ret;
}
.visible .entry kb(.param .u64 out) {
  .reg .b32 %r<8>; .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  st.shared.u32 [big_b+40956], %r1;
  ld.shared.u32 %r2, [big_b+40956];
  {
  .param .b32 p0;
  st.param.b32 [p0], %r1;
  .param .b32 r0;
  call.uni (r0), twice, (p0);
  ld.param.b32 %r3, [r0];
  }
  add.s32 %r4, %r3, 5;
  add.s64 %rd5, %rd1, %rd2;
  st.global.u32 [%rd5], %r4;
  ret;
}
.visible .entry kc(.param .u64 out) {
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [out];
  st.global.u32 [%rd1], 7;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  auto shared_of = [&](const char* name) {
    return prog->kernels()[*prog->FindKernel(name)].static_shared_bytes;
  };
  EXPECT_EQ(shared_of("ka"), 40960u + 128u);
  EXPECT_EQ(shared_of("kb"), 40960u + 128u);
  EXPECT_EQ(shared_of("kc"), 0u);
  TestMemory mem;
  uint32_t* out = mem.Alloc<uint32_t>(32);
  Status ska = RunKernel(
      *prog, "ka", {2}, {32}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(ska.ok()) << ska.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 3 * t + 2 * t) << t;
  Status skb = RunKernel(
      *prog, "kb", {2}, {32}, [&](Params& p) { p.Add(out); }, &mem);
  ASSERT_TRUE(skb.ok()) << skb.ToString();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(out[t], 2 * t + 5) << t;
  // With dynamic shared memory past the static part, 48 KiB in all per CTA.
  Status s = RunKernel(
      *prog, "ka", {1}, {32}, [&](Params& p) { p.Add(out); }, &mem, 49152 - 41088);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(SharedLayout, MoreThan48KiBStaticIsRefused) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry k(.param .u64 out) {
  .shared .align 4 .b8 big[49156];
  st.shared.u32 [big+49152], 1;
  ret;
})";
  auto r = Load(std::vector<std::string>{ptx});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), err::kInvalidPtx);
}

// Declared sizes come from an untrusted module: one past what the emulator materialises
// (or one that overflows 64 bits) is refused at load, never allocated or enumerated.
TEST(Errors, OversizedDeclarationsAreRefusedAtLoad) {
  const std::string head = ".version 9.0\n.target sm_75\n.address_size 64\n";
  const std::string entry = ".visible .entry k() { ret; }\n";
  const std::vector<std::string> bad = {
      ".global .align 4 .b32 g[4611686018427387904];\n",         // 2^62 elements: overflows
      ".global .b8 g[65536][65536][65536];\n",                   // 2^48 bytes by products
      ".global .b8 a[200000000];\n.global .b8 b[100000000];\n",  // 300 MB of statics together
      ".global .align 3 .b8 g[4];\n",                            // not a power of two
      ".global .b8 g[-4];\n",
      ".visible .entry f() { .local .b8 x[600000]; ret; }\n",          // a frame past 512 KiB
      ".visible .entry r() { .reg .b64 %rd<1555555555555>; ret; }\n",  // registers
      ".visible .entry s() { .reg .b32 %r<40000>; .reg .b32 %q<40000>; ret; }\n",
      ".visible .entry p(.param .align 4 .b8 x[400000], .param .align 4 .b8 y[400000]) { ret; }\n",
  };
  for (const std::string& decl : bad) {
    auto r = Load(std::vector<std::string>{head + decl + entry});
    ASSERT_FALSE(r.ok()) << decl;
    EXPECT_EQ(r.status().code(), err::kInvalidPtx) << decl;
  }
  // A megabyte of statics loads, zeroed.
  auto ok = Load(std::vector<std::string>{head + ".global .b8 g[1048576];\n" + entry});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ((*ok)->globals().size(), 1u);
  const auto& g = (*ok)->globals()[0];
  ASSERT_EQ(g.size, 1048576u);
  EXPECT_EQ(std::count(g.init.begin(), g.init.end(), std::byte{0}), 1048576);
}

// Stream priorities, as a GPU's block dispatcher honours them: while a higher-priority kernel
// holds every core, a lower-priority one starts a block only when its bounded wait (2 ms) runs
// out, and it still finishes. With equal priorities the same kernels run side by side.
TEST(Priorities, AHigherPriorityKernelHoldsBackALowerOnesBlocks) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry spin(.param .u64 flag, .param .u64 started) {
  .reg .pred %p;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [flag];
  ld.param.u64 %rd2, [started];
  atom.global.add.u32 %r1, [%rd2], 1;
WAIT:
  ld.volatile.global.u32 %r2, [%rd1];
  setp.eq.u32 %p, %r2, 0;
  @%p bra WAIT;
  ret;
}
.visible .entry count(.param .u64 counter) {
  .reg .b32 %r1;
  .reg .b64 %rd1;
  ld.param.u64 %rd1, [counter];
  atom.global.add.u32 %r1, [%rd1], 1;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_NE(prog, nullptr);
  TestMemory mem;
  uint32_t* flag = mem.Alloc<uint32_t>(1);
  uint32_t* started = mem.Alloc<uint32_t>(1);
  uint32_t* counter = mem.Alloc<uint32_t>(1);
  auto load = [](uint32_t* p) { return std::atomic_ref<uint32_t>(*p).load(); };
  constexpr uint32_t kBlocks = 20000;
  // Starts the spinner at `priority` (64 blocks: enough to ask for every core) and waits until
  // it runs.
  auto spin = [&](int priority) {
    std::atomic_ref<uint32_t>(*flag).store(0);
    std::atomic_ref<uint32_t>(*started).store(0);
    std::thread t([&, priority] {
      Status s = RunKernel(
          *prog, "spin", {64}, {1}, [&](Params& p) { p.Add(flag).Add(started); }, &mem, 0, nullptr,
          nullptr, 0, priority);
      EXPECT_TRUE(s.ok()) << s.ToString();
    });
    while (load(started) == 0) std::this_thread::yield();
    return t;
  };
  auto count = [&] {
    Status s = RunKernel(
        *prog, "count", {kBlocks}, {1}, [&](Params& p) { p.Add(counter); }, &mem, 0, nullptr,
        nullptr, 0, /*priority=*/0);
    EXPECT_TRUE(s.ok()) << s.ToString();
  };

  // Equal priorities: the counting kernel runs to its end while the spinner spins.
  std::thread spinner = spin(0);
  const auto t0 = std::chrono::steady_clock::now();
  count();
  const auto alongside = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(load(counter), kBlocks);
  std::atomic_ref<uint32_t>(*flag).store(1);
  spinner.join();

  // A higher-priority spinner: over twice that time the counting kernel gets a block per
  // bounded wait at most, far from all of them; released, it finishes.
  std::atomic_ref<uint32_t>(*counter).store(0);
  spinner = spin(-5);
  std::thread counting(count);
  std::this_thread::sleep_for(2 * alongside + std::chrono::milliseconds(20));
  const uint32_t held = load(counter);
  std::atomic_ref<uint32_t>(*flag).store(1);
  spinner.join();
  counting.join();
  EXPECT_LT(held, kBlocks / 2) << "the lower-priority kernel was not held back";
  EXPECT_EQ(load(counter), kBlocks);
}

// A vector access of 8 or 16 bytes is seen whole by a thread of another CTA, as on a GPU (CUB's
// decoupled look-back publishes {status, value} with one st.relaxed.v2 and polls with one ld):
// block 0 stores (i, ~i) pairs while block 1 loads them and counts the torn ones.
TEST(Memory, VectorAccessIsNotTornAcrossCtas) {
  const std::string ptx = R"(.version 9.0
.target sm_75
.address_size 64
.visible .entry pairs32(.param .u64 cell, .param .u64 out, .param .u32 n) {
  .reg .b32 %r<12>; .reg .b64 %rd<4>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [cell];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, 0;
  mov.u32 %r9, 0;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra READ;
WRITE:
  add.u32 %r3, %r3, 1;
  not.b32 %r4, %r3;
  st.relaxed.gpu.v2.u32 [%rd1], {%r3, %r4};
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra WRITE;
  ret;
READ:
  ld.relaxed.gpu.v2.u32 {%r5, %r6}, [%rd1];
  not.b32 %r7, %r6;
  setp.ne.u32 %p3, %r5, %r7;
  selp.u32 %r8, 1, 0, %p3;
  add.u32 %r9, %r9, %r8;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra READ;
  st.global.u32 [%rd2], %r9;
  ret;
}
.visible .entry pairs64(.param .u64 cell, .param .u64 out, .param .u32 n) {
  .reg .b32 %r<12>; .reg .b64 %rd<12>; .reg .pred %p<4>;
  ld.param.u64 %rd1, [cell];
  ld.param.u64 %rd2, [out];
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, 0;
  mov.u32 %r9, 0;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra READ;
WRITE:
  add.u32 %r3, %r3, 1;
  cvt.u64.u32 %rd3, %r3;
  not.b64 %rd4, %rd3;
  st.relaxed.gpu.v2.u64 [%rd1], {%rd3, %rd4};
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra WRITE;
  ret;
READ:
  ld.relaxed.gpu.v2.u64 {%rd5, %rd6}, [%rd1];
  not.b64 %rd7, %rd6;
  setp.ne.u64 %p3, %rd5, %rd7;
  selp.u32 %r8, 1, 0, %p3;
  add.u32 %r9, %r9, %r8;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r3, %r1;
  @%p2 bra READ;
  st.global.u32 [%rd2], %r9;
  ret;
})";
  auto prog = MustLoad({ptx});
  ASSERT_TRUE(prog);
  for (const char* kernel : {"pairs32", "pairs64"}) {
    SCOPED_TRACE(kernel);
    TestMemory mem;
    uint64_t* cell = mem.Upload(std::vector<uint64_t>{0xffffffff00000000ull, ~0ull});
    uint32_t* torn = mem.Alloc<uint32_t>(1);
    auto args = [&](Params& p) { p.Add(cell).Add(torn).Add(uint32_t{2000000}); };
    Status s = RunKernel(*prog, kernel, {2}, {1}, args, &mem, 0, nullptr, nullptr, 2);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_EQ(*torn, 0u);
  }
}

}  // namespace
}  // namespace remora::emu::ptx::testing
