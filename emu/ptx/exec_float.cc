// emu/ptx/exec_float.cc - f32/f64 arithmetic, approximations and cvt (built with -frounding-math).
//
// IEEE operations (.rn add/sub/mul/fma/div/sqrt and conversions) use the host's SSE/FMA units,
// which round exactly as the GPU does; directed modes switch the host rounding mode around the
// lane loop. NaN results are canonicalised to the GPU's 0x7fffffff / 0x7fffffffffffffff.
#include <cfenv>
#include <climits>
#include <cmath>

#include "emu/ptx/exec.h"
#include "emu/ptx/half.h"

namespace remora::emu::ptx {

ExecFn select_int_abs(Inst& in);
ExecFn select_int_neg(Inst& in);
ExecFn select_int_min(Inst& in);
ExecFn select_int_max(Inst& in);

namespace {

template <class T>
inline T Canon(T v) {
  if (v != v) {
    if constexpr (sizeof(T) == 4)
      return std::bit_cast<float>(0x7fffffffu);
    else
      return std::bit_cast<double>(0x7fffffffffffffffull);
  }
  return v;
}
template <class T, bool kFtz>
inline T FlushIn(T v) {
  if constexpr (kFtz && sizeof(T) == 4) {
    if (std::fabs(v) < std::numeric_limits<float>::min()) return std::copysign(0.0f, v);
  }
  return v;
}
template <class T, bool kFtz, bool kSat>
inline T Out(T v) {
  v = Canon(FlushIn<T, kFtz>(v));
  if constexpr (kSat) {
    if (v != v || v < T(0))
      v = T(0);  // also maps -0 to +0
    else if (v > T(1))
      v = T(1);
    else if (v == T(0))
      v = T(0);
  }
  return v;
}

template <class T, class O, bool kFtz, bool kSat>
int FBin(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  ForLanesElementwise(x.mask, [&](int l) {
    d[l] = Put<T>(
        Out<T, kFtz, kSat>(O::f(FlushIn<T, kFtz>(Get<T>(a[l])), FlushIn<T, kFtz>(Get<T>(b[l])))));
  });
  return kNext;
}
template <class T, class O, bool kFtz, bool kSat>
int FUn(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) {
    d[l] = Put<T>(Out<T, kFtz, kSat>(O::f(FlushIn<T, kFtz>(Get<T>(a[l])))));
  });
  return kNext;
}

template <class T, bool kFtz, bool kSat>
[[gnu::target("fma")]] int FFmaHw(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanesElementwise(x.mask, [&](int l) {
    T r;
    if constexpr (sizeof(T) == 4) {
      r = __builtin_fmaf(FlushIn<T, kFtz>(Get<T>(a[l])), FlushIn<T, kFtz>(Get<T>(b[l])),
                         FlushIn<T, kFtz>(Get<T>(c[l])));
    } else {
      r = __builtin_fma(Get<T>(a[l]), Get<T>(b[l]), Get<T>(c[l]));
    }
    d[l] = Put<T>(Out<T, kFtz, kSat>(r));
  });
  return kNext;
}
template <class T, bool kFtz, bool kSat>
int FFmaSw(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanesElementwise(x.mask, [&](int l) {
    d[l] = Put<T>(
        Out<T, kFtz, kSat>(std::fma(FlushIn<T, kFtz>(Get<T>(a[l])), FlushIn<T, kFtz>(Get<T>(b[l])),
                                    FlushIn<T, kFtz>(Get<T>(c[l])))));
  });
  return kNext;
}

template <class T>
struct FAdd {
  static T f(T a, T b) { return a + b; }
};
template <class T>
struct FSub {
  static T f(T a, T b) { return a - b; }
};
template <class T>
struct FMul {
  static T f(T a, T b) { return a * b; }
};
template <class T>
struct FDiv {
  static T f(T a, T b) { return a / b; }
};
// div.approx.f32 is a * (1 / b) with a reciprocal flushing subnormals: for 2^126 < |b| < 2^128
// it gives a zero (NaN for an infinite a), as the CUDA guide documents for __fdividef.
template <class T>
struct FDivApprox {
  static T f(T a, T b) {
    const T m = std::fabs(b);
    if (m > T(0x1p126) && m <= T(std::numeric_limits<float>::max()))
      return a * std::copysign(T(0), b);
    return a / b;
  }
};
template <class T>
struct FMin {
  static T f(T a, T b) {
    if (a != a) return b;
    if (b != b) return a;
    if (a == b) return std::signbit(a) ? a : b;
    return a < b ? a : b;
  }
};
template <class T>
struct FMax {
  static T f(T a, T b) {
    if (a != a) return b;
    if (b != b) return a;
    if (a == b) return std::signbit(a) ? b : a;
    return a < b ? b : a;
  }
};
// min/max.NaN (.f32): a NaN operand gives the canonical NaN.
template <class T>
struct FMinNaN {
  static T f(T a, T b) {
    return a != a || b != b ? T(std::bit_cast<float>(0x7fffffffu)) : FMin<T>::f(a, b);
  }
};
template <class T>
struct FMaxNaN {
  static T f(T a, T b) {
    return a != a || b != b ? T(std::bit_cast<float>(0x7fffffffu)) : FMax<T>::f(a, b);
  }
};
template <class T>
struct FCopysign {
  static T f(T a, T b) { return std::copysign(b, a); }
};
template <class T>
struct FRcp {
  static T f(T a) { return T(1) / a; }
};
template <class T>
struct FSqrt {
  static T f(T a) { return std::sqrt(a); }
};
template <class T>
struct FRsqrt {
  static T f(T a) { return T(1) / std::sqrt(a); }
};
template <class T>
struct FSin {
  static T f(T a) { return T(std::sin(double(a))); }
};
template <class T>
struct FCos {
  static T f(T a) { return T(std::cos(double(a))); }
};
template <class T>
struct FLg2 {
  static T f(T a) { return T(std::log2(double(a))); }
};
template <class T>
struct FEx2 {
  static T f(T a) { return T(std::exp2(double(a))); }
};
template <class T>
struct FTanh {
  static T f(T a) { return T(std::tanh(double(a))); }
};

// abs/neg only touch the sign bit (NaN payloads pass through, as on the GPU).
template <class T, bool kFtz>
int FAbs(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask,
                      [&](int l) { d[l] = Put<T>(std::fabs(FlushIn<T, kFtz>(Get<T>(a[l])))); });
  return kNext;
}
template <class T, bool kFtz>
int FNeg(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(-FlushIn<T, kFtz>(Get<T>(a[l]))); });
  return kNext;
}

// Runs in.inner with the host rounding mode set to M.
template <int M>
int WithRounding(Exec& x, const Inst& in) {
  std::fesetround(M);
  int r = in.inner(x, in);
  std::fesetround(FE_TONEAREST);
  return r;
}

ExecFn Rounded(Inst& in, ExecFn f) {
  if (!f) return nullptr;
  switch (in.rnd) {
    case Rnd::kRz:
      in.inner = f;
      return &WithRounding<FE_TOWARDZERO>;
    case Rnd::kRm:
      in.inner = f;
      return &WithRounding<FE_DOWNWARD>;
    case Rnd::kRp:
      in.inner = f;
      return &WithRounding<FE_UPWARD>;
    default:
      return f;
  }
}

template <template <class> class O>
ExecFn PickFBin(const Inst& in) {
  bool ftz = in.flags & kFlagFtz, sat = in.flags & kFlagSat;
  if (in.ty == Ty::kF32) {
    if (ftz) return sat ? &FBin<float, O<float>, true, true> : &FBin<float, O<float>, true, false>;
    return sat ? &FBin<float, O<float>, false, true> : &FBin<float, O<float>, false, false>;
  }
  if (in.ty == Ty::kF64)
    return sat ? &FBin<double, O<double>, false, true> : &FBin<double, O<double>, false, false>;
  return nullptr;
}
template <template <class> class O>
ExecFn PickFUn(const Inst& in, bool f64_ok) {
  bool ftz = in.flags & kFlagFtz, sat = in.flags & kFlagSat;
  if (in.ty == Ty::kF32) {
    if (ftz) return sat ? &FUn<float, O<float>, true, true> : &FUn<float, O<float>, true, false>;
    return sat ? &FUn<float, O<float>, false, true> : &FUn<float, O<float>, false, false>;
  }
  if (in.ty == Ty::kF64 && f64_ok) return &FUn<double, O<double>, false, false>;
  return nullptr;
}

bool HasFma() {
  static const bool has = __builtin_cpu_supports("fma");
  return has;
}

ExecFn PickFma(Inst& in) {
  bool ftz = in.flags & kFlagFtz, sat = in.flags & kFlagSat;
  ExecFn f = nullptr;
  bool hw = HasFma();
  if (in.ty == Ty::kF32) {
    if (hw) {
      f = ftz ? (sat ? &FFmaHw<float, true, true> : &FFmaHw<float, true, false>)
              : (sat ? &FFmaHw<float, false, true> : &FFmaHw<float, false, false>);
    } else {
      f = ftz ? (sat ? &FFmaSw<float, true, true> : &FFmaSw<float, true, false>)
              : (sat ? &FFmaSw<float, false, true> : &FFmaSw<float, false, false>);
    }
  } else if (in.ty == Ty::kF64) {
    f = hw ? (sat ? &FFmaHw<double, false, true> : &FFmaHw<double, false, false>)
           : (sat ? &FFmaSw<double, false, true> : &FFmaSw<double, false, false>);
  }
  return Rounded(in, f);
}

// ---- cvt ----
enum class Kind { kSigned, kUnsigned, kFloat };
Kind KindOf(Ty t) {
  if (TyIsFloat(t)) return Kind::kFloat;
  return TyIsSigned(t) ? Kind::kSigned : Kind::kUnsigned;
}

template <class T>
T SatInt(double v) {
  if (v != v) return 0;
  if (v <= double(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (v >= std::ldexp(1.0, std::numeric_limits<T>::digits)) return std::numeric_limits<T>::max();
  return T(v);
}

uint64_t FloatToInt(double v, Ty dst) {
  switch (dst) {
    case Ty::kS8:
      return Put<int8_t>(SatInt<int8_t>(v));
    case Ty::kS16:
      return Put<int16_t>(SatInt<int16_t>(v));
    case Ty::kS32:
      return Put<int32_t>(SatInt<int32_t>(v));
    case Ty::kS64:
      return Put<int64_t>(SatInt<int64_t>(v));
    case Ty::kU8:
    case Ty::kB8:
      return SatInt<uint8_t>(v);
    case Ty::kU16:
    case Ty::kB16:
      return SatInt<uint16_t>(v);
    case Ty::kU32:
    case Ty::kB32:
      return SatInt<uint32_t>(v);
    default:
      return SatInt<uint64_t>(v);
  }
}

int IntRoundingMode(Rnd r) {
  switch (r) {
    case Rnd::kRz:
      return FE_TOWARDZERO;
    case Rnd::kRm:
      return FE_DOWNWARD;
    case Rnd::kRp:
      return FE_UPWARD;
    default:
      return FE_TONEAREST;
  }
}

// One lane of a general cvt.
uint64_t CvtOne(const Inst& in, uint64_t raw) {
  Ty dt = in.ty, st = in.ty2;
  Kind dk = KindOf(dt), sk = KindOf(st);
  int ds = TySize(dt), ss = TySize(st);
  bool sat = in.flags & kFlagSat, ftz = in.flags & kFlagFtz;
  if (sk != Kind::kFloat && dk != Kind::kFloat) {
    __int128 v = sk == Kind::kSigned ? __int128(ss == 1   ? int8_t(raw)
                                                : ss == 2 ? int16_t(raw)
                                                : ss == 4 ? int32_t(raw)
                                                          : int64_t(raw))
                                     : __int128(ss == 1   ? uint8_t(raw)
                                                : ss == 2 ? uint16_t(raw)
                                                : ss == 4 ? uint32_t(raw)
                                                          : raw);
    if (sat) {
      __int128 lo, hi;
      if (dk == Kind::kSigned) {
        hi = (__int128(1) << (8 * ds - 1)) - 1;
        lo = -hi - 1;
      } else {
        lo = 0;
        hi = (__int128(1) << (8 * ds)) - 1;
      }
      v = v < lo ? lo : v > hi ? hi : v;
    }
    uint64_t u = uint64_t(v);
    if (dk == Kind::kSigned && ds < 8) {  // keep the register sign-extended to 64 bits
      int sh = 64 - 8 * ds;
      u = uint64_t(int64_t(u << sh) >> sh);
    }
    // A register wider than the type gets the value sign-extended for a signed type, as the PTX
    // ISA says of every destination (cvt.s16.s8 into a .b32 register reads back 0xFFFFFFxx).
    return ds == 8 || dk == Kind::kSigned ? u : u & ((1ull << (8 * ds)) - 1);
  }
  if (sk != Kind::kFloat) {  // int -> float
    int64_t sv = ss == 1   ? int8_t(raw)
                 : ss == 2 ? int16_t(raw)
                 : ss == 4 ? int32_t(raw)
                           : int64_t(raw);
    uint64_t uv = ss == 1 ? uint8_t(raw) : ss == 2 ? uint16_t(raw) : ss == 4 ? uint32_t(raw) : raw;
    bool s = sk == Kind::kSigned;
    int mode = IntRoundingMode(in.rnd);
    std::fesetround(mode);
    uint64_t out;
    if (dt == Ty::kF32) {
      float f = s ? float(sv) : float(uv);
      if (sat) f = f < 0 ? 0.f : f > 1 ? 1.f : f;
      out = Put<float>(f);
    } else if (dt == Ty::kF64) {
      double f = s ? double(sv) : double(uv);
      if (sat) f = f < 0 ? 0. : f > 1 ? 1. : f;
      out = Put<double>(f);
    } else {
      std::fesetround(FE_TONEAREST);
      double f = s ? double(sv) : double(uv);  // exact for |v| < 2^53
      out = DoubleToHalf(f, in.rnd, dt == Ty::kBF16 ? kBF16 : kF16);
    }
    std::fesetround(FE_TONEAREST);
    return out;
  }
  double v = st == Ty::kF64   ? Get<double>(raw)
             : st == Ty::kF32 ? double(Get<float>(raw))
                              : HalfToDouble(uint16_t(raw), st == Ty::kBF16 ? kBF16 : kF16);
  if (ftz && st == Ty::kF32 && std::fabs(v) < double(std::numeric_limits<float>::min()))
    v = std::copysign(0.0, v);
  if (dk != Kind::kFloat) {  // float -> int
    double r;
    switch (in.rnd) {
      case Rnd::kRni:
        r = std::nearbyint(v);
        break;
      case Rnd::kRmi:
        r = std::floor(v);
        break;
      case Rnd::kRpi:
        r = std::ceil(v);
        break;
      default:
        r = std::trunc(v);
        break;
    }
    return FloatToInt(r, dt);
  }
  // float -> float
  switch (in.rnd) {
    case Rnd::kRni:
      v = std::nearbyint(v);
      break;
    case Rnd::kRzi:
      v = std::trunc(v);
      break;
    case Rnd::kRmi:
      v = std::floor(v);
      break;
    case Rnd::kRpi:
      v = std::ceil(v);
      break;
    default:
      break;
  }
  if (sat) v = (v != v || v < 0) ? 0.0 : v > 1 ? 1.0 : v;
  if ((in.flags & kFlagRelu) && v == v && std::signbit(v)) v = 0.0;
  if (dt == Ty::kF64) return Put<double>(Canon(v));
  if (dt == Ty::kF32) {
    std::fesetround(IntRoundingMode(in.rnd));
    float f = float(v);
    std::fesetround(FE_TONEAREST);
    if (ftz && std::fabs(f) < std::numeric_limits<float>::min()) f = std::copysign(0.0f, f);
    return Put<float>(Canon(f));
  }
  // .f16/.bf16: round from the exact source, so an f64 source is rounded once. .satfinite: an
  // infinity, from the input or from rounding, becomes the largest finite value of its sign.
  const HalfFmt f = dt == Ty::kBF16 ? kBF16 : kF16;
  const uint16_t h = DoubleToHalf(v, in.rnd == Rnd::kNone ? Rnd::kRn : in.rnd, f);
  return in.sub == Sub::kSatfinite ? SatFinite(h, f) : h;
}

int CvtGeneric(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanes(x.mask, [&](int l) { d[l] = CvtOne(in, a[l]); });
  return kNext;
}
// Fast paths for the conversions address arithmetic uses in loops.
int CvtU64U32(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = uint32_t(a[l]); });
  return kNext;
}
int CvtS64S32(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = uint64_t(int64_t(int32_t(a[l]))); });
  return kNext;
}
int CvtF32S32(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<float>(float(int32_t(a[l]))); });
  return kNext;
}

}  // namespace

WarpsFn WarpsOfFloat(ExecFn fn) {
#define REMORA_FORMS(T, F)                                                               \
  &FBin<T, FAdd<T>, F, false>, &FBin<T, FSub<T>, F, false>, &FBin<T, FMul<T>, F, false>, \
      &FFmaHw<T, F, false>
  return FindWarps<REMORA_FORMS(float, false), REMORA_FORMS(float, true),
                   REMORA_FORMS(double, false), &CvtU64U32, &CvtS64S32, &CvtF32S32>(fn);
#undef REMORA_FORMS
}

ExecFn select_Fma(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kFma);
  return PickFma(in);
}
ExecFn select_Mad_float(Inst& in) {
  return PickFma(in);
}

ExecFn select_float_add(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kAdd);
  return Rounded(in, PickFBin<FAdd>(in));
}
ExecFn select_float_sub(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kSub);
  return Rounded(in, PickFBin<FSub>(in));
}
ExecFn select_float_mul(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kMul);
  return Rounded(in, PickFBin<FMul>(in));
}

ExecFn select_float_div(Inst& in) {
  if ((in.flags & kFlagApprox) && in.ty == Ty::kF32) return PickFBin<FDivApprox>(in);
  return Rounded(in, PickFBin<FDiv>(in));
}
ExecFn select_float_abs(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kAbs);
  if (in.ty == Ty::kF32) return in.flags & kFlagFtz ? &FAbs<float, true> : &FAbs<float, false>;
  if (in.ty == Ty::kF64) return &FAbs<double, false>;
  return select_int_abs(in);
}
ExecFn select_float_neg(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kNeg);
  if (in.ty == Ty::kF32) return in.flags & kFlagFtz ? &FNeg<float, true> : &FNeg<float, false>;
  if (in.ty == Ty::kF64) return &FNeg<double, false>;
  return select_int_neg(in);
}

ExecFn select_Abs(Inst& in) {
  return select_float_abs(in);
}
ExecFn select_Neg(Inst& in) {
  return select_float_neg(in);
}
ExecFn select_Min(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kMin);
  if (in.sub == Sub::kNaN) return in.ty == Ty::kF32 ? PickFBin<FMinNaN>(in) : nullptr;
  return TyIsFloat(in.ty) ? PickFBin<FMin>(in) : select_int_min(in);
}
ExecFn select_Max(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half(in, HalfOp::kMax);
  if (in.sub == Sub::kNaN) return in.ty == Ty::kF32 ? PickFBin<FMaxNaN>(in) : nullptr;
  return TyIsFloat(in.ty) ? PickFBin<FMax>(in) : select_int_max(in);
}
ExecFn select_Copysign(Inst& in) {
  return PickFBin<FCopysign>(in);
}
ExecFn select_Rcp(Inst& in) {
  return Rounded(in, PickFUn<FRcp>(in, true));
}
ExecFn select_Sqrt(Inst& in) {
  return Rounded(in, PickFUn<FSqrt>(in, true));
}
ExecFn select_Rsqrt(Inst& in) {
  return PickFUn<FRsqrt>(in, true);
}
ExecFn select_Sin(Inst& in) {
  return PickFUn<FSin>(in, false);
}
ExecFn select_Cos(Inst& in) {
  return PickFUn<FCos>(in, false);
}
ExecFn select_Lg2(Inst& in) {
  return PickFUn<FLg2>(in, false);
}
ExecFn select_Ex2(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half_approx(in, HalfFn::kEx2);
  return PickFUn<FEx2>(in, false);
}
ExecFn select_Tanh(Inst& in) {
  if (TyIsHalf(in.ty)) return select_half_approx(in, HalfFn::kTanh);
  return PickFUn<FTanh>(in, false);
}
namespace {

// testp: what class the float is, from its bits (kExp exponent bits, kMan mantissa bits).
template <int kExp, int kMan>
int Testp(Exec& x, const Inst& in) {
  uint64_t* p = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  constexpr uint64_t kExpMax = (uint64_t{1} << kExp) - 1, kManMask = (uint64_t{1} << kMan) - 1;
  const Sub test = in.sub;
  ForLanes(x.mask, [&](int l) {
    const uint64_t exp = (a[l] >> kMan) & kExpMax, man = a[l] & kManMask;
    const bool special = exp == kExpMax, nan = special && man != 0;
    bool r = false;
    switch (test) {
      case Sub::kFinite:
        r = !special;
        break;
      case Sub::kInfinite:
        r = special && man == 0;
        break;
      case Sub::kNumber:
        r = !nan;
        break;
      case Sub::kNotANumber:
        r = nan;
        break;
      case Sub::kNormal:
        r = exp != 0 && !special;
        break;
      default:  // kSubnormal
        r = exp == 0 && man != 0;
        break;
    }
    p[l] = r;
  });
  return kNext;
}

}  // namespace

ExecFn select_Testp(Inst& in) {
  if (in.sub < Sub::kFinite || in.sub > Sub::kSubnormal) return nullptr;
  if (in.ty == Ty::kF32) return &Testp<8, 23>;
  if (in.ty == Ty::kF64) return &Testp<11, 52>;
  return nullptr;
}

namespace {

// cvt.{rna,rn,rz}{.relu}{.satfinite}.tf32.f32: the f32 rounded to .tf32's 10 mantissa bits
// (the low 13 bits cleared). Rounding works on the bits: adding half the dropped range rounds
// ties away from zero (.rna), adding one less plus the kept last bit ties to even (.rn). A NaN
// could lose its payload bits that way, so it becomes the canonical NaN. .satfinite makes an
// infinity, from the input or from rounding, the largest finite value of its sign.
int CvtTf32(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const Rnd r = in.rnd;
  const bool relu = in.flags & kFlagRelu, satfinite = in.sub == Sub::kSatfinite;
  ForLanes(x.mask, [&](int l) {
    uint32_t u = uint32_t(a[l]);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      d[l] = 0x7fffffffu;
      return;
    }
    if (relu && (u >> 31)) u = 0;
    const uint32_t add = r == Rnd::kRna ? 0x1000u : r == Rnd::kRn ? 0xfffu + ((u >> 13) & 1) : 0;
    u = (u + add) & 0xffffe000u;
    if (satfinite && (u & 0x7fffffffu) == 0x7f800000u) u = (u & 0x80000000u) | 0x7f7fe000u;
    d[l] = u;
  });
  return kNext;
}

}  // namespace

ExecFn select_Cvt(Inst& in) {
  if (in.ty == Ty::kNone || in.ty2 == Ty::kNone) return nullptr;
  if (in.ty == Ty::kTF32) {  // cvt.rna{.satfinite} and cvt.{rn,rz}{.relu}{.satfinite}
    const bool rna = in.rnd == Rnd::kRna, rn_rz = in.rnd == Rnd::kRn || in.rnd == Rnd::kRz;
    const bool ok = in.ty2 == Ty::kF32 && !(in.flags & (kFlagSat | kFlagFtz)) &&
                    (in.sub == Sub::kNone || in.sub == Sub::kSatfinite) &&
                    (rn_rz || (rna && !(in.flags & kFlagRelu)));
    return ok ? &CvtTf32 : nullptr;
  }
  if (in.ty == Ty::kE4m3x2 || in.ty == Ty::kE5m2x2 || in.ty2 == Ty::kE4m3x2 ||
      in.ty2 == Ty::kE5m2x2)
    return select_cvt_fp8(in);
  if (in.ty2 == Ty::kTF32 || in.rnd == Rnd::kRna) return nullptr;
  if (in.ty == Ty::kF16x2 || in.ty == Ty::kBF16x2) return select_cvt_pack2(in);
  // cvt.{rn,rz}{.relu}.satfinite.{f16,bf16}.f32 (CvtOne); no other form takes .satfinite.
  if (in.sub == Sub::kSatfinite &&
      !((in.ty == Ty::kF16 || in.ty == Ty::kBF16) && in.ty2 == Ty::kF32 &&
        (in.rnd == Rnd::kRn || in.rnd == Rnd::kRz) && !(in.flags & (kFlagSat | kFlagFtz))))
    return nullptr;
  if (in.ty2 == Ty::kF16x2 || in.ty2 == Ty::kBF16x2 || in.ty == Ty::kPred || in.ty2 == Ty::kPred)
    return nullptr;
  if ((in.flags & kFlagRelu) && in.ty != Ty::kF16 && in.ty != Ty::kBF16) return nullptr;
  bool plain = !(in.flags & (kFlagSat | kFlagFtz));
  if (plain && in.ty == Ty::kU64 && in.ty2 == Ty::kU32) return &CvtU64U32;
  if (plain && in.ty == Ty::kS64 && in.ty2 == Ty::kS32) return &CvtS64S32;
  if (plain && in.ty == Ty::kF32 && in.ty2 == Ty::kS32 &&
      (in.rnd == Rnd::kRn || in.rnd == Rnd::kNone))
    return &CvtF32S32;
  return &CvtGeneric;
}

}  // namespace remora::emu::ptx
