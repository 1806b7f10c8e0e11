// emu/stream.h - in-order work queues, each executed by a worker thread that
// exists only while the stream has work.
//
// Work is pushed in API order and runs in that order on the stream's worker.
// Each item completes a Marker; an item may first wait for other markers
// (legacy-stream ordering, cuStreamWaitEvent). Markers only complete after
// everything before them in their stream, so waiting on earlier-pushed markers
// can never deadlock.
//
// Threads: an idle stream has no thread. Push starts a worker when none is
// running; the worker drains the queue and exits once the queue has stayed
// empty for kStreamLinger (so back-to-back work pays no thread start per item),
// or at once when the stream is closed. A stream never has two workers (a new
// one starts only after the last has found the queue empty and left), so items
// still run one at a time in push order. A server holding a thousand idle
// streams therefore holds no stream threads. One thread per busy stream (not a
// shared pool) keeps the old isolation: an item that blocks (a host function,
// a dependency wait) holds up only its own stream.
//
//   Progress progress;
//   Stream s(progress, broken, 0, 0);
//   s.Push(Work{.run = [] { ... }, .done = std::make_shared<Marker>()});
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace remora::emu {

// The completion of one work item. `time_ns` is the steady-clock time at which
// the item finished (set before `done`).
struct Marker {
  std::atomic<bool> done{false};
  std::atomic<int64_t> time_ns{0};
};

// Where completions are announced: one mutex and condition variable per
// context, notified whenever any marker of the context completes.
class Progress {
 public:
  // Marks `m` done at the current steady-clock time and wakes the threads
  // waiting for it.
  void Complete(Marker& m);
  // As above, with the completion time `now_ns` (from NowNs) read by the caller.
  void Complete(Marker& m, int64_t now_ns);
  // Blocks until every marker in `markers` (nulls ignored) is done.
  void Wait(std::span<const std::shared_ptr<Marker>> markers);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<const Marker*> waited_;  // markers some Wait blocks on (guarded by mu_)
};

// How long a stream's worker waits for more work before it exits.
inline constexpr std::chrono::milliseconds kStreamLinger{5};

// Returns the steady-clock time in nanoseconds.
int64_t NowNs();

struct Work {
  std::vector<std::shared_ptr<Marker>> deps;  // must all be done before `run`
  std::function<void()> run;                  // may be empty (a pure ordering point)
  std::shared_ptr<Marker> done;               // REQUIRES: non-null
  bool device_time = false;                   // counts toward the stream's busy time
  uint64_t seq = 0;                           // set by Stream::Push: its place in the stream
};

// On a stream's worker while it runs an item: the flag that turns true when the item is
// cancelled (Stream::Cancel), for long work to poll and stop early. Null on other threads.
const std::atomic<bool>* CurrentWorkCancelled();

class Stream {
 public:
  // `skip` is read before each item: while it is non-zero items are completed
  // without running (a broken or resetting context). Starts no thread.
  Stream(Progress& progress, const std::atomic<int>& skip, unsigned flags, int priority);
  // Closes the stream, waits for the worker to drain the queue, and joins it.
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Appends `w`, starting a worker if none is running; an item with no `run`
  // whose dependencies are done, pushed while the stream is idle, completes
  // at once instead. REQUIRES: not closed.
  // Thread-safe; callers that need a consistent view with tail() serialise
  // both under their own lock.
  void Push(Work w);
  // The marker of the last pushed item, or null if nothing was ever pushed.
  std::shared_ptr<Marker> tail() const;
  // True when every pushed item has completed.
  bool idle() const;
  // Lets the worker exit as soon as the queue is empty (no linger). Idempotent.
  void Close();
  // Cancels every item pushed so far: those not started complete without running, and the
  // one running now sees CurrentWorkCancelled() turn true (a kernel stops within a few
  // thousand instructions per warp). Items pushed afterwards run as usual. Thread-safe.
  void Cancel();
  // True after Close once the queue is drained and no worker runs an item.
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Total wall time spent running device_time items, in nanoseconds.
  uint64_t busy_ns() const { return busy_ns_.load(std::memory_order_relaxed); }

  unsigned flags() const { return flags_; }
  int priority() const { return priority_; }

 private:
  void Loop();

  Progress& progress_;
  const std::atomic<int>& skip_;
  const unsigned flags_;
  const int priority_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Work> queue_;
  std::shared_ptr<Marker> tail_;
  bool closed_ = false;
  // A worker exists and will run everything queued before it exits. False
  // implies queue_ is empty. (guarded by mu_)
  bool running_ = false;
  bool sleeping_ = false;      // the worker waits on cv_; Push signals only then (guarded by mu_)
  uint64_t pushed_ = 0;        // items ever pushed (guarded by mu_)
  uint64_t cancel_below_ = 0;  // items with a smaller seq are cancelled (guarded by mu_)
  // The running item was cancelled; reset as each item starts (written under mu_).
  std::atomic<bool> cancel_running_{false};
  // The current worker, or the last one (exited or exiting once !running_);
  // joined before a new one starts and by the destructor. (guarded by mu_)
  std::thread worker_;
  std::atomic<bool> finished_{false};
  std::atomic<uint64_t> busy_ns_{0};
};

}  // namespace remora::emu
