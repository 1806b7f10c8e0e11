// emu/ptx/exec.h - interpreter state shared by the exec_<op> functions and the scheduler.
//
// A Warp holds 32 lanes as plain data: a structure-of-arrays register file regs[slot][lane]
// (frames of called functions are stacked above the kernel's slots), and per lane a PC, frame
// bases and a run state. The scheduler picks a converged group (lanes with the same frame and
// PC) and runs decoded instructions over it; an Exec is that group's view while it runs.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "emu/ptx/ir.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace remora::emu::ptx {

// Lane masks over a warp's 32-entry arrays: bit l describes entry l. The scheduler derives its
// masks from the arrays on every pick, so these are a few vector compares, not 32 branches.
#if defined(__SSE2__)
namespace lanes_detail {
inline uint32_t Bytes(__m128i lo, __m128i hi) {
  return uint32_t(_mm_movemask_epi8(lo)) | uint32_t(_mm_movemask_epi8(hi)) << 16;
}
inline uint32_t Words(const __m128i* q, __m128i v) {
  uint32_t m = 0;
  for (int i = 0; i < 8; ++i)
    m |= uint32_t(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_loadu_si128(q + i), v))))
         << (4 * i);
  return m;
}
}  // namespace lanes_detail
#endif

template <class E>
inline uint32_t LanesEq(const E* a, E v) {
  static_assert(sizeof(E) == 1 || sizeof(E) == 4);
#if defined(__SSE2__)
  if constexpr (sizeof(E) == 1) {
    const __m128i* q = reinterpret_cast<const __m128i*>(a);
    __m128i b = _mm_set1_epi8(char(v));
    return lanes_detail::Bytes(_mm_cmpeq_epi8(_mm_loadu_si128(q), b),
                               _mm_cmpeq_epi8(_mm_loadu_si128(q + 1), b));
  } else {
    return lanes_detail::Words(reinterpret_cast<const __m128i*>(a), _mm_set1_epi32(int(v)));
  }
#else
  uint32_t m = 0;
  for (int l = 0; l < 32; ++l) m |= uint32_t(a[l] == v) << l;
  return m;
#endif
}
// Entries >= v (unsigned bytes).
template <class E>
inline uint32_t LanesAtLeast(const E* a, E v) {
  static_assert(sizeof(E) == 1);
#if defined(__SSE2__)
  const __m128i* q = reinterpret_cast<const __m128i*>(a);
  __m128i b = _mm_set1_epi8(char(v));
  __m128i lo = _mm_loadu_si128(q), hi = _mm_loadu_si128(q + 1);
  return lanes_detail::Bytes(_mm_cmpeq_epi8(_mm_max_epu8(lo, b), lo),
                             _mm_cmpeq_epi8(_mm_max_epu8(hi, b), hi));
#else
  uint32_t m = 0;
  for (int l = 0; l < 32; ++l) m |= uint32_t(uint8_t(a[l]) >= uint8_t(v)) << l;
  return m;
#endif
}
// Lanes whose 64-bit slot is not zero (a predicate register's true lanes).
inline uint32_t LanesNonZero(const uint64_t* r) {
#if defined(__SSE2__)
  const __m128i* q = reinterpret_cast<const __m128i*>(r);
  const __m128i zero = _mm_setzero_si128();
  uint32_t m = 0;
  for (int i = 0; i < 8; ++i) {
    // Two slots each: fold every slot's high half onto its low half, then test the low halves.
    __m128i a = _mm_loadu_si128(q + 2 * i), b = _mm_loadu_si128(q + 2 * i + 1);
    a = _mm_or_si128(a, _mm_srli_epi64(a, 32));
    b = _mm_or_si128(b, _mm_srli_epi64(b, 32));
    __m128 lows = _mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), _MM_SHUFFLE(2, 0, 2, 0));
    m |= uint32_t(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(_mm_castps_si128(lows), zero))))
         << (4 * i);
  }
  return ~m;
#else
  uint32_t m = 0;
  for (int l = 0; l < 32; ++l) m |= uint32_t(r[l] != 0) << l;
  return m;
#endif
}

// Generic-address windows for shared and local memory (above any user-space host address).
inline constexpr uint64_t kSharedWindow = 0x0001000000000000ull;
inline constexpr uint64_t kLocalWindow = 0x0002000000000000ull;
inline constexpr uint64_t kParamWindow = 0x0003000000000000ull;
inline constexpr uint64_t kWindowSize = 0x0000000100000000ull;

// kWaitMbar: parked in mbarrier.try_wait until the phase completes (exec_async.cc);
// kYield: a failed mbarrier.test_wait, runnable again once the CTA's other warps have run.
// Those two stay last: PickGroup tests `>= kWaitMbar`.
enum class LaneState : uint8_t { kRun, kWaitColl, kWaitBar, kExited, kInvalid, kWaitMbar, kYield };

struct Frame {
  uint32_t ret_pc, rbase, lbase, site;
  uint32_t callee = 0;  // the function called (read by ret of an indirect call)
  uint32_t dyn = 0;     // the caller's Warp::dyn, back at the return (frees the callee's allocas)
};

struct LaunchCtx;
struct Cta;

struct Warp {
  uint32_t index = 0;  // warp number within the CTA
  uint32_t valid = 0;  // lanes that exist (the last warp may be partial)
  uint32_t carry = 0;  // CC.CF of each lane (bit l), written by .cc, read by addc/subc/madc
  uint32_t pc[32];
  uint32_t rbase[32];   // register frame base, in slots
  uint32_t lbase[32];   // local frame base, in bytes
  uint32_t bar_id[32];  // kWaitBar: the barrier; kWaitMbar: shared offset << 1 | awaited parity
  // Where the lane's allocas begin: they take its local memory down from the top, call frames
  // go up from 0. Set only in a program with allocas (LaunchCtx::has_alloca).
  uint32_t dyn[32] = {};
  LaneState state[32];
  uint32_t tid[3][32];
  std::vector<std::vector<Frame>> stack;  // per lane call stack
  std::vector<uint64_t> regs;             // slot * 32 + lane
  // The last kCacheWays global allocations hit ([lo, hi) each; empty when lo > hi), most recent
  // first: kernels stream through a few buffers, each check is two compares.
  static constexpr int kCacheWays = 4;
  uint64_t cache_lo[kCacheWays] = {1, 1, 1, 1}, cache_hi[kCacheWays] = {};
  void ClearCache() {
    std::fill_n(cache_lo, kCacheWays, 1);
    std::fill_n(cache_hi, kCacheWays, 0);
  }
  // True if [lo, hi) lies in a cached allocation; moves that entry to the front.
  bool CacheHit(uint64_t lo, uint64_t hi) {
    if (hi < lo) [[unlikely]]
      return false;  // the access wraps around the address space
    if (lo >= cache_lo[0] && hi <= cache_hi[0]) [[likely]]
      return true;
    for (int i = 1; i < kCacheWays; ++i) {
      if (lo >= cache_lo[i] && hi <= cache_hi[i]) {
        std::swap(cache_lo[0], cache_lo[i]);
        std::swap(cache_hi[0], cache_hi[i]);
        return true;
      }
    }
    return false;
  }
  void CacheInsert(uint64_t lo, uint64_t hi) {
    for (int i = kCacheWays - 1; i > 0; --i) {
      cache_lo[i] = cache_lo[i - 1];
      cache_hi[i] = cache_hi[i - 1];
    }
    cache_lo[0] = lo;
    cache_hi[0] = hi;
  }
  uint64_t instructions = 0, thread_instructions = 0;
};

// The running group's view of its warp.
struct Exec {
  Warp* w;
  Cta* cta;
  const LaunchCtx* L;
  uint64_t* R;        // w->regs + rbase * 32
  const uint64_t* K;  // constant pool
  uint32_t mask;      // lanes executing this instruction (group & guard)
  uint32_t group;     // converged lanes at pc
  uint32_t pc;
  uint32_t stop_pc;  // another group of the same frame waits here: merge
  uint32_t rbase, lbase;
  bool force;  // collectives run even if member lanes are elsewhere
};

inline uint64_t* Dst(Exec& x, uint32_t slot) {
  return x.R + (size_t(slot) << 5);
}
inline const uint64_t* Src(const Exec& x, uint32_t slot) {
  return (slot & kConstSlot) ? x.K + (size_t(slot & ~kConstSlot) << 5) : x.R + (size_t(slot) << 5);
}

template <class F>
inline void ForLanes(uint32_t mask, F&& f) {
  if (mask == 0xffffffffu) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (mask) {
      int l = std::countr_zero(mask);
      mask &= mask - 1;
      f(l);
    }
  }
}

// ForLanes for a body that writes lane l's destination from lane l's sources only (and may
// write a register it reads: d and a the same slot). The full-warp loop then vectorizes.
template <class F>
inline void ForLanesElementwise(uint32_t mask, F&& f) {
  if (mask == 0xffffffffu) {
    // GCC only: clang checks aliasing at run time, and its assume_safety hint is an
    // error (-Wpass-failed) on the bodies it cannot vectorize.
#if !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    ForLanes(mask, f);
  }
}

template <class T>
inline T Get(uint64_t v) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(uint32_t(v));
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<double>(v);
  } else {
    return T(v);
  }
}
template <class T>
inline uint64_t Put(T v) {
  if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<uint32_t>(v);
  } else if constexpr (std::is_same_v<T, double>) {
    return std::bit_cast<uint64_t>(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1 : 0;
  } else {
    return uint64_t(std::make_unsigned_t<T>(v));
  }
}

struct Cta {
  uint32_t ctaid[3];
  uint32_t nthreads = 0;
  uint32_t local_stride = 0;
  std::vector<Warp> warps;
  std::vector<uint64_t> shared;  // 8-byte aligned storage
  uint32_t shared_size = 0;
  std::vector<uint64_t> local;  // nthreads * local_stride bytes
  uint32_t bar_arrived[16];
  uint32_t bar_expected[16];
  uint32_t bar_red[16];
  // Whole warps that parked this round at a plain CTA-wide barrier (bar.sync with no count or
  // a count of every thread), all at barrier `whole_bar_id`; RunRounds releases them at once
  // when that is every warp. whole_bar_id is 16 when two warps parked at different barriers.
  uint32_t whole_bar_warps = 0;
  uint32_t whole_bar_id = 0;
  uint32_t mbar_completions = 0;  // mbarrier phases completed (RunCta's progress check)
  uint32_t slice_yields = 0;      // warps that ran out of their slice (launch.cc)
  uint32_t idle_rounds = 0;       // rounds in a row in which only mbarrier waits timed out
  uint32_t worker = 0;
  // While the warps run together: which register slots of their frame every warp holds alike
  // (launch.cc's AlikeSlots keeps it; reused to spare an allocation per block).
  std::vector<uint8_t> alike;
  uint8_t* SharedBytes() { return reinterpret_cast<uint8_t*>(shared.data()); }
  uint8_t* LocalOf(uint32_t warp, int lane) {
    return reinterpret_cast<uint8_t*>(local.data()) + size_t(warp * 32 + lane) * local_stride;
  }
};

struct LaunchCtx {
  const ProgramImpl* P;
  const KernelInfo* kernel;
  const LaunchConfig* cfg;
  const uint64_t* gaddr;  // address of each global
  const uint8_t* params;
  uint32_t param_bytes;
  uint32_t nctaid[3];
  uint32_t ntid[3];
  uint32_t nthreads;
  uint32_t nworkers;
  uint32_t grid_id;
  uint32_t local_stride;
  uint32_t shared_total;
  uint32_t reserved_smem;  // where the block's reserved shared memory begins, past its own
  uint32_t kernel_index;
  bool own_globals;  // globals live in the Program's own storage (no driver addresses)
  bool has_calls;    // the program calls non-builtin functions (lanes may have call stacks)
  bool has_alloca;   // the program allocates on lanes' stacks (Warp::dyn)
  bool cooperative;  // blocks take turns: warps yield after a slice of instructions
  bool poll;         // cooperative, or cfg->cancel is set: look up every 4096 instructions
  std::atomic<bool>* failed;
  Status* fault;  // first fault, guarded by fault_mu
  std::mutex* fault_mu;
  DeviceWork* device_work;  // what the grid's threads queue with the device runtime
};

// Lane `lane`'s bytes at offset `off` of its local frame (call arguments and returns live there).
inline uint8_t* FramePtr(Exec& x, int lane, uint32_t off) {
  return x.cta->LocalOf(x.w->index, lane) + off;
}
// Argument k of a builtin call for lane l: its first (at most 8) bytes.
inline uint64_t Arg(Exec& x, int l, const CallSite& site, size_t k) {
  uint64_t v = 0;
  const CallSite::Copy& c = site.args[k];
  std::memcpy(&v, FramePtr(x, l, x.lbase + c.from), std::min<uint32_t>(c.size, 8));
  return v;
}

// Records the first fault of a launch; the exec function returns kFault after calling it.
int Fault(Exec& x, int32_t code, std::string message);
int FaultAt(Exec& x, int32_t code, const Inst& in, const std::string& what);
// " in block (x,y,z) thread (x,y,z)": where lane `lane` of x's warp is, for fault messages.
std::string Where(const Exec& x, int lane);
// "0x..." for fault messages.
std::string Hex(uint64_t v);

// Resolves the uniform part of an instruction's address or symbol value.
inline uint64_t UniformBase(const Exec& x, const Inst& in) {
  switch (in.symkind) {
    case SymKind::kGlobal:
      return x.L->gaddr[in.sym] + uint64_t(in.off);
    case SymKind::kFrame:
      return uint64_t(x.lbase) + uint64_t(in.off);
    default:
      return uint64_t(in.off);
  }
}

// Host pointer for `size` bytes at `addr` in space `s` (global, shared or generic), checked as
// ld/st check theirs; nullptr after raising an illegal-address fault naming lane `lane`.
uint8_t* ResolveAddress(Exec& x, const Inst& in, int lane, Space s, uint64_t addr, uint32_t size);

// Returns true if a collective over `members` may run now with x.mask; otherwise parks the
// group at this instruction until the other members arrive (the caller returns kRepick).
bool Converged(Exec& x, uint32_t members);

// A WarpsFn made of F, with F's body inlined into the loop over the warps (no call per warp).
template <ExecFn F>
[[gnu::flatten]] int RunWarps(Exec* xs, uint32_t n, const Inst& in, uint32_t* at) {
  for (uint32_t wi = 0; wi < n; ++wi) {
    const int r = F(xs[wi], in);
    if (r != kNext) [[unlikely]] {
      *at = wi;
      return r;
    }
  }
  return kNext;
}
// RunWarps<F> for the F of Fs that is `fn`, or nullptr.
template <ExecFn... Fs>
WarpsFn FindWarps(ExecFn fn) {
  WarpsFn r = nullptr;
  (void)((fn == Fs ? (r = &RunWarps<Fs>, true) : false) || ...);
  return r;
}
// The WarpsFn of an exec function that has one: the commonest integer, float and memory forms
// (each file lists its own); nullptr for the rest, which run one call per warp.
WarpsFn WarpsOfInt(ExecFn fn);
WarpsFn WarpsOfFloat(ExecFn fn);
WarpsFn WarpsOfMem(ExecFn fn);

// Select functions, one per ops.def row: return the exec function for a decoded
// instruction's types and modifiers, or nullptr if that form is not implemented.
#define PTX_OP(id, Name, mnemonic, shape, section) ExecFn select_##Name(Inst& in);
#include "emu/ptx/ops.def"

// cvt.pack.sat's form, in Inst::target: the destination width in bits (16, 8, 4 or 2), with
// kCvtPackSigned for a signed one. The exec function for that form, or nullptr.
inline constexpr uint32_t kCvtPackSigned = 0x100;
ExecFn select_cvt_pack_int(Inst& in);

// Exec function for a form that decoded but is not implemented: faults when reached.
int exec_unimplemented(Exec& x, const Inst& in);
// Text of the instruction for messages ("add.f16 at line 12").
std::string Describe(const ProgramImpl& P, const Inst& in);

// Formats one device printf: `fmt` with arguments packed from device address `args` (each
// aligned to its size, as nvcc packs them). Returns false if reading device memory faulted.
using ReadMemFn = bool (*)(void* ctx, uint64_t addr, void* dst, size_t n);
using ReadStrFn = bool (*)(void* ctx, uint64_t addr, std::string* out);
bool FormatPrintf(const std::string& fmt, uint64_t args, ReadMemFn read, ReadStrFn read_str,
                  void* ctx, std::string* out);

}  // namespace remora::emu::ptx
