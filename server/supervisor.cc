// server/supervisor.cc - the process that binds the listeners and restarts the worker.
#include "server/supervisor.h"

#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "server/host_port.h"
#include "server/log.h"
#include "transport/shm/shm_channel.h"

namespace remora::server {
namespace {

// Binds (never listens on) a socket for `host`, port 0, with SO_REUSEPORT: the
// kernel's choice of port stays ours and a gRPC server may bind it too.
Result<int> ReservePort(const std::string& addr, const std::string& host, int* fd_out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), "0", &hints, &res) != 0 || !res)
    return Error(err::kInvalidValue, addr + ": cannot resolve the host");
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> hold(res, ::freeaddrinfo);
  const int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      ::bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    const int e = errno;
    if (fd >= 0) ::close(fd);
    return Error(err::kInitializationError, addr + ": cannot reserve a port: " + std::strerror(e));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  (void)::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  *fd_out = fd;
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace

Result<Endpoints> BindEndpoints(const std::vector<std::string>& unix_paths,
                                const std::vector<std::string>& grpc_addrs,
                                const std::string& metrics_addr) {
  Endpoints e;
  auto fail = [&e](Status s) {
    ReleaseEndpoints(e);
    return s;
  };
  for (const std::string& path : unix_paths) {
    auto fd = transport::ShmListener::Bind(path);
    if (!fd.ok()) return fail(fd.status());
    e.unix_paths.push_back(path);
    e.unix_fds.push_back(*fd);
  }
  // "HOST:0" -> "HOST:N" with N reserved; other addresses as they are.
  auto pin = [&e](const std::string& addr, const char* flag) -> Result<std::string> {
    const std::optional<HostPort> hp = ParseHostPort(addr);
    if (!hp)
      return Error(err::kInvalidValue, std::string(flag) + " takes HOST:PORT, not '" + addr + "'");
    if (hp->port != 0) return addr;
    int fd = -1;
    ASSIGN_OR_RETURN(int p, ReservePort(addr, hp->host, &fd));
    e.reserved.push_back(fd);
    return addr.substr(0, addr.rfind(':') + 1) + std::to_string(p);
  };
  for (const std::string& addr : grpc_addrs) {
    auto pinned = pin(addr, "--grpc");
    if (!pinned.ok()) return fail(pinned.status());
    e.grpc_addrs.push_back(*pinned);
  }
  if (!metrics_addr.empty()) {
    auto pinned = pin(metrics_addr, "--metrics");
    if (!pinned.ok()) return fail(pinned.status());
    e.metrics_addr = *pinned;
  }
  return e;
}

void ReleaseEndpoints(Endpoints& e) {
  for (int fd : e.unix_fds) ::close(fd);
  for (int fd : e.reserved) ::close(fd);
  for (const std::string& path : e.unix_paths) ::unlink(path.c_str());
  e = Endpoints{};
}

int Supervise(const std::function<int()>& worker) {
  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, &old);
  const pid_t self = ::getpid();
  int quick_restarts = 0;
  auto last_start = std::chrono::steady_clock::now();
  bool stopping = false;
  for (;;) {
    last_start = std::chrono::steady_clock::now();
    const pid_t child = ::fork();
    if (child < 0) {
      Log(Level::kError, "supervisor", {{"event", "fork_failed"}, {"error", std::strerror(errno)}});
      return 1;
    }
    if (child == 0) {
      // The worker ends with the supervisor, however it ends: SIGKILL, because a worker
      // left behind would go on serving, and holding the GPU, beside a restarted server.
      (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != self) ::_exit(1);  // the supervisor died before prctl
      // SIGINT, SIGTERM and SIGHUP stay blocked: one passed on before the worker
      // waits for them stays pending for it instead of killing it half started.
      sigset_t chld;
      sigemptyset(&chld);
      sigaddset(&chld, SIGCHLD);
      sigprocmask(SIG_UNBLOCK, &chld, nullptr);
      // exit, not _exit: the worker's atexit work (a sanitizer's leak check
      // among it) runs as it would in a process of its own.
      std::exit(worker());
    }
    Log(Level::kInfo, "supervisor", {{"event", "worker_started"}, {"pid", child}});
    int status = 0;
    for (;;) {
      siginfo_t info{};
      if (::sigwaitinfo(&set, &info) < 0) continue;
      if (info.si_signo != SIGCHLD) {
        stopping = stopping || info.si_signo != SIGHUP;
        (void)::kill(child, info.si_signo);
        continue;
      }
      if (::waitpid(child, &status, WNOHANG) == child) break;
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    // A worker killed by a signal it was not sent (a crash, the kernel's OOM killer) is
    // restarted like one that lost its device: the tenants it served are gone either way,
    // and the next ones need a server.
    const bool crashed = WIFSIGNALED(status) && !stopping;
    Log(crashed || code != 0 ? Level::kWarn : Level::kInfo, "supervisor",
        {{"event", "worker_ended"},
         {"pid", child},
         {"code", code},
         {"signal", WIFSIGNALED(status) ? std::string(strsignal(WTERMSIG(status))) : "none"}});
    if ((code != kExitDeviceLost && !crashed) || stopping) {
      sigprocmask(SIG_SETMASK, &old, nullptr);
      // Asked to stop while the worker was going down for a lost device: it
      // stopped, as asked.
      return stopping && code == kExitDeviceLost ? 0 : code;
    }
    // A worker that faults again soon after starting is restarted more slowly:
    // 0, 0.1, 0.2, 0.4 ... 5 s, back to none after a minute without a restart.
    const auto lived = std::chrono::steady_clock::now() - last_start;
    quick_restarts = lived < std::chrono::minutes(1) ? quick_restarts + 1 : 0;
    const std::chrono::milliseconds pause(
        quick_restarts <= 1 ? 0
                            : std::min<int64_t>(100ll << std::min(quick_restarts - 2, 6), 5000));
    Log(Level::kWarn, "supervisor",
        {{"event", "restart"},
         {"why", crashed ? "the worker died of a signal"
                         : "the worker lost its GPU context to a device fault"},
         {"old_pid", child},
         {"pause_ms", static_cast<int64_t>(pause.count())}});
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
}

}  // namespace remora::server
