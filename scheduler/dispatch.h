// scheduler/dispatch.h - DispatchQueue: which tenant's ready work goes to the device next.
//
// The executor owns the work; this decides only the order across tenants.
// Pure logic: no CUDA, no I/O, time comes in as an argument (nanoseconds on
// any monotonic clock). A tenant is either ready (it has work the executor
// could issue now) or not; the executor tells the queue when that changes and
// what finished work cost, and asks it who goes next.
//
//   std::unique_ptr<DispatchQueue> q = std::make_unique<FairQueue>();  // fair_queue.h
//   q->Configure(7, share);      // optional: weight, cap, priority, project
//   q->Ready(7, now);
//   while (std::optional<TenantId> t = q->Next(now)) issue one item of *t ...
//   ... on completion: q->Done(*t, items, measured_gpu_ns, now); then Next again.
//   if nothing came out: retry on the next Done, or at q->NextEligibleAt(now).
//
// Every item Next or IssueNow hands out counts as in flight until the executor
// reports it with Done: a queue that bounds work in flight (FairQueue) stalls a
// tenant whose completions are never reported.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_set>

#include "scheduler/ledger.h"
#include "scheduler/tenant.h"

namespace remora::sched {

// A group of tenants that shares the GPU as one, by its own share first.
using ProjectId = uint64_t;
inline constexpr ProjectId kNoProject = 0;

// The sessions of one configured tenant (one per process of it): they share
// the tenant's request and limit as one, and split what it gets evenly.
using AccountId = uint64_t;
inline constexpr AccountId kNoAccount = 0;

// A tenant's compute share (Run:ai's gpu-compute / gpu-compute-limit).
// Build it with ComputeShare() or assign the fields one by one.
struct Share {
  double request = 1;  // guaranteed share: a weight relative to its siblings, > 0
  double limit = 0;    // cap as a fraction of the GPU's time in (0, 1]; 0: none
  Priority priority = Priority::kNormal;
  ProjectId project = kNoProject;  // kNoProject: the tenant stands alone
  // kNoAccount: the request and limit are this tenant's own. Otherwise they
  // are the account's, which every session of it passes alike (the latest
  // Configure sets them): its sessions compete as one node, so what one leaves
  // unused goes to the others, and the limit caps them together.
  AccountId account = kNoAccount;
};

// A Share with every field given (GCC rejects partial designated initializers).
inline Share ComputeShare(double request, double limit = 0, Priority priority = Priority::kNormal,
                          ProjectId project = kNoProject, AccountId account = kNoAccount) {
  Share s;
  s.request = request;
  s.limit = limit;
  s.priority = priority;
  s.project = project;
  s.account = account;
  return s;
}

class DispatchQueue {
 public:
  virtual ~DispatchQueue() = default;
  // Tenant `t` has work ready to issue. Idempotent while it is queued.
  virtual void Ready(TenantId t, uint64_t now_ns) = 0;
  // The tenant to issue one item for next, removed from the ready set (the
  // executor calls Ready again if it has more), or nullopt when no ready
  // tenant may issue now.
  virtual std::optional<TenantId> Next(uint64_t now_ns) = 0;
  // `items` items of `t` issued earlier finished, having used `gpu_ns` of
  // device time together.
  virtual void Done(TenantId t, uint32_t items, uint64_t gpu_ns, uint64_t now_ns) = 0;
  // One item of `t` finished, having used `gpu_ns`.
  void Done(TenantId t, uint64_t gpu_ns, uint64_t now_ns) { Done(t, 1, gpu_ns, now_ns); }
  // Forgets `t` (its session ended).
  virtual void Remove(TenantId t) = 0;
  // True if `t`'s ready item may be issued at once, bypassing the queue (the
  // hot path: nothing else is waiting). It then counts as issued now.
  virtual bool IssueNow(TenantId t, uint64_t now_ns) = 0;
  // Up to `most` items of `t` that may be issued at once, each as IssueNow
  // would allow it, all counted as issued now: the executor hands them to the
  // tenant's own thread, which issues without asking again. What it does not
  // use goes back with Return.
  uint32_t Grant(TenantId t, uint64_t now_ns, uint32_t most) {
    uint32_t n = 0;
    while (n < most && IssueNow(t, now_ns)) ++n;
    return n;
  }
  // `items` of what Next, IssueNow or Grant handed out for `t` were never
  // issued: they leave the in-flight bounds, and what they were charged is
  // given back. The prediction is not trained. Ignored for an unknown tenant.
  virtual void Return(TenantId t, uint32_t items) = 0;
  // True while a ready tenant is held back by its own in-flight bound alone,
  // so its next item goes as soon as a Done comes: the executor then looks
  // for completions more often.
  virtual bool WaitsForDone() const { return false; }
  // True if `t` is ready and not handed out since (Ready called, Next not yet returning it):
  // a Ready now changes nothing, so an executor that asked for a Next after the last one need
  // not ask again. False when unknown (the default): ask again.
  virtual bool IsReady(TenantId) const { return false; }
  // True while the device is idle for lack of a Done: a tenant's turn waits for the last
  // one's work to leave the device (time slices). The executor then looks at once.
  virtual bool WaitsForDrain() const { return false; }

  // Optional refinements; the defaults do nothing, so FifoQueue ignores them.

  // Sets `t`'s compute share; a tenant never configured has ComputeShare(1).
  // May be called at any time, also while `t` is ready or has work in flight.
  // REQUIRES: share.request > 0, share.limit in [0, 1] (clamped).
  virtual void Configure(TenantId, const Share&) {}
  // Sets project `p`'s share (a weight among projects and lone tenants;
  // default 1). REQUIRES: share > 0 (clamped).
  virtual void ConfigureProject(ProjectId, double) {}
  // When Next returned nullopt while tenants were ready: the earliest time at
  // which one held back by its compute limit may go, or nullopt if none is (the
  // rest wait for a Done). The executor arms a timer for it.
  virtual std::optional<uint64_t> NextEligibleAt(uint64_t) const { return std::nullopt; }
  // Items that went past a bound because the work filling it made no progress (FairQueue's
  // stall), since the queue was made.
  virtual uint64_t stall_releases() const { return 0; }
};

// First come, first served: tenants in the order they became ready, no cap on
// work in flight. The baseline the fair queue replaces.
class FifoQueue final : public DispatchQueue {
 public:
  void Ready(TenantId t, uint64_t now_ns) override;
  std::optional<TenantId> Next(uint64_t now_ns) override;
  using DispatchQueue::Done;
  void Done(TenantId, uint32_t, uint64_t, uint64_t) override {}
  void Remove(TenantId t) override;
  bool IssueNow(TenantId, uint64_t) override { return order_.empty(); }
  void Return(TenantId, uint32_t) override {}

 private:
  std::deque<TenantId> order_;
  std::unordered_set<TenantId> queued_;
};

}  // namespace remora::sched
