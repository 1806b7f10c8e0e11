// emu/ptx/exec_ctl.cc - control flow, calls, barriers, warp collectives, special registers.
#include <x86intrin.h>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <mutex>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

bool ReadGeneric(Exec& x, const Inst& in, int lane, uint64_t addr, void* dst, size_t n);
bool ReadString(Exec& x, const Inst& in, int lane, uint64_t addr, std::string* out);

namespace {

// Moves every lane of the group that is not in x.mask past the current instruction.
void SkipUnmasked(Exec& x) {
  uint32_t rest = x.group & ~x.mask;
  ForLanes(rest, [&](int l) { x.w->pc[l] = x.pc + 1; });
}

int Bra(Exec& x, const Inst& in) {
  if (x.mask == x.group) {
    x.pc = in.target;
    return kJumped;
  }
  Warp& w = *x.w;
  ForLanes(x.group, [&](int l) { w.pc[l] = (x.mask >> l & 1) ? in.target : x.pc + 1; });
  return kRepick;
}

int Exit(Exec& x, const Inst&) {
  SkipUnmasked(x);
  ForLanes(x.mask, [&](int l) { x.w->state[l] = LaneState::kExited; });
  return kRepick;
}

int Ret(Exec& x, const Inst&) {
  Warp& w = *x.w;
  SkipUnmasked(x);
  if (!x.L->has_calls) {  // no call stacks: ret ends the thread
    ForLanes(x.mask, [&](int l) { w.state[l] = LaneState::kExited; });
    return kRepick;
  }
  const ProgramImpl& P = *x.L->P;
  ForLanes(x.mask, [&](int l) {
    auto& st = w.stack[l];
    if (st.empty()) {
      w.state[l] = LaneState::kExited;
      return;
    }
    Frame f = st.back();
    st.pop_back();
    const CallSite& site = P.calls[f.site];
    for (size_t k = 0; k < site.rets.size(); ++k) {
      const CallSite::Copy& c = site.rets[k];
      const uint32_t from = site.indirect ? P.funcs[f.callee].rets[k].offset : c.from;
      std::memcpy(FramePtr(x, l, f.lbase + c.to), FramePtr(x, l, x.lbase + from), c.size);
    }
    w.pc[l] = f.ret_pc;
    w.rbase[l] = f.rbase;
    w.lbase[l] = f.lbase;
    if (x.L->has_alloca) w.dyn[l] = f.dyn;
  });
  return kRepick;
}

int Trap(Exec& x, const Inst& in) {
  return FaultAt(x, err::kLaunchFailure, in, "trap executed");
}

// brx.idx{.uni} index, tlist: each lane goes to entry `index` of the list (in.target indexes
// ProgramImpl::branch_tables); an index past the list's end faults, naming it.
int Brx(Exec& x, const Inst& in) {
  const std::vector<uint32_t>& table = x.L->P->branch_tables[in.target];
  const uint64_t* a = Src(x, in.a[0]);
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r == kNext && uint32_t(a[l]) >= table.size())
      r = FaultAt(x, err::kLaunchFailure, in,
                  "brx.idx to entry " + std::to_string(uint32_t(a[l])) + " of a " +
                      std::to_string(table.size()) + "-entry list" + Where(x, l));
  });
  if (r != kNext) return r;
  Warp& w = *x.w;
  ForLanes(x.group, [&](int l) { w.pc[l] = (x.mask >> l & 1) ? table[uint32_t(a[l])] : x.pc + 1; });
  return kRepick;
}

// The stack instructions' types: addresses of 32 or 64 bits.
bool StackTyped(const Inst& in) {
  return in.ty == Ty::kU32 || in.ty == Ty::kU64;
}

// The value of a stack instruction's operand at lane l: 32 or 64 bits by its type.
uint64_t StackValue(const Inst& in, const uint64_t* a, int l) {
  return in.ty == Ty::kU32 ? uint32_t(a[l]) : a[l];
}

// alloca.{u32,u64} d, size{, align}: each lane takes `size` bytes below its earlier allocas,
// aligned (in.off), and gets their local address. Reaching down into the frame of the function
// running (its bytes in in.target) is a stack overflow: the launch fails, as a GPU's.
int Alloca(Exec& x, const Inst& in) {
  Warp& w = *x.w;
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t align = uint64_t(in.off), floor = uint64_t(x.lbase) + in.target;
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    const uint64_t size = StackValue(in, a, l);
    if (size > w.dyn[l] || ((w.dyn[l] - size) & ~(align - 1)) < floor) {
      r = FaultAt(x, err::kLaunchFailure, in,
                  "stack overflow: an alloca of " + std::to_string(size) + " bytes" + Where(x, l));
      return;
    }
    w.dyn[l] = uint32_t((w.dyn[l] - size) & ~(align - 1));
    d[l] = w.dyn[l];
  });
  return r;
}

// stacksave.{u32,u64} d: where the lane's allocas begin, for stackrestore.
int Stacksave(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  ForLanes(x.mask, [&](int l) { d[l] = x.w->dyn[l]; });
  return kNext;
}

// stackrestore.{u32,u64} a: frees the lane's allocas below a (a stacksave's value). One that
// is not within the running function's stack (below its frame, or past the top) faults.
int Stackrestore(Exec& x, const Inst& in) {
  Warp& w = *x.w;
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t floor = uint64_t(x.lbase) + in.target;
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    const uint64_t to = StackValue(in, a, l);
    if (to < floor || to > x.cta->local_stride) {
      r = FaultAt(x, err::kLaunchFailure, in,
                  "stackrestore to " + Hex(to) + ", outside the stack" + Where(x, l));
      return;
    }
    w.dyn[l] = uint32_t(to);
  });
  return r;
}

struct PrintfReader {
  Exec* x;
  const Inst* in;
  int lane;
};
bool ReadStrCb(void* ctx, uint64_t addr, std::string* out) {
  auto* r = static_cast<PrintfReader*>(ctx);
  return ReadString(*r->x, *r->in, r->lane, addr, out);
}
bool ReadArgsCb(void* ctx, uint64_t addr, void* dst, size_t n) {
  auto* r = static_cast<PrintfReader*>(ctx);
  return ReadGeneric(*r->x, *r->in, r->lane, addr, dst, n);
}

// Hands `text` to the launch's printf sink, one thread's text at a time.
void Print(Exec& x, const std::string& text) {
  static std::mutex mu;
  if (!x.L->cfg->printf_sink) return;
  std::lock_guard<std::mutex> lock(mu);
  x.L->cfg->printf_sink(text);
}

// malloc(size) -> pointer, free(pointer), for every lane of the group in lane order.
int CallHeap(Exec& x, const Inst& in, const CallSite& site, Builtin b) {
  DeviceHeap* heap = x.L->cfg->heap;
  if (heap == nullptr)
    return FaultAt(x, err::kLaunchFailure, in, "device-side malloc/free: no device heap");
  int fault = kNext;
  ForLanes(x.mask, [&](int l) {
    if (fault != kNext) return;
    const uint64_t arg = Arg(x, l, site, 0);
    if (b == Builtin::kMalloc) {
      const uint64_t p = heap->Malloc(arg);
      if (!site.rets.empty())
        std::memcpy(FramePtr(x, l, x.lbase + site.rets[0].to), &p,
                    std::min<uint32_t>(site.rets[0].size, 8));
    } else if (!heap->Free(arg)) {
      char what[96];
      std::snprintf(what, sizeof what, "free of 0x%llx, not a block of the device heap",
                    static_cast<unsigned long long>(arg));
      fault = FaultAt(x, err::kLaunchFailure, in, what);
    }
  });
  return fault;
}

int CallBuiltin(Exec& x, const Inst& in, const CallSite& site, const Function& callee) {
  const Builtin b = callee.builtin;
  if (b == Builtin::kMalloc || b == Builtin::kFree) return CallHeap(x, in, site, b);
  if (b == Builtin::kDeviceRuntime) return CallDeviceRuntime(x, in, site, callee.runtime_call);
  if (b == Builtin::kSetConditional) {
    // cudaGraphSetConditional(handle, value): the handle is the address of the node's word
    // (client_stub/graph.h: ConditionalWord).
    uint32_t m = x.mask;
    while (m) {
      const int l = std::countr_zero(m);
      m &= m - 1;
      const uint64_t handle = Arg(x, l, site, 0);
      if (handle % 4 != 0)
        return FaultAt(x, err::kMisalignedAddress, in,
                       "cudaGraphSetConditional of a handle that is no conditional node's");
      const auto value = static_cast<uint32_t>(Arg(x, l, site, 1));
      uint8_t* word = ResolveAddress(x, in, l, Space::kGlobal, handle, 4);
      if (word == nullptr) return kFault;
      std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(word))
          .store(value, std::memory_order_release);
    }
    return kNext;
  }
  if (b == Builtin::kUnserved)
    return FaultAt(
        x, err::kLaunchFailure, in,
        "call to " + callee.name +
            ", device-side control of a CUDA graph (a launch from the device), which Remora "
            "does not serve,");
  std::string assert_text;  // the first failing lane's, for the fault
  uint32_t m = x.mask;
  while (m) {
    int l = std::countr_zero(m);
    m &= m - 1;
    PrintfReader rd{&x, &in, l};
    if (b == Builtin::kVprintf) {
      std::string fmt;
      if (!ReadString(x, in, l, Arg(x, l, site, 0), &fmt)) return kFault;
      std::string text;
      if (!FormatPrintf(fmt, Arg(x, l, site, 1), &ReadArgsCb, &ReadStrCb, &rd, &text))
        return kFault;
      Print(x, text);
      if (!site.rets.empty()) {
        uint32_t n = uint32_t(text.size());
        std::memcpy(FramePtr(x, l, x.lbase + site.rets[0].to), &n, 4);
      }
    } else {  // __assertfail(message, file, line, function, charSize)
      std::string msg, file, func;
      if (!ReadString(x, in, l, Arg(x, l, site, 0), &msg)) return kFault;
      if (!ReadString(x, in, l, Arg(x, l, site, 1), &file)) return kFault;
      if (!ReadString(x, in, l, Arg(x, l, site, 3), &func)) return kFault;
      const uint32_t line = uint32_t(Arg(x, l, site, 2));
      const Warp& w = *x.w;
      char where[128];
      std::snprintf(where, sizeof where, "block: [%u,%u,%u], thread: [%u,%u,%u]", x.cta->ctaid[0],
                    x.cta->ctaid[1], x.cta->ctaid[2], w.tid[0][l], w.tid[1][l], w.tid[2][l]);
      // As a GPU's driver does, every failing thread's line reaches the program's output.
      const std::string text = file + ":" + std::to_string(line) + ": " + func + ": " + where +
                               " Assertion `" + msg + "` failed.";
      Print(x, text + "\n");
      if (assert_text.empty()) assert_text = text;
    }
  }
  if (!assert_text.empty()) return Fault(x, err::kAssert, assert_text);
  return kNext;
}

// call through a function address: each lane's register names its callee, which must be a
// .func of this program declaring the prototype's sizes. Checked for every lane before any
// lane moves, so a fault leaves the warp where it was.
int CallIndirect(Exec& x, const Inst& in, const CallSite& site) {
  const ProgramImpl& P = *x.L->P;
  Warp& w = *x.w;
  const uint64_t* target = Src(x, in.a[0]);
  const uint32_t rb = x.rbase + in.d[0];  // as Call: the caller's register slots and frame bytes
  const uint32_t lb = x.lbase + in.d[1];
  uint32_t callee[32];
  size_t need = 0;
  int r = kNext;
  ForLanes(x.mask, [&](int l) {
    if (r != kNext) return;
    const uint32_t fi = FuncAtAddress(P, target[l]);
    if (fi == kNoReg) {
      char what[64];
      std::snprintf(what, sizeof what, "indirect call to 0x%llx, which is not a function,",
                    static_cast<unsigned long long>(target[l]));
      r = FaultAt(x, err::kIllegalAddress, in, what + Where(x, l));
      return;
    }
    const Function& f = P.funcs[fi];
    bool same = f.params.size() == site.args.size() && f.rets.size() == site.rets.size();
    for (size_t k = 0; same && k < site.args.size(); ++k)
      same = f.params[k].size == site.args[k].size;
    for (size_t k = 0; same && k < site.rets.size(); ++k)
      same = f.rets[k].size == site.rets[k].size;
    if (!same) {
      r = FaultAt(x, err::kLaunchFailure, in,
                  "indirect call to " + f.name + ", whose parameters differ from the prototype");
      return;
    }
    if (lb + f.frame_bytes > (x.L->has_alloca ? x.w->dyn[l] : x.cta->local_stride)) {
      r = FaultAt(x, err::kLaunchFailure, in, "call stack overflow calling " + f.name);
      return;
    }
    callee[l] = fi;
    need = std::max(need, size_t(rb + f.nregs) * 32);
  });
  if (r != kNext) return r;
  if (w.regs.size() < need) w.regs.resize(need * 2);
  SkipUnmasked(x);
  ForLanes(x.mask, [&](int l) {
    const Function& f = P.funcs[callee[l]];
    w.stack[l].push_back({x.pc + 1, x.rbase, x.lbase, in.target, callee[l], w.dyn[l]});
    for (size_t k = 0; k < site.args.size(); ++k)
      std::memcpy(FramePtr(x, l, lb + f.params[k].offset),
                  FramePtr(x, l, x.lbase + site.args[k].from), site.args[k].size);
    w.pc[l] = f.entry_pc;
    w.rbase[l] = rb;
    w.lbase[l] = lb;
  });
  return kRepick;
}

int Call(Exec& x, const Inst& in) {
  const ProgramImpl& P = *x.L->P;
  const CallSite& site = P.calls[in.target];
  if (site.indirect) return CallIndirect(x, in, site);
  const Function& callee = P.funcs[site.callee];
  if (callee.builtin != Builtin::kNone) return CallBuiltin(x, in, site, callee);
  Warp& w = *x.w;
  // in.d[0] / in.d[1]: the caller's register slots and frame bytes (set when its body ended).
  uint32_t rb = x.rbase + in.d[0];
  uint32_t lb = x.lbase + in.d[1];
  uint32_t top = x.cta->local_stride;  // below every lane's allocas
  if (x.L->has_alloca) ForLanes(x.mask, [&](int l) { top = std::min(top, w.dyn[l]); });
  if (lb + callee.frame_bytes > top)
    return FaultAt(x, err::kLaunchFailure, in, "call stack overflow calling " + callee.name);
  size_t need = size_t(rb + callee.nregs) * 32;
  if (w.regs.size() < need) w.regs.resize(need * 2);
  SkipUnmasked(x);
  ForLanes(x.mask, [&](int l) {
    w.stack[l].push_back({x.pc + 1, x.rbase, x.lbase, in.target, 0, w.dyn[l]});
    for (const CallSite::Copy& c : site.args)
      std::memcpy(FramePtr(x, l, lb + c.to), FramePtr(x, l, x.lbase + c.from), c.size);
    w.pc[l] = callee.entry_pc;
    w.rbase[l] = rb;
    w.lbase[l] = lb;
  });
  return kRepick;
}

}  // namespace

bool Converged(Exec& x, uint32_t members) {
  Warp& w = *x.w;
  uint32_t live = 0;
  for (int l = 0; l < 32; ++l)
    if (w.state[l] != LaneState::kExited && w.state[l] != LaneState::kInvalid) live |= 1u << l;
  uint32_t missing = members & live & ~x.mask;
  if (!missing || x.force) return true;
  ForLanes(x.group, [&](int l) {
    w.pc[l] = x.pc;
    w.state[l] = LaneState::kWaitColl;
  });
  return false;
}

namespace {

uint32_t FirstValue(const Exec& x, uint32_t slot) {
  return uint32_t(Src(x, slot)[std::countr_zero(x.mask)]);
}

// The lanes a warp-synchronous instruction must wait for: the union of the member masks its
// lanes pass in `slot`. Each lane may name its own group (cooperative groups' tiles smaller
// than a warp do, all lanes executing the instruction together).
uint32_t MemberUnion(const Exec& x, uint32_t slot) {
  const uint64_t* m = Src(x, slot);
  uint32_t u = 0;
  ForLanes(x.mask, [&](int l) { u |= uint32_t(m[l]); });
  return u;
}

// Calls f(group, lanes) once for each member mask x's lanes pass in `slot`: `lanes` are those
// passing it, `group` the lanes of that mask taking part (the ones a vote, reduction or match of
// those lanes is over).
template <class F>
void ForMemberGroups(const Exec& x, uint32_t slot, F f) {
  const uint64_t* m = Src(x, slot);
  uint32_t todo = x.mask;
  while (todo) {
    const uint32_t mask = uint32_t(m[std::countr_zero(todo)]);
    uint32_t lanes = 0;
    ForLanes(todo, [&](int l) { lanes |= uint32_t(uint32_t(m[l]) == mask) << l; });
    todo &= ~lanes;
    f(mask & x.mask, lanes);
  }
}

int BarWarpSync(Exec& x, const Inst& in) {
  if (!Converged(x, MemberUnion(x, in.a[0]))) return kRepick;
  return kNext;
}

int BarSync(Exec& x, const Inst& in) {
  Cta& c = *x.cta;
  Warp& w = *x.w;
  uint32_t id = FirstValue(x, in.a[0]) & 15;
  uint32_t count = in.na > 1 && !(in.flags & kFlagPredOut) ? FirstValue(x, in.a[1]) : 0;
  if ((in.flags & kFlagPredOut) && in.na > 1 && in.a[1] != kNoReg) count = FirstValue(x, in.a[1]);
  uint32_t n = uint32_t(std::popcount(x.mask));
  if (c.bar_arrived[id] == 0) c.bar_red[id] = in.sub == Sub::kAnd ? 1 : 0;
  c.bar_arrived[id] += n;
  if (count) c.bar_expected[id] = count;
  if (in.flags & kFlagPredOut) {  // bar.red: fold this group's predicates
    const uint64_t* p = Src(x, in.a[2]);
    bool neg = in.src_neg & 4;
    ForLanes(x.mask, [&](int l) {
      uint32_t v = (p[l] != 0) != neg;
      if (in.sub == Sub::kPopc)
        c.bar_red[id] += v;
      else if (in.sub == Sub::kAnd)
        c.bar_red[id] &= v;
      else
        c.bar_red[id] |= v;
    });
  }
  SkipUnmasked(x);
  if (in.flags & kFlagArrive) {
    ForLanes(x.mask, [&](int l) { w.pc[l] = x.pc + 1; });
    return kNext;
  }
  bool red = in.flags & kFlagPredOut;
  if (x.mask == 0xffffffffu) {  // the whole warp: straight stores, no walk over the lanes
    if (!red && (count == 0 || count == c.nthreads)) {
      c.whole_bar_id = c.whole_bar_warps == 0 || c.whole_bar_id == id ? id : 16;
      ++c.whole_bar_warps;
    }
    std::fill_n(w.state, 32, LaneState::kWaitBar);
    std::fill_n(w.bar_id, 32, id);
    std::fill_n(w.pc, 32, red ? x.pc : x.pc + 1);
    return kRepick;
  }
  ForLanes(x.mask, [&](int l) {
    w.state[l] = LaneState::kWaitBar;
    w.bar_id[l] = id;
    w.pc[l] = red ? x.pc : x.pc + 1;
  });
  return kRepick;
}

// A lane reading a lane that does not execute this shfl.sync with it (outside membermask, or
// not there) reads 0: CUDA leaves the value undefined, and 0 is what code that reads such a lane
// by accident, as NVIDIA's reduction sample does at compute_75, needs to stay right.
template <Sub kMode>
int Shfl(Exec& x, const Inst& in) {
  if (!Converged(x, MemberUnion(x, in.a[3]))) return kRepick;
  const uint64_t* members = Src(x, in.a[3]);  // per lane: tiles of one warp name their own
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* b = Src(x, in.a[1]);
  const uint64_t* c = Src(x, in.a[2]);
  uint64_t* d = Dst(x, in.d[0]);
  uint64_t* p = (in.flags & kFlagSecondDest) ? Dst(x, in.d[1]) : nullptr;
  uint32_t vals[32];
  for (int l = 0; l < 32; ++l) vals[l] = uint32_t(a[l]);
  ForLanes(x.mask, [&](int l) {
    uint32_t bv = uint32_t(b[l]) & 31, cv = uint32_t(c[l]);
    uint32_t seg = (cv >> 8) & 31, clamp = cv & 31;
    int max_lane = int((uint32_t(l) & seg) | (clamp & ~seg));
    int min_lane = int(uint32_t(l) & seg);
    int j;
    bool ok;
    if constexpr (kMode == Sub::kUp) {
      j = l - int(bv);
      ok = j >= max_lane;
    } else if constexpr (kMode == Sub::kDown) {
      j = l + int(bv);
      ok = j <= max_lane;
    } else if constexpr (kMode == Sub::kBfly) {
      j = l ^ int(bv);
      ok = j <= max_lane;
    } else {
      j = min_lane | int(bv & ~seg);
      ok = j <= max_lane;
    }
    if (!ok) j = l;
    d[l] = (uint32_t(members[l]) & x.mask) >> (j & 31) & 1 ? vals[j & 31] : 0;
    if (p) p[l] = ok;
  });
  return kNext;
}

int Vote(Exec& x, const Inst& in) {
  if (!Converged(x, MemberUnion(x, in.a[1]))) return kRepick;
  const uint64_t* a = Src(x, in.a[0]);
  bool neg = in.src_neg & 1;
  uint64_t* d = Dst(x, in.d[0]);
  ForMemberGroups(x, in.a[1], [&](uint32_t group, uint32_t lanes) {
    uint32_t ballot = 0;
    ForLanes(group, [&](int l) { ballot |= uint32_t((a[l] != 0) != neg) << l; });
    uint64_t v;
    switch (in.sub) {
      case Sub::kAll:
        v = ballot == group;
        break;
      case Sub::kAny:
        v = ballot != 0;
        break;
      case Sub::kUni:
        v = ballot == 0 || ballot == group;
        break;
      default:
        v = ballot;
        break;
    }
    ForLanes(lanes, [&](int l) { d[l] = v; });
  });
  return kNext;
}

int Redux(Exec& x, const Inst& in) {
  if (!Converged(x, MemberUnion(x, in.a[1]))) return kRepick;
  const uint64_t* a = Src(x, in.a[0]);
  bool sgn = in.ty == Ty::kS32;
  uint64_t* d = Dst(x, in.d[0]);
  ForMemberGroups(x, in.a[1], [&](uint32_t group, uint32_t lanes) {
    uint32_t acc = 0;
    bool first = true;
    ForLanes(group, [&](int l) {
      uint32_t v = uint32_t(a[l]);
      if (first) {
        acc = v;
        first = false;
        return;
      }
      switch (in.sub) {
        case Sub::kAdd:
          acc += v;
          break;
        case Sub::kMin:
          acc = sgn ? uint32_t(std::min(int32_t(acc), int32_t(v))) : std::min(acc, v);
          break;
        case Sub::kMax:
          acc = sgn ? uint32_t(std::max(int32_t(acc), int32_t(v))) : std::max(acc, v);
          break;
        case Sub::kAnd:
          acc &= v;
          break;
        case Sub::kOr:
          acc |= v;
          break;
        default:
          acc ^= v;
          break;
      }
    });
    ForLanes(lanes, [&](int l) { d[l] = acc; });
  });
  return kNext;
}

int Match(Exec& x, const Inst& in) {
  if (!Converged(x, MemberUnion(x, in.a[1]))) return kRepick;
  const uint64_t* a = Src(x, in.a[0]);
  uint64_t mask64 = TySize(in.ty) == 8 ? ~0ull : 0xffffffffull;
  uint64_t* d = Dst(x, in.d[0]);
  uint64_t* p = (in.flags & kFlagSecondDest) ? Dst(x, in.d[1]) : nullptr;
  ForMemberGroups(x, in.a[1], [&](uint32_t group, uint32_t lanes) {
    ForLanes(lanes, [&](int l) {
      uint32_t same = 0;
      ForLanes(group, [&](int k) { same |= uint32_t((a[k] & mask64) == (a[l] & mask64)) << k; });
      if (in.sub == Sub::kAll) {
        bool all = same == group;
        d[l] = all ? group : 0;
        if (p) p[l] = all;
      } else {
        d[l] = same;
      }
    });
  });
  return kNext;
}

int Activemask(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  uint32_t m = x.mask;
  ForLanes(x.mask, [&](int l) { d[l] = m; });
  return kNext;
}

// mapa d, a, rank: `a` in the shared memory of the cluster's CTA `rank`. A cluster here is one
// CTA (the device has no cluster launch), so rank 0 is the only one there is.
int Mapa(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const uint64_t* a = Src(x, in.a[0]);
  const uint64_t* rank = Src(x, in.a[1]);
  int fault = -1;
  ForLanes(x.mask, [&](int l) {
    if (uint32_t(rank[l]) != 0 && fault < 0) fault = l;
    d[l] = a[l];
  });
  if (fault >= 0)
    return FaultAt(
        x, err::kLaunchFailure, in,
        "mapa to CTA rank " + std::to_string(uint32_t(rank[fault])) + " of a cluster of one CTA");
  return kNext;
}

}  // namespace

int exec_mov_sreg(Exec& x, const Inst& in) {
  uint64_t* d = Dst(x, in.d[0]);
  const Warp& w = *x.w;
  const LaunchCtx& L = *x.L;
  SReg s = SReg(in.sreg);
  uint64_t u = 0;
  switch (s) {
    case SReg::kTidX:
      ForLanes(x.mask, [&](int l) { d[l] = w.tid[0][l]; });
      return kNext;
    case SReg::kTidY:
      ForLanes(x.mask, [&](int l) { d[l] = w.tid[1][l]; });
      return kNext;
    case SReg::kTidZ:
      ForLanes(x.mask, [&](int l) { d[l] = w.tid[2][l]; });
      return kNext;
    case SReg::kLaneid:
      ForLanes(x.mask, [&](int l) { d[l] = uint32_t(l); });
      return kNext;
    case SReg::kLanemaskEq:
      ForLanes(x.mask, [&](int l) { d[l] = 1u << l; });
      return kNext;
    case SReg::kLanemaskLt:
      ForLanes(x.mask, [&](int l) { d[l] = (1u << l) - 1; });
      return kNext;
    case SReg::kLanemaskLe:
      ForLanes(x.mask, [&](int l) { d[l] = uint32_t((2ull << l) - 1); });
      return kNext;
    case SReg::kLanemaskGt:
      ForLanes(x.mask, [&](int l) { d[l] = uint32_t(~((2ull << l) - 1)); });
      return kNext;
    case SReg::kLanemaskGe:
      ForLanes(x.mask, [&](int l) { d[l] = ~((1u << l) - 1); });
      return kNext;
    case SReg::kNtidX:
      u = L.ntid[0];
      break;
    case SReg::kNtidY:
      u = L.ntid[1];
      break;
    case SReg::kNtidZ:
      u = L.ntid[2];
      break;
    case SReg::kCtaidX:
      u = x.cta->ctaid[0];
      break;
    case SReg::kCtaidY:
      u = x.cta->ctaid[1];
      break;
    case SReg::kCtaidZ:
      u = x.cta->ctaid[2];
      break;
    case SReg::kNctaidX:
      u = L.nctaid[0];
      break;
    case SReg::kNctaidY:
      u = L.nctaid[1];
      break;
    case SReg::kNctaidZ:
      u = L.nctaid[2];
      break;
    case SReg::kWarpid:
      u = w.index;
      break;
    case SReg::kNwarpid:
      u = 64;
      break;
    case SReg::kSmid:
      u = x.cta->worker;
      break;
    case SReg::kNsmid:
      u = L.nworkers;
      break;
    case SReg::kGridid:
      u = L.grid_id;
      break;
    case SReg::kClock:
      u = uint32_t(__rdtsc());
      break;
    case SReg::kClock64:
      u = __rdtsc();
      break;
    case SReg::kGlobaltimer:
      u = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count());
      break;
    case SReg::kEnvreg:
      u = 0;
      break;
    case SReg::kGridWorkspaceHi:
      u = uint32_t(L.cfg->grid_workspace >> 32);
      break;
    case SReg::kGridWorkspaceLo:
      u = uint32_t(L.cfg->grid_workspace);
      break;
    case SReg::kDynSmem:
      u = L.cfg->dynamic_shared_bytes;
      break;
    case SReg::kTotalSmem:
      u = L.shared_total;
      break;
    case SReg::kReservedSmemBegin:
      u = L.reserved_smem;
      break;
    case SReg::kReservedSmem1:
      u = L.reserved_smem + kReservedSmemBytes / 2;
      break;
    case SReg::kReservedSmemEnd:
      u = L.reserved_smem + kReservedSmemBytes;
      break;
    case SReg::kClockHi:
      u = uint32_t(__rdtsc() >> 32);
      break;
    case SReg::kGlobaltimerLo:
    case SReg::kGlobaltimerHi: {
      uint64_t t = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
      u = s == SReg::kGlobaltimerLo ? uint32_t(t) : uint32_t(t >> 32);
      break;
    }
    case SReg::kZero:
      u = 0;
      break;
    case SReg::kOne:
      u = 1;
      break;
  }
  ForLanes(x.mask, [&](int l) { d[l] = u; });
  return kNext;
}

int exec_unimplemented(Exec& x, const Inst& in) {
  return FaultAt(x, err::kLaunchFailure, in, "instruction form not implemented");
}

ExecFn select_Bra(Inst&) {
  return &Bra;
}
ExecFn select_Exit(Inst&) {
  return &Exit;
}
ExecFn select_Ret(Inst&) {
  return &Ret;
}
ExecFn select_Trap(Inst&) {
  return &Trap;
}
ExecFn select_Call(Inst&) {
  return &Call;
}
ExecFn select_Brx(Inst& in) {
  return in.sub == Sub::kIdx ? &Brx : nullptr;
}
ExecFn select_Alloca(Inst& in) {
  return StackTyped(in) ? &Alloca : nullptr;
}
ExecFn select_Stacksave(Inst& in) {
  return StackTyped(in) ? &Stacksave : nullptr;
}
ExecFn select_Stackrestore(Inst& in) {
  return StackTyped(in) ? &Stackrestore : nullptr;
}
ExecFn select_Bar(Inst& in) {
  if (in.sub2 == Sub::kUni) return &BarWarpSync;
  if ((in.flags & kFlagPredOut) && in.sub != Sub::kPopc && in.sub != Sub::kAnd &&
      in.sub != Sub::kOr)
    return nullptr;
  return &BarSync;
}
ExecFn select_Barrier(Inst& in) {
  return select_Bar(in);
}
ExecFn select_Shfl(Inst& in) {
  switch (in.sub) {
    case Sub::kUp:
      return &Shfl<Sub::kUp>;
    case Sub::kDown:
      return &Shfl<Sub::kDown>;
    case Sub::kBfly:
      return &Shfl<Sub::kBfly>;
    case Sub::kIdx:
      return &Shfl<Sub::kIdx>;
    default:
      return nullptr;
  }
}
ExecFn select_Vote(Inst& in) {
  if (in.sub == Sub::kBallot ? in.ty != Ty::kB32 : in.ty != Ty::kPred) return nullptr;
  return &Vote;
}
ExecFn select_Redux(Inst& in) {
  if (in.ty != Ty::kU32 && in.ty != Ty::kS32 && in.ty != Ty::kB32) return nullptr;
  return &Redux;
}
ExecFn select_Match(Inst& in) {
  return in.sub == Sub::kAny || in.sub == Sub::kAll ? &Match : nullptr;
}
ExecFn select_Mapa(Inst&) {
  return &Mapa;
}
ExecFn select_Activemask(Inst&) {
  return &Activemask;
}

}  // namespace remora::emu::ptx
