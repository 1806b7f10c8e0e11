// bench/e2e/common.h - timing, pinning, the ping-pong floor and child processes for the e2e
// benches.
//
// The e2e benchmark binary is a CUDA tenant: it links the stub libcudart.so.13
// and must never link server or protobuf code. Everything it needs besides the
// CUDA runtime API lives here:
//   - TickClock/Summarize: per-operation rdtsc samples -> mean, p50, p99 in ns;
//   - PingPong: the bare two-thread cache-line round trip (the shm floor);
//   - Child: fork/exec of a helper (the server, the gRPC floor, this binary in a
//     child mode) with its stdout on a pipe and its stderr in a file.
//
//   remora::bench::e2e::Child c;
//   std::string err;
//   if (!c.Start({"/bin/echo", "hi"}, {}, "/tmp/x.log", &err)) ...;
//   std::string out = c.ReadAll();   // "hi\n"
#pragma once

#include <sched.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/timing.h"

namespace remora::bench::e2e {

using bench::Clock;
using bench::PinTo;
using bench::SpinUntil;
using bench::Stats;
using bench::Summarize;
using bench::TickClock;

// Restores the calling thread's affinity to every CPU the process started with.
void Unpin();
// Number of CPUs this process may run on.
int AllowedCpus();

// Sets the affinity of every thread of process `pid` to `cpu` alone (cpu < 0: every
// CPU this process started with). Returns the number of threads changed.
int PinProcess(pid_t pid, int cpu);

// `iters` cache-line ping-pong round trips between this thread (pinned to CPU 0) and
// a helper thread (CPU 1); one sample per round trip. Leaves this thread pinned.
Stats PingPong(size_t iters);

// The same floor in short blocks, to interleave with the measured operation on a
// shared machine: a peer thread pinned to CPU 1 that sleeps (futex) between blocks.
// Not thread-safe: one caller (the benchmark thread).
class PingPonger {
 public:
  PingPonger();
  ~PingPonger();
  PingPonger(const PingPonger&) = delete;
  PingPonger& operator=(const PingPonger&) = delete;

  // Pins the caller to CPU 0 and appends `iters` round-trip samples (rdtsc ticks) to *ticks.
  void Block(size_t iters, std::vector<uint64_t>* ticks);

 private:
  void Peer();
  struct alignas(128) Line {
    std::atomic<uint64_t> v{0};
  };
  std::unique_ptr<Line> line_;
  std::atomic<uint32_t> go_{0};     // block number the peer should serve; futex word
  std::atomic<uint64_t> iters_{0};  // round trips in the current block
  std::atomic<bool> stop_{false};
  uint32_t block_ = 0;
  std::thread peer_;
};

// Parses "key=value" tokens (whitespace-separated) into a map; later keys win.
std::map<std::string, double> ParseKeyValues(const std::string& text);

// A helper process: fork/exec with stdout on a pipe, stderr appended to a file.
// The destructor kills (SIGTERM, then SIGKILL after 5 s) and reaps it if still running.
class Child {
 public:
  Child() = default;
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  // Starts argv[0] with `argv`, the current environment plus `env` (overriding).
  // Returns false with *err set if fork/exec setup fails (exec failure shows as exit 127).
  // With `with_stdin`, the child's stdin is a pipe written by WriteLine.
  bool Start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& stderr_path, std::string* err, bool with_stdin = false);
  // Writes `line` and a newline to the child's stdin; false if it cannot.
  bool WriteLine(const std::string& line);
  // Closes the child's stdin (it sees EOF).
  void CloseStdin();
  // Reads stdout until EOF (the child exited or closed it).
  std::string ReadAll();
  // Reads one line from stdout, waiting at most `timeout`; false on EOF or timeout.
  bool ReadLine(std::string* line, std::chrono::milliseconds timeout);
  // Waits for exit; returns the exit status (128+signal if killed), -1 if not started.
  int Wait();
  // True while the child has not exited (reaps it if it has).
  bool Running();
  // Waits up to `timeout` for the child to exit by itself, then Stop()s it. Returns the
  // exit status, as Wait.
  int WaitOrStop(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL if it has not exited within `grace`; reaps it.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  int in_fd_ = -1;
  std::string pending_;  // bytes read past the last returned line
  int status_ = -1;
};

// Runs `argv` to completion and returns its stdout; *status gets its exit status.
std::string RunToCompletion(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env,
                            const std::string& stderr_path, int* status);

// Path of the running executable (/proc/self/exe).
std::string SelfExe();

}  // namespace remora::bench::e2e
