// emu/ptx/launch.cc - Launch: a grid to the device's block dispatcher (dispatch.h), or a
// cooperative one over workers of its own (coop.cc); warps over converged groups.
//
// Scheduling: a core runs whole CTAs, one at a time. Within a CTA the warps run in turns, paced
// by the instructions each has issued (RunWarpsInTurns), until all their lanes are parked at a
// CTA barrier or exited; then barriers whose arrivals are complete release. Within a warp, the
// group to run is the set of lanes sharing the deepest frame and the lowest PC (lanes that diverged
// rejoin when their PCs meet); a group runs decoded instructions back to back until it branches
// apart, reaches another group's PC, or parks. A block whose threads are all at one PC in one frame
// (at its start, after a barrier they all reached) first runs its warps together, an instruction
// across every warp at a time (Lockstep), until one needs them apart: barriers every thread reaches
// together then cost nothing, and what reads only values every warp holds alike runs once, on warp
// 0 (AlikeSlots). How each instruction is taken then is worked out once per program (PlanTogether),
// with the function that runs the commonest forms over all the warps in one call (exec.h's
// RunWarps).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "emu/ptx/async.h"
#include "emu/ptx/dispatch.h"
#include "emu/ptx/exec.h"
#include "emu/ptx/interp.h"
#include "emu/ptx/sched.h"

namespace remora::emu::ptx {

namespace {

// Helper threads of cooperative launches, created on first need and kept: a launch posts one
// ticket per helper it wants, runs worker 0 itself, then takes back the tickets no helper has
// started and waits for the started ones. A small grid therefore pays no thread creation, and
// a ticket that arrives after the work ran out costs one wake-up. Two pools: kernels of streams
// above the least priority get helpers at kRankedDeviceNice, as their streams' workers run,
// so the host's CPU does not split the same between their blocks and the blocks they outrank.
class WorkerPool {
 public:
  static WorkerPool& Get(int priority) {
    static WorkerPool least(kDeviceNice), ranked(kRankedDeviceNice);
    return priority < 0 ? ranked : least;
  }
  explicit WorkerPool(int nice) : nice_(nice) {}
  ~WorkerPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // Runs fn(0) on the calling thread and fn(1..n-1) on helpers; returns when all have returned.
  // Idle helpers take the tickets of the highest `priority` (CUDA's order: lower is higher)
  // first, oldest first among equals.
  template <class Fn>
  void Run(unsigned n, int priority, Fn& fn) {
    if (n <= 1) {
      fn(0u);
      return;
    }
    Job job;
    job.priority = priority;
    job.fn = [&fn](unsigned w) { fn(w); };
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (threads_.size() < n - 1) threads_.emplace_back([this] { Loop(); });
      for (unsigned i = 1; i < n; ++i) queue_.push_back(&job);
      job.outstanding = n - 1;
    }
    if (n == 2)
      work_cv_.notify_one();
    else
      work_cv_.notify_all();
    fn(0u);
    std::unique_lock<std::mutex> lock(mu_);
    for (auto it = queue_.begin(); it != queue_.end();) {  // tickets nobody started
      if (*it == &job) {
        it = queue_.erase(it);
        --job.outstanding;
      } else {
        ++it;
      }
    }
    done_cv_.wait(lock, [&] { return job.outstanding == 0; });
  }

 private:
  struct Job {
    std::function<void(unsigned)> fn;
    int priority = 0;
    unsigned next_worker = 1;  // guarded by mu_
    unsigned outstanding = 0;  // tickets queued or running; guarded by mu_
  };

  void Loop() {
    BecomeDeviceThread(nice_);
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      auto best = std::min_element(queue_.begin(), queue_.end(), [](const Job* a, const Job* b) {
        return a->priority < b->priority;
      });
      Job* job = *best;
      queue_.erase(best);
      unsigned worker = job->next_worker++;
      lock.unlock();
      job->fn(worker);
      lock.lock();
      if (--job->outstanding == 0) done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> queue_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  const int nice_;
};

// Instructions a warp of an ordinary block runs before it parks as kYield until its block's
// next round: a warp spinning on another
// warp's progress (a block-scope barrier made of shared-memory atomics, as libcu++ builds
// cuda::barrier before sm_80) or on another block's lets that one run.
constexpr uint64_t kSliceInstructions = 4096;
// The same for a block that takes turns with others on the workers (RunResident: a cooperative
// grid, or an ordinary grid whose blocks wait on each other). Blocks spinning on a flag another
// block sets (cuSPARSE's triangular solves, a grid barrier) each burn their slice while the
// block that would set it waits for a worker, so a short slice brings that block round sooner:
// a 65,536-row SpSV took 4.9 s at 4096 and 1.8 s at 256, EmuKernels.AGridTheDeviceHoldsIsAll-
// Resident 16.9 s and 5.4 s. Ordinary blocks keep the long slice: warps that part from each
// other switch turns at every slice's end (BM_PartedWarps 11% slower at 256).
constexpr uint64_t kResidentSliceInstructions = 256;
// Instructions the rest of a warp runs when a group of its lanes ran a whole slice by itself
// (spinning, most likely): enough for a lane holding a lock its siblings spin on to reach the
// release, little enough that lanes which only diverged for a moment do not run far ahead of
// the others (Parboil's tpacf reads a tile its own warp's lanes refill once past the loop).
constexpr uint64_t kSiblingInstructions = 64;

// While a block's warps run apart (after Lockstep), each keeps a clock: the instructions it has
// issued since they parted. Instructions that touch only a lane's own registers run whenever
// their warp runs; one that writes memory the block's other warps see (Inst::visible) runs only
// when its warp's clock is the least of the block's running warps (the lowest warp among
// equals), and one that reads it within kReadAhead instructions of that. A write then meets the
// other warps' accesses in the order a GPU issuing one instruction of each warp in turn would
// give them, and a read all the writes issued well before it, so code whose warps race on
// shared memory between two barriers (a flag read by all and reset by one, a tile refilled by
// the warps that finish first, a value written early and read much later) comes out as on a
// GPU; yet a warp runs on between its writes, a few dozen reads at a time, without a switch.
// (Turns of one instruction each cost the interpreter 55% on code whose warps part, emu_ptx_
// bench's BM_PartedWarps; pacing reads as exactly as writes, 17% on curand_init's reads of its
// tables, which reading ahead brings to 2%.)
constexpr uint64_t kReadAhead = 64;

// A warp's running group: the lanes of one frame at one PC (exec.h's Exec), kept between turns.
struct Turn {
  Exec x;
  uint32_t group_n = 0;      // lanes in x.group
  uint64_t clock = 0;        // instructions issued since the round began
  uint64_t group_start = 0;  // the warp's instruction count when x's group was picked
  uint64_t slice_end = 0;    // the warp's instruction count at which it parks as kYield
  bool running = false;      // x holds a group part-way through
};

// Picks the warp's next group into t: the candidates' deepest frame, lowest PC there, running
// until it meets another group of its frame. False if no lane can run (every one parked or
// exited), or the warp's slice is over (its runnable lanes then park as kYield).
[[gnu::always_inline]] inline bool PickGroup(const LaunchCtx& L, Cta& cta, Warp& w, Turn& t) {
  // Lanes that can run, as masks; collectives' waiters only run when no lane can (force).
  const uint32_t run = LanesEq(w.state, LaneState::kRun);
  const uint32_t coll = LanesEq(w.state, LaneState::kWaitColl);
  const uint32_t mbar = LanesAtLeast(w.state, LaneState::kWaitMbar);
  const uint32_t cand = run ? run : coll;
  // A collective does not go ahead without lanes of the warp that wait on an mbarrier:
  // they run again once RunRounds resumes them.
  if (cand == 0 || (run == 0 && mbar != 0)) return false;
  // Groups that keep repicking (never a slice of instructions in a row) still yield.
  if (run != 0 && w.instructions >= t.slice_end) [[unlikely]] {
    ForLanes(run, [&](int l) { w.state[l] = LaneState::kYield; });
    ++cta.slice_yields;
    return false;
  }
  // Converged warps (every candidate at one PC and frame) take it without a walk over the
  // lanes. Without calls every lane's frame is the kernel's: no frame to compare.
  int best = std::countr_zero(cand);
  uint32_t same_rb = L.has_calls ? LanesEq(w.rbase, w.rbase[best]) : ~0u;
  uint32_t same_pc = LanesEq(w.pc, w.pc[best]);
  if ((cand & ~(same_rb & same_pc)) != 0) {
    ForLanes(cand & (cand - 1), [&](int l) {
      if (w.rbase[l] > w.rbase[best] || (w.rbase[l] == w.rbase[best] && w.pc[l] < w.pc[best]))
        best = l;
    });
    same_rb = L.has_calls ? LanesEq(w.rbase, w.rbase[best]) : ~0u;
    same_pc = LanesEq(w.pc, w.pc[best]);
  }
  const uint32_t pc = w.pc[best], rb = w.rbase[best];
  const uint32_t in_frame = (run | coll) & same_rb;
  const uint32_t group = in_frame & same_pc;
  uint32_t stop = 0xffffffffu;
  ForLanes(in_frame & ~group, [&](int l) {
    if (w.pc[l] > pc && w.pc[l] < stop) stop = w.pc[l];
  });
  ForLanes(group & coll, [&](int l) { w.state[l] = LaneState::kRun; });
  t.x = Exec{&w,
             &cta,
             &L,
             w.regs.data() + size_t(rb) * 32,
             L.P->consts.data(),
             group,
             group,
             pc,
             stop,
             rb,
             w.lbase[best],
             run == 0};
  t.group_n = uint32_t(std::popcount(group));  // popcount is a libgcc call here
  t.group_start = w.instructions;
  t.running = true;
  return true;
}

// How RunGroup returned.
enum class GroupEnd : uint8_t {
  kParted,  // the group ended: it parked, branched apart, or met another; its lanes' PCs are set
  kBudget,  // t.x.pc is its next instruction, not yet run: past its budget, or a visible one
            // its clock may not run yet
  kFault,   // a fault was recorded
};

// Runs t's group from t.x.pc, decoded instructions back to back: at most `budget`, a write
// to memory other warps see (Inst::visible) only while the warp's clock is at most
// `visible_until`, and a read while it is at most kReadAhead past that.
[[gnu::always_inline]] inline GroupEnd RunGroup(const LaunchCtx& L, Turn& t, uint64_t budget,
                                                uint64_t visible_until) {
  const Inst* code = L.P->code.data();
  Exec x = t.x;  // a local: the compiler keeps what the calls cannot reach in registers
  Warp& w = *x.w;
  const uint32_t group_n = t.group_n;
  const uint64_t clock = t.clock;
  // The clock past which each kind of instruction (Inst::visible) waits.
  const uint64_t reads_until =
      visible_until > ~uint64_t(0) - kReadAhead ? ~uint64_t(0) : visible_until + kReadAhead;
  const uint64_t until[3] = {~uint64_t(0), reads_until, visible_until};
  uint64_t warp_n = 0, thread_n = 0;
  GroupEnd end = GroupEnd::kParted;
  for (;;) {
    const Inst& in = code[x.pc];
    if (warp_n == budget || clock + warp_n > until[size_t(in.visible)]) [[unlikely]] {
      end = GroupEnd::kBudget;
      break;
    }
    uint32_t m = x.group;
    if (in.guard != kNoReg) {
      const uint32_t gm = LanesNonZero(x.R + size_t(in.guard) * 32);
      m = (in.flags & kFlagGuardNeg) ? (m & ~gm) : (m & gm);
    }
    ++warp_n;
    if (m == 0) {
      ++x.pc;
    } else {
      x.mask = m;
      thread_n += m == x.group ? group_n : uint32_t(std::popcount(m));
      const int r = in.fn(x, in);
      if (r == kNext) [[likely]] {
        ++x.pc;
      } else if (r == kRepick) {
        break;
      } else if (r == kFault) [[unlikely]] {
        end = GroupEnd::kFault;
        break;
      }
    }
    x.force = false;
    if (x.pc >= x.stop_pc) [[unlikely]] {
      ForLanes(x.group, [&](int l) { w.pc[l] = x.pc; });
      break;
    }
  }
  w.instructions += warp_n;
  w.thread_instructions += thread_n;
  t.clock += warp_n;
  t.x = x;
  if (end != GroupEnd::kBudget) t.running = false;
  return end;
}

// Leaves t's group where it stopped: its lanes' PCs at t.x.pc, as `state`.
void Suspend(Turn& t, LaneState state) {
  Warp& w = *t.x.w;
  ForLanes(t.x.group, [&](int l) {
    w.pc[l] = t.x.pc;
    w.state[l] = state;
  });
  t.running = false;
}

// Runs the block's warps, each in turns by its clock (Turn), until every lane is parked or
// exited, or its warp used its slice (`slice` instructions). Within a warp, a group runs until it
// parks, branches apart or meets another group; then the next is picked. False after a fault or a
// cancel (recorded in L).
bool RunWarpsInTurns(const LaunchCtx& L, Cta& cta, uint32_t nwarps, uint64_t slice) {
  Turn turns[32];
  // The warps that may have a group, by clock and then warp: the first runs, and its visible
  // instructions may go up to the clock of the second (one less if that is a lower warp). Only
  // the running warp's clock moves, so after its turn it moves back in the order, mostly to
  // the end: a turn costs the same whatever the block's size.
  uint8_t order[32];
  uint32_t n = nwarps;
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    turns[wi].slice_end = cta.warps[wi].instructions + slice;
    order[wi] = uint8_t(wi);
  }
  const auto key = [&](uint32_t wi) { return turns[wi].clock << 5 | wi; };
  uint64_t ran = 0, next_poll = 4096;
  while (n > 0) {
    const uint32_t wi = order[0];
    uint64_t until = ~uint64_t(0);
    if (n > 1) until = order[1] > wi ? turns[order[1]].clock : turns[order[1]].clock - 1;
    Warp& w = cta.warps[wi];
    Turn& t = turns[wi];
    bool done = false;  // no lane of the warp can run this round
    for (;;) {
      if (!t.running && !PickGroup(L, cta, w, t)) {
        done = true;
        break;
      }
      if (w.instructions >= t.slice_end) {
        // The warp used its slice: the group waits for the next round. One that ran the whole
        // slice by itself is likely spinning on the warp's other lanes (on a lock one of them
        // holds): those get kSiblingInstructions now, as a GPU lets a warp's diverged threads
        // each progress. Each such turn parks lanes, so a round ends. Otherwise the warp's
        // round ends here: its lanes stay together, to meet where their paths join.
        const bool spun = w.instructions - t.group_start >= slice;
        Suspend(t, LaneState::kYield);
        ++cta.slice_yields;
        if (!spun) {
          done = true;
          break;
        }
        t.slice_end = w.instructions + kSiblingInstructions;
        continue;
      }
      const uint64_t before = w.instructions;
      const GroupEnd end = RunGroup(L, t, t.slice_end - before, until);
      if (end == GroupEnd::kFault) return false;
      ran += w.instructions - before;
      if (end == GroupEnd::kBudget) break;  // another warp's turn
    }
    if (done) {
      std::memmove(order, order + 1, --n);
    } else {
      uint32_t at = n;  // where the warp goes back: past every warp of a lower key
      while (at > 1 && key(order[at - 1]) > key(wi)) --at;
      std::memmove(order, order + 1, at - 1);
      order[at - 1] = uint8_t(wi);
    }
    if (L.poll && ran >= next_poll) [[unlikely]] {
      next_poll = ran + 4096;
      if (Cancelled(L)) {
        for (uint32_t v = 0; v < nwarps; ++v)
          if (turns[v].running) Suspend(turns[v], LaneState::kRun);
        return false;
      }
    }
  }
  return true;
}

// Releases every barrier whose arrivals are complete; false if none could be.
bool ReleaseBarriers(const LaunchCtx& L, Cta& cta, uint32_t live) {
  bool released = false;
  const uint32_t nwarps = (L.nthreads + 31) / 32;
  for (uint32_t id = 0; id < 16; ++id) {
    if (cta.bar_arrived[id] == 0) continue;
    uint32_t expected = cta.bar_expected[id] ? cta.bar_expected[id] : live;
    if (cta.bar_arrived[id] < expected) {
      // Not all arrivals yet: it still releases once every live thread waits on it.
      uint32_t waiting = 0;
      for (uint32_t wi = 0; wi < nwarps; ++wi) {
        const Warp& w = cta.warps[wi];
        waiting +=
            uint32_t(std::popcount(LanesEq(w.state, LaneState::kWaitBar) & LanesEq(w.bar_id, id)));
      }
      if (waiting < live) continue;
    }
    uint32_t result = cta.bar_red[id];
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      Warp& w = cta.warps[wi];
      uint32_t waiters = LanesEq(w.state, LaneState::kWaitBar) & LanesEq(w.bar_id, id);
      while (waiters) {  // by PC: the lanes of a warp mostly wait at one barrier instruction
        const uint32_t pc = w.pc[std::countr_zero(waiters)];
        const uint32_t at = waiters & LanesEq(w.pc, pc);
        waiters &= ~at;
        const Inst& in = L.P->code[pc];
        const bool pred_out =
            (in.op == Op::kBar || in.op == Op::kBarrier) && (in.flags & kFlagPredOut);
        if (at == 0xffffffffu && !pred_out) {  // the whole warp: one store
          std::fill_n(w.state, 32, LaneState::kRun);
          continue;
        }
        const uint64_t v = in.sub == Sub::kPopc ? result : (result != 0);
        ForLanes(at, [&](int l) {
          w.state[l] = LaneState::kRun;
          if (pred_out) {
            w.regs[(size_t(w.rbase[l]) + in.d[0]) * 32 + size_t(l)] = v;
            ++w.pc[l];
          }
        });
      }
    }
    cta.bar_arrived[id] = 0;
    cta.bar_expected[id] = 0;
    cta.bar_red[id] = 0;
    released = true;
  }
  return released;
}

}  // namespace

// Per launch and worker: sizes the reused Cta for this kernel and block shape, computes each
// lane's %tid (the same for every block), zeroes shared and local memory.
void PrepareCta(const LaunchCtx& L, Cta& cta, unsigned worker) {
  const ProgramImpl& P = *L.P;
  const Function& f = P.funcs[P.kernel_func[L.kernel_index]];
  cta.worker = worker;
  cta.nthreads = L.nthreads;
  cta.local_stride = L.local_stride;
  cta.shared_size = L.reserved_smem + kReservedSmemBytes;
  size_t shared_words = (size_t(cta.shared_size) + 7) / 8 + 1;
  size_t local_words = (size_t(L.local_stride) * L.nthreads + 7) / 8 + 1;
  if (cta.shared.size() < shared_words) cta.shared.resize(shared_words);
  if (cta.local.size() < local_words) cta.local.resize(local_words);
  std::fill_n(cta.shared.begin(), shared_words, 0);
  std::fill_n(cta.local.begin(), local_words, 0);
  uint32_t nwarps = (L.nthreads + 31) / 32;
  if (cta.warps.size() < nwarps) cta.warps.resize(nwarps);
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = cta.warps[wi];
    w.index = wi;
    w.valid = 0;
    w.instructions = w.thread_instructions = 0;
    w.ClearCache();  // allocations may have changed since the last launch
    std::fill_n(w.rbase, 32, 0u);
    std::fill_n(w.lbase, 32, 0u);
    std::fill_n(w.bar_id, 32, 0u);
    if (w.regs.size() < size_t(f.nregs) * 32) w.regs.resize(size_t(f.nregs) * 32);
    if (w.stack.size() < 32) w.stack.resize(32);
    for (int l = 0; l < 32; ++l) {
      uint32_t t = wi * 32 + uint32_t(l);
      w.stack[l].clear();
      if (t < L.nthreads) {
        w.valid |= 1u << l;
        w.tid[0][l] = t % L.ntid[0];
        w.tid[1][l] = t / L.ntid[0] % L.ntid[1];
        w.tid[2][l] = t / (L.ntid[0] * L.ntid[1]);
      } else {
        w.tid[0][l] = w.tid[1][l] = w.tid[2][l] = 0;
      }
    }
  }
}

void CountInstructions(const LaunchCtx& L, Cta& cta, std::atomic<uint64_t>& warp_n,
                       std::atomic<uint64_t>& thread_n) {
  uint64_t wn = 0, tn = 0;
  for (uint32_t wi = 0; wi < (L.nthreads + 31) / 32; ++wi) {
    wn += std::exchange(cta.warps[wi].instructions, 0);
    tn += std::exchange(cta.warps[wi].thread_instructions, 0);
  }
  warp_n.fetch_add(wn, std::memory_order_relaxed);
  thread_n.fetch_add(tn, std::memory_order_relaxed);
}

void TrimCta(Cta& cta) {
  constexpr size_t kKeepWords = (4u << 20) / 8;
  if (cta.local.size() > kKeepWords) std::vector<uint64_t>().swap(cta.local);
  if (cta.warps.size() > 32) std::vector<Warp>().swap(cta.warps);
}

namespace {

// Scheduling rounds a CTA may spend with every live lane waiting on mbarriers and none of their
// phases completing, before the launch fails as deadlocked (each round times out the waits).
constexpr uint32_t kMaxIdleRounds = 1024;

}  // namespace

void StartCta(const LaunchCtx& L, Cta& cta, uint64_t linear) {
  const ProgramImpl& P = *L.P;
  const Function& f = P.funcs[P.kernel_func[L.kernel_index]];
  cta.ctaid[0] = uint32_t(linear % L.nctaid[0]);
  cta.ctaid[1] = uint32_t(linear / L.nctaid[0] % L.nctaid[1]);
  cta.ctaid[2] = uint32_t(linear / (uint64_t(L.nctaid[0]) * L.nctaid[1]));
  uint32_t nwarps = (L.nthreads + 31) / 32;
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = cta.warps[wi];
    w.carry = 0;
    std::fill_n(w.pc, 32, f.entry_pc);
    for (int l = 0; l < 32; ++l)
      w.state[l] = (w.valid >> l & 1) ? LaneState::kRun : LaneState::kInvalid;
    // Frame bases move only at calls (PrepareCta zeroed them for the launch); bar_id is read only
    // beside a waiting state, which sets it.
    if (L.has_calls) {
      std::fill_n(w.rbase, 32, 0u);
      std::fill_n(w.lbase, 32, 0u);
      for (auto& st : w.stack) st.clear();
    }
    if (L.has_alloca) std::fill_n(w.dyn, 32, L.local_stride);  // no allocas yet
  }
  std::fill(std::begin(cta.bar_arrived), std::end(cta.bar_arrived), 0u);
  std::fill(std::begin(cta.bar_expected), std::end(cta.bar_expected), 0u);
  std::fill(std::begin(cta.bar_red), std::end(cta.bar_red), 0u);
  cta.idle_rounds = 0;
}

namespace {

// The kind of an instruction for warps that run together (ignoring a barrier's state).
Together::Kind KindOf(const ProgramImpl& P, const Inst& in, Together& t) {
  // Arithmetic, comparison, data movement, loads, stores, atomics and fences (ops.def's rows
  // add to fence), scalar video (vadd to vset), griddepcontrol (nothing to do), textures and
  // surfaces (tex to suq): none parks a lane, branches or reads another lane.
  if ((in.op >= Op::kAdd && in.op <= Op::kFence) || (in.op >= Op::kVadd && in.op <= Op::kVset) ||
      in.op == Op::kGriddepcontrol || (in.op >= Op::kTex && in.op <= Op::kSuq))
    return Together::kEach;
  if (in.op == Op::kBra) return Together::kBranch;
  if ((in.op == Op::kBar || in.op == Op::kBarrier) && in.guard == kNoReg && in.sub2 != Sub::kUni &&
      !(in.flags & (kFlagPredOut | kFlagArrive)) && (in.a[0] & kConstSlot) &&
      (in.na < 2 || (in.a[1] & kConstSlot))) {
    const uint64_t* K = P.consts.data();
    t.bar = uint8_t(uint32_t(K[size_t(in.a[0] & ~kConstSlot) << 5]) & 15);
    t.count = in.na < 2 ? 0 : uint32_t(K[size_t(in.a[1] & ~kConstSlot) << 5]);
    return Together::kBarrier;
  }
  return Together::kLeave;
}

// A barrier every thread reaches at once, with none of its threads already waiting, is passed;
// otherwise the warps leave.
Together::Kind StepOf(const LaunchCtx& L, const Cta& cta, const Together& t) {
  if (t.kind != Together::kBarrier) [[likely]]
    return t.kind;
  return (t.count == 0 || t.count == L.nthreads) && cta.bar_arrived[t.bar] == 0 ? Together::kBarrier
                                                                                : Together::kLeave;
}

// True if every thread runs and all are at one PC, in one frame.
bool BlockConverged(const LaunchCtx& L, const Cta& cta, uint32_t nwarps) {
  const Warp& w0 = cta.warps[0];
  const uint32_t pc = w0.pc[0], rb = w0.rbase[0], lb = w0.lbase[0];
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    const Warp& w = cta.warps[wi];
    uint32_t m = LanesEq(w.state, LaneState::kRun) & LanesEq(w.pc, pc);
    if (L.has_calls) m &= LanesEq(w.rbase, rb) & LanesEq(w.lbase, lb);
    if ((m & w.valid) != w.valid) return false;
  }
  return true;
}

// True if `in`, unguarded, computes its destinations from its register operands alone, the
// same way in every warp: arithmetic, comparison, conversion and moves, and loads of kernel
// parameters; nothing that reads memory, the carry flag or a special register that differs
// between warps (%tid, %warpid, %smid, clocks).
bool SameInEveryWarp(const Inst& in) {
  if (in.guard != kNoReg || (in.flags & kFlagCarryOut)) return false;
  if ((in.op >= Op::kAdd && in.op <= Op::kSlct) ||  // arithmetic, comparison and selection
      (in.op >= Op::kVadd && in.op <= Op::kVset))
    return in.op != Op::kAddc && in.op != Op::kSubc && in.op != Op::kMadc;
  switch (in.op) {
    case Op::kCvt:
    case Op::kCvta:
      return true;
    case Op::kLd:
      return in.space == Space::kParam && in.base == kNoReg && in.symkind != SymKind::kFrame;
    case Op::kMov:
      if (in.sub != Sub::kIdx) return true;  // not a special register
      switch (SReg(in.sreg)) {
        case SReg::kTidX:
        case SReg::kTidY:
        case SReg::kTidZ:
        case SReg::kWarpid:
        case SReg::kSmid:
        case SReg::kClock:
        case SReg::kClock64:
        case SReg::kClockHi:
        case SReg::kGlobaltimer:
        case SReg::kGlobaltimerLo:
        case SReg::kGlobaltimerHi:
          return false;
        default:
          return true;
      }
    default:
      return false;
  }
}

// Whether `in` reads or writes memory that other warps of the block can see: shared or global
// memory, directly or through a generic address. Local, parameter and constant memory are a
// lane's own or read-only; textures are read as of the launch. Atomics, asynchronous copies
// (into shared memory), mbarriers and wmma (its stores among its forms) write.
Visible VisibleToOtherWarps(const Inst& in) {
  const bool shared_or_global =
      in.space == Space::kGeneric || in.space == Space::kGlobal || in.space == Space::kShared;
  switch (in.op) {
    case Op::kLd:
    case Op::kLdu:
      return shared_or_global ? Visible::kReads : Visible::kNo;
    case Op::kSt:
      return shared_or_global ? Visible::kWrites : Visible::kNo;
    case Op::kLdmatrix:
    case Op::kSuld:
      return Visible::kReads;
    case Op::kAtom:
    case Op::kRed:
    case Op::kCp:
    case Op::kMbarrier:
    case Op::kWmma:
    case Op::kSust:
    case Op::kSured:
      return Visible::kWrites;
    default:
      return Visible::kNo;
  }
}

}  // namespace

void PlanTogether(ProgramImpl& P) {
  P.together.assign(P.code.size(), Together{});
  for (size_t pc = 0; pc < P.code.size(); ++pc) {
    Inst& in = P.code[pc];
    in.visible = VisibleToOtherWarps(in);
    Together& t = P.together[pc];
    t.kind = KindOf(P, in, t);
    t.once = SameInEveryWarp(in);
    auto touch = [&t](uint32_t slot) {
      if (slot < 64)
        t.touch_lo |= uint64_t(1) << slot;
      else
        t.touch_hi = true;
      return slot;
    };
    ForOperandReads(in, [&](uint32_t s) { t.read[t.nread++] = touch(s); });
    ForOperandWrites(in, [&](uint32_t s) { t.write[t.nwrite++] = touch(s); });
    if (t.kind == Together::kEach) {
      t.each = WarpsOfInt(in.fn);
      if (!t.each) t.each = WarpsOfFloat(in.fn);
      if (!t.each) t.each = WarpsOfMem(in.fn);
    }
  }
}

namespace {

// The register slots of the frame that every warp holds alike (the same value in each lane as
// warp 0), while the warps run together. A value computed once, on warp 0, reaches the other
// warps only when an instruction run in each of them touches it, or when they part.
class AlikeSlots {
 public:
  AlikeSlots(std::vector<uint8_t>& state, const Exec* xs, uint32_t nwarps, size_t nslots)
      : s_(state), xs_(xs), nwarps_(nwarps) {
    s_.assign(nslots, kDiffer);
  }
  // True if every register the instruction reads is alike (constants are).
  bool SourcesAlike(const Together& t) const {
    for (uint32_t i = 0; i < t.nread; ++i)
      if (s_[t.read[i]] == kDiffer) return false;
    return true;
  }
  bool Alike(uint32_t slot) const { return s_[slot] != kDiffer; }
  // The instruction ran on warp 0 alone: its destinations are alike, held by warp 0 only.
  void RanOnce(const Together& t) {
    for (uint32_t i = 0; i < t.nwrite; ++i) {
      const uint32_t slot = t.write[i];
      if (s_[slot] == kWarp0Only) continue;
      s_[slot] = kWarp0Only;
      if (slot < 64)
        pending_lo_ |= uint64_t(1) << slot;
      else
        ++pending_hi_;
    }
  }
  // Before the instruction runs in each warp: every register it reads, and every one it writes
  // in some lanes only (`every_lane` false: it has a guard), holds its value in every warp. One
  // it writes in every lane of every warp and does not read is not copied, only overwritten
  // (with registers packed by liveness, a slot warp 0 alone holds is often a dead value's).
  void Prepare(const Together& t, bool every_lane) {
    if (!(t.touch_lo & pending_lo_) && !(t.touch_hi && pending_hi_)) return;  // nothing to spread
    for (uint32_t i = 0; i < t.nread; ++i) Spread(t.read[i]);
    for (uint32_t i = 0; i < t.nwrite; ++i) {
      if (every_lane)
        Settle(t.write[i]);
      else
        Spread(t.write[i]);
    }
  }
  // The instruction ran in each warp: what it wrote may differ between them.
  void RanEach(const Together& t) {
    for (uint32_t i = 0; i < t.nwrite; ++i) s_[t.write[i]] = kDiffer;
  }
  // The warps part: each holds all of its values.
  void SpreadAll() {
    if (!pending_lo_ && !pending_hi_) return;
    for (size_t slot = 0; slot < s_.size(); ++slot) Spread(uint32_t(slot));
  }

 private:
  enum : uint8_t { kDiffer, kEveryWarp, kWarp0Only };
  // Warp 0's value no longer owed to the other warps: copied, or about to be overwritten in all.
  void Settle(uint32_t slot) {
    if (s_[slot] != kWarp0Only) return;
    s_[slot] = kEveryWarp;
    if (slot < 64)
      pending_lo_ &= ~(uint64_t(1) << slot);
    else
      --pending_hi_;
  }
  void Spread(uint32_t slot) {
    if (s_[slot] != kWarp0Only) return;
    // Warp 0's 32 values written to each other warp (a fixed-size copy: the widest host moves).
    const uint64_t* from = xs_[0].R + size_t(slot) * 32;
    for (uint32_t wi = 1; wi < nwarps_; ++wi)
      std::memcpy(xs_[wi].R + size_t(slot) * 32, from, 32 * sizeof(uint64_t));
    Settle(slot);
  }
  std::vector<uint8_t>& s_;
  const Exec* xs_;
  const uint32_t nwarps_;
  // The slots held by warp 0 only: a bit each below 64, a count of those above.
  uint64_t pending_lo_ = 0;
  uint32_t pending_hi_ = 0;
};

// An instruction a warp ran in lockstep returned `r`: true to go on. It can only fault: any
// other result (one that parks or moves lanes) is a launch failure, never lanes left behind.
bool Ran(Exec& x, const Inst& in, int r) {
  if (r == kNext) [[likely]]
    return true;
  if (r != kFault) FaultAt(x, err::kLaunchFailure, in, "ran apart from its warp");
  return false;
}

// Runs a converged block's warps together, one instruction at a time across all of them (an
// order a GPU may run them in), until an instruction needs them apart (Together::kLeave, a branch
// that splits them); leaves every lane's PC there. The barriers of code such as a block scan,
// where every thread arrives together, then cost nothing, and no warp is rescheduled at each.
// Calls and returns run apart. False after a fault.
bool Lockstep(const LaunchCtx& L, Cta& cta) {
  const ProgramImpl& P = *L.P;
  const Inst* code = P.code.data();
  const Together* plan = P.together.data();
  const uint32_t nwarps = (L.nthreads + 31) / 32;
  Exec xs[32];
  for (uint32_t wi = 0; wi < nwarps; ++wi) {
    Warp& w = cta.warps[wi];
    const uint32_t rb = w.rbase[0];
    xs[wi] = Exec{.w = &w,
                  .cta = &cta,
                  .L = &L,
                  .R = w.regs.data() + size_t(rb) * 32,
                  .K = P.consts.data(),
                  .mask = w.valid,
                  .group = w.valid,
                  .pc = 0,
                  .stop_pc = ~0u,
                  .rbase = rb,
                  .lbase = w.lbase[0],
                  .force = false};
  }
  AlikeSlots alike(cta.alike, xs, nwarps, cta.warps[0].regs.size() / 32 - cta.warps[0].rbase[0]);
  uint32_t pc = cta.warps[0].pc[0];
  uint64_t warp_n = 0, thread_n = 0, next_poll = 4096;
  bool ok = true;
  for (;;) {
    const Inst& in = code[pc];
    const Together& t = plan[pc];
    const Together::Kind step = StepOf(L, cta, t);
    if (step == Together::kLeave) break;
    if (L.poll && warp_n >= next_poll) [[unlikely]] {
      next_poll = warp_n + 4096;
      if (Cancelled(L)) {
        ok = false;
        break;
      }
    }
    warp_n += nwarps;
    if (step == Together::kBarrier) {
      thread_n += L.nthreads;
      ++pc;
      continue;
    }
    if (in.guard == kNoReg) {  // every lane of every warp
      thread_n += L.nthreads;
      if (step == Together::kBranch) {
        pc = in.target;
        continue;
      }
      if (nwarps > 1 && t.once && alike.SourcesAlike(t)) {
        xs[0].pc = pc;  // once, on warp 0
        if (!Ran(xs[0], in, in.fn(xs[0], in))) {
          ok = false;
          break;
        }
        alike.RanOnce(t);
        ++pc;
        continue;
      }
      alike.Prepare(t, true);
      if (t.each) {
        uint32_t at = 0;
        const int r = t.each(xs, nwarps, in, &at);
        if (r != kNext) [[unlikely]] {
          xs[at].pc = pc;
          ok = Ran(xs[at], in, r);
        }
      } else {
        for (uint32_t wi = 0; wi < nwarps && ok; ++wi) {
          xs[wi].pc = pc;
          ok = Ran(xs[wi], in, in.fn(xs[wi], in));
        }
      }
      if (!ok) break;
      alike.RanEach(t);
      ++pc;
      continue;
    }
    uint32_t masks[32];
    uint32_t any = 0, all = ~0u;
    const bool same_guard = alike.Alike(in.guard);  // one warp's says every warp's
    const uint32_t gm0 = same_guard ? LanesNonZero(xs[0].R + size_t(in.guard) * 32) : 0;
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      const uint32_t gm = same_guard ? gm0 : LanesNonZero(xs[wi].R + size_t(in.guard) * 32);
      const uint32_t valid = xs[wi].group;
      masks[wi] = ((in.flags & kFlagGuardNeg) ? ~gm : gm) & valid;
      any |= masks[wi];
      all &= masks[wi] | ~valid;
    }
    if (step == Together::kBranch) {
      if (all == ~0u) {
        thread_n += L.nthreads;
        pc = in.target;
      } else if (any == 0) {
        ++pc;
      } else {
        warp_n -= nwarps;  // the warps run it apart
        break;
      }
      continue;
    }
    alike.Prepare(t, false);
    for (uint32_t wi = 0; wi < nwarps && ok; ++wi) {
      Exec& x = xs[wi];
      if (masks[wi] == 0) continue;
      x.mask = masks[wi];
      x.pc = pc;
      thread_n += uint32_t(std::popcount(x.mask));
      ok = Ran(x, in, in.fn(x, in));
      x.mask = x.group;
    }
    alike.RanEach(t);
    if (!ok) break;
    ++pc;
  }
  // Values computed once reach every warp, unless the instruction the warps part at ends every
  // thread: an unguarded exit, or ret from a kernel without calls.
  const Inst& at = code[pc];
  if (!(ok && at.guard == kNoReg && (at.op == Op::kExit || (at.op == Op::kRet && !L.has_calls))))
    alike.SpreadAll();
  for (uint32_t wi = 0; wi < nwarps; ++wi) std::fill_n(cta.warps[wi].pc, 32, pc);
  cta.warps[0].instructions += warp_n;
  cta.warps[0].thread_instructions += thread_n;
  return ok;
}

// Runs rounds over the block's warps until it ends; kCoop: or until a warp used its slice.
template <bool kCoop>
CtaEnd RunRounds(const LaunchCtx& L, Cta& cta) {
  const ProgramImpl& P = *L.P;
  const uint32_t nwarps = (L.nthreads + 31) / 32;
  // Every warp whole (no partial last warp): a round that parks all of them at one plain
  // barrier releases it without looking at a lane.
  const bool whole_warps = L.nthreads % 32 == 0;
  const bool lockstep = !kCoop && nwarps <= 32 && L.P->together.size() == L.P->code.size();
  // kCoop: a block whose warps park at a barrier every few instructions never runs a warp out of
  // its slice, so the block's slice is counted across rounds too: one that spins on another
  // block's flag with a __syncthreads() in the loop lets that block run.
  const auto ran = [&] {
    uint64_t n = 0;
    for (uint32_t wi = 0; wi < nwarps; ++wi) n += cta.warps[wi].instructions;
    return n;
  };
  constexpr uint64_t kSlice = kCoop ? kResidentSliceInstructions : kSliceInstructions;
  const uint64_t block_slice_end = kCoop ? ran() + kSlice : 0;
  const auto block_slice_over = [&] { return kCoop && ran() >= block_slice_end; };
  for (;;) {
    // Then a round: it runs what stopped the lockstep (each warp at the same PC).
    if (lockstep && BlockConverged(L, cta, nwarps) && !Lockstep(L, cta)) return CtaEnd::kFailed;
    const uint32_t completions = cta.mbar_completions;
    const uint32_t yields = cta.slice_yields;
    cta.whole_bar_warps = 0;
    if (!RunWarpsInTurns(L, cta, nwarps, kSlice)) return CtaEnd::kFailed;
    if (whole_warps && cta.whole_bar_warps == nwarps && cta.whole_bar_id < 16 &&
        cta.bar_arrived[cta.whole_bar_id] == L.nthreads) {
      // Each warp ran this round and parked whole at barrier whole_bar_id, its PCs past it, and
      // nothing else arrived there: every thread of the block arrived once, so all run on.
      for (uint32_t wi = 0; wi < nwarps; ++wi)
        std::fill_n(cta.warps[wi].state, 32, LaneState::kRun);
      const uint32_t id = cta.whole_bar_id;
      cta.bar_arrived[id] = cta.bar_expected[id] = cta.bar_red[id] = 0;
      if (block_slice_over()) return CtaEnd::kYielded;
      continue;
    }
    // ready: lanes an mbarrier phase completed by a later warp resumed, or that wait on a
    // collective those lanes were part of; they run in the next round.
    uint32_t live = 0, bar = 0, async = 0, ready = 0;
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      const LaneState* s = cta.warps[wi].state;
      live += uint32_t(
          std::popcount(~(LanesEq(s, LaneState::kExited) | LanesEq(s, LaneState::kInvalid))));
      bar += uint32_t(std::popcount(LanesEq(s, LaneState::kWaitBar)));
      async += uint32_t(std::popcount(LanesAtLeast(s, LaneState::kWaitMbar)));
      ready +=
          uint32_t(std::popcount(LanesEq(s, LaneState::kRun) | LanesEq(s, LaneState::kWaitColl)));
    }
    if (live == 0) return CtaEnd::kDone;
    const bool released = bar && ReleaseBarriers(L, cta, live);
    if (async == 0 && (released || ready)) {
      if (block_slice_over()) return CtaEnd::kYielded;  // the window checks for a cancel
      continue;
    }
    Exec x{&cta.warps[0], &cta, &L, nullptr, nullptr, 0, 0, 0, 0, 0, 0, false};
    char buf[160];
    if (async == 0) {
      std::snprintf(buf, sizeof buf, "barrier deadlock in block (%u,%u,%u)", cta.ctaid[0],
                    cta.ctaid[1], cta.ctaid[2]);
      Fault(x, err::kLaunchFailure, buf);
      return CtaEnd::kFailed;
    }
    // Lanes poll or wait on mbarriers: run the polling ones again; when nothing completed,
    // the parked ones' try_wait times out (false), as PTX allows, so code that does other work
    // on a timeout gets to. Rounds without progress are bounded: a deadlock faults.
    // A slice that ran out is progress: its warp was running, not waiting.
    const bool sliced = cta.slice_yields != yields;
    const bool progress = released || ready || sliced || cta.mbar_completions != completions;
    cta.idle_rounds = progress ? 0 : cta.idle_rounds + 1;
    if (cta.idle_rounds > kMaxIdleRounds) {
      std::snprintf(buf, sizeof buf,
                    "mbarrier deadlock in block (%u,%u,%u): %u threads wait on phases that no "
                    "thread completes",
                    cta.ctaid[0], cta.ctaid[1], cta.ctaid[2], async);
      Fault(x, err::kLaunchFailure, buf);
      return CtaEnd::kFailed;
    }
    if (L.failed->load(std::memory_order_relaxed)) return CtaEnd::kFailed;
    if (Cancelled(L)) [[unlikely]]
      return CtaEnd::kFailed;
    for (uint32_t wi = 0; wi < nwarps; ++wi) {
      Warp& w = cta.warps[wi];
      for (int l = 0; l < 32; ++l) {
        if (w.state[l] == LaneState::kYield)
          w.state[l] = LaneState::kRun;
        else if (w.state[l] == LaneState::kWaitMbar && !progress)
          ResumeMbarWaiter(P, w, l, false);
      }
    }
    if constexpr (kCoop) {
      if (sliced) return CtaEnd::kYielded;
    }
  }
}

}  // namespace

bool RunCta(const LaunchCtx& L, Cta& cta, uint64_t linear) {
  StartCta(L, cta, linear);
  return RunRounds<false>(L, cta) == CtaEnd::kDone;
}

bool Cancelled(const LaunchCtx& L) {
  if (!L.cfg->cancel || !L.cfg->cancel->load(std::memory_order_relaxed)) return false;
  Exec x{nullptr, nullptr, &L, nullptr, nullptr, 0, 0, 0, 0, 0, 0, false};
  Fault(x, err::kLaunchTimeout, "cancelled");
  return true;
}

CtaEnd RunCtaSlice(const LaunchCtx& L, Cta& cta) {
  return RunRounds<true>(L, cta);
}

void RunOnWorkers(unsigned n, int priority, const std::function<void(unsigned)>& fn) {
  WorkerPool::Get(priority).Run(n, priority, fn);
}

namespace {

Status LaunchAtDepth(const Program& program, size_t kernel, const LaunchConfig& cfg,
                     LaunchStats* stats, uint32_t depth) {
  const ProgramImpl& P = program.impl();
  if (kernel >= P.kernels.size()) return Error(err::kInvalidDeviceFunction, "no such kernel");
  const KernelInfo& k = P.kernels[kernel];
  uint64_t nthreads = uint64_t(cfg.block[0]) * cfg.block[1] * cfg.block[2];
  uint64_t nblocks = uint64_t(cfg.grid[0]) * cfg.grid[1] * cfg.grid[2];
  if (nthreads == 0 || nthreads > k.max_threads_per_block || cfg.block[2] > 64 || nblocks == 0 ||
      cfg.grid[1] > 65535 || cfg.grid[2] > 65535 || cfg.grid[0] > 0x7fffffffu)
    return Error(err::kInvalidValue, "kernel " + k.name + ": invalid launch dimensions");
  uint32_t dyn_base =
      (k.static_shared_bytes + P.dyn_shared_align - 1) / P.dyn_shared_align * P.dyn_shared_align;
  uint64_t shared_total = uint64_t(dyn_base) + cfg.dynamic_shared_bytes;
  if (shared_total > 227 * 1024)
    return Error(err::kInvalidValue, "kernel " + k.name + ": too much shared memory");
  if (cfg.params.size() < k.param_bytes)
    return Error(err::kInvalidValue, "kernel " + k.name + ": parameter buffer too short");

  std::vector<uint64_t> gaddr;
  if (!cfg.global_addresses.empty()) {
    if (cfg.global_addresses.size() != P.globals.size())
      return Error(err::kInvalidValue, "global_addresses does not match globals()");
    gaddr.assign(cfg.global_addresses.begin(), cfg.global_addresses.end());
    if (!cfg.relocated) {
      std::lock_guard<std::mutex> lock(P.reloc_mu);
      if (P.reloc_applied != gaddr) {
        ApplyRelocations(program, gaddr);
        P.reloc_applied = gaddr;
      }
    }
  } else {
    gaddr = P.own_addresses;
  }
  gaddr.push_back(dyn_base);  // the dynamic shared pseudo-global

  const Function& f = P.funcs[P.kernel_func[kernel]];
  bool has_calls = false;
  for (const CallSite& c : P.calls)
    has_calls |= c.indirect || P.funcs[c.callee].builtin == Builtin::kNone;
  uint32_t stride = f.frame_bytes + (has_calls || P.uses_alloca ? cfg.call_stack_bytes : 0);
  stride = (stride + 15) / 16 * 16;

  std::atomic<bool> failed{false};
  std::mutex fault_mu;
  Status fault;
  LaunchCtx L{};
  L.P = &P;
  L.kernel = &k;
  L.kernel_index = uint32_t(kernel);
  L.own_globals = cfg.global_addresses.empty();
  L.cfg = &cfg;
  L.gaddr = gaddr.data();
  L.params = reinterpret_cast<const uint8_t*>(cfg.params.data());
  L.param_bytes = uint32_t(cfg.params.size());
  for (int i = 0; i < 3; ++i) {
    L.nctaid[i] = cfg.grid[i];
    L.ntid[i] = cfg.block[i];
  }
  L.nthreads = uint32_t(nthreads);
  // hardware_concurrency() reads sysfs on every call: ask once.
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  unsigned workers = cfg.workers ? cfg.workers : hw;
  workers = unsigned(std::min<uint64_t>(workers, nblocks));
  L.nworkers = cfg.cooperative ? workers : DeviceCores();  // %nsmid
  L.grid_id = 1;
  L.local_stride = stride;
  L.shared_total = uint32_t(shared_total);
  L.reserved_smem = uint32_t((shared_total + 15) / 16 * 16);
  L.failed = &failed;
  L.fault = &fault;
  L.fault_mu = &fault_mu;

  std::optional<DeviceWork> device_work;
  if (P.uses_device_runtime) device_work.emplace(program, depth);
  L.device_work = device_work ? &*device_work : nullptr;
  L.has_calls = has_calls;
  L.has_alloca = P.uses_alloca;
  L.cooperative = cfg.cooperative;
  L.poll = cfg.cooperative || cfg.cancel != nullptr;
  if (cfg.cooperative) {
    // Not through the dispatcher: its blocks all stay resident, so none can be held back.
    uint64_t wn = 0, tn = 0;
    RunResident(L, 0, nblocks, workers, &wn, &tn);
    if (stats) {
      stats->warp_instructions = wn;
      stats->thread_instructions = tn;
    }
  } else {
    Grid g;
    g.L = &L;
    g.priority = cfg.priority;
    g.nblocks = nblocks;
    g.max_running = cfg.workers;
    DispatchGrid(g);
    if (stats) {
      stats->warp_instructions = g.warp_n.load();
      stats->thread_instructions = g.thread_n.load();
    }
  }
  // What the grid's threads launched runs after it: it is part of this launch.
  if (device_work) {
    const bool discard = !fault.ok() || (cfg.cancel && cfg.cancel->load());
    Status children = device_work->Run(cfg, discard);
    if (fault.ok()) fault = std::move(children);
  }
  return fault;
}

}  // namespace

Status LaunchWithStats(const Program& program, size_t kernel, const LaunchConfig& cfg,
                       LaunchStats* stats) {
  return LaunchAtDepth(program, kernel, cfg, stats, 0);
}

Status LaunchNested(const Program& program, size_t kernel, const LaunchConfig& config,
                    uint32_t depth) {
  return LaunchAtDepth(program, kernel, config, nullptr, depth);
}

void BecomeDeviceThread(int nice) {
  // Raising one's own nice, or taking SCHED_IDLE, needs no privilege; a failure
  // leaves the thread as it was.
  const int now = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  if (now < nice) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), nice);
  if (nice >= kDeviceNice) {
    sched_param idle{};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  }
}

Status Launch(const Program& program, size_t kernel, const LaunchConfig& config) {
  return LaunchWithStats(program, kernel, config, nullptr);
}

}  // namespace remora::emu::ptx
