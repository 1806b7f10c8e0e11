// emu/dnn/compute_thread.cc - the threads that run oneDNN (see dnn.h).
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include "emu/dnn/dnn.h"

namespace remora::emu::dnn {
namespace {

class ComputeThread {
 public:
  void Run(const std::function<void()>& fn) {
    Job job{&fn};
    {
      std::unique_lock lock(mu_);
      if (!started_ && !Start()) {  // no thread to be had: run here, as before
        lock.unlock();
        fn();
        return;
      }
      queue_.push_back(&job);
    }
    work_cv_.notify_one();
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [&] { return job.done; });
  }

 private:
  struct Job {
    const std::function<void()>* fn;
    bool done = false;  // guarded by mu_
  };

  // REQUIRES: mu_ held. Detached: it outlives every static destructor, so no
  // exit path waits on it or tears its OpenMP team down while the process ends.
  bool Start() {
    try {
      std::thread([this] { Loop(); }).detach();
    } catch (const std::system_error&) {
      return false;
    }
    started_ = true;
    return true;
  }

  void Loop() {
    pthread_setname_np(pthread_self(), "remora-dnn");
    std::unique_lock lock(mu_);
    for (;;) {
      work_cv_.wait(lock, [&] { return !queue_.empty(); });
      Job* job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      (*job->fn)();
      lock.lock();
      job->done = true;
      done_cv_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Job*> queue_;
  bool started_ = false;
};

// One compute thread per nice value of its callers (stream workers of ranked
// and of least-priority streams differ), started by the first such caller so
// that it, and the OpenMP team it makes, inherit that caller's CPU priority.
constexpr int kNiceLevels = 40;  // -20..19

}  // namespace

void RunOnComputeThread(const std::function<void()>& fn) {
  // Never destroyed: the detached threads use them until the process ends.
  using Threads = std::array<ComputeThread, kNiceLevels>;
  alignas(Threads) static unsigned char storage[sizeof(Threads)];
  static Threads* const threads = std::construct_at(reinterpret_cast<Threads*>(storage));
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  (*threads)[static_cast<size_t>(std::clamp(nice + 20, 0, kNiceLevels - 1))].Run(fn);
}

}  // namespace remora::emu::dnn
