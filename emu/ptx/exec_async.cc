// emu/ptx/exec_async.cc - cp.async, cp.async.bulk and mbarrier (async.h).
//
// An mbarrier is the 8 bytes at a shared address, encoded here (PTX leaves it opaque):
//   bits 0-19 pending arrivals, 20-39 expected arrivals, 40-60 tx-count (two's complement),
//   bit 62 initialised, bit 63 the current phase's parity.
// The state an arrive returns is the mbarrier as that arrival left it, before any phase
// completion: its parity names the phase the arrival belongs to. A phase completes when both
// its pending arrivals and its tx-count are zero; the lanes parked on it resume at once.
// A CTA runs on one host thread, so every read-modify-write here is atomic.
#include <cstdio>

#include "emu/ptx/async.h"

namespace remora::emu::ptx {
namespace {

constexpr uint64_t kCountMask = (1ull << 20) - 1;
constexpr int kExpectedShift = 20;
constexpr int kTxShift = 40;
constexpr uint64_t kTxMask = (1ull << 21) - 1;
constexpr uint64_t kValid = 1ull << 62;
constexpr int kPhaseShift = 63;
constexpr int64_t kMaxCount = (1 << 20) - 1;  // counts and tx-counts: PTX's range

struct Mbar {
  uint32_t pending, expected;
  int64_t tx;
  uint32_t phase;
};

Mbar Unpack(uint64_t v) {
  int64_t tx = int64_t(v >> kTxShift & kTxMask);
  if (tx & (1 << 20)) tx -= int64_t(1) << 21;
  return {uint32_t(v & kCountMask), uint32_t(v >> kExpectedShift & kCountMask), tx,
          uint32_t(v >> kPhaseShift)};
}

uint64_t Pack(const Mbar& m) {
  return kValid | uint64_t(m.pending) | uint64_t(m.expected) << kExpectedShift |
         (uint64_t(m.tx) & kTxMask) << kTxShift | uint64_t(m.phase) << kPhaseShift;
}

[[gnu::cold]] int MbarFault(Exec& x, const Inst& in, int l, uint32_t off, const std::string& what) {
  return FaultAt(x, err::kLaunchFailure, in,
                 "mbarrier at shared " + Hex(off) + ": " + what + Where(x, l));
}

// The address of lane l's mem operand.
uint64_t MemAddr(const Exec& x, const Inst& in, int l) {
  return (in.base == kNoReg ? 0 : Src(x, in.base)[l]) + UniformBase(x, in);
}

// The address of the pair of source slots starting at a[k].
uint64_t PairAddr(const Exec& x, const Inst& in, int k, int l) {
  return (in.a[k] == kNoReg ? 0 : Src(x, in.a[k])[l]) + Src(x, in.a[k + 1])[l];
}

// Lane l's mbarrier at `addr` (a shared offset, or a generic address when `space` is generic);
// nullptr after a fault. *off gets its shared offset.
uint64_t* MbarAt(Exec& x, const Inst& in, int l, Space space, uint64_t addr, uint32_t* off) {
  if (space != Space::kShared) {
    if ((addr & ~(kWindowSize - 1)) != kSharedWindow) {
      FaultAt(x, err::kInvalidAddressSpace, in,
              "mbarrier at " + Hex(addr) + ", which is not shared memory," + Where(x, l));
      return nullptr;
    }
    addr -= kSharedWindow;
  }
  if (addr % 8) {
    FaultAt(x, err::kMisalignedAddress, in,
            "mbarrier at shared " + Hex(addr) + ", not 8-byte aligned," + Where(x, l));
    return nullptr;
  }
  uint8_t* p = ResolveAddress(x, in, l, Space::kShared, addr, 8);
  *off = uint32_t(addr);
  return reinterpret_cast<uint64_t*>(p);
}

// Completes the current phase of the mbarrier at `off` and resumes the lanes parked on it.
void CompletePhase(Exec& x, uint32_t off, Mbar& m) {
  const uint32_t parked = off << 1 | m.phase;
  m.phase ^= 1;
  m.pending = m.expected;
  m.tx = 0;
  Cta& cta = *x.cta;
  ++cta.mbar_completions;
  const uint32_t nwarps = (cta.nthreads + 31) / 32;
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = cta.warps[wi];
    for (int l = 0; l < 32; ++l)
      if (w.state[l] == LaneState::kWaitMbar && w.bar_id[l] == parked)
        ResumeMbarWaiter(*x.L->P, w, l, true);
  }
}

// Reads the initialised mbarrier at p; false after a fault.
bool Load(Exec& x, const Inst& in, int l, uint32_t off, const uint64_t* p, Mbar* m) {
  if (!(*p & kValid)) {
    MbarFault(x, in, l, off, "not initialised (mbarrier.init)");
    return false;
  }
  *m = Unpack(*p);
  return true;
}

// Adds `tx` to the tx-count, then `count` arrivals (dropping them from later phases too when
// `drop`); completes the phase when nothing is pending. *state gets the arrival's state.
bool Update(Exec& x, const Inst& in, int l, uint32_t off, uint64_t* p, uint32_t count, int64_t tx,
            bool drop, bool no_complete, uint64_t* state) {
  Mbar m;
  if (!Load(x, in, l, off, p, &m)) return false;
  if (tx != 0) {
    if (tx < -kMaxCount || tx > kMaxCount || m.tx + tx < -kMaxCount || m.tx + tx > kMaxCount) {
      MbarFault(x, in, l, off, "tx-count out of range");
      return false;
    }
    m.tx += tx;
  }
  if (count > m.pending) {
    MbarFault(
        x, in, l, off,
        std::to_string(count) + " arrivals where " + std::to_string(m.pending) + " are pending");
    return false;
  }
  m.pending -= count;
  if (drop) m.expected -= count;
  if (state) *state = Pack(m);
  if (m.pending == 0 && m.tx == 0 && (count != 0 || tx != 0)) {
    if (no_complete) {
      MbarFault(x, in, l, off, ".noComplete arrival would complete the phase");
      return false;
    }
    CompletePhase(x, off, m);
  }
  *p = Pack(m);
  return true;
}

// ---- cp.async ----

// Copies cp-size bytes per lane at issue: src-size (or 0 with ignore-src) bytes read, the
// rest of the cp-size zero-filled.
int CpAsync(Exec& x, const Inst& in) {
  const uint32_t n = in.vec;
  const uint64_t* src_size = in.a[2] == kNoReg ? nullptr : Src(x, in.a[2]);
  const uint64_t* ignore = in.a[3] == kNoReg ? nullptr : Src(x, in.a[3]);
  const bool ignore_neg = in.src_neg & 8;
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    const uint64_t dst = PairAddr(x, in, 0, l), src = MemAddr(x, in, l);
    uint32_t m = src_size ? uint32_t(src_size[l]) : n;
    if (ignore && (ignore[l] != 0) != ignore_neg) m = 0;
    if (m > n) {
      r = FaultAt(
          x, err::kLaunchFailure, in,
          "src-size " + std::to_string(m) + " above cp-size " + std::to_string(n) + Where(x, l));
      return;
    }
    if (dst % n || src % n) {
      r = FaultAt(x, err::kMisalignedAddress, in,
                  "copy of " + std::to_string(n) + " bytes from " + Hex(src) + " to shared " +
                      Hex(dst) + Where(x, l));
      return;
    }
    uint8_t* d = ResolveAddress(x, in, l, Space::kShared, dst, n);
    const uint8_t* s = m && d ? ResolveAddress(x, in, l, Space::kGlobal, src, m) : d;
    if (!d || !s) {
      r = kFault;
      return;
    }
    std::memmove(d, s, m);
    std::memset(d + m, 0, n - m);
  });
  return r;
}

// Every copy completed when it was issued: groups and waits have nothing left to do.
int Done(Exec&, const Inst&) {
  return kNext;
}

// For each lane of x.mask in order: `fn(lane, p, off)` on the mbarrier its address names
// (`p` its word, `off` its offset in shared memory), until a lane's address is not an
// mbarrier or its `fn` returns a fault. Returns kNext or kFault.
template <class Fn>
int EachMbar(Exec& x, const Inst& in, Fn&& fn) {
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    uint32_t off;
    uint64_t* p = MbarAt(x, in, l, in.space, MemAddr(x, in, l), &off);
    r = p ? fn(l, p, off) : kFault;
  });
  return r;
}

// The arrive-on that fires when the lane's earlier copies are done: now. Without .noinc
// the pending count is raised by one first, so the pair changes nothing but is checked.
template <bool kNoinc>
int CpMbarArrive(Exec& x, const Inst& in) {
  return EachMbar(x, in, [&](int l, uint64_t* p, uint32_t off) -> int {
    Mbar m;
    if (!Load(x, in, l, off, p, &m)) return kFault;
    if (kNoinc && !Update(x, in, l, off, p, 1, 0, false, false, nullptr)) return kFault;
    return kNext;
  });
}

// cp.async.bulk: `size` bytes, both addresses 16-byte aligned, then (shared destinations)
// complete_tx of `size` on the mbarrier.
template <AsyncForm F>
int Bulk(Exec& x, const Inst& in) {
  constexpr bool kToGlobal = F == AsyncForm::kBulkS2G;
  const uint64_t* size = Src(x, in.a[2]);
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    const uint64_t dst = kToGlobal ? MemAddr(x, in, l) : PairAddr(x, in, 0, l);
    const uint64_t src = kToGlobal ? PairAddr(x, in, 0, l) : MemAddr(x, in, l);
    const uint32_t n = uint32_t(size[l]);
    if (n % 16 || dst % 16 || src % 16) {
      r = FaultAt(x, err::kMisalignedAddress, in,
                  "bulk copy of " + std::to_string(n) + " bytes from " + Hex(src) + " to " +
                      Hex(dst) + " (16-byte multiples only)" + Where(x, l));
      return;
    }
    uint8_t* d = ResolveAddress(x, in, l, kToGlobal ? Space::kGlobal : Space::kShared, dst, n);
    const uint8_t* s =
        d ? ResolveAddress(x, in, l, F == AsyncForm::kBulkG2S ? Space::kGlobal : Space::kShared,
                           src, n)
          : nullptr;
    if (!d || !s) {
      r = kFault;
      return;
    }
    std::memmove(d, s, n);
    if constexpr (!kToGlobal) {
      uint32_t off;
      uint64_t* p = MbarAt(x, in, l, Space::kShared, PairAddr(x, in, 3, l), &off);
      if (!p || !Update(x, in, l, off, p, 0, -int64_t(n), false, false, nullptr)) r = kFault;
    }
  });
  return r;
}

// ---- mbarrier ----

int MbInit(Exec& x, const Inst& in) {
  const uint64_t* count = Src(x, in.a[0]);
  return EachMbar(x, in, [&](int l, uint64_t* p, uint32_t off) -> int {
    const uint64_t c = uint32_t(count[l]);
    if (c == 0 || c > uint64_t(kMaxCount))
      return MbarFault(x, in, l, off, "count " + std::to_string(c) + " outside [1, 2^20-1]");
    *p = Pack({uint32_t(c), uint32_t(c), 0, 0});
    return kNext;
  });
}

int MbInval(Exec& x, const Inst& in) {
  return EachMbar(x, in, [](int, uint64_t* p, uint32_t) -> int {
    *p = 0;
    return kNext;
  });
}

// arrive / arrive_drop, with a count, .noComplete, or .expect_tx (tx-count, one arrival).
template <bool kDrop, bool kNoComplete, bool kExpectTx>
int MbArrive(Exec& x, const Inst& in) {
  const uint64_t* arg = in.na > 0 ? Src(x, in.a[0]) : nullptr;
  uint64_t* d = in.nd ? Dst(x, in.d[0]) : nullptr;
  return EachMbar(x, in, [&](int l, uint64_t* p, uint32_t off) -> int {
    uint32_t count = 1;
    int64_t tx = 0;
    if (kExpectTx)
      tx = int64_t(uint32_t(arg[l]));
    else if (arg)
      count = uint32_t(arg[l]);
    if (count == 0 || count > uint32_t(kMaxCount))
      return MbarFault(x, in, l, off, "count " + std::to_string(count) + " outside [1, 2^20-1]");
    uint64_t state = 0;
    if (!Update(x, in, l, off, p, count, tx, kDrop, kNoComplete, &state)) return kFault;
    if (d) d[l] = state;
    return kNext;
  });
}

template <bool kComplete>
int MbTx(Exec& x, const Inst& in) {
  const uint64_t* arg = Src(x, in.a[0]);
  return EachMbar(x, in, [&](int l, uint64_t* p, uint32_t off) -> int {
    const int64_t tx = int64_t(uint32_t(arg[l]));
    return Update(x, in, l, off, p, 0, kComplete ? -tx : tx, false, false, nullptr) ? kNext
                                                                                    : kFault;
  });
}

// test_wait / try_wait: true once the phase named by the state's (or the operand's) parity has
// completed, i.e. the mbarrier's parity moved past it. An incomplete try_wait parks the lane
// (kWaitMbar) until that phase completes; an incomplete test_wait answers false and yields, so
// a lane polling in a loop lets the CTA's other warps reach their arrivals.
template <bool kTry, bool kParity>
int MbWait(Exec& x, const Inst& in) {
  const uint64_t* arg = Src(x, in.a[0]);
  uint64_t* d = Dst(x, in.d[0]);
  Warp& w = *x.w;
  uint32_t parked = 0;
  const int r = EachMbar(x, in, [&](int l, uint64_t* p, uint32_t off) -> int {
    Mbar m;
    if (!Load(x, in, l, off, p, &m)) return kFault;
    const uint32_t awaited = kParity ? uint32_t(arg[l] & 1) : uint32_t(arg[l] >> kPhaseShift);
    if (m.phase != awaited) {
      d[l] = 1;
      return kNext;
    }
    parked |= 1u << l;
    if (kTry) {
      w.bar_id[l] = off << 1 | awaited;
    } else {
      d[l] = 0;
    }
    return kNext;
  });
  if (r != kNext || parked == 0) return r;
  ForLanes(x.group, [&](int l) {
    if (!(parked >> l & 1)) {
      w.pc[l] = x.pc + 1;
    } else if (kTry) {
      w.pc[l] = x.pc;  // ResumeMbarWaiter writes the predicate and moves it on
      w.state[l] = LaneState::kWaitMbar;
    } else {
      w.pc[l] = x.pc + 1;
      w.state[l] = LaneState::kYield;
    }
  });
  return kRepick;
}

int MbPendingCount(Exec& x, const Inst& in) {
  const uint64_t* state = Src(x, in.a[0]);
  uint64_t* d = Dst(x, in.d[0]);
  ForLanes(x.mask, [&](int l) { d[l] = state[l] & kCountMask; });
  return kNext;
}

// ---- decoding ----

// "'.word' in 'mnemonic' is not supported", appended piecewise: GCC 12 warns (-Wrestrict) on
// "literal" + std::string here.
std::string Refusal(std::string_view m, std::string_view word) {
  std::string s = "'.";
  s.append(word).append("' in '").append(m).append("' is not supported");
  return s;
}

std::string Quoted(std::string_view m, const char* what) {
  std::string s = "'";
  s.append(m).append("' ").append(what);
  return s;
}

bool IsShared(std::string_view w) {
  return w == "shared" || w == "shared::cta" || w == "shared::cluster";
}
bool IsOrderOrScope(std::string_view w) {
  return w == "relaxed" || w == "acquire" || w == "release" || w == "cta" || w == "cluster";
}

std::string DecodeCp(std::string_view m, const std::vector<std::string_view>& w, Inst& in,
                     bool* cache_hint) {
  auto refuse = [&](std::string_view word) { return Refusal(m, word); };
  if (w.size() < 2 || w[0] != "async") return refuse(w.empty() ? m : w[0]);
  auto form = [&](AsyncForm f) {
    in.target = uint32_t(f);
    return std::string();
  };
  const std::string_view op = w[1];
  if (w.size() == 2 && op == "commit_group") return form(AsyncForm::kCpCommit);
  if (w.size() == 2 && op == "wait_group") return form(AsyncForm::kCpWaitGroup);
  if (w.size() == 2 && op == "wait_all") return form(AsyncForm::kCpWaitAll);
  if (op == "mbarrier") {
    bool noinc = false, b64 = false;
    if (w.size() < 3 || w[2] != "arrive") return refuse(w.size() < 3 ? op : w[2]);
    for (size_t i = 3; i < w.size(); ++i) {
      if (w[i] == "noinc")
        noinc = true;
      else if (IsShared(w[i]))
        in.space = Space::kShared;
      else if (w[i] == "b64")
        b64 = true;
      else
        return refuse(w[i]);
    }
    if (!b64) return Quoted(m, "needs .b64");
    return form(noinc ? AsyncForm::kCpMbarArriveNoinc : AsyncForm::kCpMbarArrive);
  }
  if (op == "ca" || op == "cg") {
    if (w.size() < 4 || !IsShared(w[2]) || w[2] == "shared::cluster" || w[3] != "global")
      return Quoted(m, "must copy .shared{::cta}.global");
    for (size_t i = 4; i < w.size(); ++i) {
      if (w[i] == "L2::cache_hint")
        *cache_hint = true;
      else if (w[i] != "L2::64B" && w[i] != "L2::128B" && w[i] != "L2::256B")
        return refuse(w[i]);
    }
    in.space = Space::kGlobal;
    return form(op == "ca" ? AsyncForm::kCpAsyncCa : AsyncForm::kCpAsyncCg);
  }
  if (op != "bulk") return refuse(op);
  if (w.size() == 3 && w[2] == "commit_group") return form(AsyncForm::kBulkCommit);
  if (w.size() >= 3 && w[2] == "wait_group") {
    if (w.size() > 4 || (w.size() == 4 && w[3] != "read")) return refuse(w.back());
    return form(AsyncForm::kBulkWait);
  }
  if (w.size() < 5 || w[2] == "tensor" || w[2] == "prefetch")
    return refuse(w.size() > 2 ? w[2] : op);
  for (size_t i = 5; i < w.size(); ++i) {
    if (w[i] != "L2::cache_hint") return refuse(w[i]);  // .multicast::cluster among others
    *cache_hint = true;
  }
  const bool to_shared = w[2] == "shared::cluster" || w[2] == "shared::cta";
  if (to_shared && w[3] == "global" && w[4] == "mbarrier::complete_tx::bytes") {
    in.space = Space::kGlobal;
    return form(AsyncForm::kBulkG2S);
  }
  if (w[2] == "shared::cluster" && w[3] == "shared::cta" &&
      w[4] == "mbarrier::complete_tx::bytes") {
    in.space = Space::kShared;
    return form(AsyncForm::kBulkS2S);
  }
  if (w[2] == "global" && w[3] == "shared::cta" && w[4] == "bulk_group") {
    in.space = Space::kGlobal;
    return form(AsyncForm::kBulkS2G);
  }
  return Quoted(m, "is not supported (tensor, prefetch and multicast forms)");
}

std::string DecodeMbarrier(std::string_view m, const std::vector<std::string_view>& w, Inst& in) {
  auto refuse = [&](std::string_view word) { return Refusal(m, word); };
  if (w.empty()) return Quoted(m, "needs an operation");
  const std::string_view op = w[0];
  bool parity = false, no_complete = false, expect_tx = false, b64 = false;
  const bool arrive = op == "arrive" || op == "arrive_drop";
  const bool wait = op == "test_wait" || op == "try_wait";
  for (size_t i = 1; i < w.size(); ++i) {
    if (w[i] == "b64")
      b64 = true;
    else if (IsShared(w[i]))
      in.space = Space::kShared;
    else if (IsOrderOrScope(w[i]))
      continue;  // a CTA runs on one host thread: every order and scope holds
    else if (arrive && w[i] == "noComplete")
      no_complete = true;
    else if (arrive && w[i] == "expect_tx")
      expect_tx = true;
    else if (wait && w[i] == "parity")
      parity = true;
    else
      return refuse(w[i]);
  }
  if (!b64) return Quoted(m, "needs .b64");
  if (no_complete && expect_tx) return Quoted(m, "is not a PTX form");
  AsyncForm f;
  if (op == "init") {
    f = AsyncForm::kMbInit;
  } else if (op == "inval") {
    f = AsyncForm::kMbInval;
  } else if (op == "arrive") {
    f = no_complete ? AsyncForm::kMbArriveNoComplete
        : expect_tx ? AsyncForm::kMbArriveExpectTx
                    : AsyncForm::kMbArrive;
  } else if (op == "arrive_drop") {
    f = no_complete ? AsyncForm::kMbArriveDropNoComplete
        : expect_tx ? AsyncForm::kMbArriveDropExpectTx
                    : AsyncForm::kMbArriveDrop;
  } else if (op == "expect_tx") {
    f = AsyncForm::kMbExpectTx;
  } else if (op == "complete_tx") {
    f = AsyncForm::kMbCompleteTx;
  } else if (op == "test_wait") {
    f = parity ? AsyncForm::kMbTestWaitParity : AsyncForm::kMbTestWait;
  } else if (op == "try_wait") {
    f = parity ? AsyncForm::kMbTryWaitParity : AsyncForm::kMbTryWait;
  } else if (op == "pending_count") {
    f = AsyncForm::kMbPendingCount;
  } else {
    return refuse(op);
  }
  in.target = uint32_t(f);
  return {};
}

}  // namespace

std::string DecodeAsyncModifiers(std::string_view mnemonic, Inst& in, bool* cache_hint) {
  *cache_hint = false;
  in.space = Space::kGeneric;
  std::vector<std::string_view> words;
  size_t dot = mnemonic.find('.');
  const std::string_view base = mnemonic.substr(0, dot);
  while (dot != std::string_view::npos) {
    size_t next = mnemonic.find('.', dot + 1);
    words.push_back(
        mnemonic.substr(dot + 1, next == std::string_view::npos ? next : next - dot - 1));
    dot = next;
  }
  return base == "cp" ? DecodeCp(mnemonic, words, in, cache_hint)
                      : DecodeMbarrier(mnemonic, words, in);
}

void ResumeMbarWaiter(const ProgramImpl& P, Warp& w, int lane, bool complete) {
  const Inst& in = P.code[w.pc[lane]];
  w.regs[(size_t(w.rbase[lane]) + in.d[0]) * 32 + size_t(lane)] = complete;
  ++w.pc[lane];
  w.state[lane] = LaneState::kRun;
}

ExecFn select_Cp(Inst& in) {
  switch (AsyncForm(in.target)) {
    case AsyncForm::kCpAsyncCa:
      return in.vec == 4 || in.vec == 8 || in.vec == 16 ? &CpAsync : nullptr;
    case AsyncForm::kCpAsyncCg:
      return in.vec == 16 ? &CpAsync : nullptr;
    case AsyncForm::kCpCommit:
    case AsyncForm::kCpWaitGroup:
    case AsyncForm::kCpWaitAll:
    case AsyncForm::kBulkCommit:
    case AsyncForm::kBulkWait:
      return &Done;
    case AsyncForm::kCpMbarArrive:
      return &CpMbarArrive<false>;
    case AsyncForm::kCpMbarArriveNoinc:
      return &CpMbarArrive<true>;
    case AsyncForm::kBulkG2S:
      return &Bulk<AsyncForm::kBulkG2S>;
    case AsyncForm::kBulkS2S:
      return &Bulk<AsyncForm::kBulkS2S>;
    case AsyncForm::kBulkS2G:
      return &Bulk<AsyncForm::kBulkS2G>;
    default:
      return nullptr;
  }
}

ExecFn select_Mbarrier(Inst& in) {
  switch (AsyncForm(in.target)) {
    case AsyncForm::kMbInit:
      return &MbInit;
    case AsyncForm::kMbInval:
      return &MbInval;
    case AsyncForm::kMbArrive:
      return &MbArrive<false, false, false>;
    case AsyncForm::kMbArriveNoComplete:
      return &MbArrive<false, true, false>;
    case AsyncForm::kMbArriveExpectTx:
      return &MbArrive<false, false, true>;
    case AsyncForm::kMbArriveDrop:
      return &MbArrive<true, false, false>;
    case AsyncForm::kMbArriveDropNoComplete:
      return &MbArrive<true, true, false>;
    case AsyncForm::kMbArriveDropExpectTx:
      return &MbArrive<true, false, true>;
    case AsyncForm::kMbExpectTx:
      return &MbTx<false>;
    case AsyncForm::kMbCompleteTx:
      return &MbTx<true>;
    case AsyncForm::kMbTestWait:
      return &MbWait<false, false>;
    case AsyncForm::kMbTestWaitParity:
      return &MbWait<false, true>;
    case AsyncForm::kMbTryWait:
      return &MbWait<true, false>;
    case AsyncForm::kMbTryWaitParity:
      return &MbWait<true, true>;
    case AsyncForm::kMbPendingCount:
      return &MbPendingCount;
    default:
      return nullptr;
  }
}

}  // namespace remora::emu::ptx
