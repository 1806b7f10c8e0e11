// bench/e2e/bench_sessions.cc - what 1,000 idle tenants cost remora-server, against its own
// state before they came, same run.
//
//   BM_IdleSessions/0  (shm)   a fresh remora-server (--device=emu, --arena kArena) of its own;
//   BM_IdleSessions/1  (gRPC)  after 1 s idle its threads, RSS and fds are the baseline. The
//                              helper remora_e2e_tenants then opens kSessions sessions from one
//                              process (transport clients, a real Hello each, a 1 MiB
//                              gpu-memory request; it stops at the first refusal) and leaves
//                              them idle; after kIdle the server is measured again (and its
//                              CPU time over that second), then every session is closed and
//                              the server watched until its threads and fds are back at the
//                              baseline (or kReclaim passes).
// Targets: threads <= 4 x cores + 16 (threads_limit; threads_ratio = threads_idle /
// threads_limit) and RSS growth per idle session <= 512 KiB (rss_ratio = rss_kib_per_session
// / 512). sessions_opened says how many were admitted (the label carries the first error).
// After closing: threads_back, fds_back (1 = at or below the baseline), rss_back (1 = RSS
// within 1 MiB + 1 KiB per session opened of the baseline; rss_residual_kib says by how
// much), reclaim_s (how long the server took to get there; kReclaim if it did not).
// The time column is the mean time to open one session (connect, Hello, Welcome).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

constexpr int kSessions = 1000;
// Shm arena per session; REMORA_E2E_ARENA overrides it (the server's default is 1 GiB).
constexpr const char* kArena = "16Mi";
constexpr auto kIdle = std::chrono::seconds(1);
constexpr auto kReclaim = std::chrono::seconds(3);
constexpr auto kOpenTimeout = std::chrono::seconds(300);

// What /proc says about a process.
struct ProcView {
  double threads = 0, rss_kib = 0, anon_kib = 0, shmem_kib = 0, fds = 0;
  double cpu_s = 0;  // user + system
  bool ok = false;
};

ProcView Look(pid_t pid) {
  ProcView v;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::istringstream status(ReadFile(dir + "/status"));
  std::string key;
  double value = 0;
  while (status >> key) {
    if (key == "Threads:" && status >> value) v.threads = value;
    if (key == "VmRSS:" && status >> value) v.rss_kib = value, v.ok = true;
    if (key == "RssAnon:" && status >> value) v.anon_kib = value;
    if (key == "RssShmem:" && status >> value) v.shmem_kib = value;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++v.fds;
  v.cpu_s = CpuSeconds(pid);
  return v;
}

// The soft RLIMIT_NOFILE of `pid` (/proc/PID/limits), 0 if unknown.
double NofileLimit(pid_t pid) {
  std::istringstream in(ReadFile("/proc/" + std::to_string(pid) + "/limits"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Max open files", 0) == 0) return std::atof(line.c_str() + 14);
  }
  return 0;
}

void BM_IdleSessions(benchmark::State& state) {
  const bool shm = state.range(0) == 0;
  const std::string kind = shm ? "shm" : "grpc";
  const std::string dir = Env().dir + "/sessions-" + kind;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string err;
  const char* arena = std::getenv("REMORA_E2E_ARENA");
  auto server = BenchServer::Start(dir, &err, {"--arena", arena != nullptr ? arena : kArena});
  if (!server) return state.SkipWithError(err.c_str());
  const pid_t pid = server->pid();
  const std::string target = shm ? dir + "/gpu.sock" : server->grpc_address().substr(7);
  const double cores = static_cast<double>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

  std::this_thread::sleep_for(kIdle);
  const ProcView before = Look(pid);
  const std::string log = dir + "/tenants.log";
  Child tenants;
  std::string line, error_line;
  std::map<std::string, double> opened, closed;
  ProcView idle, after;
  double idle_cpu = 0, reclaim_s = 0;
  for (auto _ : state) {
    if (!tenants.Start({Paths::Tenants(), kind, target, std::to_string(kSessions)}, {}, log, &err,
                       /*with_stdin=*/true)) {
      state.SkipWithError(err.c_str());
      break;
    }
    if (!tenants.ReadLine(&line, kOpenTimeout) || !tenants.ReadLine(&error_line, kIdle) ||
        error_line.rfind("error: ", 0) != 0) {
      state.SkipWithError(("remora_e2e_tenants did not report; see " + log).c_str());
      break;
    }
    opened = ParseKeyValues(line);
    const double n = opened["opened"];
    state.SetIterationTime(n > 0 ? opened["open_s"] / n : opened["open_s"]);
    const ProcView start = Look(pid);
    std::this_thread::sleep_for(kIdle);
    idle = Look(pid);
    idle_cpu = idle.cpu_s - start.cpu_s;
    if (!tenants.WriteLine("close") || !tenants.ReadLine(&line, kReclaim)) {
      state.SkipWithError(("remora_e2e_tenants did not close; see " + log).c_str());
      break;
    }
    closed = ParseKeyValues(line);
    const auto t0 = Clock::now();
    for (;;) {
      after = Look(pid);
      reclaim_s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (!after.ok || (after.threads <= before.threads && after.fds <= before.fds)) break;
      if (Clock::now() - t0 > kReclaim) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    tenants.CloseStdin();
    tenants.WaitOrStop(kReclaim);
  }
  const bool alive = server->Running();
  const double nofile = NofileLimit(pid);
  const double limit = 4 * cores + 16;
  server.reset();
  if (state.error_occurred()) return;

  const double n = opened["opened"];
  const double growth = idle.rss_kib - before.rss_kib;
  const double per = n > 0 ? growth / n : 0;
  std::string label = kind + " " + std::to_string(static_cast<int>(n)) + "/" +
                      std::to_string(kSessions) + " admitted";
  if (error_line != "error: none") label += "; first " + error_line;
  if (!alive) label += "; remora-server died";
  state.SetLabel(label);
  state.counters["sessions_opened"] = n;
  state.counters["sessions_failed"] = opened["failed"];
  state.counters["server_alive"] = alive ? 1 : 0;
  state.counters["open_s"] = opened["open_s"];
  state.counters["threads_before"] = before.threads;
  state.counters["threads_idle"] = idle.threads;
  state.counters["threads_limit"] = limit;
  state.counters["threads_ratio"] = idle.threads / limit;
  state.counters["threads_per_session"] = n > 0 ? (idle.threads - before.threads) / n : 0;
  state.counters["rss_before_kib"] = before.rss_kib;
  state.counters["rss_idle_kib"] = idle.rss_kib;
  state.counters["rss_kib_per_session"] = per;
  state.counters["rss_ratio"] = per / 512;
  state.counters["anon_kib_per_session"] = n > 0 ? (idle.anon_kib - before.anon_kib) / n : 0;
  state.counters["shmem_kib_per_session"] = n > 0 ? (idle.shmem_kib - before.shmem_kib) / n : 0;
  state.counters["fds_before"] = before.fds;
  state.counters["fds_idle"] = idle.fds;
  state.counters["server_nofile"] = nofile;
  state.counters["idle_cpu_pct"] = idle_cpu / std::chrono::duration<double>(kIdle).count() * 100;
  state.counters["close_s"] = closed["close_s"];
  state.counters["threads_after"] = after.threads;
  state.counters["fds_after"] = after.fds;
  state.counters["rss_after_kib"] = after.rss_kib;
  state.counters["threads_back"] = after.threads <= before.threads ? 1 : 0;
  state.counters["fds_back"] = after.fds <= before.fds ? 1 : 0;
  state.counters["rss_residual_kib"] = after.rss_kib - before.rss_kib;
  state.counters["rss_back"] = after.rss_kib - before.rss_kib <= 1024 + n ? 1 : 0;
  state.counters["reclaim_s"] = reclaim_s;
}
BENCHMARK(BM_IdleSessions)
    ->Arg(0)
    ->Arg(1)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace remora::bench::e2e
