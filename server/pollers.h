// server/pollers.h - PollerPool: a fixed set of threads serving every session.
//
// No thread per session: each idle session's channel is armed and its wake
// descriptor sits in one epoll set (EPOLLONESHOT, so one thread serves a
// session at a time). A thread that wakes serves the session's waiting frames
// (Session::ServeReady), then re-arms it, or drops it once it ended. A session
// that waits for the device holds no thread: its reply comes from a completion.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "proto/status.h"

namespace remora::server {

class Session;

class PollerPool {
 public:
  // Starts `threads` serving threads. Errors: kInitializationError (epoll).
  static Result<std::unique_ptr<PollerPool>> Start(size_t threads);
  // Waits for every session to end (callers Stop them first), then stops.
  ~PollerPool();
  PollerPool(const PollerPool&) = delete;
  PollerPool& operator=(const PollerPool&) = delete;

  // Serves `s` (whose wake_fd() is valid) until it ends. Thread-safe.
  Status Add(std::shared_ptr<Session> s);
  // Sessions being served. Thread-safe.
  size_t size() const;
  size_t threads() const { return threads_.size(); }

 private:
  struct Entry {
    std::shared_ptr<Session> session;
    int fd = -1;
    // Held while a thread serves the session. EPOLLONESHOT already makes that
    // one thread at a time; the lock makes the hand-over between threads an
    // ordering ThreadSanitizer (which cannot see through epoll) also knows.
    std::mutex serving;
  };
  // Serves `e` once, then (with `rearm`) hands it back to epoll, all under
  // e->serving; false when its session ended.
  bool Serve(Entry* e, bool rearm);
  PollerPool() = default;
  void Loop();
  // Hands `e` back to epoll for its next wake-up; false if epoll refused.
  bool Rearm(Entry* e);
  void Forget(Entry* e);

  int epoll_ = -1;
  int stop_fd_ = -1;  // eventfd: readable once the pool stops
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::condition_variable empty_cv_;
  std::map<Entry*, std::unique_ptr<Entry>> entries_;
};

}  // namespace remora::server
