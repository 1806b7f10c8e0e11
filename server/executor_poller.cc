// server/executor_poller.cc - the executor's completion poller: the events the executor
// records (markers, and timers for GPU time) come from pools; a wait is a poll of its marker,
// watched by the executor's one thread (Loop), which runs the completion once the device is
// past it, and issues what the dispatch queue lets go meanwhile.
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "server/executor_internal.h"
#include "server/handlers/util.h"

namespace remora::server {

namespace {

// The executor thread's polling interval grows from the first to the last
// while nothing completes.
constexpr auto kPollMin = std::chrono::microseconds(20);
constexpr auto kPollMax = std::chrono::microseconds(1000);
// While only accounting markers are watched (nobody waits on them), polls come
// this often: well within the fair queue's in-flight bound (2 ms, and always
// two items).
constexpr auto kPollLazy = std::chrono::microseconds(400);
// While a tenant's ready work waits at its in-flight bound for completions
// (DispatchQueue::WaitsForDone), polls come this often: a window refilled
// only every kPollLazy may drain first when the predicted costs it is counted
// in run long. Not whenever a queue has work ready: lower classes wait behind
// a higher one, and polling for them took the CPU the emulated GPU runs the
// higher class's kernels on (its p99 went to 1.17x alone, twice).
constexpr auto kPollBacklog = std::chrono::microseconds(100);
// A wait no doorbell announces is polled every 1/kAgeFraction of its age (kPollMin to
// kPollMax): found within about 1.5% of its length after it ends, for one query per poll.
constexpr uint64_t kAgeFraction = 64;
// How often work waiting for an idle device (Device::WhenIdle) looks again when nothing else
// wakes the executor.
constexpr uint64_t kIdleWorkPoll = 1'000'000;

}  // namespace

std::chrono::nanoseconds AgedPollInterval(uint64_t age_ns) {
  return std::clamp<std::chrono::nanoseconds>(std::chrono::nanoseconds(age_ns / kAgeFraction),
                                              kPollMin, kPollMax);
}

Result<CUevent> Executor::AcquirePooled(bool timing) {
  {
    std::lock_guard lock(pool_mu_);
    if (pool_epoch_ != dev_.epoch()) {
      markers_.clear();  // they died with their context
      timers_.clear();
      pool_epoch_ = dev_.epoch();
    }
    std::vector<CUevent>& pool = timing ? timers_ : markers_;
    if (!pool.empty()) {
      CUevent e = pool.back();
      pool.pop_back();
      return e;
    }
  }
  CUevent e = nullptr;
  RETURN_IF_ERROR(
      dev_.Check(dev_.drv().cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                 "cuEventCreate"));
  return e;
}

void Executor::ReleaseMarker(CUevent e, uint64_t epoch) {
  std::lock_guard lock(pool_mu_);
  if (e != nullptr && epoch == dev_.epoch() && epoch == pool_epoch_) markers_.push_back(e);
}

void Executor::ReleaseTimer(CUevent e, uint64_t epoch) {
  std::lock_guard lock(pool_mu_);
  if (e != nullptr && epoch == dev_.epoch() && epoch == pool_epoch_) timers_.push_back(e);
}

void Executor::Watch(Poll p) {
  std::lock_guard lock(mu_);
  if (!p.lazy) ++urgent_;
  if (p.unannounced) ++unannounced_;
  polls_->push_back(std::move(p));
  cv_.notify_one();
}

void Executor::RingWhenReached(CUstream s) {
  dev_.doorbell().Ring(s);
}

void Executor::Loop() {
  auto interval = std::chrono::nanoseconds(kPollMin);
  std::unique_lock lock(mu_);
  for (;;) {
    // Sleep until something is watched, a tenant held back by its compute
    // limit may go again, or a new share may let one go (the wake-ups no
    // completion brings).
    const uint64_t idle_due = dev_.HasIdleWork() ? NowNs() + kIdleWorkPoll : 0;
    while (!stop_ && polls_->empty() && !repump_) {
      const uint64_t now = NowNs();
      std::optional<uint64_t> at = order_->NextEligibleAt(now);
      if (idle_due != 0) at = std::min(at.value_or(idle_due), idle_due);
      if (!at) {
        cv_.wait(lock);
      } else if (*at <= now) {
        break;
      } else {
        cv_.wait_for(lock, std::chrono::nanoseconds(*at - now));
      }
    }
    if (polls_->empty() && stop_) return;
    lock.unlock();
    std::vector<std::function<void()>> run;
    std::optional<std::pair<std::string, Status>> fault;
    uint64_t epoch = 0, rung = 0;
    bool progress = false;
    {
      Device::Use use = dev_.Enter();
      epoch = use.epoch();
      (void)dev_.MakeCurrent();
      // The watched events are queried with no executor lock held: sessions keep submitting
      // (and issuing) meanwhile; what they watch from now on waits for the next round.
      lock.lock();
      std::vector<Poll> polls;
      polls.swap(*polls_);
      rung = rung_.load(std::memory_order_acquire);  // a ring from here on polls again
      const bool stopping = stop_;
      lock.unlock();
      std::vector<Poll> pending;
      Status lost;
      for (Poll& p : polls) {
        Status st;
        if (p.epoch != epoch) {
          if (lost.ok()) {
            const Device::Fault f = dev_.last_fault();
            lost = Error(f.status.ok() ? err::kDevicesUnavailable : f.status.code(),
                         "the GPU context was rebuilt (" +
                             (f.status.ok() ? std::string("server shutting down")
                                            : f.culprit + ": " + f.status.message()) +
                             ")");
          }
          st = lost;
          p.marker = false;  // its event died with the context
        } else if (p.event == nullptr) {
          st = p.status;
        } else if (stopping) {
          st = Error(err::kDevicesUnavailable, "the server is shutting down");
        } else {
          CUresult r = dev_.drv().cuEventQuery(p.event);
          if (r == CUDA_ERROR_NOT_READY) {
            pending.push_back(std::move(p));
            continue;
          }
          st = dev_.Check(r, "waiting for the device");
          if (IsDeviceFault(st.code()) && !fault) fault.emplace(p.observer, st);
        }
        if (p.marker && st.ok()) ReleaseMarker(p.event, epoch);
        run.push_back([done = std::move(p.done), st] { done(st); });
      }
      lock.lock();
      for (Poll& p : pending) polls_->push_back(std::move(p));
      repump_ = false;
      lock.unlock();
      Pump();
      for (auto& f : run) f();
      (void)dev_.RunWhenIdle();
      progress = !run.empty();
      run.clear();  // what the completions held goes here, unlocked
    }
    if (fault && on_fault_) on_fault_(epoch, fault->first, fault->second);
    lock.lock();
    if (stop_) continue;
    // Poll again soon while work completes, less often while it runs long.
    const bool waited_on =
        std::any_of(polls_->begin(), polls_->end(), [](const Poll& p) { return !p.lazy; });
    if (!waited_on && order_->WaitsForDrain())
      interval = kPollMin;
    else if (!waited_on)
      interval = order_->WaitsForDone() ? kPollBacklog : kPollLazy;
    else
      interval = fault || progress ? std::chrono::nanoseconds(kPollMin)
                                   : std::min<std::chrono::nanoseconds>(interval * 2, kPollMax);
    std::optional<uint64_t> youngest;  // the start of the youngest unannounced wait
    for (const Poll& p : *polls_)
      if (p.unannounced) youngest = std::max(youngest.value_or(0), p.since);
    if (youngest) {
      const uint64_t now = NowNs();
      interval = std::min(interval, AgedPollInterval(now > *youngest ? now - *youngest : 0));
    }
    // A wait someone is waiting for cuts a lazy interval short, and one no doorbell will
    // announce a long one.
    const uint64_t urgent = urgent_, unannounced = unannounced_;
    cv_.wait_for(lock, interval, [&] {
      return stop_ || repump_ || (!waited_on && urgent_ != urgent) || unannounced_ != unannounced ||
             rung_.load(std::memory_order_acquire) != rung;
    });
    // A ring comes just before its marker: poll from the shortest interval.
    if (rung_.load(std::memory_order_acquire) != rung) interval = kPollMin;
  }
}

}  // namespace remora::server
