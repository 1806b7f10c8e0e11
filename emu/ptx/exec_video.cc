// emu/ptx/exec_video.cc - SIMD video instructions: vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 on
// bytes and vadd2 ... vmax2 on half-words (PTX ISA 9.7.18.2.1, 9.7.18.2.3).
//
// Per lane, exactly the ISA's semantics: elements selected from b:a and sign- or zero-extended
// (video.h's form), the operation on them exactly (in 32 bits: no element result overflows),
// .sat clamping to the .dtype's element range, then the results merged into c at the positions
// the mask names, or with .add summed into c (mod 2^32).
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

}  // namespace remora::emu::ptx
