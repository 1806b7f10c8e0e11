// bench/common/timing.cc - pinning, rdtsc timing and the ping-pong floor.
#include "bench/common/timing.h"

#include <pthread.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>

namespace remora::bench {

bool PinTo(int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

TickClock::TickClock() : t0_(Clock::now()), c0_(__rdtsc()) {}

double TickClock::NsPerTick() const {
  const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0_).count();
  const double ticks = static_cast<double>(__rdtsc() - c0_);
  return ticks > 0 ? ns / ticks : 0;
}

Stats Summarize(std::vector<uint64_t>& ticks, double ns_per_tick) {
  Stats s;
  if (ticks.empty()) return s;
  double sum = 0;
  for (uint64_t t : ticks) sum += static_cast<double>(t);
  std::sort(ticks.begin(), ticks.end());
  s.n = ticks.size();
  s.mean_ns = sum / static_cast<double>(ticks.size()) * ns_per_tick;
  s.p50_ns = static_cast<double>(ticks[ticks.size() / 2]) * ns_per_tick;
  s.p99_ns = static_cast<double>(ticks[ticks.size() * 99 / 100]) * ns_per_tick;
  return s;
}

void PingPong(size_t iters, std::vector<uint64_t>& ticks) {
  struct alignas(128) Line {
    std::atomic<uint64_t> v{0};
  };
  auto line = std::make_unique<Line>();
  PinTo(1);  // the helper inherits CPU 1 at creation (matters under SCHED_FIFO)
  std::thread peer([&] {
    for (uint64_t i = 0; i < iters; ++i) {
      // Acquire pairs with the release store of 2i+1 below.
      SpinUntil([&] { return line->v.load(std::memory_order_acquire) == 2 * i + 1; });
      line->v.store(2 * i + 2, std::memory_order_release);
    }
  });
  PinTo(0);
  for (uint64_t i = 0; i < iters; ++i) {
    const uint64_t t0 = __rdtsc();
    line->v.store(2 * i + 1, std::memory_order_release);
    SpinUntil([&] { return line->v.load(std::memory_order_acquire) == 2 * i + 2; });
    ticks.push_back(__rdtsc() - t0);
  }
  peer.join();
}

}  // namespace remora::bench
