// server/executor.h - the executor: every tenant's stream-ordered work, in order, on one device.
//
// Sessions decode and validate; the executor runs their work. Each tenant's
// streams are queues of work items (never shared between tenants). An item is
// issued to the driver (an asynchronous call on the tenant's own CUstream) once
// everything CUDA orders before it has been issued — its stream's earlier
// items, the legacy default stream's implicit ordering, the latest record of an
// event it waits for — and a tenant host function it follows has run. Which
// tenant's ready item goes next is the scheduler's choice (sched::DispatchQueue).
//
// Nothing blocks in the driver. A wait (a synchronous copy, a stream, event or
// device synchronize, a free) is a completion: a marker event recorded where
// the wait stands in the stream, polled by the executor's one thread, which
// runs the completion when the marker is reached (or with the error that broke
// the context). A tenant host function holds its stream's later items in the
// executor until the tenant answers, so a tenant that never answers, or dies,
// holds up nobody but itself.
//
// Locks: each tenant's queues have their own lock, and every driver call the
// executor makes for a tenant (issuing its work, recording its markers) is made
// under that lock alone. The executor's own lock guards what all tenants share
// (the dispatch queue, the watched completions, the event pools) and is never
// held across a driver call or while a tenant's lock is taken (order: a
// tenant's, then the executor's). The dispatch queue hands a tenant's thread a
// few items at once when nobody else waits (a grant), so in steady state a
// launch takes no lock another tenant takes; a tenant that becomes ready takes
// unused grants back, so the queue's order still holds item by item.
//
// Threads: items are issued on the submitting thread when the scheduler lets
// them go at once, else on the executor's thread; completions run on the
// executor's thread (or inline, when the work is already done), holding a
// Device::Use of their epoch and no executor lock, so they may call the driver.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "proto/status.h"
#include "scheduler/dispatch.h"
#include "scheduler/stream_order.h"
#include "server/device.h"
#include "server/gpu_time.h"

namespace remora::server {

// How soon the executor polls again for a wait that no doorbell announces (a waiter's long
// spin on a GPU, an event synchronize), begun `age_ns` ago: a fixed fraction of its age,
// within the executor's shortest and longest intervals, so a wait is found a bounded
// fraction of its length after the device gets there.
std::chrono::nanoseconds AgedPollInterval(uint64_t age_ns);

class Executor {
 public:
  // Runs with the outcome of a wait: ok, the error that stopped the work, or
  // kDevicesUnavailable when the tenant left first.
  using Completion = std::function<void(const Status&)>;
  // Makes the item's asynchronous driver calls on the tenant's stream.
  using Issue = std::function<Status(CUstream)>;
  // One kernel launch as the tenant's request holds it: views, valid for the call that
  // passes them (Tenant::Launch keeps a copy only of what it must queue).
  struct LaunchArgs {
    CUfunction fn = nullptr;
    unsigned grid[3] = {1, 1, 1};
    unsigned block[3] = {1, 1, 1};
    unsigned shared = 0;
    std::string_view params;  // packed, as the kernel takes them
    // Set for a cooperative launch: each parameter's offset in `params`.
    std::optional<std::span<const uint32_t>> cooperative;
    unsigned cluster[3] = {1, 1, 1};  // a thread-block cluster's shape; 1x1x1: none
  };
  // How a wait starts on the calling thread.
  enum class Wait {
    kAsync,  // hand it to the executor's thread at once
    kSpin,   // poll briefly first (a caller about to reply)
  };

  // What the executor tells a tenant's session.
  struct TenantHooks {
    // A host function reached its place in its stream: ask the tenant to run it.
    std::function<void(uint64_t id)> run_host_func;
    // Issuing an item of the tenant failed (deferred, or sticky for a fault).
    std::function<void(const Status&)> on_error;
  };
  // A device fault seen by the executor in `epoch` while polling `observer`'s work.
  using FaultHook = std::function<void(uint64_t epoch, const std::string& observer, const Status&)>;

  class Tenant;

  Executor(Device& device, std::unique_ptr<sched::DispatchQueue> order, FaultHook on_fault);
  ~Executor();  // stops the thread; every tenant must have closed
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // A new tenant with no streams. Thread-safe.
  std::shared_ptr<Tenant> Join(uint64_t id, std::string name, TenantHooks hooks,
                               const sched::Share& share = sched::Share());
  // Gives tenant `id` a new compute share (a reloaded tenants file); no-op for
  // one that has left. Thread-safe.
  void Configure(uint64_t id, const sched::Share& share);
  // Sets project `p`'s share of GPU time among projects (the tenants file's
  // gpu-compute). Thread-safe.
  void ConfigureProject(sched::ProjectId p, double share);

  // True where synchronous waits spin long with no doorbell (NVIDIA's driver, or
  // REMORA_WAIT_SPIN=long): the host has cores to wait on, as on a GPU.
  bool long_spins() const { return long_spins_; }
  // Tenants joined and not yet gone. Thread-safe.
  size_t tenant_count() const;

  // What a tenant's work has cost the device: all the device time charged to
  // it, and its share of the device's time over about the last 10 s (a
  // decaying average). nullopt for a tenant that has not joined or has left.
  // Thread-safe.
  struct Usage {
    uint64_t gpu_ns = 0;
    double share = 0;
  };
  std::optional<Usage> UsageOf(uint64_t id) const;
  // Items the dispatch queue let past an in-flight bound whose work made no progress
  // (sched::DispatchQueue::stall_releases). Thread-safe.
  uint64_t StallReleases() const;

  // Device memory from the stream-ordered pool, usable on every stream once
  // this returns. REQUIRES: a Use. Errors: the driver's (kMemoryAllocation).
  Result<CUdeviceptr> Allocate(uint64_t bytes);
  // Gives `p` back without waiting for any stream: the caller has made sure
  // the owner's work on it is done. REQUIRES: a Use.
  Status Free(CUdeviceptr p);

 private:
  friend class Tenant;
  struct Poll;
  // Items the dispatch queue grants a tenant's thread at most at once.
  static constexpr uint32_t kGrant = 16;
  void Loop();
  // Issues, tenant by tenant, whatever the dispatch queue lets go now. Holds no lock on entry.
  // REQUIRES: a Use.
  void Pump();
  // Grants `t` items to issue on its own thread: true gives the caller one, for the item it
  // is about to issue, and the rest to Tenant::permits_; false when the queue says wait, and
  // then `t` is ready in it and the executor's thread issues for it. REQUIRES: t.mu_.
  bool GrantTo(Tenant& t);
  // Takes every unused grant back into the dispatch queue; true if one held any item.
  // REQUIRES: mu_.
  bool RevokeGrantsLocked();
  // Gives `t`'s unused grant back; true if it held any item. REQUIRES: mu_.
  bool ReturnGrantLocked(Tenant& t);
  // Has the executor's thread pump soon: a caller without a Use changed who
  // may go (a tenant's new share may free work it held back). REQUIRES: mu_.
  void RepumpLocked();
  // Pooled events: markers (no timing) and timers (GPU-time accounting by
  // events). A driver call only when the pool is empty, under no lock.
  // REQUIRES: a Use.
  Result<CUevent> AcquirePooled(bool timing);
  Result<CUevent> AcquireMarker() { return AcquirePooled(false); }
  Result<CUevent> AcquireTimer() { return AcquirePooled(true); }
  void ReleaseMarker(CUevent e, uint64_t epoch);
  void ReleaseTimer(CUevent e, uint64_t epoch);
  // Hands a poll to the executor thread. Takes mu_.
  void Watch(Poll p);
  // Wakes the executor's thread when `s` reaches this point (a host function
  // queued there), so a wait somebody is blocked in ends when the device gets
  // there, not at the next poll. Queue it just before the wait's marker, so
  // the stream is idle once the wait ends. Best effort: polling still finds it.
  // REQUIRES: a Use.
  void RingWhenReached(CUstream s);
  uint64_t NowNs() const;
  // The device time `s` has spent running work, as the emulated GPU measures
  // it; nullopt on a driver that does not say (NVIDIA's).
  std::optional<uint64_t> BusyNs(CUstream s) const;
  // The allocation stream of the current epoch. REQUIRES: a Use.
  Result<CUstream> MemStream();

  Device& dev_;
  const FaultHook on_fault_;
  // Charge device time by timing events around each group (NVIDIA's driver, which
  // does not report a stream's busy time; REMORA_GPU_TIME=events forces it).
  const bool timing_events_;
  // Synchronous waits spin up to 500 us with no doorbell while few others do (NVIDIA's
  // driver; REMORA_WAIT_SPIN=long|short overrides): Tenant::WhenDone.
  const bool long_spins_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<sched::DispatchQueue> order_;                  // guarded by mu_
  std::unordered_map<uint64_t, std::weak_ptr<Tenant>> tenants_;  // guarded by mu_
  std::unordered_set<Tenant*> granted_;       // guarded by mu_: tenants that may hold permits
  std::unique_ptr<std::vector<Poll>> polls_;  // guarded by mu_ (a pointer: Poll is incomplete here)
  std::mutex pool_mu_;                        // guards the event pools
  std::vector<CUevent> markers_;
  std::vector<CUevent> timers_;
  uint64_t pool_epoch_ = 0;  // of markers_ and timers_
  std::mutex mem_mu_;        // guards the allocation stream, created per epoch
  CUstream mem_stream_ = nullptr;
  uint64_t mem_epoch_ = ~uint64_t{0};
  std::atomic<bool> pools_{true};  // false once the driver refused stream-ordered allocation
  bool stop_ = false;
  bool repump_ = false;                // guarded by mu_ (RepumpLocked)
  uint64_t urgent_ = 0;                // polls somebody waits for, ever watched (guarded by mu_)
  uint64_t unannounced_ = 0;           // of those, the ones no doorbell announces (guarded by mu_)
  std::atomic<uint64_t> rung_{0};      // doorbell rings heard (RingWhenReached)
  std::atomic<unsigned> spinners_{0};  // waiters spinning on a GPU (Tenant::WhenDone)
  std::thread thread_;
};

// One tenant's queues. Every method REQUIRES the caller to hold a Device::Use
// of the epoch the tenant's handles belong to, with the context current, and
// is called by the tenant's session (one thread at a time) unless it says so.
class Executor::Tenant : public std::enable_shared_from_this<Executor::Tenant> {
 public:
  ~Tenant();

  // A stream of the tenant (0: its legacy default stream) on `s`, which the
  // tenant owns alone. `blocking`: ordered with the legacy default stream.
  void AddStream(uint64_t id, CUstream s, bool blocking);
  bool HasStream(uint64_t id) const;
  // Takes no more work on `id`; once its work is done, `released(s)` runs
  // (on the executor's thread or inline) to give the CUstream back.
  void RemoveStream(uint64_t id, std::function<void(CUstream)> released);

  // Stream-ordered work. Errors: kInvalidResourceHandle for an unknown stream
  // or event; the tenant's sticky fault. An issue failure later reaches
  // TenantHooks::on_error.
  // `idles`: the work may hold the stream idle on the device (a wait for a value in memory),
  // so no GPU time is charged across it.
  Status Submit(uint64_t stream, Issue issue, bool idles = false);
  // A kernel launch: issued from `args` at once when it may go (nothing copied, nothing
  // allocated once the queues have grown), else queued with a copy of its parameters.
  Status Launch(uint64_t stream, const LaunchArgs& args);
  Status Record(uint64_t stream, CUevent e);
  Status WaitEvent(uint64_t stream, CUevent e);
  // The tenant's host function `id`: when the stream reaches it the executor
  // calls run_host_func(id); the stream's later work waits for HostFuncDone.
  Status HostFunc(uint64_t stream, uint64_t id);
  void HostFuncDone(uint64_t id);
  // `stream`'s later work waits until the returned function is called (once, from any thread
  // holding no executor lock): a gate that something outside this tenant opens, such as the
  // completion of another process's record of an IPC event.
  Result<std::function<void()>> Gate(uint64_t stream);

  // `done` runs once the work submitted so far on `stream` (every stream of
  // the tenant when nullopt) has completed, or failed.
  void WhenDone(std::optional<uint64_t> stream, Completion done, Wait how = Wait::kAsync);
  // `done` runs once the latest record of `e` submitted so far has completed.
  void WhenEventDone(CUevent e, Completion done);
  // kNotReady while work submitted on `stream` is queued or running.
  Status Query(uint64_t stream);
  // True if none of the tenant's work waits in its queues: everything it
  // submitted is in the driver's hands, so querying or waiting for one of its
  // CUstreams (or events) in the driver directly is exact. Lock-free: the hot
  // path of cudaStreamQuery, cudaEventQuery and short copies. Thread-safe.
  bool AllIssued() const { return queued_.load(std::memory_order_acquire) == 0; }
  Status QueryEvent(CUevent e);
  // An event is being destroyed: forget it (its queued records still run).
  void ForgetEvent(CUevent e);

  // Drops every queued item; their waits complete with `why`. Streams stay.
  void Abandon(const Status& why);
  // Asks the driver to stop what was already issued on this tenant's streams: the emulated
  // GPU drops it and stops a running kernel (remoraEmuCancelStream). NVIDIA's driver cannot
  // stop a kernel: there this does nothing and that work runs to its end.
  void CancelIssued();
  // Forgets every stream and event (the context they lived in is gone);
  // queued items are dropped, their waits complete with `why`.
  void Reset(const Status& why);

 private:
  friend class Executor;
  struct Item;
  struct Stream;
  Tenant(Executor& ex, uint64_t id, std::string name, TenantHooks hooks);
  // Appends `item` to `stream`'s queue with the ordering CUDA implies (after the latest
  // record of `waits`, if given), then issues what may go. Returns the item's index in its
  // stream. `owner`: the executor's own item, accepted on a stream being removed.
  // REQUIRES: mu_.
  Result<uint64_t> EnqueueLocked(uint64_t stream, Item item,
                                 std::optional<CUevent> waits = std::nullopt, bool owner = false);
  // Issues ready items while the tenant holds a grant or the dispatch queue gives one; else
  // leaves the tenant ready in the queue. REQUIRES: mu_, a Use.
  void IssueReadyLocked();
  // Uses one item of the tenant's grant; false if none is left. Lock-free.
  bool TakePermit();
  // Issues `st`'s head item. REQUIRES: mu_, a Use, the head ready.
  void IssueLocked(Stream& st);
  // Orders `st` on the device after the streams CUDA's legacy semantics tie it to.
  // REQUIRES: mu_, a Use.
  Status OrderLocked(Stream& st);
  // Queues completions of dropped items with `why`. REQUIRES: mu_.
  void DropLocked(Stream& st, const Status& why);
  // Records a marker on `st` and watches it; `then` runs when it is reached.
  void WatchStreamLocked(Stream& st, Completion then, bool lazy = false);
  // GPU-time accounting of issued items (see executor_meter.cc). REQUIRES: mu_.
  void CountIssuedLocked(Stream& st);
  void ChargeLocked(Stream& st);
  // Starts a segment of `st`'s charge group with a timing event, if events
  // measure GPU time and none is open. REQUIRES: mu_, a Use.
  void StartGroupLocked(Stream& st);
  // Ends the open segment (before a wait for another stream). REQUIRES: mu_, a Use.
  void CutGroupLocked(Stream& st);
  // The tenant is held by the dispatch queue: ends every open segment, since its
  // streams may run dry before it may issue again. REQUIRES: mu_, a Use.
  void PauseGroupsLocked();
  // How a charge group is timed: segments between timing events of `epoch`, or
  // by wall time (no events, or one failed).
  struct Timed {
    std::vector<std::pair<CUevent, CUevent>> segments;
    bool wall = true;
    uint64_t epoch = 0;
  };
  // A charge group of `n` items on `stream`, handed to the device at `start`
  // (wall time) and timed by `timed`, is done. Takes mu_, then the executor's.
  void Charged(uint64_t stream, uint32_t n, uint64_t start, const Timed& timed);

  Executor& ex_;
  const uint64_t id_;
  const std::string name_;
  const TenantHooks hooks_;
  mutable std::mutex mu_;   // the tenant's own: its streams and queues
  uint64_t next_gate_ = 0;  // Gate's hold ids (kGateIds | n)
  // Guarded by mu_: the streams' device side, and their queues in CUDA's order.
  std::unordered_map<uint64_t, std::unique_ptr<Stream>> streams_;
  sched::StreamOrder<Item, CUevent> ordering_;
  // Device time charged (Charged), guarded by ex_.mu_: in all, and as a share.
  uint64_t gpu_ns_ = 0;
  UsageRate usage_{ex_.NowNs()};
  // Items the dispatch queue granted and the tenant has not issued yet: taken by the
  // tenant's thread, taken back (RevokeGrantsLocked) by whoever holds ex_.mu_.
  std::atomic<uint32_t> permits_{0};
  // Items in all queues (held host functions included); written under mu_,
  // decremented only once an item reached the driver.
  std::atomic<size_t> queued_{0};
};

}  // namespace remora::server
