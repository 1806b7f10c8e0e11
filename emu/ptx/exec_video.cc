// emu/ptx/exec_video.cc - SIMD video instructions: vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 on
// bytes and vadd2 ... vmax2 on half-words (PTX ISA 9.7.18.2.1, 9.7.18.2.3); the scalar video
// instructions vadd vsub vabsdiff vmin vmax vshl vshr vmad vset (9.7.18.1).
//
// Per lane, exactly the ISA's semantics: elements selected from b:a and sign- or zero-extended
// (video.h's form), the operation on them exactly (in 32 bits: no element result overflows),
// .sat clamping to the .dtype's element range, then the results merged into c at the positions
// the mask names, or with .add summed into c (mod 2^32).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "emu/ptx/exec.h"
#include "emu/ptx/video.h"

namespace remora::emu::ptx {
namespace {

enum class VOp : uint8_t { kAdd, kSub, kAvrg, kAbsdiff, kMin, kMax };

// Element `sel` of the 64 bits b:a, kBits wide, sign- or zero-extended.
template <int kBits>
inline int32_t Element(uint64_t ab, uint32_t sel, bool sign) {
  uint32_t u = uint32_t(ab >> (kBits * sel)) & ((1u << kBits) - 1);
  return sign ? int32_t(u << (32 - kBits)) >> (32 - kBits) : int32_t(u);
}

template <VOp kOp>
inline int32_t Apply(int32_t x, int32_t y) {
  switch (kOp) {
    case VOp::kAdd:
      return x + y;
    case VOp::kSub:
      return x - y;
    case VOp::kAvrg:  // halves rounded away from zero
      return x + y >= 0 ? (x + y + 1) >> 1 : (x + y) >> 1;
    case VOp::kAbsdiff:
      return x > y ? x - y : y - x;
    case VOp::kMin:
      return x < y ? x : y;
    case VOp::kMax:
      return x < y ? y : x;
  }
  return 0;
}

template <int kN, VOp kOp>
int Video(Exec& x, const Inst& in) {
  constexpr int kBits = 32 / kN;
  constexpr uint32_t kElem = (1u << kBits) - 1;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  const uint32_t form = in.target;
  const bool as = form & kVideoASigned, bs = form & kVideoBSigned;
  const uint32_t mask = (form >> 24) & 15;
  const bool add = in.sub == Sub::kAdd, sat = in.flags & kFlagSat;
  const int32_t lo = in.ty == Ty::kS32 ? -(1 << (kBits - 1)) : 0;
  const int32_t hi = in.ty == Ty::kS32 ? (1 << (kBits - 1)) - 1 : int32_t(kElem);
  ForLanes(x.mask, [&](int l) {
    const uint64_t ab = uint64_t(uint32_t(b[l])) << 32 | uint32_t(a[l]);
    const uint32_t cv = uint32_t(c[l]);
    uint32_t r = add ? cv : 0;
    for (int i = 0; i < kN; ++i) {
      int32_t t = Apply<kOp>(Element<kBits>(ab, (form >> (3 * i)) & 7, as),
                             Element<kBits>(ab, (form >> (12 + 3 * i)) & 7, bs));
      if (sat) t = t < lo ? lo : t > hi ? hi : t;
      if (add) {
        if (mask >> i & 1) r += uint32_t(t);
      } else {
        r |= (((mask >> i & 1) ? uint32_t(t) : cv >> (kBits * i)) & kElem) << (kBits * i);
      }
    }
    d[l] = r;
  });
  return kNext;
}

template <int kN, VOp kOp>
ExecFn PickVideo(const Inst& in) {
  if (in.ty != Ty::kU32 && in.ty != Ty::kS32) return nullptr;
  if (in.sub != Sub::kNone && in.sub != Sub::kAdd) return nullptr;
  if ((in.flags & kFlagSat) && in.sub == Sub::kAdd) return nullptr;  // the ISA forbids both
  if (in.flags & ~kFlagSat) return nullptr;
  if (in.rnd != Rnd::kNone || in.cmp != Cmp::kNone) return nullptr;
  return &Video<kN, kOp>;
}

// Parses one selector suffix: `want` digits each below `limit`, after `letter`.
bool ParseSel(std::string_view s, char letter, int want, int limit, uint32_t* out) {
  if (s.size() != size_t(want) + 1 || s[0] != letter) return false;
  uint32_t v = 0;
  for (int i = 0; i < want; ++i) {  // the first digit is the highest element's
    int digit = s[1 + i] - '0';
    if (digit < 0 || digit >= limit) return false;
    v |= uint32_t(digit) << (3 * (want - 1 - i));
  }
  *out = v;
  return true;
}

}  // namespace

std::string DecodeVideoForm(Inst& in, Ty atype, Ty btype, std::string_view dsel,
                            std::string_view asel, std::string_view bsel) {
  const int n = VideoElements(in.op);
  const char letter = n == 4 ? 'b' : 'h';
  auto is_32 = [](Ty t) { return t == Ty::kU32 || t == Ty::kS32; };
  if (!is_32(in.ty) || !is_32(atype) || !is_32(btype))
    return "video instructions take .dtype.atype.btype, each .u32 or .s32";
  uint32_t sa = 0, sb = 0;
  for (int i = 0; i < n; ++i) {
    sa |= uint32_t(i) << (3 * i);
    sb |= uint32_t(n + i) << (3 * i);
  }
  if (!asel.empty() && !ParseSel(asel, letter, n, 2 * n, &sa))
    return "bad selector ." + std::string(asel);
  if (!bsel.empty() && !ParseSel(bsel, letter, n, 2 * n, &sb))
    return "bad selector ." + std::string(bsel);
  uint32_t mask = (1u << n) - 1;
  if (!dsel.empty()) {  // element numbers, strictly descending: .b320, .h1
    if (dsel.size() < 2 || dsel[0] != letter) return "bad mask ." + std::string(dsel);
    mask = 0;
    int prev = n;
    for (size_t i = 1; i < dsel.size(); ++i) {
      int digit = dsel[i] - '0';
      if (digit < 0 || digit >= prev) return "bad mask ." + std::string(dsel);
      mask |= 1u << digit;
      prev = digit;
    }
  }
  in.target = sa | sb << 12 | mask << 24 | (atype == Ty::kS32 ? kVideoASigned : 0) |
              (btype == Ty::kS32 ? kVideoBSigned : 0);
  return {};
}

ExecFn select_Vadd4(Inst& in) {
  return PickVideo<4, VOp::kAdd>(in);
}
ExecFn select_Vsub4(Inst& in) {
  return PickVideo<4, VOp::kSub>(in);
}
ExecFn select_Vavrg4(Inst& in) {
  return PickVideo<4, VOp::kAvrg>(in);
}
ExecFn select_Vabsdiff4(Inst& in) {
  return PickVideo<4, VOp::kAbsdiff>(in);
}
ExecFn select_Vmin4(Inst& in) {
  return PickVideo<4, VOp::kMin>(in);
}
ExecFn select_Vmax4(Inst& in) {
  return PickVideo<4, VOp::kMax>(in);
}
ExecFn select_Vadd2(Inst& in) {
  return PickVideo<2, VOp::kAdd>(in);
}
ExecFn select_Vsub2(Inst& in) {
  return PickVideo<2, VOp::kSub>(in);
}
ExecFn select_Vavrg2(Inst& in) {
  return PickVideo<2, VOp::kAvrg>(in);
}
ExecFn select_Vabsdiff2(Inst& in) {
  return PickVideo<2, VOp::kAbsdiff>(in);
}
ExecFn select_Vmin2(Inst& in) {
  return PickVideo<2, VOp::kMin>(in);
}
ExecFn select_Vmax2(Inst& in) {
  return PickVideo<2, VOp::kMax>(in);
}

// ---- Scalar video instructions ----
namespace {

enum class SOp : uint8_t { kAdd, kSub, kAbsdiff, kMin, kMax, kShl, kShr, kSet };

using Wide = __int128;

// The width of the part a selector names, and its lowest bit.
inline int SelBits(uint32_t sel) {
  return sel == kScalarWord ? 32 : sel <= kScalarB3 ? 8 : 16;
}
inline int SelAt(uint32_t sel) {
  return sel == kScalarWord ? 0
         : sel <= kScalarB3 ? 8 * int(sel - kScalarB0)
                            : 16 * int(sel - kScalarH0);
}

// The part of v `sel` names, sign- or zero-extended.
inline int64_t Part(uint32_t v, uint32_t sel, bool sign) {
  if (sel == kScalarWord) return sign ? int64_t(int32_t(v)) : int64_t(v);
  const int bits = SelBits(sel);
  const uint32_t u = (v >> SelAt(sel)) & ((1u << bits) - 1);
  return sign ? int64_t(int32_t(u << (32 - bits)) >> (32 - bits)) : int64_t(u);
}

struct ScalarForm {
  uint32_t asel, bsel, dsel, shift;
  bool as, bs, ds, sat;
  Sub op2;
  Wide lo, hi;  // .sat's range: d's type, narrowed to d's selector

  explicit ScalarForm(const Inst& in)
      : asel(in.target & 7),
        bsel(in.target >> 3 & 7),
        dsel(in.target >> 6 & 7),
        shift(in.target >> 9 & 3),
        as(in.target & kVideoASigned),
        bs(in.target & kVideoBSigned),
        ds(in.ty == Ty::kS32),
        sat(in.flags & kFlagSat),
        op2(in.sub) {
    const int bits = SelBits(dsel);
    lo = ds ? -(Wide(1) << (bits - 1)) : 0;
    hi = ds ? (Wide(1) << (bits - 1)) - 1 : (Wide(1) << bits) - 1;
  }

  // d from the intermediate t: clamped under .sat, then combined with c by the secondary
  // operation or merged into it at d's selector, as the ISA's optSaturate, optSecondaryOp and
  // optMerge do.
  uint32_t Finish(Wide t, uint32_t c) const {
    if (sat) t = t < lo ? lo : t > hi ? hi : t;
    if (dsel != kScalarWord) {
      const int at = SelAt(dsel);
      const uint32_t m = ((1u << SelBits(dsel)) - 1) << at;
      return (c & ~m) | ((uint32_t(uint64_t(t)) << at) & m);
    }
    const Wide cw = ds ? Wide(int32_t(c)) : Wide(c);
    switch (op2) {
      case Sub::kAdd:
        t += cw;
        break;
      case Sub::kMin:
        t = t < cw ? t : cw;
        break;
      case Sub::kMax:
        t = t < cw ? cw : t;
        break;
      default:
        break;
    }
    return uint32_t(uint64_t(t));
  }
};

inline bool Compare(Cmp cmp, int64_t x, int64_t y) {
  switch (cmp) {
    case Cmp::kEq:
      return x == y;
    case Cmp::kNe:
      return x != y;
    case Cmp::kLt:
      return x < y;
    case Cmp::kLe:
      return x <= y;
    case Cmp::kGt:
      return x > y;
    default:
      return x >= y;
  }
}

template <SOp kOp>
int ScalarVideo(Exec& x, const Inst& in) {
  const ScalarForm f(in);
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = in.na > 2 ? Src(x, in.a[2]) : nullptr;
  ForLanes(x.mask, [&](int l) {
    const int64_t ta = Part(uint32_t(a[l]), f.asel, f.as), tb = Part(uint32_t(b[l]), f.bsel, f.bs);
    Wide t = 0;
    switch (kOp) {
      case SOp::kAdd:
        t = Wide(ta) + tb;
        break;
      case SOp::kSub:
        t = Wide(ta) - tb;
        break;
      case SOp::kAbsdiff:
        t = ta > tb ? Wide(ta) - tb : Wide(tb) - ta;
        break;
      case SOp::kMin:
        t = ta < tb ? ta : tb;
        break;
      case SOp::kMax:
        t = ta < tb ? tb : ta;
        break;
      case SOp::kShl:
      case SOp::kShr: {  // b is unsigned: .clamp caps the amount at 32, .wrap takes it mod 32
        const int n = f.shift == kShiftClamp ? int(tb > 32 ? 32 : tb) : int(tb & 31);
        t = kOp == SOp::kShl ? Wide(ta) * (Wide(1) << n) : Wide(ta >> n);
        break;
      }
      case SOp::kSet:
        t = Compare(in.cmp, ta, tb) ? 1 : 0;
        break;
    }
    d[l] = f.Finish(t, c ? uint32_t(c[l]) : 0);
  });
  return kNext;
}

// vmad: (a*b + c) in 128 bits, with the ISA's one negation (of the product or of c, each as
// ones' complement plus one) or .po's plus one, then .shr7/.shr15 and .sat.
int Vmad(Exec& x, const Inst& in) {
  const ScalarForm f(in);  // its selectors, signs and .sat
  const bool neg_ab = ((in.src_neg ^ (in.src_neg >> 1)) & 1) != 0, neg_c = in.src_neg & 4;
  const bool po = in.target & kScalarPlusOne;
  const bool sign = f.as || f.bs || neg_ab || neg_c;
  const uint32_t scale = in.target >> 11 & 3;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanes(x.mask, [&](int l) {
    Wide t = Wide(Part(uint32_t(a[l]), f.asel, f.as)) * Part(uint32_t(b[l]), f.bsel, f.bs);
    uint32_t cv = uint32_t(c[l]);
    int lsb = 0;
    if (po) {
      lsb = 1;
    } else if (neg_ab) {
      t = ~t;
      lsb = 1;
    } else if (neg_c) {
      cv = ~cv;
      lsb = 1;
    }
    t += (sign ? Wide(int32_t(cv)) : Wide(cv)) + lsb;
    if (scale == kScaleShr7) t >>= 7;
    if (scale == kScaleShr15) t >>= 15;
    int64_t r = int64_t(uint64_t(t));  // the low 64 bits
    if (f.sat) {
      if (sign)
        r = r < INT32_MIN ? INT32_MIN : r > INT32_MAX ? INT32_MAX : r;
      else
        r = uint64_t(r) > UINT32_MAX ? int64_t(UINT32_MAX) : r;
    }
    d[l] = uint32_t(r);
  });
  return kNext;
}

// A selector suffix without its dot, or the whole word for none; kScalarSelBad if not one.
constexpr uint32_t kScalarSelBad = 8;
uint32_t ScalarSelOf(std::string_view s) {
  static constexpr std::string_view kNames[] = {"", "b0", "b1", "b2", "b3", "h0", "h1"};
  for (uint32_t i = 0; i < std::size(kNames); ++i)
    if (s == kNames[i]) return i;
  return kScalarSelBad;
}

}  // namespace

std::string DecodeScalarVideo(Inst& in, std::string_view mods, std::string_view dsel,
                              std::string_view asel, std::string_view bsel, uint32_t negated,
                              size_t operands) {
  const uint32_t ds = ScalarSelOf(dsel), as = ScalarSelOf(asel), bs = ScalarSelOf(bsel);
  if (ds == kScalarSelBad || as == kScalarSelBad || bs == kScalarSelBad)
    return "a scalar video selector is one of .b0 .b1 .b2 .b3 .h0 .h1";
  const bool is_set = in.op == Op::kVset, is_mad = in.op == Op::kVmad;
  const bool is_shift = in.op == Op::kVshl || in.op == Op::kVshr;
  std::vector<Ty> types;
  uint32_t shift = kShiftNone, scale = kScaleNone;
  bool po = false;
  for (size_t at = 0; at < mods.size();) {
    static constexpr std::pair<std::string_view, Cmp> kCmps[] = {
        {"eq", Cmp::kEq}, {"ne", Cmp::kNe}, {"lt", Cmp::kLt},
        {"le", Cmp::kLe}, {"gt", Cmp::kGt}, {"ge", Cmp::kGe}};
    const size_t dot = std::min(mods.find('.', at), mods.size());
    const std::string_view w = mods.substr(at, dot - at);
    at = dot + 1;
    const auto cmp = std::find_if(std::begin(kCmps), std::end(kCmps),
                                  [&](const auto& c) { return c.first == w; });
    if (w == "u32" || w == "s32") {
      types.push_back(w == "s32" ? Ty::kS32 : Ty::kU32);
    } else if (w == "sat" && !is_set) {
      in.flags |= kFlagSat;
    } else if ((w == "add" || w == "min" || w == "max") && !is_mad) {
      in.sub = w == "add" ? Sub::kAdd : w == "min" ? Sub::kMin : Sub::kMax;
    } else if ((w == "clamp" || w == "wrap") && is_shift) {
      shift = w == "clamp" ? kShiftClamp : kShiftWrap;
    } else if ((w == "shr7" || w == "shr15") && is_mad) {
      scale = w == "shr7" ? kScaleShr7 : kScaleShr15;
    } else if (w == "po" && is_mad) {
      po = true;
    } else if (cmp != std::end(kCmps) && is_set) {
      in.cmp = cmp->second;
    } else {
      return "no modifier ." + std::string(w) + " here";
    }
  }
  if (is_set) types.insert(types.begin(), Ty::kU32);  // no .dtype: the result, 0 or 1, unsigned
  if (types.size() != 3) return "a scalar video instruction takes .dtype.atype.btype";
  if (is_shift && (shift == kShiftNone || types[2] != Ty::kU32))
    return "a shift takes .u32 amounts and .clamp or .wrap";
  if (is_set && in.cmp == Cmp::kNone) return "vset takes a comparison";
  const bool has_op2 = in.sub != Sub::kNone, merges = ds != kScalarWord;
  if (is_mad) {
    if (operands != 4 || merges) return "vmad takes d, a, b and c";
    if ((po && negated) || ((negated & 3) && (negated & 4)))
      return "vmad negates the product or c, without .po";
  } else {
    if (negated) return "only vmad negates its operands";
    if ((has_op2 || merges) && operands != 4) return "a secondary operation or merge takes c";
    if (has_op2 && merges) return "a secondary operation and a merge together";
  }
  in.ty = types[0];
  in.target = as | bs << 3 | ds << 6 | shift << 9 | scale << 11 | (po ? kScalarPlusOne : 0) |
              (types[1] == Ty::kS32 ? kVideoASigned : 0) |
              (types[2] == Ty::kS32 ? kVideoBSigned : 0);
  in.src_neg = uint8_t(negated);
  return {};
}

ExecFn select_Vadd(Inst&) {
  return &ScalarVideo<SOp::kAdd>;
}
ExecFn select_Vsub(Inst&) {
  return &ScalarVideo<SOp::kSub>;
}
ExecFn select_Vabsdiff(Inst&) {
  return &ScalarVideo<SOp::kAbsdiff>;
}
ExecFn select_Vmin(Inst&) {
  return &ScalarVideo<SOp::kMin>;
}
ExecFn select_Vmax(Inst&) {
  return &ScalarVideo<SOp::kMax>;
}
ExecFn select_Vshl(Inst&) {
  return &ScalarVideo<SOp::kShl>;
}
ExecFn select_Vshr(Inst&) {
  return &ScalarVideo<SOp::kShr>;
}
ExecFn select_Vset(Inst&) {
  return &ScalarVideo<SOp::kSet>;
}
ExecFn select_Vmad(Inst&) {
  return &Vmad;
}

}  // namespace remora::emu::ptx
