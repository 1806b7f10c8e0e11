// server/main.cc - remora-server: flags, signals, run.
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "proto/quantity.h"
#include "scheduler/tenant.h"
#include "server/log.h"
#include "server/server.h"
#include "server/supervisor.h"

namespace {

constexpr const char* kUsage =
    "usage: remora-server [--device=auto|cuda|emu] [--listen unix:PATH]... [--grpc HOST:PORT]...\n"
    "                     [--token TOKEN] [--tls-cert PEM --tls-key PEM] [--arena BYTES]\n"
    "                     [--emu-dir DIR] [--scheduler fair|fifo] [--time-slice MS]\n"
    "                     [--slice-pause MS] [--reserve-sms N]\n"
    "                     [--no-restart]\n"
    "                     [--tenants FILE] [--open-max-fraction F] [--open-max-priority P]\n"
    "                     [--metrics HOST:PORT] [--grace-period SECONDS] [--lock-dir DIR]\n"
    "                     [--check]\n"
    "  --device   which driver to load: NVIDIA's (cuda), Remora's emulated GPU (emu),\n"
    "             or NVIDIA's when a GPU is present and the emulator otherwise (auto)\n"
    "  --listen   local tenants over shared memory (default unix:/run/remora/gpu0.sock)\n"
    "  --grpc     remote tenants over gRPC\n"
    "  --scheduler  order of tenants' work: fair (GPU time by compute share, limits,\n"
    "             priorities; the default) or fifo\n"
    "  --time-slice  with the fair scheduler, tenants of a priority class take the GPU\n"
    "             in turns of this many milliseconds of GPU time, their kernels never side\n"
    "             by side, so each is charged only for time it had the GPU (default 8;\n"
    "             0: side by side, each charged its kernels' whole duration)\n"
    "  --slice-pause  a tenant keeps its turn this many milliseconds with nothing on the\n"
    "             GPU, between a synchronization and its next launch (default 1)\n"
    "  --reserve-sms  keep N multiprocessors (rounded up to the GPU's partition step,\n"
    "             8 on Hopper) for high-priority tenants alone, so their kernels start\n"
    "             at once beside saturating lower-priority ones, which run on the rest\n"
    "             (default 0; needs green contexts, CUDA 12.4+; not on the emulated GPU)\n"
    "  --metrics  serve Prometheus' /metrics there (per tenant memory, GPU time,\n"
    "             shares, calls, errors; reclaims, preemptions, faults)\n"
    "  --tenants  admit only the tenants of this YAML file, by token, with its quotas\n"
    "             and projects (SIGHUP reads it again; live sessions are kept)\n"
    "  --open-max-fraction  without --tenants, the most memory and compute share a\n"
    "             client may declare as guaranteed, and its memory limit (default 0.5)\n"
    "  --open-max-priority  without --tenants, the highest priority a client may\n"
    "             declare: high, normal (default) or low\n"
    "  --grace-period  on SIGTERM or SIGINT the server drains: it refuses new\n"
    "             tenants, serves the open ones until they end, and exits 0 when the\n"
    "             last one has; those still open after this many seconds (default 30;\n"
    "             0: at once) fail at their next call, saying the server shut down;\n"
    "             their kernels are stopped on the emulated GPU, and on a GPU the\n"
    "             process exits 10 s later whatever still runs there.\n"
    "             A second SIGTERM or SIGINT ends the drain at once\n"
    "  --check    check the options, the tenants file and the device, then exit\n"
    "             (0: ready to serve) without serving\n"
    "  --no-restart  serve in this process; by default a supervisor process holds the\n"
    "             listeners and starts a fresh server when a device fault leaves a GPU\n"
    "             context the driver cannot rebuild in process (the server ends with\n"
    "             its supervisor, even killed)\n"
    "  --lock-dir  where a server on a GPU locks it against a second server (default:\n"
    "             /run/remora where it is writable, else /tmp)\n"
    "  REMORA_LOG=debug|info|warn|error sets the log level\n";

std::string ExeDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

// Parses `v`, milliseconds in [0, most], into *ns; else says so on stderr.
bool Milliseconds(const char* flag, const std::string& v, double most, uint64_t* ns) {
  char* end = nullptr;
  const double ms = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || *end != '\0' || !(ms >= 0) || ms > most) {
    std::fprintf(stderr, "remora-server: %s takes milliseconds in [0, %g], not '%s'\n", flag, most,
                 v.c_str());
    return false;
  }
  *ns = static_cast<uint64_t>(ms * 1e6);
  return true;
}

// Accepts "--name=value" and "--name value".
bool Flag(int argc, char** argv, int& i, const char* name, std::string& out) {
  size_t n = std::strlen(name);
  if (std::strncmp(argv[i], name, n) != 0) return false;
  if (argv[i][n] == '=') {
    out = argv[i] + n + 1;
    return true;
  }
  if (argv[i][n] == '\0' && i + 1 < argc) {
    out = argv[++i];
    return true;
  }
  return false;
}

// Waits for one signal of `set`, at most until `until` (none: for ever).
// Returns the signal, or 0 when the time is up.
int NextSignal(const sigset_t& set, std::optional<std::chrono::steady_clock::time_point> until) {
  if (!until) {
    int signo = 0;
    while (sigwait(&set, &signo) != 0) {
    }
    return signo;
  }
  const auto left = *until - std::chrono::steady_clock::now();
  if (left <= std::chrono::nanoseconds::zero()) return 0;
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
  const int signo = sigtimedwait(&set, nullptr, &ts);
  return signo > 0 ? signo : 0;
}

// RunServer's word to the signal thread that the server is going away: it
// returns without touching the server again (any other sender is ignored).
constexpr int kStopSignals = SIGUSR1;
std::atomic<bool> g_stop_signals{false};

// Serves the signals of `set` until the server should stop, then stops it:
// SIGHUP reads the tenants file again; the first SIGTERM or SIGINT drains (no
// new sessions; the open ones have `grace` to end before they are ended); a
// second one during the drain ends it at once.
void HandleSignals(remora::server::Server* s, const sigset_t& set,
                   std::chrono::milliseconds grace) {
  using namespace remora;
  using Clock = std::chrono::steady_clock;
  // How often a drain looks whether the last session has ended.
  constexpr auto kDrainPoll = std::chrono::milliseconds(20);
  std::optional<Clock::time_point> deadline;  // set while draining
  std::string why;
  for (;;) {
    const int signo =
        NextSignal(set, deadline ? std::optional(Clock::now() + kDrainPoll) : std::nullopt);
    if (signo == kStopSignals) {
      if (g_stop_signals.load()) return;
      continue;
    }
    if (signo != 0)
      server::Log(server::Level::kInfo, "server", {{"event", "signal"}, {"signal", signo}});
    if (signo == SIGHUP) {
      (void)s->ReloadTenants();  // logs what it did
      continue;
    }
    if (signo == 0) {  // a drain's poll
      if (s->tenant_sessions() == 0) {
        server::Log(server::Level::kInfo, "server", {{"event", "drained"}});
        break;
      }
      if (Clock::now() < *deadline) continue;
      char secs[32];
      std::snprintf(secs, sizeof secs, "%g", static_cast<double>(grace.count()) / 1000);
      why = std::string("the grace period of ") + secs + " s ran out";
      break;
    }
    if (deadline) {
      why = "a second signal ended the drain";
      break;
    }
    if (grace.count() == 0) {
      why = "--grace-period is 0";
      break;
    }
    s->Drain();
    deadline = Clock::now() + grace;
  }
  if (!why.empty()) {
    // Work that cannot be stopped (a kernel on NVIDIA's driver, which has no way to end one)
    // would hold the ending sessions, and so the process, for as long as it runs: past
    // kForcedExit the process goes anyway, and with it its context and everything on it.
    static constexpr auto kForcedExit = std::chrono::seconds(10);
    std::thread([why] {
      std::this_thread::sleep_for(kForcedExit);
      server::Log(server::Level::kError, "server",
                  {{"event", "exit_forced"},
                   {"why", "work of the ended sessions was still running " +
                               std::to_string(kForcedExit.count()) + " s after " + why}});
      _exit(0);
    }).detach();
    s->Drain();
    server::Log(server::Level::kWarn, "server",
                {{"event", "ending_sessions"}, {"sessions", s->tenant_sessions()}, {"why", why}});
    s->EndSessions("remora-server is shutting down (" + why +
                       "): this session is over and all it held on the GPU is freed",
                   std::chrono::seconds(5));
    // Sessions whose work cannot be stopped still hold the device: tearing the server down
    // beneath that work would crash the process, so it waits for the forced exit instead.
    while (s->tenant_sessions() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // gRPC may still be writing the Evicted notices when the sessions count as
    // ended: give them a moment before the listeners cancel what is open.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  s->Shutdown();
}

// Serves until a signal or a lost device; returns the process's exit status.
int RunServer(const remora::server::ServerOptions& opts, std::chrono::milliseconds grace) {
  using namespace remora;
  // Signals go to a waiting thread, never interrupting the server's own.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, kStopSignals);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  auto srv = server::Server::Start(opts);
  if (!srv.ok()) {
    server::Log(server::Level::kError, "server",
                {{"event", "start_failed"}, {"error", srv.status().ToString()}});
    return 1;
  }
  server::Server* s = srv->get();
  std::thread sig([s, set, grace] { HandleSignals(s, set, grace); });
  server::Log(server::Level::kInfo, "server", {{"event", "ready"}, {"pid", getpid()}});
  s->Wait();
  // The signal thread is done with the server (or told to be) before it goes:
  // a lost device ends Wait while it may be draining or waiting for a signal.
  g_stop_signals.store(true);
  pthread_kill(sig.native_handle(), kStopSignals);
  sig.join();
  if (!s->device_lost()) {
    srv->reset();
    return 0;
  }
  // Let the sessions end on their own first, so that each tenant's Evicted frame
  // (why, and whose fault) leaves before the listeners cancel what is open.
  for (int i = 0; i < 200 && s->sessions() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  // Ending the sessions touches a broken context; should the driver hang in
  // it, the process still goes, and with it everything it held.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(10));
    server::Log(server::Level::kError, "server", {{"event", "exit_forced"}});
    _exit(server::kExitDeviceLost);
  }).detach();
  srv->reset();
  // gRPC may still be writing the last frames (the Evicted notices) to the
  // socket when the calls count as done: give them a moment before exiting.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return server::kExitDeviceLost;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace remora;
  // Every tenant holds a few descriptors (a socket, a memfd, a doorbell): take
  // every descriptor the system lets this process have.
  if (rlimit nofile{};
      getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &nofile);
  }
  server::ServerOptions opts;
  opts.emu_dir = ExeDir() + "/../lib/emu";
  std::string v;
  bool restart = true, check = false;
  std::chrono::milliseconds grace = std::chrono::seconds(30);
  for (int i = 1; i < argc; ++i) {
    if (Flag(argc, argv, i, "--device", v)) {
      auto k = server::ParseDeviceKind(v);
      if (!k.ok()) {
        std::cerr << k.status().message() << "\n" << kUsage;
        return 2;
      }
      opts.device = *k;
    } else if (Flag(argc, argv, i, "--listen", v)) {
      if (v.rfind("unix:", 0) != 0) {
        std::cerr << "--listen takes unix:PATH\n" << kUsage;
        return 2;
      }
      opts.unix_paths.push_back(v.substr(5));
    } else if (Flag(argc, argv, i, "--grpc", v)) {
      opts.grpc_addrs.push_back(v);
    } else if (Flag(argc, argv, i, "--token", v)) {
      opts.grpc_token = v;
    } else if (Flag(argc, argv, i, "--tls-cert", v)) {
      opts.tls_cert = v;
    } else if (Flag(argc, argv, i, "--tls-key", v)) {
      opts.tls_key = v;
    } else if (Flag(argc, argv, i, "--scheduler", v)) {
      opts.scheduler = v;
    } else if (Flag(argc, argv, i, "--time-slice", v)) {
      if (!Milliseconds("--time-slice", v, 1000, &opts.time_slice_ns)) return 2;
    } else if (Flag(argc, argv, i, "--slice-pause", v)) {
      if (!Milliseconds("--slice-pause", v, 100, &opts.slice_pause_ns)) return 2;
    } else if (Flag(argc, argv, i, "--reserve-sms", v)) {
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n > 1024) {
        std::cerr << "--reserve-sms takes a count of multiprocessors (0 to 1024)\n";
        return 2;
      }
      opts.reserve_sms = static_cast<unsigned>(n);
    } else if (Flag(argc, argv, i, "--lock-dir", v)) {
      opts.lock_dir = v;
    } else if (Flag(argc, argv, i, "--emu-dir", v)) {
      opts.emu_dir = v;
    } else if (Flag(argc, argv, i, "--arena", v)) {
      auto b = ParseQuantity(v);
      if (!b.ok()) {
        std::cerr << b.status().message() << "\n";
        return 2;
      }
      opts.arena_bytes = *b;
    } else if (Flag(argc, argv, i, "--metrics", v)) {
      opts.metrics_addr = v;
    } else if (Flag(argc, argv, i, "--tenants", v)) {
      opts.tenants_file = v;
    } else if (Flag(argc, argv, i, "--open-max-fraction", v)) {
      char* end = nullptr;
      opts.open_max_fraction = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(opts.open_max_fraction > 0) ||
          opts.open_max_fraction > 1) {
        std::cerr << "--open-max-fraction takes a fraction in (0, 1]\n";
        return 2;
      }
    } else if (Flag(argc, argv, i, "--open-max-priority", v)) {
      auto p = sched::ParsePriority(v);
      if (!p) {
        std::cerr << "--open-max-priority takes high, normal or low\n";
        return 2;
      }
      opts.open_max_priority = *p;
    } else if (Flag(argc, argv, i, "--grace-period", v)) {
      char* end = nullptr;
      const double seconds = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(seconds >= 0) || seconds > 86400) {
        std::cerr << "--grace-period takes seconds from 0 to 86400, not '" << v << "'\n";
        return 2;
      }
      grace = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    } else if (!std::strcmp(argv[i], "--check")) {
      check = true;
    } else if (!std::strcmp(argv[i], "--no-restart")) {
      restart = false;
    } else if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::cout << kUsage;
      return 0;
    } else {
      std::cerr << "unknown argument '" << argv[i] << "'\n" << kUsage;
      return 2;
    }
  }
  if (opts.unix_paths.empty() && opts.grpc_addrs.empty())
    opts.unix_paths.push_back("/run/remora/gpu0.sock");
  if (check) {
    auto name = server::Server::Check(opts);
    if (!name.ok()) {
      std::cerr << "remora-server --check: " << name.status().ToString() << "\n";
      return 1;
    }
    std::cout << "remora-server --check: ready to serve " << *name << "\n";
    return 0;
  }
  if (!restart) return RunServer(opts, grace);

  auto ends = server::BindEndpoints(opts.unix_paths, opts.grpc_addrs, opts.metrics_addr);
  if (!ends.ok()) {
    server::Log(server::Level::kError, "server",
                {{"event", "start_failed"}, {"error", ends.status().ToString()}});
    return 1;
  }
  opts.unix_fds = ends->unix_fds;
  opts.grpc_addrs = ends->grpc_addrs;
  opts.metrics_addr = ends->metrics_addr;
  const int rc = server::Supervise([&opts, grace] { return RunServer(opts, grace); });
  server::ReleaseEndpoints(*ends);
  return rc;
}
