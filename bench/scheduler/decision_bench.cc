// bench/scheduler/decision_bench.cc - what one scheduling decision costs.
//
//   BM_Decision<Queue>/<tenants>  one iteration = one decision cycle of the executor's:
//                                 Ready(t) for the tenant whose item just finished,
//                                 Next() to pick who goes, Done() for the finished item,
//                                 with <tenants> tenants all backlogged (every one ready,
//                                 compute shares 1..4, a tenth of them capped at 0.5).
// Queue is FairQueue (weighted fair share, limits, priorities) or FifoQueue (the
// baseline). The time column is the cost of one cycle; compare the two at the same
// tenant count (targets: <= 1 us at 1,000 tenants, <= 2 us at 10,000).
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>

#include "scheduler/dispatch.h"
#include "scheduler/fair_queue.h"

namespace remora::sched {
namespace {

template <class Queue>
void BM_Decision(benchmark::State& state) {
  const auto n = static_cast<TenantId>(state.range(0));
  Queue q;
  uint64_t now = 1;
  for (TenantId t = 1; t <= n; ++t) {
    q.Configure(t, ComputeShare(1.0 + static_cast<double>(t % 4), t % 10 == 0 ? 0.5 : 0));
    q.Ready(t, now);
  }
  // Prime: one item of each tenant in flight, as on a busy device.
  std::optional<TenantId> running = q.Next(now);
  for (auto _ : state) {
    now += 1000;
    if (running) {
      q.Ready(*running, now);  // it has more work
      q.Done(*running, 1000, now);
    }
    running = q.Next(now);
    benchmark::DoNotOptimize(running);
    if (!running) {  // everyone held by a cap: let time pass
      now += 10'000'000;
      running = q.Next(now);
    }
  }
  state.counters["tenants"] = static_cast<double>(n);
}

BENCHMARK_TEMPLATE(BM_Decision, FairQueue)->Arg(10)->Arg(1000)->Arg(10000);
BENCHMARK_TEMPLATE(BM_Decision, FifoQueue)->Arg(10)->Arg(1000)->Arg(10000);

}  // namespace
}  // namespace remora::sched

BENCHMARK_MAIN();
