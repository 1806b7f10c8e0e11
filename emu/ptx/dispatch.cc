// emu/ptx/dispatch.cc - the block dispatcher (dispatch.h): grids in the device's order, cores
// taken block by block, helper threads per host priority, residency when the device is stuck.
#include "emu/ptx/dispatch.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "emu/ptx/ptx.h"
#include "emu/ptx/sched.h"

namespace remora::emu::ptx {

namespace {

constexpr auto kStuck = std::chrono::milliseconds(20);
// No block ended for this long while a grid's own running blocks hold every core and it has
// blocks to start: they wait on those (a GPU would have them resident), which then run beside.
constexpr auto kStuckWithin = std::chrono::milliseconds(200);
// The same for a grid none of whose blocks ended this long while others' did: longer, as a grid
// whose blocks are merely long is not helped by running more of them at once.
constexpr auto kStuckAmongOthers = std::chrono::seconds(1);
// At most this many threads' worth of a grid's blocks resident beside at once (a GPU's
// residency, about), unless the launch says how many blocks its device keeps resident
// (LaunchConfig::resident_blocks): a window of blocks is taken, run, and the next taken while
// any are left.
constexpr uint64_t kResidentThreads = 65536;
// A helper idle this long ends: an idle device holds no helper threads (as no stream threads).
constexpr auto kHelperLinger = std::chrono::milliseconds(200);

uint64_t NowNs() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// A thread that runs blocks: its block state, kept from block to block, and the grid it was
// last prepared for.
struct Runner {
  Cta cta;
  uint64_t prepared = 0;  // Grid::seq
  unsigned smid = 0;
  int slot = -1;    // the host CPU (HostCpus index) it holds while on a core; -1: none
  int pinned = -1;  // the host CPU slot its affinity names; -1: the process's CPUs
  int pin_to = -1;  // Take's choice, applied once mu_ is let go; -1: stay
  // Whether it may move to another CPU: not at the host's idle priority (SCHED_IDLE), which
  // would starve there behind any host thread, holding its block; -1: not yet known.
  int movable = -1;
  // Grids launched when it took its core (under the lock: one launched while it was moving to
  // its CPU still outranks it at its next block boundary).
  uint64_t generation = 0;
};

// The host CPUs this process may run on, in order; empty if unknown.
std::vector<int> HostCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// Helper threads come in two host priorities, as stream workers do: those above the least
// stream priority run at kRankedDeviceNice, the others at kDeviceNice. A thread's nice can only
// rise, so a helper serves grids of its own class only.
enum HostClass { kRanked = 0, kLeast = 1 };

// Stream priorities as indices, highest first: CUDA's range is [-5, 0] on current GPUs.
constexpr size_t kLevels = 8;
size_t Level(int priority) {
  return size_t(std::clamp(priority + int(kLevels) - 1, 0, int(kLevels) - 1));
}
HostClass ClassOf(const Grid& g) {
  return g.priority < 0 ? kRanked : kLeast;
}

class Dispatcher {
 public:
  static Dispatcher& Get() {
    static Dispatcher d;
    return d;
  }

  Dispatcher()
      : cores_(std::max(2u, std::thread::hardware_concurrency())),
        cpus_(HostCpus()),
        holder_(cpus_.size(), nullptr) {}
  ~Dispatcher() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      for (Helpers& h : helpers_)
        for (auto& x : h) x->cv.notify_one();
      watch_cv_.notify_one();
    }
    for (Helpers& h : helpers_)
      for (auto& x : h) x->thread.join();
    if (watchdog_.joinable()) watchdog_.join();
    for (Resident& r : residents_) r.thread.join();
  }

  unsigned cores() const { return cores_; }

  void Run(Grid& g) {
    thread_local Runner self;
    self.smid = cores_ - 1;
    std::unique_lock lock(mu_);
    g.seq = ++seq_;
    g.last_end_ns.store(NowNs(), std::memory_order_relaxed);
    auto at = std::upper_bound(grids_.begin(), grids_.end(), &g, [](const Grid* a, const Grid* b) {
      return a->priority < b->priority;  // equal priorities keep launch order
    });
    grids_.insert(at, &g);
    generation_.fetch_add(1, std::memory_order_release);  // running blocks' grids may be outranked
    if (!watchdog_.joinable()) watchdog_ = std::thread([this] { Watch(); });
    if (FirstEligible() != &g || !HasCore(g)) Kick();  // else Take kicks, once this one has a CPU
    while (g.Left() || g.running > 0) {
      if (FirstEligible() == &g && HasCore(g)) {
        Take(g, self);
        lock.unlock();
        Pin(self);
        RunBlocks(self, g, /*until_outranked=*/true);
        lock.lock();
        Release(g, self, /*on_core=*/true);
        continue;
      }
      const uint64_t takes = takes_;
      if (g.wake.wait_for(lock, kStuck) != std::cv_status::timeout) continue;
      // Stuck: resident beside the stuck blocks, or on a core the grid first in order left free
      // meanwhile (its helper, at the host's idle priority, starves behind a busy host). Either
      // way all of its blocks, or one while it is outranked.
      if (!Stuck(g)) continue;
      const bool on_core = HasCore(g);
      if (on_core && takes_ != takes) continue;  // the core is being taken
      const bool outranked = Outranked(g);
      if (on_core)
        Take(g, self);
      else
        ++g.running;
      lock.unlock();
      if (on_core) Pin(self);
      if (outranked)
        RunOne(self, g);
      else
        RunBlocks(self, g, /*until_outranked=*/on_core);
      lock.lock();
      Release(g, self, on_core);
    }
    grids_.erase(std::find(grids_.begin(), grids_.end(), &g));
    lock.unlock();
    Unpin(self);  // a stream's thread goes back to every CPU between its kernels
    TrimCta(self.cta);
    self.prepared = 0;
  }

 private:
  // A thread running a grid's blocks resident (RunBeside); joined once done.
  struct Resident {
    std::thread thread;
    bool done = false;  // guarded by mu_
  };

  // While grids run: every kStuck, a grid stuck within itself (StuckWithin) gets a thread that
  // runs its blocks not yet started, all resident at once (RunResident), beside its own
  // running blocks that wait on them.
  void Watch() {
    pthread_setname_np(pthread_self(), "remora-resident");
    std::unique_lock lock(mu_);
    while (!stop_) {
      // Not woken by launches (their path stays free of it): a grid can be stuck within
      // itself only after kStuckWithin anyway.
      watch_cv_.wait_for(lock, grids_.empty() ? kStuckWithin : kStuck);
      residents_.remove_if([](Resident& r) {
        if (r.done) r.thread.join();  // it has let go of mu_ for good
        return r.done;
      });
      for (Grid* g : grids_) {
        if (stop_ || !StuckWithin(*g)) continue;
        g->resident = true;
        ++g->running;  // the resident thread counts as one of its runners
        Resident& r = residents_.emplace_back();
        r.thread = std::thread([this, g, &r] { RunBeside(*g, r); });
      }
    }
  }

  // Runs `g`'s blocks not yet started, a window of them at a time, all resident at once.
  void RunBeside(Grid& g, Resident& me) {
    pthread_setname_np(pthread_self(), "remora-resident");
    BecomeDeviceThread(ClassOf(g) == kRanked ? kRankedDeviceNice : kDeviceNice);
    const LaunchCtx& L = *g.L;
    const uint64_t window =
        L.cfg->resident_blocks ? L.cfg->resident_blocks
                               : std::max<uint64_t>(1, kResidentThreads / std::max(1u, L.nthreads));
    for (;;) {
      const uint64_t first = g.next.fetch_add(window, std::memory_order_relaxed);
      if (first >= g.nblocks) break;
      const uint64_t n = std::min(window, g.nblocks - first);
      uint64_t wn = 0, tn = 0;
      RunResident(L, first, n, /*workers=*/1, &wn, &tn);
      g.warp_n.fetch_add(wn, std::memory_order_relaxed);
      g.thread_n.fetch_add(tn, std::memory_order_relaxed);
      BlocksEnded(g);
      if (L.failed->load(std::memory_order_relaxed)) {
        g.next.store(g.nblocks, std::memory_order_relaxed);
        break;
      }
    }
    std::lock_guard lock(mu_);
    g.resident = false;
    RunnerEnded(g);
    me.done = true;
  }

  // A helper thread, woken by name (Kick chooses which).
  struct Helper {
    std::thread thread;
    std::condition_variable cv;
    bool idle = false;   // waiting for a wake; guarded by mu_
    bool woken = false;  // told to look again; guarded by mu_
    bool busy = false;   // on a core; guarded by mu_
    unsigned index = 0;  // its %smid, unique among the live helpers of its class
  };
  using Helpers = std::vector<std::unique_ptr<Helper>>;
  static constexpr int kAnyCpu = -2;  // Runner::pin_to: back to the process's CPUs

  // The first grid with a block to start and room for it; null if none. One block of `spoken`
  // is as good as started (a runner that took a core for it is about to). REQUIRES: mu_.
  Grid* FirstEligible(const Grid* spoken = nullptr) const {
    for (Grid* g : grids_) {
      const uint64_t next = g->next.load(std::memory_order_relaxed) + (g == spoken ? 1 : 0);
      if (next < g->nblocks && g->running < (g->max_running ? g->max_running : cores_)) return g;
    }
    return nullptr;
  }

  // A grid of higher priority has blocks to start. REQUIRES: mu_.
  bool Outranked(const Grid& g) const {
    for (const Grid* o : grids_) {
      if (o->priority >= g.priority) break;
      if (o->Left()) return true;
    }
    return false;
  }

  // A core for a block of `g`: fewer blocks of its priority or higher run than the device has
  // cores. Lower-priority blocks still running do not count: their threads run at the host's
  // least priority, so the host gives the core to this one at once (a GPU would have
  // dispatched it at their block boundary). REQUIRES: mu_.
  bool HasCore(const Grid& g) const {
    unsigned n = 0;
    for (size_t i = 0; i <= Level(g.priority); ++i) n += running_[i];
    return n < cores_;
  }

  // No block ended on the device for kStuck, and `g` waits with none running: every core holds
  // a block that waits, or a core is free that the grid first in order did not take. REQUIRES:
  // mu_.
  bool Stuck(const Grid& g) const { return g.Left() && g.running == 0 && NoBlockEndedFor(kStuck); }

  // Blocks of `g` ended now: the device's last end and the grid's.
  void BlocksEnded(Grid& g) {
    const uint64_t now = NowNs();
    last_end_ns_.store(now, std::memory_order_relaxed);
    g.last_end_ns.store(now, std::memory_order_relaxed);
  }

  // Whether `d` has passed since the time `at` holds.
  static bool AgoAtLeast(const std::atomic<uint64_t>& at, std::chrono::nanoseconds d) {
    return NowNs() - at.load(std::memory_order_relaxed) >= uint64_t(d.count());
  }

  bool NoBlockEndedFor(std::chrono::nanoseconds d) const { return AgoAtLeast(last_end_ns_, d); }

  // `g`'s own blocks hold cores and wait, no block having ended for kStuckWithin (none of its own
  // for kStuckAmongOthers), while it has blocks to start and no core for them. REQUIRES: mu_.
  bool StuckWithin(const Grid& g) const {
    if (!g.Left() || g.running == 0 || g.resident || HasCore(g)) return false;
    return NoBlockEndedFor(kStuckWithin) || AgoAtLeast(g.last_end_ns, kStuckAmongOthers);
  }

  // One host CPU per block on a core, as one multiprocessor per block: the host's scheduler,
  // left alone, often woke a helper on the busy CPU of the thread that woke it and kept it
  // waiting there while the other CPU idled (on 2 vCPUs a grid's second block started a
  // millisecond late, most of all at a tenant's first kernel after another's turn). A runner
  // keeps the CPU it is on when no other runner holds it, else moves to a free one; a helper
  // goes back to every CPU before it idles (so a helper woken beside a busier host thread,
  // which it cannot displace, waits there instead of taking a block where it may starve). A
  // runner at the host's idle priority never moves: any host thread on the other CPU would
  // starve it, block and all.
  // REQUIRES: mu_.
  void Take(Grid& g, Runner& r) {
    ++takes_;
    ++running_[Level(g.priority)];
    ++g.running;
    r.generation = generation_.load(std::memory_order_relaxed);
    if (!holder_.empty()) {
      const int cpu = sched_getcpu();
      int slot = -1;
      for (size_t i = 0; i < cpus_.size(); ++i)
        if (cpus_[i] == cpu) slot = int(i);
      if (slot < 0 || holder_[slot] != nullptr) {
        slot = -1;
        for (size_t i = 0; i < holder_.size() && slot < 0; ++i)
          if (holder_[i] == nullptr) slot = int(i);
        if (r.movable < 0) r.movable = sched_getscheduler(0) != SCHED_IDLE;
        if (!r.movable) slot = -1;
        if (slot >= 0 && slot != r.pinned) r.pin_to = slot;
      }
      if (slot >= 0) holder_[slot] = &r;
      r.slot = slot;
    }
    Kick(&g);  // another core may be free for the next block
  }

  // Applies Take's choice of CPU. Without mu_.
  void Pin(Runner& r) {
    if (r.pin_to == -1) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (r.pin_to == kAnyCpu) {
      for (int c : cpus_) CPU_SET(c, &set);
    } else {
      CPU_SET(cpus_[size_t(r.pin_to)], &set);
    }
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0)
      r.pinned = r.pin_to == kAnyCpu ? -1 : r.pin_to;
    r.pin_to = -1;
  }

  // Gives a runner moved by Take every CPU back. Without mu_.
  void Unpin(Runner& r) {
    if (r.pinned < 0) return;
    r.pin_to = kAnyCpu;
    Pin(r);
  }

  void Release(Grid& g, Runner& r, bool on_core) {
    if (on_core && r.slot >= 0) {
      holder_[size_t(r.slot)] = nullptr;
      r.slot = -1;
    }
    if (on_core) --running_[Level(g.priority)];
    RunnerEnded(g);
  }

  // One of `g`'s runners is done: its launching thread may be too, another block may start.
  // REQUIRES: mu_.
  void RunnerEnded(Grid& g) {
    --g.running;
    if (!g.Left() && g.running == 0) g.wake.notify_one();
    Kick();
  }

  // A core is free: the launching thread of the first eligible grid may take it, and so may a
  // helper of its class (the first to the lock wins; the other finds nothing and waits again).
  // REQUIRES: mu_.
  void Kick(const Grid* spoken = nullptr) {
    Grid* g = FirstEligible(spoken);
    if (g == nullptr || !HasCore(*g)) return;
    g->wake.notify_one();
    const HostClass c = ClassOf(*g);
    // A new helper only when every one is on a core: any other looks at the grids again before
    // it sleeps (the threads a server keeps stay as few as the load needs).
    Helpers& h = helpers_[c];
    Helper* pick = nullptr;
    bool all_busy = true;
    for (auto& x : h) {
      all_busy = all_busy && x->busy;
      if (x->idle && !x->woken && pick == nullptr) pick = x.get();
    }
    if (pick == nullptr && all_busy && h.size() < cores_) {
      unsigned index = 0;  // the lowest one no live helper has
      while (std::any_of(h.begin(), h.end(), [&](const auto& x) { return x->index == index; }))
        ++index;
      auto x = std::make_unique<Helper>();
      x->index = index;
      Helper& me = *x;
      x->thread = std::thread([this, c, index, &me] { HelperLoop(c, index, me); });
      h.push_back(std::move(x));
    } else if (pick != nullptr) {
      pick->woken = true;
      pick->cv.notify_one();
    }
  }

  void HelperLoop(HostClass c, unsigned index, Helper& me) {
    pthread_setname_np(pthread_self(), "remora-blocks");
    BecomeDeviceThread(c == kRanked ? kRankedDeviceNice : kDeviceNice);
    Runner self;
    self.smid = index;
    std::unique_lock lock(mu_);
    for (;;) {
      Grid* g = nullptr;
      bool trimmed = false;
      while (!stop_) {
        g = FirstEligible();
        if (g != nullptr && HasCore(*g) && ClassOf(*g) == c) break;
        g = nullptr;
        if (!trimmed) {  // about to idle: let go of large buffers and its CPU, then look again
          lock.unlock();
          TrimCta(self.cta);
          self.prepared = 0;
          Unpin(self);
          lock.lock();
          trimmed = true;
          continue;
        }
        me.idle = true;
        const bool woken = me.cv.wait_for(lock, kHelperLinger, [&] { return me.woken || stop_; });
        me.idle = false;
        me.woken = false;
        if (!woken) {  // idle for kHelperLinger: the thread goes (Kick starts another if needed)
          Helpers& h = helpers_[c];
          me.thread.detach();
          h.erase(std::find_if(h.begin(), h.end(), [&](const auto& x) { return x.get() == &me; }));
          return;  // touches nothing of `me` from here on
        }
      }
      if (stop_) return;
      me.busy = true;
      Take(*g, self);
      lock.unlock();
      Pin(self);
      RunBlocks(self, *g, /*until_outranked=*/true);
      lock.lock();
      me.busy = false;
      Release(*g, self, /*on_core=*/true);
    }
  }

  // Runs blocks of `g` while it has some; with `until_outranked`, stops at the first block
  // boundary after another grid was launched (it may come first now; the caller decides again).
  // Called with a block of `g` counted as running, without mu_.
  void RunBlocks(Runner& r, Grid& g, bool until_outranked) {
    while (RunOne(r, g)) {
      if (until_outranked && generation_.load(std::memory_order_relaxed) != r.generation) break;
    }
  }

  // Runs the next block of `g`, if it has one and has not failed; false if it had none.
  bool RunOne(Runner& r, Grid& g) {
    const LaunchCtx& L = *g.L;
    if (L.failed->load(std::memory_order_relaxed) || Cancelled(L)) [[unlikely]] {
      g.next.store(g.nblocks, std::memory_order_relaxed);
      return false;
    }
    const uint64_t b = g.next.fetch_add(1, std::memory_order_relaxed);  // work distribution only
    if (b >= g.nblocks) return false;
    if (r.prepared != g.seq) {
      PrepareCta(L, r.cta, r.smid);
      r.prepared = g.seq;
    }
    const bool ok = RunCta(L, r.cta, b);
    CountInstructions(L, r.cta, g.warp_n, g.thread_n);
    BlocksEnded(g);
    if (!ok) g.next.store(g.nblocks, std::memory_order_relaxed);
    return ok;
  }

  const unsigned cores_;
  std::mutex mu_;
  std::vector<Grid*> grids_;  // by priority, then launch order; guarded by mu_
  // Blocks on cores, by priority level; guarded by mu_.
  std::array<unsigned, kLevels> running_{};
  uint64_t seq_ = 0;                      // guarded by mu_
  uint64_t takes_ = 0;                    // cores taken (Take); guarded by mu_
  std::atomic<uint64_t> generation_{0};   // grids launched
  std::atomic<uint64_t> last_end_ns_{0};  // when a block last ended
  const std::vector<int> cpus_;           // HostCpus()
  std::vector<Runner*> holder_;  // by HostCpus index: the runner on a core there; guarded by mu_
  Helpers helpers_[2];
  bool stop_ = false;
  std::thread watchdog_;              // Watch(), from the first grid on
  std::condition_variable watch_cv_;  // stop_
  std::list<Resident> residents_;     // guarded by mu_
};

}  // namespace

unsigned DeviceCores() {
  return Dispatcher::Get().cores();
}

void DispatchGrid(Grid& g) {
  Dispatcher::Get().Run(g);
}

}  // namespace remora::emu::ptx
