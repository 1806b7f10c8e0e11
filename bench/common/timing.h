// bench/common/timing.h - what every Remora benchmark measures with: pinning,
// rdtsc timing, per-operation summaries and the cache-line ping-pong floor.
//
//   std::vector<uint64_t> ticks;
//   TickClock clock;
//   PingPong(1000, ticks);
//   Stats floor = Summarize(ticks, clock.NsPerTick());
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace remora::bench {

using Clock = std::chrono::steady_clock;

// Pins the calling thread to `cpu`. Returns false (and leaves affinity alone) if
// the process may not run there.
bool PinTo(int cpu);

// Spins with pause until done(); yields now and then so a preempted peer can
// run on a shared 2-core machine.
template <typename Done>
void SpinUntil(Done&& done) {
  for (uint32_t i = 1; !done(); ++i) {
    __builtin_ia32_pause();
    if ((i & 0x3FF) == 0) sched_yield();
  }
}

// Converts rdtsc ticks to ns, calibrated against steady_clock over its lifetime.
class TickClock {
 public:
  TickClock();
  // ns per tick over [construction, now]; call after at least ~10 ms.
  double NsPerTick() const;

 private:
  Clock::time_point t0_;
  uint64_t c0_;
};

// Summary of per-operation samples, in ns.
struct Stats {
  double mean_ns = 0, p50_ns = 0, p99_ns = 0;
  uint64_t n = 0;
};

// Sorts `ticks` and summarizes it. Empty input gives n == 0.
Stats Summarize(std::vector<uint64_t>& ticks, double ns_per_tick);

// Runs `iters` cache-line ping-pong round trips between this thread (pinned to
// CPU 0) and a helper (CPU 1), appending one rdtsc sample per round trip to
// `ticks`. Leaves this thread pinned to CPU 0.
void PingPong(size_t iters, std::vector<uint64_t>& ticks);

}  // namespace remora::bench
