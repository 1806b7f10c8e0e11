// emu/ptx/exec_int.cc - integer, bit, comparison, selection and move instructions.
#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <type_traits>

#include "emu/ptx/exec.h"
#include "emu/ptx/half.h"

#if defined(__SSE4_1__)
#include <smmintrin.h>
#endif

namespace remora::emu::ptx {
namespace {

template <class T>
using U = std::make_unsigned_t<T>;

// Low32<O>::value: O is a 32-bit operation whose result is the low half of Low32<O>::Wide's on
// the same 64-bit slots (add, subtract, bitwise, shift left: no higher bit reaches a lower one).
// Bin and Un then run the wide form and clear the high half: a 32-bit register's slot holds its
// value zero-extended, and no lane's value has to be packed into 32-bit lanes and back.
template <class O>
struct Low32 : std::false_type {};
template <class T>
struct ShlO;
template <class T>
struct ShrO;

// d = O(a, b) over the active lanes.
// An immediate second operand is one value for every lane (a shift by a constant vectorizes).
template <class T, class O>
int Bin(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  constexpr bool kShl = std::is_same_v<O, ShlO<T>>, kShr = std::is_same_v<O, ShrO<T>>;
  if constexpr (kShl || kShr) {
    if (in.a[1] & kConstSlot) {
      // One shift count, checked once: the loop is a plain shift (PTX clamps the count).
      constexpr U<T> kBits = 8 * sizeof(T);
      const U<T> count = U<T>(Get<T>(b[0]));
      const bool all_out = count >= kBits;
      if (all_out && (kShl || !std::is_signed_v<T>)) {
        ForLanesElementwise(x.mask, [&](int l) { d[l] = 0; });
        return kNext;
      }
      const unsigned n = all_out ? unsigned(kBits - 1) : unsigned(count);
      if constexpr (kShl && Low32<O>::value)  // the low half of the 64-bit shift
        ForLanesElementwise(x.mask, [&](int l) { d[l] = (a[l] << n) & 0xffffffffu; });
      else if constexpr (kShl)
        ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(T(U<T>(Get<T>(a[l])) << n)); });
      else
        ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(T(Get<T>(a[l]) >> n)); });
      return kNext;
    }
  }
  if constexpr (Low32<O>::value) {
    using W = typename Low32<O>::Wide;
    constexpr uint64_t kLow = 0xffffffffu;
    if (in.a[1] & kConstSlot) {
      const uint64_t bv = b[0];
      ForLanesElementwise(x.mask, [&](int l) { d[l] = W::f(a[l], bv) & kLow; });
    } else {
      ForLanesElementwise(x.mask, [&](int l) { d[l] = W::f(a[l], b[l]) & kLow; });
    }
    return kNext;
  }
  if (in.a[1] & kConstSlot) {
    const T bv = Get<T>(b[0]);
    ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(O::f(Get<T>(a[l]), bv)); });
  } else {
    ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(O::f(Get<T>(a[l]), Get<T>(b[l]))); });
  }
  return kNext;
}
template <class T, class O>
int Un(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  if constexpr (Low32<O>::value) {
    ForLanesElementwise(x.mask, [&](int l) { d[l] = Low32<O>::Wide::f(a[l]) & 0xffffffffu; });
    return kNext;
  }
  ForLanesElementwise(x.mask, [&](int l) { d[l] = Put<T>(O::f(Get<T>(a[l]))); });
  return kNext;
}
template <class T, class O>
int Tern(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanesElementwise(
      x.mask, [&](int l) { d[l] = Put<T>(O::f(Get<T>(a[l]), Get<T>(b[l]), Get<T>(c[l]))); });
  return kNext;
}

template <class T>
struct AddO {
  static T f(T a, T b) { return T(U<T>(a) + U<T>(b)); }
};
template <class T>
struct SubO {
  static T f(T a, T b) { return T(U<T>(a) - U<T>(b)); }
};
template <class T>
struct MulLoO {
  static T f(T a, T b) { return T(U<T>(a) * U<T>(b)); }
};
template <class T>
struct MulHiO {
  static T f(T a, T b) {
    if constexpr (sizeof(T) == 8) {
      using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
      return T((W(a) * W(b)) >> 64);
    } else {
      using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
      return T((W(a) * W(b)) >> (8 * sizeof(T)));
    }
  }
};
template <class T>
struct MadLoO {
  static T f(T a, T b, T c) { return T(U<T>(a) * U<T>(b) + U<T>(c)); }
};
template <class T>
struct MadHiO {
  static T f(T a, T b, T c) { return T(U<T>(MulHiO<T>::f(a, b)) + U<T>(c)); }
};
template <class T>
struct AddSatO {
  static T f(T a, T b) {
    int64_t r = int64_t(a) + int64_t(b);
    return T(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
  }
};
template <class T>
struct SubSatO {
  static T f(T a, T b) {
    int64_t r = int64_t(a) - int64_t(b);
    return T(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
  }
};
template <class T>
struct DivO {
  static T f(T a, T b) {
    if (b == 0) return T(~U<T>(0));
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(U<T>(0) - U<T>(a));
    }
    return T(a / b);
  }
};
template <class T>
struct RemO {
  static T f(T a, T b) {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return 0;
    }
    return T(a % b);
  }
};
template <class T>
struct AbsO {
  static T f(T a) { return a < 0 ? T(U<T>(0) - U<T>(a)) : a; }
};
template <class T>
struct NegO {
  static T f(T a) { return T(U<T>(0) - U<T>(a)); }
};
template <class T>
struct MinO {
  static T f(T a, T b) { return a < b ? a : b; }
};
template <class T>
struct MaxO {
  static T f(T a, T b) { return a < b ? b : a; }
};
template <class T>
struct AndO {
  static T f(T a, T b) { return T(a & b); }
};
template <class T>
struct OrO {
  static T f(T a, T b) { return T(a | b); }
};
template <class T>
struct XorO {
  static T f(T a, T b) { return T(a ^ b); }
};
template <class T>
struct NotO {
  static T f(T a) { return T(~a); }
};
template <class T>
struct CnotO {
  static T f(T a) { return T(a == 0 ? 1 : 0); }
};
template <class T>
struct ShlO {
  static T f(T a, T b) { return U<T>(b) >= 8 * sizeof(T) ? T(0) : T(U<T>(a) << U<T>(b)); }
};
template <class T>
struct ShrO {
  static T f(T a, T b) {
    uint32_t n = uint32_t(U<T>(b)) > 8 * sizeof(T) - 1 ? 8 * sizeof(T) - 1 : uint32_t(U<T>(b));
    if constexpr (std::is_signed_v<T>) {
      return T(a >> n);
    } else {
      return U<T>(b) >= 8 * sizeof(T) ? T(0) : T(a >> n);
    }
  }
};
// The operations Low32 holds for (see there).
#define REMORA_LOW32(Op)                          \
  template <class T>                              \
  struct Low32<Op<T>> {                           \
    static constexpr bool value = sizeof(T) == 4; \
    using Wide = Op<uint64_t>;                    \
  };
REMORA_LOW32(AddO)
REMORA_LOW32(SubO)
REMORA_LOW32(AndO)
REMORA_LOW32(OrO)
REMORA_LOW32(XorO)
REMORA_LOW32(NotO)
REMORA_LOW32(NegO)
REMORA_LOW32(ShlO)
#undef REMORA_LOW32
template <class T>
struct SadO {
  static T f(T a, T b, T c) {
    return T(U<T>(c) + U<T>(a < b ? U<T>(b) - U<T>(a) : U<T>(a) - U<T>(b)));
  }
};
template <class T>
struct Mul24LoO {
  static T f(T a, T b) {
    int64_t p =
        std::is_signed_v<T>
            ? int64_t(int32_t(uint32_t(a) << 8) >> 8) * int64_t(int32_t(uint32_t(b) << 8) >> 8)
            : int64_t(uint64_t(uint32_t(a) & 0xffffff) * (uint32_t(b) & 0xffffff));
    return T(uint32_t(p));
  }
};
template <class T>
struct Mul24HiO {
  static T f(T a, T b) {
    int64_t p =
        std::is_signed_v<T>
            ? int64_t(int32_t(uint32_t(a) << 8) >> 8) * int64_t(int32_t(uint32_t(b) << 8) >> 8)
            : int64_t(uint64_t(uint32_t(a) & 0xffffff) * (uint32_t(b) & 0xffffff));
    return T(uint32_t(uint64_t(p) >> 16));
  }
};
template <class T>
struct Mad24LoO {
  static T f(T a, T b, T c) { return T(uint32_t(Mul24LoO<T>::f(a, b)) + uint32_t(c)); }
};
template <class T>
struct Mad24HiO {
  static T f(T a, T b, T c) { return T(uint32_t(Mul24HiO<T>::f(a, b)) + uint32_t(c)); }
};

// mul.wide / mad.wide: double-width result from T sources.
template <class T>
int MulWide(Exec& x, const Inst& in) {
  using W =
      std::conditional_t<std::is_signed_v<T>, std::conditional_t<sizeof(T) == 2, int32_t, int64_t>,
                         std::conditional_t<sizeof(T) == 2, uint32_t, uint64_t>>;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
#if defined(__SSE4_1__)
  if constexpr (sizeof(T) == 4) {
    if (x.mask == 0xffffffffu) {
      // pmuludq / pmuldq: the full product of each 64-bit slot's low halves, two lanes at once.
      const bool madd = in.op == Op::kMad, bconst = in.a[1] & kConstSlot;
      const uint64_t* c = madd ? Src(x, in.a[2]) : nullptr;
      const __m128i bc = _mm_set1_epi64x(int64_t(b[0]));
      for (int l = 0; l < 32; l += 2) {
        const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + l));
        const __m128i vb = bconst ? bc : _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + l));
        __m128i p = std::is_signed_v<T> ? _mm_mul_epi32(va, vb) : _mm_mul_epu32(va, vb);
        if (madd) p = _mm_add_epi64(p, _mm_loadu_si128(reinterpret_cast<const __m128i*>(c + l)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + l), p);
      }
      return kNext;
    }
  }
#endif
  if (in.op == Op::kMad) {
    const uint64_t* c = Src(x, in.a[2]);
    ForLanesElementwise(x.mask, [&](int l) {
      d[l] = Put<W>(W(std::make_unsigned_t<W>(W(Get<T>(a[l])) * W(Get<T>(b[l]))) +
                      std::make_unsigned_t<W>(Get<W>(c[l]))));
    });
  } else {
    ForLanesElementwise(x.mask,
                        [&](int l) { d[l] = Put<W>(W(W(Get<T>(a[l])) * W(Get<T>(b[l])))); });
  }
  return kNext;
}

template <class T>
int Popc(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanes(x.mask, [&](int l) { d[l] = uint32_t(std::popcount(U<T>(Get<T>(a[l])))); });
  return kNext;
}
template <class T>
int Clz(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanes(x.mask, [&](int l) { d[l] = uint32_t(std::countl_zero(U<T>(Get<T>(a[l])))); });
  return kNext;
}
template <class T>
int Bfind(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  bool shiftamt = in.flags & kFlagShiftAmt;
  ForLanes(x.mask, [&](int l) {
    T v = Get<T>(a[l]);
    U<T> u = U<T>(v);
    if constexpr (std::is_signed_v<T>) {
      if (v < 0) u = U<T>(~u);
    }
    uint32_t r = 0xffffffffu;
    if (u != 0) {
      r = uint32_t(8 * sizeof(T) - 1 - std::countl_zero(u));
      if (shiftamt) r = uint32_t(8 * sizeof(T) - 1) - r;
    }
    d[l] = r;
  });
  return kNext;
}
template <class T>
int Brev(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanes(x.mask, [&](int l) {
    U<T> v = U<T>(Get<T>(a[l])), r = 0;
    for (unsigned i = 0; i < 8 * sizeof(T); ++i)
      r |= U<T>(((v >> i) & 1) << (8 * sizeof(T) - 1 - i));
    d[l] = Put<T>(T(r));
  });
  return kNext;
}
template <class T>
int Bfe(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  constexpr unsigned kBits = 8 * sizeof(T);
  ForLanes(x.mask, [&](int l) {
    U<T> v = U<T>(Get<T>(a[l]));
    unsigned pos = unsigned(b[l] & 0xff), len = unsigned(c[l] & 0xff);
    U<T> sbit = 0;
    if constexpr (std::is_signed_v<T>) {
      if (len != 0) sbit = (v >> std::min(pos + len - 1, kBits - 1)) & 1;
    }
    U<T> r = 0;
    for (unsigned i = 0; i < kBits; ++i) {
      U<T> bit = (i < len && pos + i < kBits) ? U<T>((v >> (pos + i)) & 1) : sbit;
      r |= U<T>(bit << i);
    }
    d[l] = Put<T>(T(r));
  });
  return kNext;
}
template <class T>
int Bfi(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  const uint64_t* e = Src(x, in.a[3]);
  constexpr unsigned kBits = 8 * sizeof(T);
  ForLanes(x.mask, [&](int l) {
    U<T> av = U<T>(a[l]), r = U<T>(b[l]);
    unsigned pos = unsigned(c[l] & 0xff), len = unsigned(e[l] & 0xff);
    for (unsigned i = 0; i < len && pos + i < kBits; ++i) {
      r = U<T>((r & ~(U<T>(1) << (pos + i))) | (((av >> i) & 1) << (pos + i)));
    }
    d[l] = Put<T>(T(r));
  });
  return kNext;
}

// bmsk: the mask of b bits starting at bit a; .clamp zeroes it for a >= 32 and saturates b at
// 32, .wrap takes both modulo 32 (PTX ISA 9.7.1.21).
template <bool kClamp>
int Bmsk(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  ForLanes(x.mask, [&](int l) {
    uint32_t pos = uint32_t(a[l]), width = uint32_t(b[l]);
    uint32_t p1 = pos & 31, w1 = width & 31, sum = p1 + w1;
    uint32_t low = ~0u << p1;
    bool pos_over = kClamp && pos >= 32, width_over = kClamp && width >= 32;
    if (pos_over) low = 0;
    uint32_t high = sum >= 32 || pos_over || width_over ? 0u : w1 == 0 ? ~0u : ~0u << sum;
    d[l] = low & ~high;
  });
  return kNext;
}

// prmt's modes: each of d's bytes n = 0..3 is byte Index(n) of {b, a}, s = c & 3 (PTX ISA
// 9.7.8.7's table: f4e slides a window forward, b4e backward, rc8 and rc16 replicate a byte
// or a half, ecl and ecr clamp at an edge).
template <Sub kMode>
int PrmtMode(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanes(x.mask, [&](int l) {
    const uint64_t t = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
    const uint32_t s = uint32_t(c[l]) & 3;
    uint32_t r = 0;
    for (uint32_t n = 0; n < 4; ++n) {
      uint32_t i = 0;
      if constexpr (kMode == Sub::kF4e) i = s + n;
      if constexpr (kMode == Sub::kB4e) i = (s - n) & 7;
      if constexpr (kMode == Sub::kRc8) i = s;
      if constexpr (kMode == Sub::kEcl) i = std::max(n, s);
      if constexpr (kMode == Sub::kEcr) i = std::min(n, s);
      if constexpr (kMode == Sub::kRc16) i = (s & 1) * 2 + (n & 1);
      r |= uint32_t((t >> (8 * i)) & 0xff) << (8 * n);
    }
    d[l] = r;
  });
  return kNext;
}

// szext: a's low b bits, zero- or sign-extended (.u32, .s32); .clamp takes b up to 32 (32 or
// more keeps a whole), .wrap b modulo 32 (PTX ISA 9.7.1.20).
template <bool kClamp, bool kSigned>
int Szext(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  ForLanes(x.mask, [&](int l) {
    const uint32_t av = uint32_t(a[l]);
    const uint32_t n = kClamp ? std::min(uint32_t(b[l]), 32u) : uint32_t(b[l]) & 31;
    if (n >= 32) {
      d[l] = av;
      return;
    }
    const uint32_t high = ~0u << n;  // the bits the extension fills
    const bool sign = kSigned && n > 0 && ((av >> (n - 1)) & 1);
    d[l] = (av & ~high) | (sign ? high : 0);
  });
  return kNext;
}

int Prmt(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanes(x.mask, [&](int l) {
    uint64_t t = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
    uint32_t s = uint32_t(c[l]), r = 0;
    for (int n = 0; n < 4; ++n) {
      uint32_t sel = (s >> (4 * n)) & 0xf;
      uint32_t byte = uint32_t(t >> (8 * (sel & 7))) & 0xff;
      if (sel & 8) byte = (byte & 0x80) ? 0xff : 0;
      r |= byte << (8 * n);
    }
    d[l] = r;
  });
  return kNext;
}

int Lop3(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  const uint64_t* lut = Src(x, in.a[3]);
  ForLanes(x.mask, [&](int l) {
    uint32_t av = uint32_t(a[l]), bv = uint32_t(b[l]), cv = uint32_t(c[l]), r = 0;
    uint32_t f = uint32_t(lut[l]) & 0xff;
    for (int i = 0; i < 8; ++i)
      if (f >> i & 1) r |= ((i & 4) ? av : ~av) & ((i & 2) ? bv : ~bv) & ((i & 1) ? cv : ~cv);
    d[l] = r;
  });
  return kNext;
}

template <bool kLeft, bool kClamp>
int Shf(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanes(x.mask, [&](int l) {
    uint32_t n = uint32_t(c[l]);
    n = kClamp ? (n > 32 ? 32 : n) : (n & 31);
    uint64_t v = (uint64_t(uint32_t(b[l])) << 32) | uint32_t(a[l]);
    d[l] = kLeft ? uint32_t((v << n) >> 32) : uint32_t(v >> n);
  });
  return kNext;
}

// dp4a: c plus the four bytes of a times the four bytes of b; dp2a.{lo,hi}: c plus the two
// 16-bit halves of a times two bytes of b, its low two (.lo) or high two (.hi). Each element is
// signed or not as its operand's type says; the sum wraps.
template <int kN>
int DotAccumulate(Exec& x, const Inst& in) {
  constexpr int kABits = 32 / kN;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  const bool as = TyIsSigned(in.ty), bs = TyIsSigned(in.ty2);
  const int first = kN == 2 && in.sub2 == Sub::kHi ? 2 : 0;
  auto extend = [](uint32_t v, int bits, bool sign) {
    v &= (1u << bits) - 1;
    return sign ? int32_t(v << (32 - bits)) >> (32 - bits) : int32_t(v);
  };
  ForLanes(x.mask, [&](int l) {
    uint32_t acc = uint32_t(c[l]);
    for (int k = 0; k < kN; ++k) {
      const int32_t av = extend(uint32_t(a[l] >> (kABits * k)), kABits, as);
      const int32_t bv = extend(uint32_t(b[l] >> (8 * (first + k))), 8, bs);
      acc += uint32_t(av * bv);
    }
    d[l] = acc;
  });
  return kNext;
}

// fns.b32 d, mask, base, offset: the position of the offset-th set bit of mask counted from bit
// base, upwards for offset > 0 and downwards for offset < 0 (base itself first); with offset 0,
// base if that bit is set. 0xffffffff when there is none (base above 31 finds none).
int Fns(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* m = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* o = Src(x, in.a[2]);
  ForLanes(x.mask, [&](int l) {
    const uint32_t mask = uint32_t(m[l]), base = uint32_t(b[l]);
    const int32_t offset = int32_t(uint32_t(o[l]));
    uint32_t r = 0xffffffffu;
    if (base < 32) {
      if (offset == 0) {
        if ((mask >> base) & 1) r = base;
      } else {
        int64_t count = offset > 0 ? int64_t(offset) - 1 : -int64_t(offset) - 1;
        const int step = offset > 0 ? 1 : -1;
        for (int pos = int(base); pos >= 0 && pos < 32; pos += step) {
          if (((mask >> pos) & 1) && count-- == 0) {
            r = uint32_t(pos);
            break;
          }
        }
      }
    }
    d[l] = r;
  });
  return kNext;
}

// ---- extended precision (PTX ISA "Extended-Precision Integer Arithmetic") ----
// add.cc/addc, sub.cc/subc, mad{.lo,.hi}.cc/madc: the same for signed and unsigned types
// except the .hi product; carry in and out through Warp::carry, one bit per lane. A subtraction
// is a + ~b + 1 (sub.cc) or a + ~b + CF (subc), its carry-out that addition's: 1 when nothing
// was borrowed, as on a GPU (nvcc's 128-bit division reads it with addc after sub.cc).
// Chains of sub.cc and subc compute the same under either sense of the flag.
enum class CarryOp { kAdd, kSub, kMadLo, kMadHi };
template <class T, CarryOp kOp, bool kCin, bool kCout>
int Carry(Exec& x, const Inst& in) {
  using UT = U<T>;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = kOp == CarryOp::kMadLo || kOp == CarryOp::kMadHi ? Src(x, in.a[2]) : b;
  uint32_t cc = x.w->carry;
  uint32_t out = cc & ~x.mask;
  ForLanes(x.mask, [&](int l) {
    UT cin = kCin ? UT((cc >> l) & 1) : UT(0);
    UT r;
    bool co;
    if constexpr (kOp == CarryOp::kSub) {
      const UT av = UT(Get<T>(a[l])), nb = UT(~UT(Get<T>(b[l])));
      const UT c_in = kCin ? cin : UT(1);
      bool c1 = __builtin_add_overflow(av, nb, &r);
      bool c2 = __builtin_add_overflow(r, c_in, &r);
      co = c1 || c2;
    } else {
      UT lhs;
      if constexpr (kOp == CarryOp::kAdd)
        lhs = UT(Get<T>(a[l]));
      else if constexpr (kOp == CarryOp::kMadLo)
        lhs = UT(MulLoO<T>::f(Get<T>(a[l]), Get<T>(b[l])));
      else
        lhs = UT(MulHiO<T>::f(Get<T>(a[l]), Get<T>(b[l])));
      UT rhs = UT(Get<T>(kOp == CarryOp::kAdd ? b[l] : c[l]));
      bool c1 = __builtin_add_overflow(lhs, rhs, &r);
      bool c2 = __builtin_add_overflow(r, cin, &r);
      co = c1 || c2;
    }
    d[l] = Put<T>(T(r));
    out |= uint32_t(co) << l;
  });
  if (kCout) x.w->carry = out;
  return kNext;
}

template <class T, CarryOp kOp, bool kCin>
ExecFn PickCarryOut(const Inst& in) {
  return (in.flags & kFlagCarryOut) ? &Carry<T, kOp, kCin, true> : &Carry<T, kOp, kCin, false>;
}
template <CarryOp kOp, bool kCin>
ExecFn PickCarry(const Inst& in) {
  if (in.flags & (kFlagSat | kFlagFtz)) return nullptr;
  switch (in.ty) {
    case Ty::kU32:
      return PickCarryOut<uint32_t, kOp, kCin>(in);
    case Ty::kS32:
      return PickCarryOut<int32_t, kOp, kCin>(in);
    case Ty::kU64:
      return PickCarryOut<uint64_t, kOp, kCin>(in);
    case Ty::kS64:
      return PickCarryOut<int64_t, kOp, kCin>(in);
    default:
      return nullptr;
  }
}
// mad.cc / madc: .lo or .hi must be given (.wide has no carry form).
template <bool kCin>
ExecFn PickMadCarry(const Inst& in) {
  if (in.sub2 == Sub::kLo) return PickCarry<CarryOp::kMadLo, kCin>(in);
  if (in.sub2 == Sub::kHi) return PickCarry<CarryOp::kMadHi, kCin>(in);
  return nullptr;
}

// Picks an instantiation of Fn<T> for an integer type (bN as uN).
template <template <class> class Fn>
ExecFn PickInt(Ty t) {
  switch (t) {
    case Ty::kB16:
    case Ty::kU16:
      return &Fn<uint16_t>::run;
    case Ty::kS16:
      return &Fn<int16_t>::run;
    case Ty::kB32:
    case Ty::kU32:
      return &Fn<uint32_t>::run;
    case Ty::kS32:
      return &Fn<int32_t>::run;
    case Ty::kB64:
    case Ty::kU64:
      return &Fn<uint64_t>::run;
    case Ty::kS64:
      return &Fn<int64_t>::run;
    default:
      return nullptr;
  }
}
#define BIN_FN(Name, O)                                                     \
  template <class T>                                                        \
  struct Name {                                                             \
    static int run(Exec& x, const Inst& in) { return Bin<T, O<T>>(x, in); } \
  };
#define UN_FN(Name, O)                                                     \
  template <class T>                                                       \
  struct Name {                                                            \
    static int run(Exec& x, const Inst& in) { return Un<T, O<T>>(x, in); } \
  };
#define TERN_FN(Name, O)                                                     \
  template <class T>                                                         \
  struct Name {                                                              \
    static int run(Exec& x, const Inst& in) { return Tern<T, O<T>>(x, in); } \
  };
BIN_FN(AddF, AddO)
BIN_FN(SubF, SubO)
BIN_FN(MulLoF, MulLoO)
BIN_FN(MulHiF, MulHiO)
TERN_FN(MadLoF, MadLoO)
TERN_FN(MadHiF, MadHiO)
BIN_FN(DivF, DivO)
BIN_FN(RemF, RemO)
UN_FN(AbsF, AbsO)
UN_FN(NegF, NegO)
BIN_FN(MinF, MinO)
BIN_FN(MaxF, MaxO)
BIN_FN(AndF, AndO)
BIN_FN(OrF, OrO)
BIN_FN(XorF, XorO)
UN_FN(NotF, NotO)
UN_FN(CnotF, CnotO)
BIN_FN(ShlF, ShlO)
BIN_FN(ShrF, ShrO)
TERN_FN(SadF, SadO)

// .u16x2/.s16x2: O on each 16-bit half as H (element 0 the low half); with kRelu a negative
// half becomes 0.
template <template <class> class O, class H, bool kRelu = false>
struct X2O {
  static uint16_t One(uint16_t a, uint16_t b) {
    H r = O<H>::f(H(a), H(b));
    if constexpr (kRelu) r = r < 0 ? H(0) : r;
    return uint16_t(r);
  }
  static uint32_t f(uint32_t a, uint32_t b) {
    return One(uint16_t(a), uint16_t(b)) | uint32_t(One(uint16_t(a >> 16), uint16_t(b >> 16)))
                                               << 16;
  }
};
// min.relu.s32 / max.relu.s32: a negative result becomes 0.
template <template <class> class O>
struct ReluO {
  static int32_t f(int32_t a, int32_t b) {
    int32_t r = O<int32_t>::f(a, b);
    return r < 0 ? 0 : r;
  }
};
// min/max of any integer type: .u16x2 and .s16x2 per half; .relu only on .s16x2 and .s32.
template <template <class> class O, template <class> class Fn>
ExecFn PickMinMax(const Inst& in) {
  const bool relu = in.flags & kFlagRelu;
  switch (in.ty) {
    case Ty::kU16x2:
      return relu ? nullptr : &Bin<uint32_t, X2O<O, uint16_t>>;
    case Ty::kS16x2:
      return relu ? &Bin<uint32_t, X2O<O, int16_t, true>> : &Bin<uint32_t, X2O<O, int16_t>>;
    case Ty::kS32:
      return relu ? &Bin<int32_t, ReluO<O>> : PickInt<Fn>(in.ty);
    default:
      return relu ? nullptr : PickInt<Fn>(in.ty);
  }
}
template <class T>
struct MulWideF {
  static int run(Exec& x, const Inst& in) { return MulWide<T>(x, in); }
};
template <class T>
struct PopcF {
  static int run(Exec& x, const Inst& in) { return Popc<T>(x, in); }
};
template <class T>
struct ClzF {
  static int run(Exec& x, const Inst& in) { return Clz<T>(x, in); }
};
template <class T>
struct BfindF {
  static int run(Exec& x, const Inst& in) { return Bfind<T>(x, in); }
};
template <class T>
struct BrevF {
  static int run(Exec& x, const Inst& in) { return Brev<T>(x, in); }
};
template <class T>
struct BfeF {
  static int run(Exec& x, const Inst& in) { return Bfe<T>(x, in); }
};
template <class T>
struct BfiF {
  static int run(Exec& x, const Inst& in) { return Bfi<T>(x, in); }
};

// Bitwise ops on .pred: a predicate register holds 0 or 1, but an immediate operand is any
// integer, true when not 0 (nvcc writes "not p" as `xor.pred q, p, -1`); each side is read as
// true or false and the result is 0 or 1.
template <template <class> class Op>
struct PredO {
  static uint8_t f(uint8_t a, uint8_t b) { return Op<uint8_t>::f(a != 0, b != 0); }
};
int PredAnd(Exec& x, const Inst& in) {
  return Bin<uint8_t, PredO<AndO>>(x, in);
}
int PredOr(Exec& x, const Inst& in) {
  return Bin<uint8_t, PredO<OrO>>(x, in);
}
int PredXor(Exec& x, const Inst& in) {
  return Bin<uint8_t, PredO<XorO>>(x, in);
}
int PredNot(Exec& x, const Inst& in) {
  return Un<uint8_t, CnotO<uint8_t>>(x, in);
}

// ---- comparisons ----
template <class T, Cmp C>
inline bool Compare(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    bool un = a != a || b != b;
    switch (C) {
      case Cmp::kEq:
        return !un && a == b;
      case Cmp::kNe:
        return !un && a != b;
      case Cmp::kLt:
        return !un && a < b;
      case Cmp::kLe:
        return !un && a <= b;
      case Cmp::kGt:
        return !un && a > b;
      case Cmp::kGe:
        return !un && a >= b;
      case Cmp::kEqu:
        return un || a == b;
      case Cmp::kNeu:
        return un || a != b;
      case Cmp::kLtu:
        return un || a < b;
      case Cmp::kLeu:
        return un || a <= b;
      case Cmp::kGtu:
        return un || a > b;
      case Cmp::kGeu:
        return un || a >= b;
      case Cmp::kNum:
        return !un;
      case Cmp::kNan:
        return un;
      default:
        return false;
    }
  } else {
    using UT = std::make_unsigned_t<T>;
    switch (C) {
      case Cmp::kEq:
        return a == b;
      case Cmp::kNe:
        return a != b;
      case Cmp::kLt:
        return a < b;
      case Cmp::kLe:
        return a <= b;
      case Cmp::kGt:
        return a > b;
      case Cmp::kGe:
        return a >= b;
      case Cmp::kLo:
        return UT(a) < UT(b);
      case Cmp::kLs:
        return UT(a) <= UT(b);
      case Cmp::kHi:
        return UT(a) > UT(b);
      case Cmp::kHs:
        return UT(a) >= UT(b);
      default:
        return false;
    }
  }
}

inline bool Combine(Sub op, bool v, bool c) {
  switch (op) {
    case Sub::kAnd:
      return v && c;
    case Sub::kOr:
      return v || c;
    case Sub::kXor:
      return v != c;
    default:
      return v;
  }
}

// An operand of setp/set: with .ftz, an .f32 subnormal compares as a zero of its sign.
template <class T>
inline T CmpIn(uint64_t raw, bool ftz) {
  T v = Get<T>(raw);
  if constexpr (std::is_same_v<T, float>) {
    if (ftz && std::fabs(v) < std::numeric_limits<float>::min()) v = std::copysign(0.0f, v);
  }
  return v;
}

template <class T, Cmp C>
int Setp(Exec& x, const Inst& in) {
  uint64_t* p = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const bool ftz = in.flags & kFlagFtz;
  if (in.na < 3 && !(in.flags & kFlagSecondDest)) {
    ForLanesElementwise(
        x.mask, [&](int l) { p[l] = Compare<T, C>(CmpIn<T>(a[l], ftz), CmpIn<T>(b[l], ftz)); });
    return kNext;
  }
  const uint64_t* c = in.na >= 3 ? Src(x, in.a[2]) : nullptr;
  bool cneg = in.src_neg & 4;
  uint64_t* q = (in.flags & kFlagSecondDest) ? Dst(x, in.d[1]) : nullptr;
  ForLanes(x.mask, [&](int l) {
    bool v = Compare<T, C>(CmpIn<T>(a[l], ftz), CmpIn<T>(b[l], ftz));
    bool cv = c ? ((c[l] != 0) != cneg) : true;
    bool pv = c ? Combine(in.sub2, v, cv) : v;
    bool qv = c ? Combine(in.sub2, !v, cv) : !v;
    p[l] = pv;
    if (q) q[l] = qv;
  });
  return kNext;
}

// Sources of setp and set with a 16-bit float operand or destination: Value is what Compare takes,
// get(raw, k, ftz) element k of a register (ftz: flush a subnormal .f16 or .f32 to zero).
template <HalfFmt F, bool kX2>
struct HalfSrc {
  using Value = double;
  static constexpr int kElems = kX2 ? 2 : 1;
  static double get(uint64_t raw, int k, bool ftz) {
    const uint16_t h = uint16_t(raw >> (16 * k));
    return HalfToDouble(ftz ? FlushSubnormal(h, F) : h, F);
  }
};
// setp on .f16/.bf16 (one compare; q = !p) and .f16x2/.bf16x2 (p: low half, q: high half).
template <HalfFmt F, bool kX2, Cmp C>
int SetpHalf(Exec& x, const Inst& in) {
  uint64_t* p = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = in.na >= 3 ? Src(x, in.a[2]) : nullptr;
  bool cneg = in.src_neg & 4;
  bool ftz = in.flags & kFlagFtz;
  uint64_t* q = (in.flags & kFlagSecondDest) ? Dst(x, in.d[1]) : nullptr;
  auto val = [&](uint64_t raw, int k) { return HalfSrc<F, kX2>::get(raw, k, ftz); };
  ForLanes(x.mask, [&](int l) {
    bool v0 = Compare<double, C>(val(a[l], 0), val(b[l], 0));
    bool v1 = kX2 ? Compare<double, C>(val(a[l], 1), val(b[l], 1)) : !v0;
    bool cv = c ? ((c[l] != 0) != cneg) : true;
    p[l] = c ? Combine(in.sub2, v0, cv) : v0;
    if (q) q[l] = c ? Combine(in.sub2, v1, cv) : v1;
  });
  return kNext;
}
template <HalfFmt F, bool kX2>
struct SetpHalfW {
  template <class, Cmp C>
  struct K {
    static int run(Exec& x, const Inst& in) { return SetpHalf<F, kX2, C>(x, in); }
  };
};

template <class T, Cmp C>
int Set(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = in.na >= 3 ? Src(x, in.a[2]) : nullptr;
  bool cneg = in.src_neg & 4;
  bool fdst = in.ty == Ty::kF32;
  const bool ftz = in.flags & kFlagFtz;
  ForLanes(x.mask, [&](int l) {
    bool v = Compare<T, C>(CmpIn<T>(a[l], ftz), CmpIn<T>(b[l], ftz));
    if (c) v = Combine(in.sub2, v, (c[l] != 0) != cneg);
    d[l] = fdst ? (v ? 0x3f800000u : 0u) : (v ? 0xffffffffu : 0u);
  });
  return kNext;
}

template <class T>
struct PlainSrc {
  using Value = T;
  static constexpr int kElems = 1;
  static T get(uint64_t raw, int, bool ftz) { return CmpIn<T>(raw, ftz); }
};

// set.CmpOp{.BoolOp}{.ftz}.dtype.stype with a 16-bit float type (PTX ISA 9.7.7.1): each element
// of the source (two for .f16x2/.bf16x2) compared and combined with c; true is 1.0 in a
// .f16/.bf16 destination (each half of a .f16x2/.bf16x2 one), all ones in an integer one (each
// half of a .u32/.s32 destination of packed sources), false is 0.
template <class S, Cmp C>
int SetNarrow(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = in.na >= 3 ? Src(x, in.a[2]) : nullptr;
  const bool cneg = in.src_neg & 4, ftz = in.flags & kFlagFtz;
  uint64_t one;
  switch (in.ty) {
    case Ty::kF16:
    case Ty::kF16x2:
      one = 0x3c00;
      break;
    case Ty::kBF16:
    case Ty::kBF16x2:
      one = 0x3f80;
      break;
    case Ty::kU16:
    case Ty::kS16:
      one = 0xffff;
      break;
    default:  // .u32/.s32
      one = S::kElems == 2 ? 0xffff : 0xffffffff;
      break;
  }
  ForLanes(x.mask, [&](int l) {
    uint64_t r = 0;
    for (int k = 0; k < S::kElems; ++k) {
      bool v = Compare<typename S::Value, C>(S::get(a[l], k, ftz), S::get(b[l], k, ftz));
      if (c) v = Combine(in.sub2, v, (c[l] != 0) != cneg);
      if (v) r |= one << (16 * k);
    }
    d[l] = r;
  });
  return kNext;
}
template <class S>
struct SetNarrowW {
  template <class, Cmp C>
  struct K {
    static int run(Exec& x, const Inst& in) { return SetNarrow<S, C>(x, in); }
  };
};

template <template <class, Cmp> class K, class T>
ExecFn PickCmpT(Cmp c) {
  switch (c) {
#define CASE(C) \
  case Cmp::C:  \
    return &K<T, Cmp::C>::run
    CASE(kEq);
    CASE(kNe);
    CASE(kLt);
    CASE(kLe);
    CASE(kGt);
    CASE(kGe);
    CASE(kLo);
    CASE(kLs);
    CASE(kHi);
    CASE(kHs);
    CASE(kEqu);
    CASE(kNeu);
    CASE(kLtu);
    CASE(kLeu);
    CASE(kGtu);
    CASE(kGeu);
    CASE(kNum);
    CASE(kNan);
#undef CASE
    default:
      return nullptr;
  }
}
template <class T, Cmp C>
struct SetpW {
  static int run(Exec& x, const Inst& in) { return Setp<T, C>(x, in); }
};
template <class T, Cmp C>
struct SetW {
  static int run(Exec& x, const Inst& in) { return Set<T, C>(x, in); }
};

template <template <class, Cmp> class K>
ExecFn PickCmp(Ty t, Cmp c) {
  bool fcmp = c >= Cmp::kEqu;
  if (fcmp && !TyIsFloat(t)) return nullptr;
  switch (t) {
    case Ty::kB16:
    case Ty::kU16:
      return PickCmpT<K, uint16_t>(c);
    case Ty::kS16:
      return PickCmpT<K, int16_t>(c);
    case Ty::kB32:
    case Ty::kU32:
      return PickCmpT<K, uint32_t>(c);
    case Ty::kS32:
      return PickCmpT<K, int32_t>(c);
    case Ty::kB64:
    case Ty::kU64:
      return PickCmpT<K, uint64_t>(c);
    case Ty::kS64:
      return PickCmpT<K, int64_t>(c);
    case Ty::kF32:
      return PickCmpT<K, float>(c);
    case Ty::kF64:
      return PickCmpT<K, double>(c);
    default:
      return nullptr;
  }
}

int Selp(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = c[l] ? a[l] : b[l]; });
  return kNext;
}
template <class C>
int Slct(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = Get<C>(c[l]) >= C(0) ? a[l] : b[l]; });
  return kNext;
}

// ---- moves ----
int MovReg(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = a[l]; });
  return kNext;
}
int MovSym(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  uint64_t v = UniformBase(x, in);
  ForLanesElementwise(x.mask, [&](int l) { d[l] = v; });
  return kNext;
}
int MovPack(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  int bits = TySize(in.ty) * 8 / in.na;
  uint64_t emask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  ForLanes(x.mask, [&](int l) {
    uint64_t v = 0;
    for (int k = 0; k < in.na; ++k) v |= (Src(x, in.a[k])[l] & emask) << (k * bits);
    d[l] = v;
  });
  return kNext;
}
int MovUnpack(Exec& x, const Inst& in) {
  const uint64_t* a = Src(x, in.a[0]);
  int bits = TySize(in.ty) * 8 / in.nd;
  uint64_t emask = bits == 64 ? ~0ull : (1ull << bits) - 1;
  uint64_t tmp[32];
  ForLanes(x.mask, [&](int l) { tmp[l] = a[l]; });
  for (int k = 0; k < in.nd; ++k) {
    if (in.d[k] == kNoReg) continue;
    uint64_t* d = Dst(x, in.d[k]);
    ForLanes(x.mask, [&](int l) { d[l] = (tmp[l] >> (k * bits)) & emask; });
  }
  return kNext;
}

}  // namespace

int exec_mov_sreg(Exec& x, const Inst& in);
ExecFn select_float_add(Inst& in);
ExecFn select_float_sub(Inst& in);
ExecFn select_float_mul(Inst& in);
ExecFn select_float_div(Inst& in);
ExecFn select_Mad_float(Inst& in);

ExecFn select_Add(Inst& in) {
  if (in.flags & kFlagCarryOut) return PickCarry<CarryOp::kAdd, false>(in);
  if (TyIsFloat(in.ty)) return select_float_add(in);
  if (in.ty == Ty::kU16x2 || in.ty == Ty::kS16x2)  // wraps in each half: one function for both
    return in.flags & kFlagSat ? nullptr : &Bin<uint32_t, X2O<AddO, uint16_t>>;
  if (in.flags & kFlagSat) return in.ty == Ty::kS32 ? &Bin<int32_t, AddSatO<int32_t>> : nullptr;
  return PickInt<AddF>(in.ty);
}
ExecFn select_Sub(Inst& in) {
  if (in.flags & kFlagCarryOut) return PickCarry<CarryOp::kSub, false>(in);
  if (TyIsFloat(in.ty)) return select_float_sub(in);
  if (in.flags & kFlagSat) return in.ty == Ty::kS32 ? &Bin<int32_t, SubSatO<int32_t>> : nullptr;
  return PickInt<SubF>(in.ty);
}
ExecFn select_Mul(Inst& in) {
  if (TyIsFloat(in.ty)) return select_float_mul(in);
  if (in.sub2 == Sub::kWide) {
    if (in.ty == Ty::kU64 || in.ty == Ty::kS64) return nullptr;
    return PickInt<MulWideF>(in.ty);
  }
  if (in.sub2 == Sub::kHi) return PickInt<MulHiF>(in.ty);
  return PickInt<MulLoF>(in.ty);
}
ExecFn select_Mad(Inst& in) {
  if (in.flags & kFlagCarryOut) return PickMadCarry<false>(in);
  if (TyIsFloat(in.ty)) return select_Mad_float(in);
  if (in.flags & kFlagSat) return nullptr;
  if (in.sub2 == Sub::kWide) {
    if (in.ty == Ty::kU64 || in.ty == Ty::kS64) return nullptr;
    return PickInt<MulWideF>(in.ty);
  }
  if (in.sub2 == Sub::kHi) return PickInt<MadHiF>(in.ty);
  return PickInt<MadLoF>(in.ty);
}
ExecFn select_Addc(Inst& in) {
  return PickCarry<CarryOp::kAdd, true>(in);
}
ExecFn select_Subc(Inst& in) {
  return PickCarry<CarryOp::kSub, true>(in);
}
ExecFn select_Madc(Inst& in) {
  return PickMadCarry<true>(in);
}
ExecFn select_Mul24(Inst& in) {
  if (in.ty == Ty::kS32)
    return in.sub2 == Sub::kHi ? &Bin<int32_t, Mul24HiO<int32_t>>
                               : &Bin<int32_t, Mul24LoO<int32_t>>;
  if (in.ty == Ty::kU32)
    return in.sub2 == Sub::kHi ? &Bin<uint32_t, Mul24HiO<uint32_t>>
                               : &Bin<uint32_t, Mul24LoO<uint32_t>>;
  return nullptr;
}
ExecFn select_Mad24(Inst& in) {
  if (in.flags & kFlagSat) return nullptr;
  if (in.ty == Ty::kS32)
    return in.sub2 == Sub::kHi ? &Tern<int32_t, Mad24HiO<int32_t>>
                               : &Tern<int32_t, Mad24LoO<int32_t>>;
  if (in.ty == Ty::kU32)
    return in.sub2 == Sub::kHi ? &Tern<uint32_t, Mad24HiO<uint32_t>>
                               : &Tern<uint32_t, Mad24LoO<uint32_t>>;
  return nullptr;
}
ExecFn select_Sad(Inst& in) {
  return PickInt<SadF>(in.ty);
}
ExecFn select_Div(Inst& in) {
  return TyIsFloat(in.ty) ? select_float_div(in) : PickInt<DivF>(in.ty);
}
ExecFn select_Rem(Inst& in) {
  return PickInt<RemF>(in.ty);
}
ExecFn select_Popc(Inst& in) {
  return PickInt<PopcF>(in.ty == Ty::kB32 ? Ty::kU32 : in.ty == Ty::kB64 ? Ty::kU64 : Ty::kNone);
}
ExecFn select_Clz(Inst& in) {
  return PickInt<ClzF>(in.ty == Ty::kB32 ? Ty::kU32 : in.ty == Ty::kB64 ? Ty::kU64 : Ty::kNone);
}
ExecFn select_Bfind(Inst& in) {
  if (in.ty == Ty::kU32 || in.ty == Ty::kS32 || in.ty == Ty::kU64 || in.ty == Ty::kS64)
    return PickInt<BfindF>(in.ty);
  return nullptr;
}
ExecFn select_Brev(Inst& in) {
  return in.ty == Ty::kB32 || in.ty == Ty::kB64 ? PickInt<BrevF>(in.ty) : nullptr;
}
ExecFn select_Bfe(Inst& in) {
  if (in.ty == Ty::kU32 || in.ty == Ty::kS32 || in.ty == Ty::kU64 || in.ty == Ty::kS64)
    return PickInt<BfeF>(in.ty);
  return nullptr;
}
ExecFn select_Bfi(Inst& in) {
  return in.ty == Ty::kB32 || in.ty == Ty::kB64 ? PickInt<BfiF>(in.ty) : nullptr;
}
ExecFn select_Bmsk(Inst& in) {
  if (in.ty != Ty::kB32) return nullptr;
  if (in.flags & kFlagClamp) return &Bmsk<true>;
  return in.flags & kFlagWrap ? &Bmsk<false> : nullptr;
}
ExecFn select_Prmt(Inst& in) {
  if (in.ty != Ty::kB32) return nullptr;
  switch (in.sub) {
    case Sub::kNone:
      return &Prmt;
    case Sub::kF4e:
      return &PrmtMode<Sub::kF4e>;
    case Sub::kB4e:
      return &PrmtMode<Sub::kB4e>;
    case Sub::kRc8:
      return &PrmtMode<Sub::kRc8>;
    case Sub::kEcl:
      return &PrmtMode<Sub::kEcl>;
    case Sub::kEcr:
      return &PrmtMode<Sub::kEcr>;
    case Sub::kRc16:
      return &PrmtMode<Sub::kRc16>;
    default:
      return nullptr;
  }
}
ExecFn select_Szext(Inst& in) {
  if (in.ty != Ty::kU32 && in.ty != Ty::kS32) return nullptr;
  const bool s = in.ty == Ty::kS32;
  if (in.flags & kFlagClamp) return s ? &Szext<true, true> : &Szext<true, false>;
  if (in.flags & kFlagWrap) return s ? &Szext<false, true> : &Szext<false, false>;
  return nullptr;
}
ExecFn select_Lop3(Inst& in) {
  return in.ty == Ty::kB32 ? &Lop3 : nullptr;
}
ExecFn select_Shf(Inst& in) {
  if (in.ty != Ty::kB32) return nullptr;
  bool clamp = in.flags & kFlagClamp;
  if (in.sub == Sub::kL) return clamp ? &Shf<true, true> : &Shf<true, false>;
  if (in.sub == Sub::kR) return clamp ? &Shf<false, true> : &Shf<false, false>;
  return nullptr;
}
ExecFn select_Shl(Inst& in) {
  return PickInt<ShlF>(in.ty);
}
ExecFn select_Shr(Inst& in) {
  return PickInt<ShrF>(in.ty);
}
ExecFn select_And(Inst& in) {
  return in.ty == Ty::kPred ? &PredAnd : PickInt<AndF>(in.ty);
}
ExecFn select_Or(Inst& in) {
  return in.ty == Ty::kPred ? &PredOr : PickInt<OrF>(in.ty);
}
ExecFn select_Xor(Inst& in) {
  return in.ty == Ty::kPred ? &PredXor : PickInt<XorF>(in.ty);
}
ExecFn select_Not(Inst& in) {
  return in.ty == Ty::kPred ? &PredNot : PickInt<NotF>(in.ty);
}
ExecFn select_Cnot(Inst& in) {
  return PickInt<CnotF>(in.ty);
}
ExecFn select_Dp4a(Inst& in) {
  bool ok = (in.ty == Ty::kU32 || in.ty == Ty::kS32) && (in.ty2 == Ty::kU32 || in.ty2 == Ty::kS32);
  return ok ? &DotAccumulate<4> : nullptr;
}
ExecFn select_Dp2a(Inst& in) {
  bool ok = (in.ty == Ty::kU32 || in.ty == Ty::kS32) &&
            (in.ty2 == Ty::kU32 || in.ty2 == Ty::kS32) &&
            (in.sub2 == Sub::kLo || in.sub2 == Sub::kHi);
  return ok ? &DotAccumulate<2> : nullptr;
}
ExecFn select_Fns(Inst& in) {
  return in.ty == Ty::kB32 ? &Fns : nullptr;
}

// Integer forms of abs/neg/min/max; exec_float.cc handles the float types first.
ExecFn select_int_abs(Inst& in) {
  return PickInt<AbsF>(in.ty);
}
ExecFn select_int_neg(Inst& in) {
  return PickInt<NegF>(in.ty);
}
ExecFn select_int_min(Inst& in) {
  return PickMinMax<MinO, MinF>(in);
}
ExecFn select_int_max(Inst& in) {
  return PickMinMax<MaxO, MaxF>(in);
}

ExecFn select_Setp(Inst& in) {
  if (TyIsHalf(in.ty)) {
    if ((in.flags & kFlagFtz) && (in.ty == Ty::kBF16 || in.ty == Ty::kBF16x2)) return nullptr;
    if (in.cmp == Cmp::kNone || (in.cmp >= Cmp::kLo && in.cmp <= Cmp::kHs)) return nullptr;
    switch (in.ty) {
      case Ty::kF16:
        return PickCmpT<SetpHalfW<kF16, false>::K, double>(in.cmp);
      case Ty::kF16x2:
        return PickCmpT<SetpHalfW<kF16, true>::K, double>(in.cmp);
      case Ty::kBF16:
        return PickCmpT<SetpHalfW<kBF16, false>::K, double>(in.cmp);
      default:
        return PickCmpT<SetpHalfW<kBF16, true>::K, double>(in.cmp);
    }
  }
  return PickCmp<SetpW>(in.ty, in.cmp);
}
namespace {

template <class S>
ExecFn PickSetNarrow(Cmp c) {
  return PickCmpT<SetNarrowW<S>::template K, typename S::Value>(c);
}

// set whose source or destination is a 16-bit float type, or whose destination is .u16/.s16.
ExecFn SelectSetNarrow(const Inst& in) {
  const Ty dt = in.ty, st = in.ty2;
  const bool x2 = st == Ty::kF16x2 || st == Ty::kBF16x2;
  const bool bf = st == Ty::kBF16 || st == Ty::kBF16x2 || dt == Ty::kBF16 || dt == Ty::kBF16x2;
  if (dt == Ty::kF16x2 || dt == Ty::kBF16x2) {
    if (dt != st) return nullptr;
  } else if (x2) {
    if (dt != Ty::kU32 && dt != Ty::kS32) return nullptr;
  } else if (st == Ty::kF16 || st == Ty::kBF16) {
    if (dt != Ty::kF16 && dt != Ty::kBF16 && dt != Ty::kU16 && dt != Ty::kS16 && dt != Ty::kU32 &&
        dt != Ty::kS32)
      return nullptr;
  } else if (dt != Ty::kF16 && dt != Ty::kBF16) {
    return nullptr;
  }
  if ((in.flags & kFlagFtz) && bf) return nullptr;  // no .ftz on the bf16 forms
  if (in.flags & ~(kFlagFtz | kFlagSecondDest)) return nullptr;
  if (in.cmp == Cmp::kNone || (in.flags & kFlagSecondDest)) return nullptr;
  const bool fcmp = in.cmp >= Cmp::kEqu, ucmp = in.cmp >= Cmp::kLo && in.cmp <= Cmp::kHs;
  if ((fcmp && !TyIsFloat(st)) || (ucmp && TyIsFloat(st))) return nullptr;
  switch (st) {
    case Ty::kF16:
      return PickSetNarrow<HalfSrc<kF16, false>>(in.cmp);
    case Ty::kF16x2:
      return PickSetNarrow<HalfSrc<kF16, true>>(in.cmp);
    case Ty::kBF16:
      return PickSetNarrow<HalfSrc<kBF16, false>>(in.cmp);
    case Ty::kBF16x2:
      return PickSetNarrow<HalfSrc<kBF16, true>>(in.cmp);
    case Ty::kB16:
    case Ty::kU16:
      return PickSetNarrow<PlainSrc<uint16_t>>(in.cmp);
    case Ty::kS16:
      return PickSetNarrow<PlainSrc<int16_t>>(in.cmp);
    case Ty::kB32:
    case Ty::kU32:
      return PickSetNarrow<PlainSrc<uint32_t>>(in.cmp);
    case Ty::kS32:
      return PickSetNarrow<PlainSrc<int32_t>>(in.cmp);
    case Ty::kB64:
    case Ty::kU64:
      return PickSetNarrow<PlainSrc<uint64_t>>(in.cmp);
    case Ty::kS64:
      return PickSetNarrow<PlainSrc<int64_t>>(in.cmp);
    case Ty::kF32:
      return PickSetNarrow<PlainSrc<float>>(in.cmp);
    case Ty::kF64:
      return PickSetNarrow<PlainSrc<double>>(in.cmp);
    default:
      return nullptr;
  }
}

}  // namespace

ExecFn select_Set(Inst& in) {
  if (TyIsHalf(in.ty) || TyIsHalf(in.ty2) || in.ty == Ty::kU16 || in.ty == Ty::kS16)
    return SelectSetNarrow(in);
  if (in.ty != Ty::kU32 && in.ty != Ty::kS32 && in.ty != Ty::kF32 && in.ty != Ty::kB32)
    return nullptr;
  return PickCmp<SetW>(in.ty2, in.cmp);
}
ExecFn select_Selp(Inst&) {
  return &Selp;
}
ExecFn select_Slct(Inst& in) {
  if (in.ty2 == Ty::kS32) return &Slct<int32_t>;
  if (in.ty2 == Ty::kF32) return &Slct<float>;
  return nullptr;
}
WarpsFn WarpsOfInt(ExecFn fn) {
#define REMORA_FORMS(T)                                                                            \
  &AddF<T>::run, &SubF<T>::run, &MulLoF<T>::run, &MadLoF<T>::run, &MulWideF<T>::run,               \
      &AndF<T>::run, &OrF<T>::run, &XorF<T>::run, &ShlF<T>::run, &ShrF<T>::run, &MinF<T>::run,     \
      &MaxF<T>::run, &SetpW<T, Cmp::kEq>::run, &SetpW<T, Cmp::kNe>::run, &SetpW<T, Cmp::kLt>::run, \
      &SetpW<T, Cmp::kLe>::run, &SetpW<T, Cmp::kGt>::run, &SetpW<T, Cmp::kGe>::run
  return FindWarps<REMORA_FORMS(int32_t), REMORA_FORMS(uint32_t), REMORA_FORMS(int64_t),
                   REMORA_FORMS(uint64_t), &Selp, &MovReg>(fn);
#undef REMORA_FORMS
}

namespace {

// cvt.pack.sat: a and b saturated to kBits each, b in the low bits and a above it; the rest of
// d is c's low bits (kBits < 16).
template <uint32_t kBits, bool kSigned>
int CvtPackInt(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = kBits < 16 ? Src(x, in.a[2]) : nullptr;
  static constexpr int32_t kLo = kSigned ? -(1 << (kBits - 1)) : 0;
  static constexpr int32_t kHi = kSigned ? (1 << (kBits - 1)) - 1 : (1 << kBits) - 1;
  constexpr uint32_t kMask = (1u << kBits) - 1;
  auto sat = [](uint64_t v) {
    return uint32_t(std::clamp(int32_t(uint32_t(v)), kLo, kHi)) & kMask;
  };
  ForLanes(x.mask, [&](int l) {
    uint32_t r = sat(a[l]) << kBits | sat(b[l]);
    if constexpr (kBits < 16) r |= uint32_t(c[l]) << (2 * kBits);
    d[l] = r;
  });
  return kNext;
}

}  // namespace

ExecFn select_cvt_pack_int(Inst& in) {
  if (in.flags || in.rnd != Rnd::kNone) return nullptr;
  switch (in.target) {
    case 16:
      return &CvtPackInt<16, false>;
    case 16 | kCvtPackSigned:
      return &CvtPackInt<16, true>;
    case 8:
      return &CvtPackInt<8, false>;
    case 8 | kCvtPackSigned:
      return &CvtPackInt<8, true>;
    case 4:
      return &CvtPackInt<4, false>;
    case 4 | kCvtPackSigned:
      return &CvtPackInt<4, true>;
    case 2:
      return &CvtPackInt<2, false>;
    case 2 | kCvtPackSigned:
      return &CvtPackInt<2, true>;
    default:
      return nullptr;
  }
}

ExecFn select_Mov(Inst& in) {
  switch (in.sub) {
    case Sub::kUp:
      return &MovPack;
    case Sub::kDown:
      return &MovUnpack;
    case Sub::kIdx:
      return &exec_mov_sreg;
    case Sub::kAll:
      return &MovSym;
    default:
      return &MovReg;
  }
}

}  // namespace remora::emu::ptx
