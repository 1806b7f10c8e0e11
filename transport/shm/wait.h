// transport/shm/wait.h - WaitStrategy: spin briefly, then park on a futex word.
//
// A waiter that found nothing to do calls Wait(word, ready, deadline, on_park_timeout):
//   1. spin: poll ready() with a pause instruction (sched_yield with WaitOptions::yield) for
//      WaitOptions::spin (a futex wake costs ~50 us in our VMs, so the spin must cover the
//      common reply latency);
//   2. park: word.exchange(1) ("I may sleep", seq_cst), re-check ready(), then
//      FUTEX_WAIT(word, 1) for at most WaitOptions::park, calling on_park_timeout() each
//      time the park times out (the caller checks peer liveness there).
// The publisher, after its seq_cst publishing store, calls WakeIfParked(word): a seq_cst
// load of word, and only when it reads non-zero, exchange(0) + FUTEX_WAKE. The two seq_cst
// store->load pairs (publish->word, word->ready) form a Dekker handshake: either the
// waiter's re-check sees the publication or the publisher sees the flag; no fence
// instruction is needed beyond the seq_cst RMWs, so ThreadSanitizer models it exactly.
//
// Event-driven waiters (Channel::Arm) sleep in epoll on a descriptor instead of on the
// futex; the word then says kWaiterArmed, "ring my doorbell":
//   Arm(word, ready):   word.exchange(2) (seq_cst), re-check ready(); if it is already
//                       true, store 0 and report false (nothing armed).
//   publisher:          the same WakeIfParked; when its exchange(0) takes a 2, it returns
//                       true and the caller rings the doorbell (one byte on a socket).
//   Disarm(word):       exchange(0); the caller then drains its doorbell.
// The handshake is the same Dekker pair: the publisher's seq_cst publishing store then
// its seq_cst load of word, against Arm's seq_cst exchange(2) then its seq_cst re-check.
// Whichever runs second sees the other, so either Arm returns false or the publisher
// takes the 2 and rings. Only one side's exchange can take a given 2, so a doorbell is
// rung at most once per Arm (a Disarm that takes it means nobody rang).
//
//   WaitStrategy w({.spin = std::chrono::microseconds(20)});
//   bool ok = w.Wait(trailer.data_waiter, [&] { return ring.Pending(); }, deadline, [] {});
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>

#include "transport/channel.h"

namespace remora::transport::shm {

// Values of a waiter word.
enum : uint32_t {
  kWaiterIdle = 0,    // nobody waits (or the waiter is spinning)
  kWaiterParked = 1,  // FUTEX_WAIT on the word: FUTEX_WAKE it
  kWaiterArmed = 2,   // asleep in epoll: ring its doorbell
};

struct WaitOptions {
  // How long to poll before parking. 0 parks at once.
  std::chrono::nanoseconds spin = std::chrono::microseconds(20);
  // Longest single futex sleep; bounds how late a dead peer is noticed.
  std::chrono::nanoseconds park = std::chrono::milliseconds(100);
  // Poll with sched_yield() between looks instead of a pause instruction: other threads
  // of the host run while this one waits (cudaDeviceScheduleYield).
  bool yield = false;
};

// Parks the calling thread on `word` until woken or `timeout` elapses (FUTEX_WAIT while
// *word == expected; not FUTEX_PRIVATE, so it works across processes on MAP_SHARED
// memory). Returns false if the wait timed out. Thread-safe.
bool FutexWait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout);
// Wakes every thread parked on `word`. Thread-safe.
void FutexWakeAll(std::atomic<uint32_t>& word);

class WaitStrategy {
 public:
  explicit WaitStrategy(WaitOptions options = {}) : options_(options) {}
  const WaitOptions& options() const { return options_; }

  // Returns true once ready() is true, false if `deadline` passes first (a passed
  // deadline still tests ready() once). REQUIRES: ready() reads the state the publisher
  // stores with seq_cst loads; `word` is parked on by this thread only. Thread-safe
  // (const), but one waiter per word.
  template <typename Ready, typename OnParkTimeout>
  bool Wait(std::atomic<uint32_t>& word, Ready&& ready, Deadline deadline,
            OnParkTimeout&& on_park_timeout) const;

  // Publisher side: wakes the thread parked on `word`, if any. Returns true if the waiter
  // was armed (kWaiterArmed) and this call took the arming: the caller must ring the
  // waiter's doorbell. REQUIRES: called after the seq_cst store that publishes. Costs one
  // load when nobody waits.
  static bool WakeIfParked(std::atomic<uint32_t>& word) {
    // seq_cst load pairs with the waiter's seq_cst exchange (Dekker, see file head).
    if (word.load(std::memory_order_seq_cst) == kWaiterIdle) [[likely]]
      return false;
    const uint32_t was = word.exchange(kWaiterIdle, std::memory_order_seq_cst);
    if (was == kWaiterArmed) return true;
    if (was != kWaiterIdle) FutexWakeAll(word);
    return false;
  }

  // Waiter side, event-driven: marks `word` kWaiterArmed unless ready() is already true
  // (then it leaves the word idle and returns false). After true, the publisher's next
  // WakeIfParked returns true (and the caller's doorbell rings) unless Disarm runs first.
  // REQUIRES: as Wait's; not while a Wait on `word` is in progress.
  template <typename Ready>
  static bool Arm(std::atomic<uint32_t>& word, Ready&& ready) {
    // exchange(2) pairs with the publisher's seq_cst load in WakeIfParked.
    word.exchange(kWaiterArmed, std::memory_order_seq_cst);
    if (ready()) {
      word.store(kWaiterIdle, std::memory_order_relaxed);
      return false;
    }
    return true;
  }
  // Waiter side: ends an Arm. Returns true if the publisher took the arming (a doorbell
  // was or is being rung), false if the word was still armed (nobody rang).
  static bool Disarm(std::atomic<uint32_t>& word) {
    return word.exchange(kWaiterIdle, std::memory_order_seq_cst) != kWaiterArmed;
  }

 private:
  static void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
  }

  WaitOptions options_;
};

template <typename Ready, typename OnParkTimeout>
bool WaitStrategy::Wait(std::atomic<uint32_t>& word, Ready&& ready, Deadline deadline,
                        OnParkTimeout&& on_park_timeout) const {
  using Clock = std::chrono::steady_clock;
  if (ready()) return true;
  Clock::time_point now = Clock::now();
  if (now >= deadline.at) return false;
  const Clock::time_point spin_end = now + options_.spin;
  for (uint32_t i = 1;; ++i) {
    if (ready()) return true;
    if (options_.yield)
      sched_yield();
    else
      CpuRelax();
    if ((i & 63) == 0 || options_.yield) {
      now = Clock::now();
      if (now >= spin_end || now >= deadline.at) break;
    }
  }
  for (;;) {
    // exchange(1) pairs with the publisher's seq_cst load in WakeIfParked.
    word.exchange(kWaiterParked, std::memory_order_seq_cst);
    if (ready()) {
      word.store(0, std::memory_order_relaxed);
      return true;
    }
    now = Clock::now();
    if (now >= deadline.at) {
      word.store(0, std::memory_order_relaxed);
      return false;
    }
    const auto left = deadline.at - now;
    const bool woken = FutexWait(word, kWaiterParked, left < options_.park ? left : options_.park);
    word.store(0, std::memory_order_relaxed);
    if (!woken) on_park_timeout();
  }
}

}  // namespace remora::transport::shm
