// scheduler/dispatch.h - DispatchQueue: which tenant's ready work goes to the device next.
//
// The executor owns the work; this decides only the order across tenants.
// Pure logic: no CUDA, no I/O, time comes in as an argument (nanoseconds on
// any monotonic clock). A tenant is either ready (it has work the executor
// could issue now) or not; the executor tells the queue when that changes and
// what finished work cost, and asks it who goes next.
//
//   auto q = MakeFifoQueue();
//   q->Ready(7, now);
//   while (std::optional<TenantId> t = q->Next(now)) issue one item of *t ...
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_set>

#include "scheduler/ledger.h"

namespace remora::sched {

class DispatchQueue {
 public:
  virtual ~DispatchQueue() = default;
  // Tenant `t` has work ready to issue. Idempotent while it is queued.
  virtual void Ready(TenantId t, uint64_t now_ns) = 0;
  // The tenant to issue one item for next, removed from the ready set (the
  // executor calls Ready again if it has more), or nullopt when no ready
  // tenant may issue now.
  virtual std::optional<TenantId> Next(uint64_t now_ns) = 0;
  // Work of `t` issued earlier finished, having used `gpu_ns` of device time.
  virtual void Done(TenantId t, uint64_t gpu_ns, uint64_t now_ns) = 0;
  // Forgets `t` (its session ended).
  virtual void Remove(TenantId t) = 0;
  // True if `t`'s ready item may be issued at once, bypassing the queue (the
  // hot path: nothing else is waiting). It then counts as issued now.
  virtual bool IssueNow(TenantId t, uint64_t now_ns) = 0;
};

// First come, first served: tenants in the order they became ready, no cap on
// work in flight. The baseline the fair queue replaces.
class FifoQueue final : public DispatchQueue {
 public:
  void Ready(TenantId t, uint64_t now_ns) override;
  std::optional<TenantId> Next(uint64_t now_ns) override;
  void Done(TenantId, uint64_t, uint64_t) override {}
  void Remove(TenantId t) override;
  bool IssueNow(TenantId, uint64_t) override { return order_.empty(); }

 private:
  std::deque<TenantId> order_;
  std::unordered_set<TenantId> queued_;
};

}  // namespace remora::sched
