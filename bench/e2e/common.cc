// bench/e2e/common.cc - timing, pinning, the ping-pong floor and child processes.
#include "bench/e2e/common.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <thread>

extern char** environ;

namespace remora::bench::e2e {
namespace {

// The affinity the process started with, captured before anything pins.
const cpu_set_t& StartAffinity() {
  static const cpu_set_t set = [] {
    cpu_set_t s;
    CPU_ZERO(&s);
    if (sched_getaffinity(0, sizeof s, &s) != 0) CPU_SET(0, &s);
    return s;
  }();
  return set;
}

[[maybe_unused]] const bool kCaptured = (StartAffinity(), true);

}  // namespace

void Unpin() {
  (void)pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t), &StartAffinity());
}

int PinProcess(pid_t pid, int cpu) {
  cpu_set_t set = StartAffinity();
  if (cpu >= 0) {
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
  }
  int changed = 0;
  std::error_code ec;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry.path().filename().c_str()));
    if (tid > 0 && sched_setaffinity(tid, sizeof set, &set) == 0) ++changed;
  }
  return changed;
}

int AllowedCpus() {
  return CPU_COUNT(&StartAffinity());
}

Stats PingPong(size_t iters) {
  std::vector<uint64_t> ticks;
  ticks.reserve(iters);
  TickClock clock;
  bench::PingPong(iters, ticks);
  return Summarize(ticks, clock.NsPerTick());
}

PingPonger::PingPonger() : line_(std::make_unique<Line>()), peer_([this] { Peer(); }) {}

PingPonger::~PingPonger() {
  stop_.store(true, std::memory_order_release);
  go_.fetch_add(1, std::memory_order_release);  // pairs with the peer's acquire wait
  go_.notify_one();
  peer_.join();
}

void PingPonger::Peer() {
  PinTo(1);
  uint32_t seen = 0;
  for (;;) {
    go_.wait(seen, std::memory_order_acquire);  // pairs with Block's release increment
    seen = go_.load(std::memory_order_acquire);
    if (stop_.load(std::memory_order_acquire)) return;
    const uint64_t n = iters_.load(std::memory_order_relaxed);
    for (uint64_t i = 0; i < n; ++i) {
      // Acquire pairs with the caller's release store of 2i+1.
      SpinUntil([&] { return line_->v.load(std::memory_order_acquire) == 2 * i + 1; });
      line_->v.store(2 * i + 2, std::memory_order_release);
    }
  }
}

void PingPonger::Block(size_t iters, std::vector<uint64_t>* ticks) {
  PinTo(0);
  line_->v.store(0, std::memory_order_relaxed);
  iters_.store(iters, std::memory_order_relaxed);
  go_.fetch_add(1, std::memory_order_release);  // publishes v and iters_ to the peer
  go_.notify_one();
  for (uint64_t i = 0; i < iters; ++i) {
    const uint64_t t0 = __rdtsc();
    line_->v.store(2 * i + 1, std::memory_order_release);  // pairs with the peer's acquire
    SpinUntil([&] { return line_->v.load(std::memory_order_acquire) == 2 * i + 2; });
    ticks->push_back(__rdtsc() - t0);
  }
}

std::map<std::string, double> ParseKeyValues(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string tok;
  while (in >> tok) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    char* end = nullptr;
    const double v = std::strtod(tok.c_str() + eq + 1, &end);
    if (end != tok.c_str() + eq + 1) out[tok.substr(0, eq)] = v;
  }
  return out;
}

Child::~Child() {
  CloseStdin();
  if (pid_ > 0 && status_ < 0) Stop();
  if (out_fd_ >= 0) ::close(out_fd_);
}

bool Child::Start(const std::vector<std::string>& argv,
                  const std::map<std::string, std::string>& env, const std::string& stderr_path,
                  std::string* err, bool with_stdin) {
  // Everything the child needs is built before fork: only async-signal-safe calls after.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s(*e);
    const std::string key = s.substr(0, s.find('='));
    if (env.count(key) == 0) env_strings.push_back(std::move(s));
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (std::string& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    *err = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  int in_fds[2] = {-1, -1};
  if (with_stdin && ::pipe2(in_fds, O_CLOEXEC) != 0) {
    *err = std::string("pipe: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return false;
  }
  auto close_in = [&] {
    if (in_fds[0] >= 0) ::close(in_fds[0]);
    if (in_fds[1] >= 0) ::close(in_fds[1]);
  };
  const int log_fd = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    *err = "open " + stderr_path + ": " + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    close_in();
    return false;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    *err = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    ::close(log_fd);
    close_in();
    return false;
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the benchmark
    ::signal(SIGPIPE, SIG_DFL);          // the parent ignores it
    if (in_fds[0] >= 0) ::dup2(in_fds[0], STDIN_FILENO);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(log_fd);
  if (in_fds[0] >= 0) ::close(in_fds[0]);
  in_fd_ = in_fds[1];
  pid_ = pid;
  out_fd_ = fds[0];
  status_ = -1;
  return true;
}

bool Child::WriteLine(const std::string& line) {
  if (in_fd_ < 0) return false;
  const std::string s = line + "\n";
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(in_fd_, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void Child::CloseStdin() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

std::string Child::ReadAll() {
  std::string out = std::move(pending_);
  pending_.clear();
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return out;
}

bool Child::ReadLine(std::string* line, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      *line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = out_fd_, .events = POLLIN, .revents = 0};
    const int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[4096];
    const ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

int Child::Wait() {
  if (pid_ <= 0) return -1;
  if (status_ >= 0) return status_;
  int st = 0;
  while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
  }
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return status_;
}

bool Child::Running() {
  if (pid_ <= 0 || status_ >= 0) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) != pid_) return true;
  status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return false;
}

int Child::WaitOrStop(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (Running() && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  Stop();
  return Wait();
}

void Child::Stop(std::chrono::milliseconds grace) {
  if (pid_ <= 0 || status_ >= 0) return;
  ::kill(pid_, SIGTERM);
  const auto deadline = Clock::now() + grace;
  int st = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return;
    }
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid_, SIGKILL);
  Wait();
}

std::string RunToCompletion(const std::vector<std::string>& argv,
                            const std::map<std::string, std::string>& env,
                            const std::string& stderr_path, int* status) {
  Child c;
  std::string err;
  if (!c.Start(argv, env, stderr_path, &err)) {
    *status = -1;
    return err;
  }
  std::string out = c.ReadAll();
  *status = c.Wait();
  return out;
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

}  // namespace remora::bench::e2e
