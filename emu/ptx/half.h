// emu/ptx/half.h - .f16 and .bf16 values: exact widening, and rounding from double.
//
// A 16-bit float lives in the low 16 bits of a register slot (.f16x2/.bf16x2: element 0 in the
// low half, element 1 in the high half). Widening to double is exact. Rounding from double is a
// single IEEE rounding per the PTX mode, so a double that holds the exact result (or the result
// rounded to odd, see exec_half.cc) rounds exactly as the GPU does. NaN results are the GPU's
// canonical 0x7fff for both formats.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "emu/ptx/ir.h"

namespace remora::emu::ptx {

// The two 16-bit formats: stored mantissa bits and exponent bits.
struct HalfFmt {
  int man;
  int ebits;
};
inline constexpr HalfFmt kF16{10, 5};
inline constexpr HalfFmt kBF16{7, 8};

inline double HalfToDouble(uint16_t h, HalfFmt f) {
  if (f.ebits == 8) return double(std::bit_cast<float>(uint32_t(h) << 16));
  uint32_t sign = h >> 15, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v;
  if (exp == 31)
    v = man ? std::nan("") : INFINITY;
  else if (exp == 0)
    v = std::ldexp(double(man), -24);
  else
    v = std::ldexp(double(man | 0x400), int(exp) - 25);
  return sign ? -v : v;
}
// A subnormal of format `f` flushed to a zero of its sign (.ftz), anything else as it is.
inline uint16_t FlushSubnormal(uint16_t h, HalfFmt f) {
  const uint16_t exp = uint16_t(((1 << f.ebits) - 1) << f.man);
  return (h & exp) == 0 ? uint16_t(h & 0x8000) : h;
}
inline float HalfToFloat(uint16_t h) {
  return float(HalfToDouble(h, kF16));
}

// Rounds |m| to an integer per the PTX rounding mode (sign-aware for rm/rp); kNone is rn.
inline double RoundMag(double m, Rnd r, bool neg) {
  switch (r) {
    case Rnd::kRz:
      return std::trunc(m);
    case Rnd::kRm:
      return neg ? std::ceil(m) : std::floor(m);
    case Rnd::kRp:
      return neg ? std::floor(m) : std::ceil(m);
    default:
      return std::nearbyint(m);  // the caller runs in round-to-nearest-even
  }
}

// Rounds `v` to format `f` with mode `r` (rn, rz, rm, rp; kNone is rn). Overflow gives infinity
// or the largest finite value, as IEEE directs for the mode.
inline uint16_t DoubleToHalf(double v, Rnd r, HalfFmt f) {
  if (v != v) return 0x7fff;
  bool neg = std::signbit(v);
  uint16_t sign = neg ? 0x8000 : 0;
  int bias = (1 << (f.ebits - 1)) - 1;
  uint16_t inf = uint16_t(((1 << f.ebits) - 1) << f.man);
  double a = std::fabs(v);
  if (std::isinf(a)) return sign | inf;
  if (a == 0) return sign;
  int q = std::max(std::ilogb(a) - f.man, 1 - bias - f.man);  // exponent of the last kept bit
  double n = RoundMag(std::ldexp(a, -q), r, neg);
  if (n >= std::ldexp(1.0, f.man + 1)) {
    n /= 2;
    ++q;
  }
  if (q + f.man > bias) {  // beyond the largest finite value
    bool to_inf =
        r == Rnd::kRn || r == Rnd::kNone || (r == Rnd::kRp && !neg) || (r == Rnd::kRm && neg);
    return to_inf ? (sign | inf) : uint16_t(sign | (inf - 1));
  }
  uint32_t ni = uint32_t(n);
  if (ni < (1u << f.man)) return uint16_t(sign | ni);  // subnormal
  uint32_t exp = uint32_t(q + f.man + bias);
  return uint16_t(sign | (exp << f.man) | (ni - (1u << f.man)));
}
// cvt's .satfinite on a rounded `h` of format `f`: an infinity becomes the largest finite value
// of its sign (a NaN stays a NaN).
inline uint16_t SatFinite(uint16_t h, HalfFmt f) {
  const uint16_t inf = uint16_t(((1u << f.ebits) - 1) << f.man);
  return (h & 0x7fffu) == inf ? uint16_t(h - 1) : h;
}
inline uint16_t FloatToHalf(double v, Rnd r) {
  return DoubleToHalf(v, r, kF16);
}

inline bool TyIsHalf(Ty t) {
  return t == Ty::kF16 || t == Ty::kF16x2 || t == Ty::kBF16 || t == Ty::kBF16x2;
}

// The half-precision arithmetic exec_half.cc implements, selected from the add/sub/mul/fma/
// neg/abs/min/max rows when the type is .f16, .f16x2, .bf16 or .bf16x2.
enum class HalfOp : uint8_t { kAdd, kSub, kMul, kFma, kNeg, kAbs, kMin, kMax };
// Returns the exec function for `in` (a half type), or nullptr for a form not implemented.
ExecFn select_half(Inst& in, HalfOp op);
// cvt{.rnd}{.relu}.f16x2.f32 / .bf16x2.f32 d, a, b: a to the high half, b to the low half.
ExecFn select_cvt_pack2(Inst& in);
// cvt to and from the 8-bit floats: cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.{f32,f16x2} and
// cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} (element 0 in the low byte or half).
ExecFn select_cvt_fp8(Inst& in);
// setp.CmpOp.{f16,bf16} p[|q], a, b{, c} and the .x2 forms (p: low half, q: high half).
ExecFn select_half_setp(Inst& in);

// ex2.approx.{f16,f16x2}, ex2.approx.ftz.{bf16,bf16x2} and tanh.approx.{f16,f16x2,bf16,bf16x2}.
enum class HalfFn : uint8_t { kEx2, kTanh };
ExecFn select_half_approx(Inst& in, HalfFn fn);

// a + b rounded to nearest even in format f, subnormals kept (atom/red.add.noftz); NaN is 0x7fff.
uint16_t HalfAddRn(uint16_t a, uint16_t b, HalfFmt f);

}  // namespace remora::emu::ptx
