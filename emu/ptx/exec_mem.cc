// emu/ptx/exec_mem.cc - ld/st/atom/red/cvta: address spaces, bounds checks, atomics.
//
// Global (and const) addresses are host addresses checked against the launch's AddressSpace;
// each warp caches the last allocation it hit, so the common case is two compares. Shared,
// local and param are per-CTA / per-thread / per-launch buffers addressed by offset; generic
// addresses select them through the windows in exec.h.
#include <emmintrin.h>
#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "emu/ptx/async.h"
#include "emu/ptx/exec.h"
#include "emu/ptx/half.h"

namespace remora::emu::ptx {

const char* SpaceName(Space s) {
  switch (s) {
    case Space::kGlobal:
      return "global";
    case Space::kShared:
      return "shared";
    case Space::kLocal:
      return "local";
    case Space::kConst:
      return "const";
    case Space::kParam:
      return "param";
    default:
      return "generic";
  }
}

namespace {

[[gnu::noinline, gnu::cold]] int AddressFault(Exec& x, const Inst& in, int lane, uint64_t addr,
                                              uint32_t size, Space sp) {
  char buf[200];
  const Warp& w = *x.w;
  std::snprintf(buf, sizeof buf,
                "illegal address 0x%llx (%s, %u bytes, %s) in block (%u,%u,%u) thread (%u,%u,%u)",
                (unsigned long long)addr, SpaceName(sp), size, OpName(in.op), x.cta->ctaid[0],
                x.cta->ctaid[1], x.cta->ctaid[2], w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]);
  return FaultAt(x, err::kIllegalAddress, in, buf);
}

// An access of `size` bytes (a vector's whole size) at an address that is not a multiple of it:
// a GPU faults with cudaErrorMisalignedAddress.
[[gnu::noinline, gnu::cold]] int MisalignedFault(Exec& x, const Inst& in, int lane, uint64_t addr,
                                                 uint32_t size, Space sp) {
  char buf[200];
  const Warp& w = *x.w;
  std::snprintf(
      buf, sizeof buf,
      "misaligned address 0x%llx (%s, %u bytes, %s) in block (%u,%u,%u) thread (%u,%u,%u)",
      (unsigned long long)addr, SpaceName(sp), size, OpName(in.op), x.cta->ctaid[0],
      x.cta->ctaid[1], x.cta->ctaid[2], w.tid[0][lane], w.tid[1][lane], w.tid[2][lane]);
  return FaultAt(x, err::kMisalignedAddress, in, buf);
}

inline bool Misaligned(uint64_t addr, uint32_t size) {
  return (addr & (size - 1)) != 0;
}

// The same for an access to space S; kernel parameters are laid out by the compiler that reads
// them, and are not checked.
template <Space S>
inline bool MisalignedIn(uint64_t addr, uint32_t size) {
  return S != Space::kParam && Misaligned(addr, size);
}

[[gnu::noinline]] bool GlobalSlow(Exec& x, uint64_t addr, uint32_t size) {
  const LaunchCtx& L = *x.L;
  uint64_t base = 0, len = 0;
  bool found = false;
  if (L.cfg->memory && L.cfg->memory->Lookup(addr, &base, &len)) found = true;
  if (!found && L.own_globals) {
    for (size_t g = 0; g < L.P->globals.size(); ++g) {
      uint64_t b = L.gaddr[g], n = L.P->globals[g].size;
      if (addr >= b && addr < b + n) {
        base = b;
        len = n;
        found = true;
        break;
      }
    }
  }
  if (!found || addr + size > base + len || addr + size < addr) return false;
  x.w->CacheInsert(base, base + len);
  return true;
}

// Host pointer for `size` bytes at `addr` in space S for lane l, or nullptr (fault raised).
template <Space S>
inline uint8_t* Resolve(Exec& x, const Inst& in, int l, uint64_t addr, uint32_t size) {
  if constexpr (S == Space::kGlobal || S == Space::kConst) {
    if (x.w->CacheHit(addr, addr + size)) [[likely]]
      return reinterpret_cast<uint8_t*>(addr);
    if (GlobalSlow(x, addr, size)) return reinterpret_cast<uint8_t*>(addr);
    AddressFault(x, in, l, addr, size, S);
    return nullptr;
  } else if constexpr (S == Space::kShared) {
    addr = uint32_t(addr);  // shared and local addresses are 32 bits wide: a sum wraps
    if (addr + size <= x.cta->shared_size) [[likely]]
      return x.cta->SharedBytes() + addr;
    AddressFault(x, in, l, addr, size, S);
    return nullptr;
  } else if constexpr (S == Space::kLocal) {
    addr = uint32_t(addr);
    if (addr + size <= x.cta->local_stride) [[likely]]
      return x.cta->LocalOf(x.w->index, l) + addr;
    AddressFault(x, in, l, addr, size, S);
    return nullptr;
  } else if constexpr (S == Space::kParam) {
    if (addr + size <= x.L->param_bytes && addr + size >= addr) [[likely]]
      return const_cast<uint8_t*>(x.L->params) + addr;
    AddressFault(x, in, l, addr, size, S);
    return nullptr;
  } else {
    uint64_t win = addr & ~(kWindowSize - 1);
    if (win == kSharedWindow) return Resolve<Space::kShared>(x, in, l, addr - kSharedWindow, size);
    if (win == kLocalWindow) return Resolve<Space::kLocal>(x, in, l, addr - kLocalWindow, size);
    if (win == kParamWindow) return Resolve<Space::kParam>(x, in, l, addr - kParamWindow, size);
    return Resolve<Space::kGlobal>(x, in, l, addr, size);
  }
}

template <int N, bool kSext>
inline uint64_t LoadBytes(const uint8_t* p) {
  if constexpr (N == 1) return kSext ? uint64_t(int64_t(int8_t(*p))) : *p;
  if constexpr (N == 2) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return kSext ? uint64_t(int64_t(int16_t(v))) : v;
  }
  if constexpr (N == 4) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return kSext ? uint64_t(int64_t(int32_t(v))) : v;
  }
  if constexpr (N == 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  return 0;
}

// One 16-byte host access (asm, so the compiler cannot split it into two 8-byte halves). Where
// the interpreter is built for AVX, the VEX form: a legacy SSE move among AVX instructions costs
// an upper-state transition on Intel hosts (the scan benchmark ran 4x slower there).
#if defined(__AVX__)
#define REMORA_MOVDQU "vmovdqu"
#else
#define REMORA_MOVDQU "movdqu"
#endif
inline __m128i Load16(const uint8_t* p) {
  __m128i v;
  asm volatile(REMORA_MOVDQU " %1, %0" : "=x"(v) : "m"(*reinterpret_cast<const __m128i*>(p)));
  return v;
}
inline void Store16(uint8_t* p, __m128i v) {
  asm volatile(REMORA_MOVDQU " %1, %0" : "=m"(*reinterpret_cast<__m128i*>(p)) : "x"(v));
}
#undef REMORA_MOVDQU

// Copies one vector access of B bytes. 8 and 16 bytes go as one host access (a 16-byte SSE move
// is single-copy atomic on AVX-capable x86), so another core sees all of the elements or none,
// as it would on a GPU: CUB's decoupled look-back reads {status, value} pairs this way while
// other blocks store them.
template <int B>
inline void CopyVector(uint8_t* dst, const uint8_t* src) {
  if constexpr (B == 8) {
    uint64_t v;
    __atomic_load(reinterpret_cast<const uint64_t*>(src), &v, __ATOMIC_RELAXED);
    __atomic_store(reinterpret_cast<uint64_t*>(dst), &v, __ATOMIC_RELAXED);
  } else if constexpr (B == 16) {
    Store16(dst, Load16(src));
  } else {
    std::memcpy(dst, src, B);
  }
}

// Loads the V elements of lane l's vector at p into tmp[k][l].
template <int N, int V, bool kSext>
inline void LoadVector(const uint8_t* p, uint64_t (&tmp)[V][32], int l) {
  alignas(16) uint8_t buf[N * V];
  CopyVector<N * V>(buf, p);
  for (int k = 0; k < V; ++k) tmp[k][l] = LoadBytes<N, kSext>(buf + k * N);
}

// Stores lane l's V elements v[k][l] to p as one vector access.
template <int N, int V>
inline void StoreVector(uint8_t* p, const uint64_t* const (&v)[V], int l) {
  alignas(16) uint8_t buf[N * V];
  for (int k = 0; k < V; ++k) std::memcpy(buf + k * N, &v[k][l], N);
  CopyVector<N * V>(p, buf);
}

// The least and greatest of 32 lanes' 64-bit values and the OR of all (its low bits say whether
// every lane is aligned); false (no range) if one has its top bit set, which no host or shared
// address has.
inline bool LaneRange(const uint64_t* v, uint64_t* low, uint64_t* high, uint64_t* ored) {
#if defined(__SSE4_2__)
  // Four independent chains: a compare-and-blend chain over all 16 pairs is latency-bound.
  const __m128i* q = reinterpret_cast<const __m128i*>(v);
  __m128i mn[4], mx[4], any[4];
  for (int k = 0; k < 4; ++k) mn[k] = mx[k] = any[k] = _mm_loadu_si128(q + k);
  for (int i = 4; i < 16; i += 4) {
    for (int k = 0; k < 4; ++k) {
      __m128i a = _mm_loadu_si128(q + i + k);
      any[k] = _mm_or_si128(any[k], a);
      mn[k] = _mm_blendv_epi8(mn[k], a, _mm_cmpgt_epi64(mn[k], a));
      mx[k] = _mm_blendv_epi8(mx[k], a, _mm_cmpgt_epi64(a, mx[k]));
    }
  }
  for (int k = 1; k < 4; ++k) {
    any[0] = _mm_or_si128(any[0], any[k]);
    mn[0] = _mm_blendv_epi8(mn[0], mn[k], _mm_cmpgt_epi64(mn[0], mn[k]));
    mx[0] = _mm_blendv_epi8(mx[0], mx[k], _mm_cmpgt_epi64(mx[k], mx[0]));
  }
  uint64_t n[2], x[2], o[2];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(n), mn[0]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(x), mx[0]);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(o), any[0]);
  *low = std::min(n[0], n[1]);
  *high = std::max(x[0], x[1]);
  *ored = o[0] | o[1];
  return (*ored >> 63) == 0;
#else
  uint64_t lo[4] = {~0ull, ~0ull, ~0ull, ~0ull}, hi[4] = {0, 0, 0, 0};
  *ored = 0;
  for (int l = 0; l < 32; l += 4) {
    for (int k = 0; k < 4; ++k) {
      lo[k] = std::min(lo[k], v[l + k]);
      hi[k] = std::max(hi[k], v[l + k]);
      *ored |= v[l + k];
    }
  }
  *low = std::min(std::min(lo[0], lo[1]), std::min(lo[2], lo[3]));
  *high = std::max(std::max(hi[0], hi[1]), std::max(hi[2], hi[3]));
  return (*high >> 63) == 0;
#endif
}

// The greatest of 32 lanes' values and the OR of all if every one fits in 32 bits (shared offsets
// do); false if not.
inline bool LaneMax32(const uint64_t* v, uint64_t* high, uint64_t* ored) {
#if defined(__SSE4_2__)
  __m128i m, o;  // the greatest of each 32-bit half and the OR of all, over four columns
#if defined(__AVX2__)
  const __m256i* q = reinterpret_cast<const __m256i*>(v);
  __m256i mx[2], any[2];
  for (int k = 0; k < 2; ++k) mx[k] = any[k] = _mm256_loadu_si256(q + k);
  for (int i = 2; i < 8; i += 2) {
    for (int k = 0; k < 2; ++k) {
      __m256i a = _mm256_loadu_si256(q + i + k);
      mx[k] = _mm256_max_epu32(mx[k], a);  // high halves are 0 when the check below passes
      any[k] = _mm256_or_si256(any[k], a);
    }
  }
  const __m256i m2 = _mm256_max_epu32(mx[0], mx[1]), o2 = _mm256_or_si256(any[0], any[1]);
  m = _mm_max_epu32(_mm256_castsi256_si128(m2), _mm256_extracti128_si256(m2, 1));
  o = _mm_or_si128(_mm256_castsi256_si128(o2), _mm256_extracti128_si256(o2, 1));
#else
  const __m128i* q = reinterpret_cast<const __m128i*>(v);
  __m128i mx[4], any[4];
  for (int k = 0; k < 4; ++k) mx[k] = any[k] = _mm_loadu_si128(q + k);
  for (int i = 4; i < 16; i += 4) {
    for (int k = 0; k < 4; ++k) {
      __m128i a = _mm_loadu_si128(q + i + k);
      mx[k] = _mm_max_epu32(mx[k], a);  // high halves are 0 when the check below passes
      any[k] = _mm_or_si128(any[k], a);
    }
  }
  m = _mm_max_epu32(_mm_max_epu32(mx[0], mx[1]), _mm_max_epu32(mx[2], mx[3]));
  o = _mm_or_si128(_mm_or_si128(any[0], any[1]), _mm_or_si128(any[2], any[3]));
#endif
  uint32_t md[4], od[4];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(md), m);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(od), o);
  *high = std::max(md[0], md[2]);
  *ored = od[0] | od[2];
  return (od[1] | od[3]) == 0;
#else
  uint64_t low;
  return LaneRange(v, &low, high, ored) && (*high >> 32) == 0;
#endif
}

// Fast path of a converged global, const or shared access: when the 32 lanes' bytes all lie in
// one cached allocation (global, const) or in the block's shared memory, each lane's access
// aligned to its size, one check covers the warp and the per-lane loop has no branches. Lane l's
// host address is then *bias + base[l] + ub.
template <Space S>
inline bool WarpInBounds(Exec& x, const uint64_t* base, uint64_t ub, uint32_t bytes,
                         uintptr_t* bias) {
  if constexpr (S != Space::kGlobal && S != Space::kConst && S != Space::kShared) {
    return false;
  } else {
    if (!base || x.mask != 0xffffffffu) return false;
    if constexpr (S == Space::kShared) {
      // 32-bit offsets and a 32-bit uniform part: nothing wraps, the greatest decides.
      uint64_t high, ored;
      if (!LaneMax32(base, &high, &ored) || (ub >> 32) != 0 || Misaligned(ored | ub, bytes))
        return false;
      *bias = reinterpret_cast<uintptr_t>(x.cta->SharedBytes());
      return high + ub + bytes <= x.cta->shared_size;
    }
    uint64_t low, high, ored;
    if (!LaneRange(base, &low, &high, &ored) || Misaligned(ored | ub, bytes)) return false;
    // Lanes within 4 GiB of each other whose [mn, mx) does not wrap: every lane's range is in it.
    const uint64_t mn = low + ub, mx = high + ub + bytes;
    if (high - low >= (1ull << 32) || mn >= mx) return false;
    *bias = 0;
    return x.w->CacheHit(mn, mx);
  }
}

// True if lane l's address is base[0] + l * N for every lane: a converged warp reading or
// writing N-byte elements side by side, the commonest access there is.
template <int N>
inline bool LanesContiguous(const uint64_t* base) {
  const uint64_t b0 = base[0];
  if (base[1] != b0 + N || base[31] != b0 + 31 * N) return false;  // most others fail here
#if defined(__AVX2__)
  const __m256i* q = reinterpret_cast<const __m256i*>(base);
  const __m256i step = _mm256_set1_epi64x(4 * N);
  __m256i want =
      _mm256_add_epi64(_mm256_set1_epi64x(int64_t(b0)), _mm256_set_epi64x(3 * N, 2 * N, N, 0));
  __m256i diff = _mm256_setzero_si256();
  for (int i = 0; i < 8; ++i) {
    diff = _mm256_or_si256(diff, _mm256_xor_si256(_mm256_loadu_si256(q + i), want));
    want = _mm256_add_epi64(want, step);
  }
  return _mm256_testz_si256(diff, diff);
#elif defined(__SSE4_1__)
  const __m128i* q = reinterpret_cast<const __m128i*>(base);
  const __m128i step = _mm_set1_epi64x(2 * N);
  __m128i want = _mm_set_epi64x(int64_t(b0 + N), int64_t(b0));
  __m128i diff = _mm_setzero_si128();
  for (int i = 0; i < 16; ++i) {
    diff = _mm_or_si128(diff, _mm_xor_si128(_mm_loadu_si128(q + i), want));
    want = _mm_add_epi64(want, step);
  }
  return _mm_testz_si128(diff, diff);
#else
  uint64_t diff = 0;
  for (int l = 2; l < 31; ++l) diff |= base[l] ^ (b0 + uint64_t(l) * N);
  return diff == 0;
#endif
}

// Fast path of a converged global, const or shared access whose lanes' N-byte elements lie side
// by side (LanesContiguous) in one cached allocation or in the block's shared memory: the host
// address of lane 0's element, lane l's being N * l bytes on; nullptr when the access is not so.
template <Space S, int N>
inline uint8_t* ContiguousAt(Exec& x, const uint64_t* base, uint64_t ub) {
  if constexpr (S != Space::kGlobal && S != Space::kConst && S != Space::kShared) {
    return nullptr;
  } else {
    if (!base || x.mask != 0xffffffffu || !LanesContiguous<N>(base)) return nullptr;
    const uint64_t lo = base[0] + ub, hi = lo + 32 * N;
    if (Misaligned(lo, N)) return nullptr;  // every lane is, by as much: the lane loop faults
    if constexpr (S == Space::kShared) {
      // 32-bit offsets and a 32-bit uniform part: nothing wraps.
      if ((base[0] >> 32) != 0 || (ub >> 32) != 0 || hi > x.cta->shared_size) return nullptr;
      return x.cta->SharedBytes() + lo;
    }
    if (hi < lo || !x.w->CacheHit(lo, hi)) return nullptr;
    return reinterpret_cast<uint8_t*>(lo);
  }
}

// Converged lanes' 32-bit elements or 2- or 4-element vectors of them side by side (ContiguousAt
// of the whole vector) at p: lane l's vector at p + l * 4 * V. Each lane's vector is still one
// host access (CopyVector's guarantee; single elements move four lanes to one SSE access); the
// elements are spread to or gathered from the V registers. Zero-extending loads only (a
// sign-extending one takes the lane loop).
template <int V>
inline void LoadLanes32(const uint8_t* p, uint64_t* const (&d)[V]) {
  static_assert(V == 1 || V == 2 || V == 4);
  if constexpr (V == 1) {  // four lanes' elements at a time, zero-extended into their slots
    for (int l = 0; l < 32; l += 4) {
      const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + l * 4));
#if defined(__AVX2__)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d[0] + l), _mm256_cvtepu32_epi64(e));
#else
      const __m128i zero = _mm_setzero_si128();
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[0] + l), _mm_unpacklo_epi32(e, zero));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[0] + l + 2), _mm_unpackhi_epi32(e, zero));
#endif
    }
  } else if constexpr (V == 2) {
    for (int l = 0; l < 32; ++l) {
      uint64_t v;
      CopyVector<8>(reinterpret_cast<uint8_t*>(&v), p + l * 8);
      d[0][l] = uint32_t(v);
      d[1][l] = v >> 32;
    }
  } else {
    const __m128i zero = _mm_setzero_si128();
    for (int l = 0; l < 32; l += 2) {
      const __m128i va = Load16(p + l * 16), vb = Load16(p + (l + 1) * 16);
      const __m128i lo = _mm_unpacklo_epi32(va, vb), hi = _mm_unpackhi_epi32(va, vb);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[0] + l), _mm_unpacklo_epi32(lo, zero));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[1] + l), _mm_unpackhi_epi32(lo, zero));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[2] + l), _mm_unpacklo_epi32(hi, zero));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d[3] + l), _mm_unpackhi_epi32(hi, zero));
    }
  }
}

template <int V>
inline void StoreLanes32(uint8_t* p, const uint64_t* const (&v)[V]) {
  static_assert(V == 1 || V == 2 || V == 4);
  if constexpr (V == 1) {  // the low halves of four lanes' slots at a time
    for (int l = 0; l < 32; l += 4) {
#if defined(__AVX2__)
      const __m256i low_halves = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v[0] + l));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + l * 4),
                       _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(a, low_halves)));
#else
      const __m128 a =
          _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v[0] + l)));
      const __m128 b =
          _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v[0] + l + 2)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p + l * 4),
                       _mm_castps_si128(_mm_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0))));
#endif
    }
  } else if constexpr (V == 2) {
    for (int l = 0; l < 32; ++l) {
      const uint64_t w = uint32_t(v[0][l]) | v[1][l] << 32;
      CopyVector<8>(p + l * 8, reinterpret_cast<const uint8_t*>(&w));
    }
  } else {
    for (int l = 0; l < 32; l += 2) {
      __m128i e[4];  // element k of lanes l and l + 1, in the low 64 bits
      for (int k = 0; k < 4; ++k)
        e[k] = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v[k] + l)),
                                 _MM_SHUFFLE(3, 1, 2, 0));
      const __m128i xy = _mm_unpacklo_epi32(e[0], e[1]), zw = _mm_unpacklo_epi32(e[2], e[3]);
      Store16(p + l * 16, _mm_unpacklo_epi64(xy, zw));
      Store16(p + (l + 1) * 16, _mm_unpackhi_epi64(xy, zw));
    }
  }
}

template <Space S, int N, int V, bool kSext>
int Ld(Exec& x, const Inst& in) {
  uint64_t ub = UniformBase(x, in);
  const uint64_t* base = in.base == kNoReg ? nullptr : Src(x, in.base);
  if constexpr (V == 1 && (N != 4 || kSext)) {
    if (const uint8_t* p = ContiguousAt<S, N>(x, base, ub)) {
      uint64_t* d = Dst(x, in.d[0]);  // may be the address register: base is read no more
      for (int l = 0; l < 32; ++l) d[l] = LoadBytes<N, kSext>(p + l * N);
      return kNext;
    }
  } else if constexpr (N == 4 && !kSext) {
    if (const uint8_t* p = ContiguousAt<S, N * V>(x, base, ub)) {
      uint64_t unused[32];
      uint64_t* d[V];
      for (int k = 0; k < V; ++k) d[k] = in.d[k] == kNoReg ? unused : Dst(x, in.d[k]);
      LoadLanes32<V>(p, d);
      return kNext;
    }
  }
  uintptr_t bias;
  if (WarpInBounds<S>(x, base, ub, N * V, &bias)) {
    const uintptr_t at = bias + ub;
    if constexpr (V == 1) {
      uint64_t* d = Dst(x, in.d[0]);
#pragma GCC unroll 8
      for (int l = 0; l < 32; ++l)
        d[l] = LoadBytes<N, kSext>(reinterpret_cast<const uint8_t*>(at + base[l]));
    } else {
      uint64_t tmp[V][32];
      for (int l = 0; l < 32; ++l)
        LoadVector<N, V, kSext>(reinterpret_cast<const uint8_t*>(at + base[l]), tmp, l);
      for (int k = 0; k < V; ++k)
        if (in.d[k] != kNoReg) std::memcpy(Dst(x, in.d[k]), tmp[k], sizeof tmp[k]);
    }
    return kNext;
  }
  if constexpr (V == 1) {
    uint64_t* d = Dst(x, in.d[0]);
    // A uniform address outside per-thread memory reads one value for every lane.
    if (!base && S != Space::kLocal && S != Space::kGeneric) {
      int l0 = std::countr_zero(x.mask);
      if (MisalignedIn<S>(ub, N)) [[unlikely]]
        return MisalignedFault(x, in, l0, ub, N, S);
      uint8_t* p = Resolve<S>(x, in, l0, ub, N);
      if (!p) return kFault;
      uint64_t v = LoadBytes<N, kSext>(p);
      ForLanes(x.mask, [&](int l) { d[l] = v; });
      return kNext;
    }
    uint32_t m = x.mask;
    while (m) {
      int l = std::countr_zero(m);
      m &= m - 1;
      const uint64_t addr = (base ? base[l] : 0) + ub;
      if (MisalignedIn<S>(addr, N)) [[unlikely]]
        return MisalignedFault(x, in, l, addr, N, S);
      uint8_t* p = Resolve<S>(x, in, l, addr, N);
      if (!p) [[unlikely]]
        return kFault;
      d[l] = LoadBytes<N, kSext>(p);
    }
    return kNext;
  } else {
    uint32_t m = x.mask;
    uint64_t tmp[V][32];
    while (m) {
      int l = std::countr_zero(m);
      m &= m - 1;
      uint64_t addr = (base ? base[l] : 0) + ub;
      if (MisalignedIn<S>(addr, N * V)) [[unlikely]]
        return MisalignedFault(x, in, l, addr, N * V, S);
      uint8_t* p = Resolve<S>(x, in, l, addr, N * V);
      if (!p) [[unlikely]]
        return kFault;
      LoadVector<N, V, kSext>(p, tmp, l);
    }
    for (int k = 0; k < V; ++k) {
      if (in.d[k] == kNoReg) continue;
      uint64_t* d = Dst(x, in.d[k]);
      ForLanes(x.mask, [&](int l) { d[l] = tmp[k][l]; });
    }
    return kNext;
  }
}

template <Space S, int N, int V>
int St(Exec& x, const Inst& in) {
  uint64_t ub = UniformBase(x, in);
  const uint64_t* base = in.base == kNoReg ? nullptr : Src(x, in.base);
  const uint64_t* v[V];
  for (int k = 0; k < V; ++k) v[k] = Src(x, in.a[k]);
  if constexpr (V == 1 && N != 4) {
    if (uint8_t* p = ContiguousAt<S, N>(x, base, ub)) {
      for (int l = 0; l < 32; ++l) std::memcpy(p + l * N, &v[0][l], N);
      return kNext;
    }
  } else if constexpr (N == 4) {
    if (uint8_t* p = ContiguousAt<S, N * V>(x, base, ub)) {
      StoreLanes32<V>(p, v);
      return kNext;
    }
  }
  uintptr_t bias;
  if (WarpInBounds<S>(x, base, ub, N * V, &bias)) {
    const uintptr_t at = bias + ub;
#pragma GCC unroll 8
    for (int l = 0; l < 32; ++l) StoreVector<N, V>(reinterpret_cast<uint8_t*>(at + base[l]), v, l);
    return kNext;
  }
  uint32_t m = x.mask;
  while (m) {
    int l = std::countr_zero(m);
    m &= m - 1;
    uint64_t addr = (base ? base[l] : 0) + ub;
    if (MisalignedIn<S>(addr, N * V)) [[unlikely]]
      return MisalignedFault(x, in, l, addr, N * V, S);
    uint8_t* p = Resolve<S>(x, in, l, addr, N * V);
    if (!p) [[unlikely]]
      return kFault;
    StoreVector<N, V>(p, v, l);
  }
  return kNext;
}

template <Space S>
ExecFn PickLdS(int n, int v, bool sext) {
#define LDV(N, SX)             \
  switch (v) {                 \
    case 1:                    \
      return &Ld<S, N, 1, SX>; \
    case 2:                    \
      return &Ld<S, N, 2, SX>; \
    case 4:                    \
      return &Ld<S, N, 4, SX>; \
    default:                   \
      return nullptr;          \
  }
  switch (n) {
    case 1:
      if (sext) {
        LDV(1, true)
      } else {
        LDV(1, false)
      }
    case 2:
      if (sext) {
        LDV(2, true)
      } else {
        LDV(2, false)
      }
    case 4:
      if (sext) {
        LDV(4, true)
      } else {
        LDV(4, false)
      }
    case 8:
      LDV(8, false)
    default:
      return nullptr;
  }
#undef LDV
}
template <Space S>
ExecFn PickStS(int n, int v) {
#define STV(N)             \
  switch (v) {             \
    case 1:                \
      return &St<S, N, 1>; \
    case 2:                \
      return &St<S, N, 2>; \
    case 4:                \
      return &St<S, N, 4>; \
    default:               \
      return nullptr;      \
  }
  switch (n) {
    case 1:
      STV(1)
    case 2:
      STV(2)
    case 4:
      STV(4)
    case 8:
      STV(8)
    default:
      return nullptr;
  }
#undef STV
}

ExecFn PickMem(const Inst& in, bool store) {
  int n = TySize(in.ty);
  if (n == 0 || n == 16 || in.ty == Ty::kPred) return nullptr;
  // Narrow signed values are held sign-extended; an s32 only when the register is 64-bit
  // (ty2 = s64, set by the parser): PTX sign-extends a load into a wider register.
  bool sext = TyIsSigned(in.ty) && (n < 4 || (n == 4 && in.ty2 == Ty::kS64));
  switch (in.space) {
    case Space::kGlobal:
      return store ? PickStS<Space::kGlobal>(n, in.vec) : PickLdS<Space::kGlobal>(n, in.vec, sext);
    case Space::kConst:
      return store ? nullptr : PickLdS<Space::kConst>(n, in.vec, sext);
    case Space::kShared:
      return store ? PickStS<Space::kShared>(n, in.vec) : PickLdS<Space::kShared>(n, in.vec, sext);
    case Space::kLocal:
      return store ? PickStS<Space::kLocal>(n, in.vec) : PickLdS<Space::kLocal>(n, in.vec, sext);
    case Space::kParam:
      return store ? nullptr : PickLdS<Space::kParam>(n, in.vec, sext);
    default:
      return store ? PickStS<Space::kGeneric>(n, in.vec)
                   : PickLdS<Space::kGeneric>(n, in.vec, sext);
  }
}

// ---- atomics ----
// A floating-point atomic add as a GPU's: rounded to nearest even, a NaN the canonical one.
// add.f32 on global memory flushes subnormal inputs and results to sign-preserving zero; on
// shared memory (and add.f64 anywhere) it keeps them.
template <class T>
T FloatAtomSum(T old, T b, bool flush) {
  constexpr T kTiny = std::numeric_limits<T>::min();
  if constexpr (sizeof(T) == 4) {
    if (flush && std::fabs(old) < kTiny) old = std::copysign(T(0), old);
    if (flush && std::fabs(b) < kTiny) b = std::copysign(T(0), b);
  }
  T r = old + b;
  if (r != r) {
    if constexpr (sizeof(T) == 4)
      return std::bit_cast<T>(0x7fffffffu);
    else
      return std::bit_cast<T>(0x7fffffffffffffffull);
  }
  if (sizeof(T) == 4 && flush && std::fabs(r) < kTiny) r = std::copysign(T(0), r);
  return r;
}

// The value an atomic `op` leaves in memory that held `old` (b, c: its operands); a float's add
// as on shared memory.
template <class T>
T AtomNewValue(Sub op, T old, T b, T c) {
  switch (op) {
    case Sub::kAdd:
      if constexpr (std::is_floating_point_v<T>) return FloatAtomSum(old, b, /*flush=*/false);
      return T(old + b);
    case Sub::kMin:
      return old < b ? old : b;
    case Sub::kMax:
      return old < b ? b : old;
    case Sub::kExch:
      return b;
    case Sub::kCas:
      return old == b ? c : old;
    case Sub::kInc:
      if constexpr (std::is_integral_v<T>) return old >= b ? T(0) : T(old + 1);
      break;
    case Sub::kDec:
      if constexpr (std::is_integral_v<T>) return (old == 0 || old > b) ? b : T(old - 1);
      break;
    case Sub::kAnd:
      if constexpr (std::is_integral_v<T>) return T(old & b);
      break;
    case Sub::kOr:
      if constexpr (std::is_integral_v<T>) return T(old | b);
      break;
    case Sub::kXor:
      if constexpr (std::is_integral_v<T>) return T(old ^ b);
      break;
    default:
      break;
  }
  return old;
}

template <class T>
T AtomOp(Sub op, T* p, T b, T c, bool shared_space) {
  if (shared_space) {  // a CTA runs on one worker thread: plain read-modify-write is atomic
    T old = *p;
    *p = AtomNewValue(op, old, b, c);
    return old;
  }
  // Global memory is shared by every worker: seq_cst read-modify-writes (they pair with each
  // other and with any fence the kernel issues).
  std::atomic_ref<T> r(*p);
  switch (op) {
    case Sub::kAdd:
      if constexpr (std::is_floating_point_v<T>) {
        T old = r.load();
        while (!r.compare_exchange_weak(old, FloatAtomSum(old, b, /*flush=*/true))) {
        }
        return old;
      } else {
        return r.fetch_add(b);
      }
    case Sub::kExch:
      return r.exchange(b);
    case Sub::kCas: {
      T expected = b;
      r.compare_exchange_strong(expected, c);
      return expected;
    }
    default:
      break;
  }
  T old = r.load();
  while (!r.compare_exchange_weak(old, AtomNewValue(op, old, b, c))) {
  }
  return old;
}

template <class T>
struct PlainRmw {
  static T Apply(Sub op, T* p, T b, T c, bool shared) { return AtomOp<T>(op, p, b, c, shared); }
};

// add.noftz on N packed 16-bit floats of format F (T holds them all): each element rounded to
// nearest even, subnormals kept, the whole word replaced at once; on global memory a seq_cst
// CAS loop, as for add.f32 (pairs with every other atomic and fence).
template <HalfFmt F, int N, class T>
struct HalfAddRmw {
  static T Sum(T old, T b) {
    uint32_t r = 0;
    for (int k = 0; k < N; ++k)
      r |= uint32_t(HalfAddRn(uint16_t(old >> (16 * k)), uint16_t(b >> (16 * k)), F)) << (16 * k);
    return T(r);
  }
  static T Apply(Sub, T* p, T b, T, bool shared_space) {
    if (shared_space) {  // one worker thread per CTA, as in AtomOp
      T old = *p;
      *p = Sum(old, b);
      return old;
    }
    std::atomic_ref<T> r(*p);
    T old = r.load();
    while (!r.compare_exchange_weak(old, Sum(old, b))) {
    }
    return old;
  }
};

template <class T, bool kRed, class Rmw = PlainRmw<T>>
int Atom(Exec& x, const Inst& in) {
  uint64_t ub = UniformBase(x, in);
  const uint64_t* base = in.base == kNoReg ? nullptr : Src(x, in.base);
  uint64_t* d = kRed ? nullptr : Dst(x, in.d[0]);
  const uint64_t* b = Src(x, in.a[0]);
  const uint64_t* c = in.na > 1 ? Src(x, in.a[1]) : nullptr;
  uint32_t m = x.mask;
  while (m) {
    int l = std::countr_zero(m);
    m &= m - 1;
    uint64_t addr = (base ? base[l] : 0) + ub;
    if (Misaligned(addr, sizeof(T))) return MisalignedFault(x, in, l, addr, sizeof(T), in.space);
    uint8_t* p = nullptr;
    bool shared = false;
    Space sp = in.space;
    if (sp == Space::kGeneric) {
      uint64_t win = addr & ~(kWindowSize - 1);
      if (win == kSharedWindow) {
        sp = Space::kShared;
        addr -= kSharedWindow;
      } else if (win == kLocalWindow || win == kParamWindow) {
        return AddressFault(x, in, l, addr, sizeof(T), Space::kGeneric);
      } else {
        sp = Space::kGlobal;
      }
    }
    if (sp == Space::kShared) {
      p = Resolve<Space::kShared>(x, in, l, addr, sizeof(T));
      shared = true;
    } else if (sp == Space::kGlobal) {
      p = Resolve<Space::kGlobal>(x, in, l, addr, sizeof(T));
    } else {
      return AddressFault(x, in, l, addr, sizeof(T), sp);
    }
    if (!p) return kFault;
    T old =
        Rmw::Apply(in.sub, reinterpret_cast<T*>(p), Get<T>(b[l]), c ? Get<T>(c[l]) : T(0), shared);
    if (!kRed) d[l] = Put<T>(old);
  }
  return kNext;
}

template <bool kRed>
ExecFn PickAtom(const Inst& in) {
  bool fl = TyIsFloat(in.ty);
  bool bit = in.sub == Sub::kAnd || in.sub == Sub::kOr || in.sub == Sub::kXor ||
             in.sub == Sub::kCas || in.sub == Sub::kExch;
  if (in.vec != 1) return nullptr;
  switch (in.ty) {  // .f16/.bf16 types take add.noftz only
    case Ty::kF16:
      return in.sub == Sub::kAdd ? &Atom<uint16_t, kRed, HalfAddRmw<kF16, 1, uint16_t>> : nullptr;
    case Ty::kBF16:
      return in.sub == Sub::kAdd ? &Atom<uint16_t, kRed, HalfAddRmw<kBF16, 1, uint16_t>> : nullptr;
    case Ty::kF16x2:
      return in.sub == Sub::kAdd ? &Atom<uint32_t, kRed, HalfAddRmw<kF16, 2, uint32_t>> : nullptr;
    case Ty::kBF16x2:
      return in.sub == Sub::kAdd ? &Atom<uint32_t, kRed, HalfAddRmw<kBF16, 2, uint32_t>> : nullptr;
    case Ty::kB16:  // atom.cas.b16 only (red has no cas)
      return in.sub == Sub::kCas && !kRed ? &Atom<uint16_t, kRed> : nullptr;
    default:
      break;
  }
  if (fl) {
    if (in.sub != Sub::kAdd && in.sub != Sub::kExch) return nullptr;
    if (in.ty == Ty::kF32) return &Atom<float, kRed>;
    if (in.ty == Ty::kF64) return &Atom<double, kRed>;
    return nullptr;
  }
  if ((in.sub == Sub::kInc || in.sub == Sub::kDec) && in.ty != Ty::kU32) return nullptr;
  switch (in.ty) {
    case Ty::kB32:
    case Ty::kU32:
      return &Atom<uint32_t, kRed>;
    case Ty::kS32:
      return bit ? &Atom<uint32_t, kRed> : &Atom<int32_t, kRed>;
    case Ty::kB64:
    case Ty::kU64:
      return &Atom<uint64_t, kRed>;
    case Ty::kS64:
      return bit ? &Atom<uint64_t, kRed> : &Atom<int64_t, kRed>;
    default:
      return nullptr;
  }
}

// ---- cvta / isspacep ----
template <bool kTo>
int Cvta(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  uint64_t win = in.space == Space::kShared  ? kSharedWindow
                 : in.space == Space::kLocal ? kLocalWindow
                 : in.space == Space::kParam ? kParamWindow
                                             : 0;
  if (in.sub == Sub::kAll) {  // operand was a symbol
    uint64_t v = UniformBase(x, in);
    v = kTo ? v - win : v + win;
    ForLanes(x.mask, [&](int l) { d[l] = v; });
    return kNext;
  }
  const uint64_t* a = Src(x, in.a[0]);
  bool narrow = TySize(in.ty) == 4;
  ForLanes(x.mask, [&](int l) {
    uint64_t v = kTo ? a[l] - win : a[l] + win;
    d[l] = narrow ? uint32_t(v) : v;
  });
  return kNext;
}

int Isspacep(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  ForLanes(x.mask, [&](int l) {
    uint64_t win = a[l] & ~(kWindowSize - 1);
    bool r;
    switch (in.space) {
      case Space::kShared:
        r = win == kSharedWindow;
        break;
      case Space::kLocal:
        r = win == kLocalWindow;
        break;
      case Space::kParam:
        r = win == kParamWindow;
        break;
      default:
        r = win != kSharedWindow && win != kLocalWindow && win != kParamWindow;
        break;
    }
    d[l] = r;
  });
  return kNext;
}

int Nop(Exec&, const Inst&) {
  return kNext;
}
int Fence(Exec&, const Inst&) {
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer does not model fences: a seq_cst RMW orders the same way.
  static std::atomic<int> fence_word{0};
  fence_word.fetch_add(0, std::memory_order_seq_cst);
#else
  std::atomic_thread_fence(std::memory_order_seq_cst);  // pairs with the other workers' RMWs
#endif
  return kNext;
}

}  // namespace

WarpsFn WarpsOfMem(ExecFn fn) {
#define REMORA_FORMS(S)                                                               \
  &Ld<S, 4, 1, false>, &Ld<S, 4, 2, false>, &Ld<S, 4, 4, false>, &Ld<S, 8, 1, false>, \
      &Ld<S, 8, 2, false>, &St<S, 4, 1>, &St<S, 4, 2>, &St<S, 4, 4>, &St<S, 8, 1>, &St<S, 8, 2>
  return FindWarps<REMORA_FORMS(Space::kGlobal), REMORA_FORMS(Space::kShared),
                   REMORA_FORMS(Space::kGeneric)>(fn);
#undef REMORA_FORMS
}

ExecFn select_Ld(Inst& in) {
  return PickMem(in, false);
}
ExecFn select_Ldu(Inst& in) {
  return PickMem(in, false);
}
ExecFn select_St(Inst& in) {
  return PickMem(in, true);
}
ExecFn select_Prefetch(Inst&) {
  return &Nop;
}
ExecFn select_Prefetchu(Inst&) {
  return &Nop;
}
// A cache policy is opaque to the program: one value serves every request.
constexpr uint64_t kCachePolicy = 0x10000000ull;
int CreatePolicy(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  ForLanes(x.mask, [&](int l) { d[l] = kCachePolicy; });
  return kNext;
}
ExecFn select_Createpolicy(Inst&) {
  return &CreatePolicy;
}
// discard leaves the lines' contents undefined, of which their old contents are one; an
// eviction priority orders nothing here.
ExecFn select_Discard(Inst&) {
  return &Nop;
}
ExecFn select_Applypriority(Inst&) {
  return &Nop;
}
ExecFn select_Atom(Inst& in) {
  return PickAtom<false>(in);
}
ExecFn select_Red(Inst& in) {
  return PickAtom<true>(in);
}
ExecFn select_Membar(Inst&) {
  return &Fence;
}
ExecFn select_Fence(Inst&) {
  return &Fence;
}
ExecFn select_Nanosleep(Inst&) {
  return &Nop;
}
ExecFn select_Pmevent(Inst&) {
  return &Nop;
}
ExecFn select_Griddepcontrol(Inst&) {
  return &Nop;
}
ExecFn select_Brkpt(Inst&) {
  return &Nop;
}
ExecFn select_Cvta(Inst& in) {
  if (in.space == Space::kGeneric) return nullptr;
  return (in.flags & kFlagTo) ? &Cvta<true> : &Cvta<false>;
}
ExecFn select_Isspacep(Inst&) {
  return &Isspacep;
}

}  // namespace remora::emu::ptx

namespace remora::emu::ptx {

uint8_t* ResolveAddress(Exec& x, const Inst& in, int lane, Space s, uint64_t addr, uint32_t size) {
  switch (s) {
    case Space::kGlobal:
      return Resolve<Space::kGlobal>(x, in, lane, addr, size);
    case Space::kShared:
      return Resolve<Space::kShared>(x, in, lane, addr, size);
    case Space::kGeneric:
      return Resolve<Space::kGeneric>(x, in, lane, addr, size);
    default:
      AddressFault(x, in, lane, addr, size, s);
      return nullptr;
  }
}

// Checked reads for builtins (vprintf, __assertfail): generic addresses, byte granular.
bool ReadGeneric(Exec& x, const Inst& in, int lane, uint64_t addr, void* dst, size_t n) {
  uint8_t* p = Resolve<Space::kGeneric>(x, in, lane, addr, uint32_t(n));
  if (!p) return false;
  std::memcpy(dst, p, n);
  return true;
}

bool ReadString(Exec& x, const Inst& in, int lane, uint64_t addr, std::string* out) {
  out->clear();
  for (size_t i = 0; i < (1u << 20); ++i) {
    char c;
    if (!ReadGeneric(x, in, lane, addr + i, &c, 1)) return false;
    if (c == 0) return true;
    out->push_back(c);
  }
  return true;
}

}  // namespace remora::emu::ptx
