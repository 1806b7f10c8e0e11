// emu/stream.cc - stream workers and completion markers.
#include "emu/stream.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "emu/device.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Progress::Complete(Marker& m) {
  Complete(m, NowNs());
}

// Wakes waiters only when one waits for `m`: a thread synchronising on a
// stream's tail is not woken by every launch completing before it.
void Progress::Complete(Marker& m, int64_t now_ns) {
  m.time_ns.store(now_ns, std::memory_order_relaxed);
  bool wake;
  {
    std::lock_guard lock(mu_);
    // release: pairs with the acquire loads in Wait and in callers polling done.
    m.done.store(true, std::memory_order_release);
    wake = std::find(waited_.begin(), waited_.end(), &m) != waited_.end();
  }
  if (wake) cv_.notify_all();
}

void Progress::Wait(std::span<const std::shared_ptr<Marker>> markers) {
  std::unique_lock lock(mu_);
  for (const auto& m : markers) {
    if (m == nullptr || m->done.load(std::memory_order_acquire)) continue;
    // Registered under mu_, as Complete checks it: no wake-up is lost.
    waited_.push_back(m.get());
    cv_.wait(lock, [&] { return m->done.load(std::memory_order_acquire); });
    waited_.erase(std::find(waited_.begin(), waited_.end(), m.get()));
  }
}

namespace {

bool Done(const std::shared_ptr<Marker>& m) {
  return m == nullptr || m->done.load(std::memory_order_acquire);
}

thread_local const std::atomic<bool>* t_cancelled = nullptr;

}  // namespace

const std::atomic<bool>* CurrentWorkCancelled() {
  return t_cancelled;
}

Stream::Stream(Progress& progress, const std::atomic<int>& skip, unsigned flags, int priority)
    : progress_(progress), skip_(skip), flags_(flags), priority_(priority) {}

Stream::~Stream() {
  std::thread worker;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    if (!running_) finished_.store(true, std::memory_order_release);
    worker = std::move(worker_);
    if (sleeping_) cv_.notify_one();
  }
  // A running worker drains the queue, sees closed_ and exits without lingering.
  if (worker.joinable()) worker.join();
}

// Starts a worker when none runs (the previous one, if any, has already left
// its loop: join only reaps it). Otherwise signals only a worker that is
// asleep: while it drains a busy queue it re-checks queue_ under mu_ before
// waiting, so no wake-up is lost.
void Stream::Push(Work w) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    w.seq = pushed_++;
    if (!w.run && queue_.empty() && Done(tail_) &&
        std::all_of(w.deps.begin(), w.deps.end(), Done)) {
      // A pure ordering point with nothing to wait for is passed at once, as a
      // GPU passes an event record on an idle stream: no worker wakes for it,
      // and a query right after sees the stream idle. Completed under mu_, so
      // nothing pushed after it can complete first.
      tail_ = w.done;
      progress_.Complete(*w.done);
      return;
    }
    std::shared_ptr<Marker> prev = std::exchange(tail_, w.done);
    queue_.push_back(std::move(w));
    wake = sleeping_;
    if (!running_) {
      if (worker_.joinable()) worker_.join();
      try {
        worker_ = std::thread([this] { Loop(); });
      } catch (...) {  // no thread: undo the push, so queue_ and running_ stay consistent
        queue_.pop_back();
        tail_ = std::move(prev);
        throw;
      }
      running_ = true;
    }
  }
  if (wake) cv_.notify_one();
}

std::shared_ptr<Marker> Stream::tail() const {
  std::lock_guard lock(mu_);
  return tail_;
}

bool Stream::idle() const {
  std::lock_guard lock(mu_);
  return Done(tail_);
}

void Stream::Cancel() {
  std::lock_guard lock(mu_);
  cancel_below_ = pushed_;
  // Whatever runs now was pushed before: it stops. The next item resets the flag.
  cancel_running_.store(true, std::memory_order_relaxed);
}

void Stream::Close() {
  std::lock_guard lock(mu_);
  closed_ = true;
  if (!running_) finished_.store(true, std::memory_order_release);
  // Under mu_: once finished() the owner may destroy the stream at any time.
  if (sleeping_) cv_.notify_one();
}

// Returns with nothing queued: at once if closed, else after kStreamLinger
// without new work. Clearing running_ under mu_ hands any later Push the job
// of starting a new worker.
void Stream::Loop() {
  pthread_setname_np(pthread_self(), "remora-stream");
  ptx::BecomeDeviceThread(priority_ < kStreamPriorityLeast ? ptx::kRankedDeviceNice
                                                           : ptx::kDeviceNice);
  for (;;) {
    Work w;
    {
      std::unique_lock lock(mu_);
      if (queue_.empty() && !closed_) {
        const auto deadline = std::chrono::steady_clock::now() + kStreamLinger;
        sleeping_ = true;
        cv_.wait_until(lock, deadline, [&] { return !queue_.empty() || closed_; });
        sleeping_ = false;
      }
      if (queue_.empty()) {
        running_ = false;
        if (closed_) finished_.store(true, std::memory_order_release);
        return;
      }
      w = std::move(queue_.front());
      queue_.pop_front();
      cancel_running_.store(w.seq < cancel_below_, std::memory_order_relaxed);
    }
    progress_.Wait(w.deps);
    // One clock read per item (two for device_time): the end of the run is
    // also the completion time.
    const bool run = w.run && skip_.load(std::memory_order_acquire) == 0 &&
                     !cancel_running_.load(std::memory_order_relaxed);
    const int64_t start = run && w.device_time ? NowNs() : 0;
    if (run) {
      t_cancelled = &cancel_running_;
      w.run();
      t_cancelled = nullptr;
    }
    const int64_t end = NowNs();
    if (run && w.device_time) {
      busy_ns_.fetch_add(static_cast<uint64_t>(end - start), std::memory_order_relaxed);
    }
    // What the item holds (a launch holds its module) is released before it
    // completes: once a wait on it returns, the item references nothing.
    w.run = nullptr;
    progress_.Complete(*w.done, end);
  }
}

}  // namespace remora::emu
