// emu/ptx/exec_half.cc - .f16/.f16x2/.bf16/.bf16x2 arithmetic (add sub mul fma neg abs min max),
// ex2.approx and tanh.approx on them, and the packing cvt. Built with -frounding-math.
//
// Each operation widens its operands to double exactly and computes the result rounded to odd
// (round toward zero, then set the last bit if inexact): with 53 bits against the formats' 11 and
// 8, a single final rounding to the 16-bit format (rn) then equals the exactly rounded result, as
// the GPU computes it. add/sub/mul of .f16 are exact in double and skip the odd rounding.
//
// ex2.approx and tanh.approx: libm's double exp2/tanh (within a few double ulps) rounded once to
// the 16-bit format, so the result is the exactly rounded one wherever the exact value is not
// within ~2^-50 relative of a rounding boundary (every .f16 and .bf16 input is checked against a
// long double reference by narrow_test.cc): 0.5 ulp, inside PTX's bounds (ex2: 2^-9.9 relative
// for .f16, 2^-7 for .bf16; tanh: 2^-10.987 absolute for .f16, 2^-8 for .bf16). The GPU's own
// approximations differ from it in the last bit for some inputs.
#include <cfenv>
#include <cmath>

#include "emu/ptx/exec.h"
#include "emu/ptx/half.h"

namespace remora::emu::ptx {
namespace {

template <class F>
inline double RoundedToOdd(F&& f) {
  std::fesetround(FE_TOWARDZERO);
  std::feclearexcept(FE_INEXACT);
  volatile double r = f();
  bool inexact = std::fetestexcept(FE_INEXACT);
  std::fesetround(FE_TONEAREST);
  double v = r;
  if (inexact) v = std::bit_cast<double>(std::bit_cast<uint64_t>(v) | 1);
  return v;
}

struct Flags {
  bool ftz, sat, relu;
  bool nan = false;  // min/max.NaN
};

// Final rounding of a (rounded-to-odd) double, with .sat/.relu/.ftz applied to the result.
template <HalfFmt F>
inline uint16_t Finish(double v, Flags fl) {
  if (fl.sat) v = (v != v || v <= 0) ? 0.0 : v > 1 ? 1.0 : v;
  if (fl.relu && v == v && (v < 0 || std::signbit(v))) v = 0.0;
  uint16_t h = DoubleToHalf(v, Rnd::kRn, F);
  if (fl.ftz) h = FlushSubnormal(h, F);
  return h;
}

template <HalfFmt F>
inline bool IsNan(uint16_t h) {
  uint16_t e = uint16_t(((1 << F.ebits) - 1) << F.man);
  return (h & e) == e && (h & ((1 << F.man) - 1)) != 0;
}

// One element: a, b, c are the raw 16-bit operands.
template <HalfFmt F, HalfOp kOp>
inline uint16_t Elem(uint16_t a, uint16_t b, uint16_t c, Flags fl) {
  if (fl.ftz) {
    a = FlushSubnormal(a, F);
    b = FlushSubnormal(b, F);
    c = FlushSubnormal(c, F);
  }
  if constexpr (kOp == HalfOp::kNeg) {
    return uint16_t(a ^ 0x8000);
  } else if constexpr (kOp == HalfOp::kAbs) {
    return uint16_t(a & 0x7fff);
  } else if constexpr (kOp == HalfOp::kMin || kOp == HalfOp::kMax) {
    bool an = IsNan<F>(a), bn = IsNan<F>(b);
    if ((an && bn) || (fl.nan && (an || bn))) return 0x7fff;
    if (an) return b;
    if (bn) return a;
    double x = HalfToDouble(a, F), y = HalfToDouble(b, F);
    if (x == y) {  // -0 is below +0
      bool pick_a = kOp == HalfOp::kMin ? std::signbit(x) : !std::signbit(x);
      return pick_a ? a : b;
    }
    return (kOp == HalfOp::kMin) == (x < y) ? a : b;
  } else {
    double x = HalfToDouble(a, F), y = HalfToDouble(b, F);
    double v;
    if constexpr (kOp == HalfOp::kFma) {
      double z = HalfToDouble(c, F);
      v = RoundedToOdd([&] { return std::fma(x, y, z); });
    } else if constexpr (F.ebits == 5) {  // exact in double
      v = kOp == HalfOp::kAdd ? x + y : kOp == HalfOp::kSub ? x - y : x * y;
    } else {
      v = RoundedToOdd([&] {
        return kOp == HalfOp::kAdd ? x + y : kOp == HalfOp::kSub ? x - y : x * y;
      });
    }
    return Finish<F>(v, fl);
  }
}

// d = op(a, b[, c]) over the active lanes, on N packed elements (1 or 2).
template <HalfFmt F, int N, HalfOp kOp>
int Half(Exec& x, const Inst& in) {
  constexpr int kArgs = kOp == HalfOp::kFma                            ? 3
                        : (kOp == HalfOp::kNeg || kOp == HalfOp::kAbs) ? 1
                                                                       : 2;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = kArgs > 1 ? Src(x, in.a[1]) : a;
  const uint64_t* c = kArgs > 2 ? Src(x, in.a[2]) : a;
  Flags fl{(in.flags & kFlagFtz) != 0, (in.flags & kFlagSat) != 0, (in.flags & kFlagRelu) != 0,
           in.sub == Sub::kNaN};
  ForLanes(x.mask, [&](int l) {
    uint64_t r = 0;
    for (int k = 0; k < N; ++k) {
      int sh = 16 * k;
      r |= uint64_t(
               Elem<F, kOp>(uint16_t(a[l] >> sh), uint16_t(b[l] >> sh), uint16_t(c[l] >> sh), fl))
           << sh;
    }
    d[l] = r;
  });
  return kNext;
}

template <HalfFmt F, int N>
ExecFn PickHalfOp(HalfOp op) {
  switch (op) {
    case HalfOp::kAdd:
      return &Half<F, N, HalfOp::kAdd>;
    case HalfOp::kSub:
      return &Half<F, N, HalfOp::kSub>;
    case HalfOp::kMul:
      return &Half<F, N, HalfOp::kMul>;
    case HalfOp::kFma:
      return &Half<F, N, HalfOp::kFma>;
    case HalfOp::kNeg:
      return &Half<F, N, HalfOp::kNeg>;
    case HalfOp::kAbs:
      return &Half<F, N, HalfOp::kAbs>;
    case HalfOp::kMin:
      return &Half<F, N, HalfOp::kMin>;
    case HalfOp::kMax:
      return &Half<F, N, HalfOp::kMax>;
  }
  return nullptr;
}

// d = ex2(a) or tanh(a) on N packed elements; kFtz (the .bf16 ex2) flushes subnormal inputs
// and results to a sign-preserving zero.
template <HalfFmt F, int N, HalfFn kFn, bool kFtz>
int HalfApprox(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  auto flush = [](uint16_t h) { return kFtz ? FlushSubnormal(h, F) : h; };
  ForLanes(x.mask, [&](int l) {
    uint64_t r = 0;
    for (int k = 0; k < N; ++k) {
      double v = HalfToDouble(flush(uint16_t(a[l] >> (16 * k))), F);
      v = kFn == HalfFn::kEx2 ? std::exp2(v) : std::tanh(v);
      r |= uint64_t(flush(DoubleToHalf(v, Rnd::kRn, F))) << (16 * k);
    }
    d[l] = r;
  });
  return kNext;
}

template <HalfFmt F>
int CvtPack2(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  Rnd r = in.rnd;
  bool relu = in.flags & kFlagRelu;
  const bool satfinite = in.sub == Sub::kSatfinite;
  auto one = [&](uint64_t raw) {
    double v = double(Get<float>(raw));
    if (relu && v == v && std::signbit(v)) v = 0.0;
    const uint16_t h = DoubleToHalf(v, r, F);
    return uint64_t(satfinite ? SatFinite(h, F) : h);
  };
  ForLanes(x.mask, [&](int l) { d[l] = (one(a[l]) << 16) | one(b[l]); });
  return kNext;
}

// The 8-bit floats of cvt's .e4m3x2 and .e5m2x2: stored mantissa and exponent bits, and the
// largest finite encoding. E4M3 has no infinity (0x7f is its NaN); E5M2 is IEEE-like.
struct Fp8Fmt {
  int man;
  int ebits;
  uint8_t max_finite;
};
constexpr Fp8Fmt kE4m3{3, 4, 0x7e};
constexpr Fp8Fmt kE5m2{2, 5, 0x7b};

// An f32 (its bits) to format F, rounded to nearest even, as .satfinite: a magnitude beyond the
// largest finite value (infinity included) becomes that value, keeping its sign; a NaN becomes
// 0x7f; a zero, or an underflow to zero, keeps its sign. relu: a negative number becomes +0.
template <Fp8Fmt F>
uint8_t FloatToFp8(uint32_t u, bool relu) {
  const uint32_t sign = (u >> 31) << 7, mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return 0x7f;
  if (relu && sign) return 0;
  if (mag == 0x7f800000u) return uint8_t(sign | F.max_finite);
  const int bias = (1 << (F.ebits - 1)) - 1;
  const int exp = int(mag >> 23);  // 0: zero or an f32 subnormal, far below F's range
  if (exp == 0) return uint8_t(sign);
  const uint32_t full = (mag & 0x7fffffu) | 0x800000u;  // 24 significant bits
  // Bits of `full` dropped: 23 - man for a normal result, more below F's least normal exponent.
  const int e = exp - 127 + bias;  // F's biased exponent, if the result is normal
  const int shift = 23 - F.man + (e < 1 ? 1 - e : 0);
  if (shift > 25) return uint8_t(sign);  // below half the least subnormal
  uint32_t q = full >> shift;
  const uint32_t rem = full & ((1u << shift) - 1), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;  // a carry moves into the exponent field
  // Normal: the exponent above the implicit bit; subnormal: q is the encoding itself.
  const uint32_t code = e < 1 ? q : (uint32_t(e) << F.man) + q - (1u << F.man);
  return uint8_t(sign | std::min<uint32_t>(code, F.max_finite));
}

// Format F's value (exactly) as an f16; a NaN is the canonical 0x7fff. relu: a negative
// number becomes +0.
template <Fp8Fmt F>
uint16_t Fp8ToHalf(uint8_t v, bool relu) {
  const uint32_t sign = v >> 7, mag = v & 0x7fu;
  const bool nan = F.ebits == 4 ? mag == 0x7f : mag > 0x7c;
  if (nan) return 0x7fff;
  if (relu && sign) return 0;
  if (F.ebits == 5) return uint16_t(v) << 8;  // E5M2 is the top byte of an f16
  const int bias = (1 << (F.ebits - 1)) - 1;
  const int exp = int(mag >> F.man), man = int(mag & ((1u << F.man) - 1));
  const double value = exp == 0 ? std::ldexp(double(man), 1 - bias - F.man)
                                : std::ldexp(double(man | (1 << F.man)), exp - bias - F.man);
  return uint16_t(DoubleToHalf(sign ? -value : value, Rnd::kRn, kF16));
}

// cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b: a to the high byte, b to the low byte.
template <Fp8Fmt F>
int CvtFp8x2F32(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const bool relu = in.flags & kFlagRelu;
  ForLanes(x.mask, [&](int l) {
    d[l] = uint64_t(FloatToFp8<F>(uint32_t(a[l]), relu)) << 8 | FloatToFp8<F>(uint32_t(b[l]), relu);
  });
  return kNext;
}

// cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2 d, a: each half of a to its byte.
template <Fp8Fmt F>
int CvtFp8x2F16x2(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const bool relu = in.flags & kFlagRelu;
  auto one = [&](uint64_t h) {
    return FloatToFp8<F>(std::bit_cast<uint32_t>(HalfToFloat(uint16_t(h))), relu);
  };
  ForLanes(x.mask, [&](int l) { d[l] = uint64_t(one(a[l] >> 16 & 0xffff)) << 8 | one(a[l]); });
  return kNext;
}

// cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a: each byte of a to its half.
template <Fp8Fmt F>
int CvtF16x2Fp8x2(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const bool relu = in.flags & kFlagRelu;
  ForLanes(x.mask, [&](int l) {
    d[l] =
        uint64_t(Fp8ToHalf<F>(uint8_t(a[l] >> 8), relu)) << 16 | Fp8ToHalf<F>(uint8_t(a[l]), relu);
  });
  return kNext;
}

}  // namespace

ExecFn select_cvt_fp8(Inst& in) {
  const bool to = in.ty == Ty::kE4m3x2 || in.ty == Ty::kE5m2x2;
  const Ty f8 = to ? in.ty : in.ty2;
  if (in.rnd != Rnd::kRn || (in.flags & ~kFlagRelu)) return nullptr;
  if (to) {
    if (in.sub != Sub::kSatfinite) return nullptr;  // PTX names it: there is no other form
    if (in.ty2 == Ty::kF32 && in.na == 2)
      return f8 == Ty::kE4m3x2 ? &CvtFp8x2F32<kE4m3> : &CvtFp8x2F32<kE5m2>;
    if (in.ty2 == Ty::kF16x2 && in.na == 1)
      return f8 == Ty::kE4m3x2 ? &CvtFp8x2F16x2<kE4m3> : &CvtFp8x2F16x2<kE5m2>;
    return nullptr;
  }
  if (in.ty != Ty::kF16x2 || in.sub != Sub::kNone || in.na != 1) return nullptr;
  return f8 == Ty::kE4m3x2 ? &CvtF16x2Fp8x2<kE4m3> : &CvtF16x2Fp8x2<kE5m2>;
}

ExecFn select_half(Inst& in, HalfOp op) {
  bool bf = in.ty == Ty::kBF16 || in.ty == Ty::kBF16x2;
  bool x2 = in.ty == Ty::kF16x2 || in.ty == Ty::kBF16x2;
  bool rounds =
      op == HalfOp::kAdd || op == HalfOp::kSub || op == HalfOp::kMul || op == HalfOp::kFma;
  // Only .rn exists for these; fma must name it, add/sub/mul may omit it.
  if (rounds ? (in.rnd != Rnd::kNone && in.rnd != Rnd::kRn) : in.rnd != Rnd::kNone) return nullptr;
  if (op == HalfOp::kFma && in.rnd != Rnd::kRn) return nullptr;
  if ((in.flags & kFlagRelu) && op != HalfOp::kFma) return nullptr;
  if (in.sub == Sub::kNaN && op != HalfOp::kMin && op != HalfOp::kMax) return nullptr;
  if ((in.flags & kFlagSat) && (!rounds || bf)) return nullptr;
  if ((in.flags & kFlagFtz) && bf) return nullptr;
  if (bf) return x2 ? PickHalfOp<kBF16, 2>(op) : PickHalfOp<kBF16, 1>(op);
  return x2 ? PickHalfOp<kF16, 2>(op) : PickHalfOp<kF16, 1>(op);
}

ExecFn select_half_approx(Inst& in, HalfFn fn) {
  const bool bf = in.ty == Ty::kBF16 || in.ty == Ty::kBF16x2;
  const bool x2 = in.ty == Ty::kF16x2 || in.ty == Ty::kBF16x2;
  const bool ftz = in.flags & kFlagFtz;
  if (!(in.flags & kFlagApprox) || (in.flags & ~(kFlagApprox | kFlagFtz))) return nullptr;
  if (in.rnd != Rnd::kNone) return nullptr;
  if (fn == HalfFn::kTanh) {
    if (ftz) return nullptr;
    if (bf)
      return x2 ? &HalfApprox<kBF16, 2, HalfFn::kTanh, false>
                : &HalfApprox<kBF16, 1, HalfFn::kTanh, false>;
    return x2 ? &HalfApprox<kF16, 2, HalfFn::kTanh, false>
              : &HalfApprox<kF16, 1, HalfFn::kTanh, false>;
  }
  if (ftz != bf) return nullptr;  // ex2.approx.f16, but ex2.approx.ftz.bf16
  if (bf)
    return x2 ? &HalfApprox<kBF16, 2, HalfFn::kEx2, true>
              : &HalfApprox<kBF16, 1, HalfFn::kEx2, true>;
  return x2 ? &HalfApprox<kF16, 2, HalfFn::kEx2, false> : &HalfApprox<kF16, 1, HalfFn::kEx2, false>;
}

uint16_t HalfAddRn(uint16_t a, uint16_t b, HalfFmt f) {
  return f.ebits == kF16.ebits ? Elem<kF16, HalfOp::kAdd>(a, b, 0, Flags{})
                               : Elem<kBF16, HalfOp::kAdd>(a, b, 0, Flags{});
}

ExecFn select_cvt_pack2(Inst& in) {
  if (in.ty2 != Ty::kF32 || in.na != 2) return nullptr;
  if (in.rnd != Rnd::kRn && in.rnd != Rnd::kRz) return nullptr;
  if (in.sub != Sub::kNone && in.sub != Sub::kSatfinite) return nullptr;
  if (in.flags & (kFlagSat | kFlagFtz)) return nullptr;
  return in.ty == Ty::kBF16x2 ? &CvtPack2<kBF16> : &CvtPack2<kF16>;
}

}  // namespace remora::emu::ptx
