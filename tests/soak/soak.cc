// tests/soak/soak.cc - the churn soak: many tenants come and go; the server ends as it began.
//
//   soak --bindir build/bin --tenant build/soak/churn_tenant [--seconds 60] [--tenants 64]
//        [--rss-growth-mib 64] [--settle-seconds 60] [--seed N]
//
// Starts remora-server (emulated device, a unix socket and a gRPC port, no
// supervisor so its pid is the server's) and, after a warm-up burst of
// tenants, measures its threads, open descriptors and RSS (/proc) as the
// baseline. For --seconds, --tenants slots (even: shm, odd: gRPC) each run
// churn_tenant processes one after another: each exits cleanly, exits leaving
// its memory, or runs until it is SIGKILLed at a random moment mid-work.
// Every tenant that exits must pass (its own check of every copy and launch).
// Once the last is gone, within --settle-seconds, threads (but for gRPC's own
// pools, kGrpcPools) and descriptors must be back to the baseline and no
// tenant may be listed holding device memory (`remora list`'s FetchTenants);
// RSS may have grown by at most --rss-growth-mib. That bound (64 MiB) allows
// for allocator caches: the emulated device's memory is the server's own heap
// (about 60 MiB at the peak of 64 tenants) and glibc keeps some freed memory
// in its per-thread arenas; a leak of 256 KiB per session would pass it
// over the 400 or so sessions of a 60 s run. Prints the p50/p99 of the
// tenants' small-copy round trips and how many tenants ran, passed and were
// killed. Exit 0: all held.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/list.h"

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Options {
  std::string bindir, tenant;
  int seconds = 60;
  int tenants = 64;
  int rss_growth_mib = 64;
  int settle_seconds = 60;
  unsigned seed = std::random_device{}();  // of the modes, rounds and kill times
};

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// gRPC core's process-wide thread pools, by thread name prefix. Their size
// follows load, not the number of sessions: the default executor grows to 2
// threads per core when busy and never shrinks; the EventEngine pool and the
// timer manager grow and shrink on their own schedule. Together they may end
// above the baseline, within GrpcPoolCap() (a bound per core, whatever the
// number of sessions); every other thread must be back to the baseline.
constexpr const char* kGrpcPools[] = {"default-executo", "grpc_global_tim", "event_engine"};
long GrpcPoolCap() {
  return 4 * static_cast<long>(std::thread::hardware_concurrency()) + 8;
}

// What /proc says about a process.
struct Usage {
  long threads = -1;
  long pool_threads = 0;  // of them, gRPC core's shared pools (kGrpcPools)
  long fds = -1;
  long rss_kib = -1;
};

Usage Measure(pid_t pid) {
  Usage u;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream in(line);
    if (!(in >> key >> value)) continue;
    if (key == "Threads:") u.threads = value;
    if (key == "VmRSS:") u.rss_kib = value;
  }
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(task.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string name = ReadFile(task + "/" + e->d_name + "/comm");
      for (const char* pool : kGrpcPools) u.pool_threads += name.rfind(pool, 0) == 0;
    }
    closedir(d);
  }
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    u.fds = 0;
    while (dirent* e = readdir(d)) u.fds += e->d_name[0] != '.';
    closedir(d);
  }
  return u;
}

// The server's threads by name ("name xN, ..."), to say which ones stayed.
std::string ThreadNames(pid_t pid) {
  std::map<std::string, int> names;
  const std::string task = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(task.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::string name = ReadFile(task + "/" + e->d_name + "/comm");
      if (!name.empty() && name.back() == '\n') name.pop_back();
      ++names[name];
    }
    closedir(d);
  }
  std::string out;
  for (const auto& [name, n] : names)
    out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  return out;
}

std::string Show(const Usage& u) {
  return std::to_string(u.threads) + " threads (" + std::to_string(u.pool_threads) +
         " in gRPC's pools), " + std::to_string(u.fds) + " fds, " +
         std::to_string(u.rss_kib / 1024) + " MiB RSS";
}

// Starts `argv` with stdout and stderr to `out`; returns its pid (-1: fork failed).
pid_t Spawn(const std::vector<std::string>& argv, const std::string& out) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// The server's tenants, as `remora list` fetches them (nullopt: unreachable).
std::optional<remora::v1::TenantList> Tenants(const std::string& address) {
  auto list = remora::cli::FetchTenants(address, "");
  if (!list.ok()) {
    std::cerr << "soak: remora list failed: " << list.status().ToString() << "\n";
    return std::nullopt;
  }
  return *list;
}

uint64_t MemoryHeld(const remora::v1::TenantList& list) {
  uint64_t sum = 0;
  for (const auto& r : list.tenants()) sum += r.memory_used();
  return sum;
}

double Percentile(std::vector<long>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return static_cast<double>(v[i]);
}

std::vector<long> Latencies(const std::string& dir, const std::string& prefix) {
  std::vector<long> all;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
      std::ifstream f(dir + "/" + e->d_name);
      long us = 0;
      while (f >> us) all.push_back(us);
    }
    closedir(d);
  }
  return all;
}

enum class Mode { kClean, kLeak, kKill };

constexpr int kWarmUp = 16;  // tenants in the warm-up burst

struct Tenant {
  pid_t pid = 0;
  Mode mode = Mode::kClean;
  Clock::time_point kill_at;
  std::string out;  // its stdout and stderr
  bool killed = false;
};

struct Counts {
  int started = 0, passed = 0, killed = 0, failed = 0;
};

class Soak {
 public:
  explicit Soak(Options o) : o_(std::move(o)) {}
  int Run();

 private:
  bool StartServer();
  // Starts one tenant of `transport` (0 shm, 1 gRPC) in `mode` (pid 0: it
  // could not be started, counted as failed).
  Tenant StartTenant(int transport, Mode mode, const std::string& tag);
  // Checks how tenant `t` ended (`status` from waitpid); counts it.
  void Ended(const Tenant& t, int status);
  // Polls until the server's usage is back to `base` (threads and fds) with no
  // tenant listed, or --settle-seconds pass. Returns the last usage.
  Usage Settle(const Usage& base, bool& back, std::string& why);
  bool StopServer();

  Options o_;
  std::string dir_, shm_, grpc_;
  pid_t server_ = 0;
  std::mt19937 rng_{o_.seed};
  Counts counts_;
  int serial_ = 0;
};

bool Soak::StartServer() {
  const std::string log = dir_ + "/server.log";
  shm_ = "unix:" + dir_ + "/gpu0.sock";
  server_ = Spawn({o_.bindir + "/remora-server", "--device=emu", "--no-restart", "--listen", shm_,
                   "--grpc", "127.0.0.1:0"},
                  log);
  const std::regex port(R"(transport=grpc .*port=(\d+))");
  for (auto until = Clock::now() + seconds(60); Clock::now() < until;) {
    const std::string text = ReadFile(log);
    std::smatch m;
    if (grpc_.empty() && std::regex_search(text, m, port)) grpc_ = "grpc://127.0.0.1:" + m[1].str();
    if (text.find("event=ready") != std::string::npos && !grpc_.empty()) return true;
    if (waitpid(server_, nullptr, WNOHANG) == server_) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::cerr << "soak: remora-server did not start:\n" << ReadFile(log);
  kill(server_, SIGKILL);
  waitpid(server_, nullptr, 0);
  return false;
}

Tenant Soak::StartTenant(int transport, Mode mode, const std::string& tag) {
  Tenant t;
  t.mode = mode;
  const int n = ++serial_;
  t.out = dir_ + "/tenant-" + std::to_string(n) + ".out";
  const std::string kind = transport == 0 ? "shm" : "grpc";
  std::uniform_int_distribution<int> iters(2, 6);
  std::vector<std::string> argv = {o_.bindir + "/remora",
                                   "run",
                                   "--server",
                                   transport == 0 ? shm_ : grpc_,
                                   "--",
                                   o_.tenant,
                                   "-iters",
                                   mode == Mode::kKill ? "0" : std::to_string(iters(rng_)),
                                   "-leak",
                                   mode == Mode::kLeak ? "1" : "0",
                                   "-seed",
                                   std::to_string(n),
                                   "-lat",
                                   dir_ + "/lat/" + kind + "-" + tag + "-" + std::to_string(n)};
  t.pid = Spawn(argv, t.out);
  if (t.pid < 0) {
    std::perror("soak: fork");
    ++counts_.failed;
    t.pid = 0;
    return t;
  }
  // Killed between 0.2 and 2 s after it started: connecting, or mid-work.
  std::uniform_int_distribution<int> ms(200, 2000);
  t.kill_at = Clock::now() + milliseconds(ms(rng_));
  ++counts_.started;
  return t;
}

void Soak::Ended(const Tenant& t, int status) {
  const bool by_kill = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (t.killed && by_kill) {
    ++counts_.killed;
    return;
  }
  const std::string out = ReadFile(t.out);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.find("PASS") != std::string::npos) {
    ++counts_.passed;
    return;
  }
  ++counts_.failed;
  std::cerr << "soak: tenant " << t.pid << " failed (status " << status << "):\n" << out;
}

Usage Soak::Settle(const Usage& base, bool& back, std::string& why) {
  Usage now;
  back = false;
  for (auto until = Clock::now() + seconds(o_.settle_seconds); Clock::now() < until;) {
    std::optional<remora::v1::TenantList> list = Tenants(shm_);
    // Past the accept loop's reaping of the admin session just used.
    std::this_thread::sleep_for(milliseconds(1000));
    now = Measure(server_);
    if (!list) {
      why = "the server could not be listed";
      continue;
    }
    if (list->tenants_size() != 0 || MemoryHeld(*list) != 0) {
      why = std::to_string(list->tenants_size()) + " tenants still listed, holding " +
            std::to_string(MemoryHeld(*list)) + " bytes";
      continue;
    }
    if (now.threads - now.pool_threads > base.threads - base.pool_threads ||
        now.pool_threads > std::max(base.pool_threads, GrpcPoolCap()) || now.fds > base.fds) {
      why = "server at " + Show(now) + ", baseline " + Show(base);
      continue;
    }
    back = true;
    return now;
  }
  return now;
}

bool Soak::StopServer() {
  kill(server_, SIGTERM);
  for (auto until = Clock::now() + seconds(60); Clock::now() < until;) {
    int status = 0;
    if (waitpid(server_, &status, WNOHANG) == server_) {
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
      std::cerr << "soak: remora-server ended with status " << status << "\n";
      return false;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  std::cerr << "soak: remora-server did not stop on SIGTERM\n";
  kill(server_, SIGKILL);
  waitpid(server_, nullptr, 0);
  return false;
}

int Soak::Run() {
  char tmpl[] = "/tmp/remora-soak-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("soak: mkdtemp");
    return 1;
  }
  dir_ = tmpl;
  mkdir((dir_ + "/lat").c_str(), 0755);
  if (!StartServer()) return 1;
  bool ok = true;

  // Warm-up: a burst of concurrent tenants over both transports. What the
  // server sets up on first use and keeps is not a leak (gRPC's completion
  // queues, the cached fat binary's module): the baseline is taken after it.
  std::vector<Tenant> warm;
  for (int i = 0; i < std::min(o_.tenants, kWarmUp); ++i)
    warm.push_back(StartTenant(i % 2, Mode::kClean, "warmup"));
  for (const Tenant& t : warm) {
    if (t.pid == 0) continue;
    int status = 0;
    waitpid(t.pid, &status, 0);
    Ended(t, status);
  }
  if (counts_.failed != 0) ok = false;
  std::optional<remora::v1::TenantList> first = Tenants(shm_);
  std::this_thread::sleep_for(milliseconds(1000));
  const Usage base = Measure(server_);
  std::cout << "soak: " << o_.tenants << " tenant slots for " << o_.seconds << " s, seed "
            << o_.seed << "\n";
  std::cout << "soak: baseline " << Show(base) << " (threads: " << ThreadNames(server_) << ")\n";
  if (!first || base.threads <= 0 || base.fds <= 0) {
    std::cerr << "soak: cannot measure the server\n";
    ok = false;
  }

  // The churn.
  std::vector<Tenant> slots(static_cast<size_t>(o_.tenants));
  const auto end = Clock::now() + seconds(o_.seconds);
  std::discrete_distribution<int> mode({2, 1, 1});  // clean, leak, kill
  int most_listed = 0;
  uint64_t most_held = 0;
  auto next_list = Clock::now();
  for (;;) {
    const auto now = Clock::now();
    bool any = false;
    for (size_t i = 0; i < slots.size(); ++i) {
      Tenant& t = slots[i];
      if (t.pid == 0 && now < end)
        t = StartTenant(static_cast<int>(i % 2), static_cast<Mode>(mode(rng_)), "churn");
      if (t.pid == 0) continue;
      any = true;
      int status = 0;
      if (waitpid(t.pid, &status, WNOHANG) == t.pid) {
        Ended(t, status);
        t = Tenant{};
        continue;
      }
      if (t.mode == Mode::kKill && !t.killed && now >= t.kill_at) {
        kill(t.pid, SIGKILL);
        t.killed = true;
      }
      if (now > end + seconds(300)) {  // stuck: fail, and let the rest end
        std::cerr << "soak: tenant " << t.pid << " still running 300 s after the churn\n";
        kill(t.pid, SIGKILL);
        t.killed = false;
      }
    }
    if (!any && now >= end) break;
    if (now >= next_list && now < end) {
      if (auto list = Tenants(shm_)) {
        most_listed = std::max(most_listed, list->tenants_size());
        most_held = std::max(most_held, MemoryHeld(*list));
      }
      next_list = now + seconds(2);
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::cout << "soak: " << counts_.started << " tenants started (" << warm.size()
            << " in the warm-up), " << counts_.passed << " passed, " << counts_.killed
            << " killed by SIGKILL, " << counts_.failed << " failed; at most " << most_listed
            << " listed at once, holding up to " << most_held / 1024 << " KiB of device memory\n";
  if (counts_.failed != 0) ok = false;
  if (counts_.killed == 0 || counts_.passed <= static_cast<int>(warm.size())) {
    std::cerr << "soak: the churn did not both kill tenants and let tenants finish\n";
    ok = false;
  }
  if (most_held == 0) {
    std::cerr << "soak: no tenant was ever seen holding device memory: the check is blind\n";
    ok = false;
  }

  // Latency of the small synchronous copies, per transport.
  for (const char* kind : {"shm", "grpc"}) {
    std::vector<long> us = Latencies(dir_ + "/lat", std::string(kind) + "-");
    const double p50 = Percentile(us, 0.50), p99 = Percentile(us, 0.99);
    std::printf(
        "soak: %s copy round trip (64 ints there and back): %zu samples, p50 %.0f us, "
        "p99 %.0f us\n",
        kind, us.size(), p50, p99);
    if (us.empty()) {
      std::cerr << "soak: no latency samples over " << kind << "\n";
      ok = false;
    }
  }

  bool back = false;
  std::string why;
  const Usage after = Settle(base, back, why);
  std::cout << "soak: after the churn " << Show(after) << "\n";
  if (!back) {
    std::cerr << "soak: the server did not come back to its baseline: " << why
              << " (threads: " << ThreadNames(server_) << ")\n";
    ok = false;
  }
  const long growth_kib = after.rss_kib - base.rss_kib;
  if (growth_kib > o_.rss_growth_mib * 1024L) {
    std::cerr << "soak: RSS grew by " << growth_kib / 1024 << " MiB, more than the "
              << o_.rss_growth_mib << " MiB allowed\n";
    ok = false;
  }
  if (!StopServer()) ok = false;
  if (!ok) std::cerr << "---- remora-server log ----\n" << ReadFile(dir_ + "/server.log");
  if (ok) std::filesystem::remove_all(dir_);
  std::cout << (ok ? "soak: PASS\n" : "soak: FAIL (files kept in " + dir_ + ")\n");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc % 2 == 0) {
    std::cerr << "soak: every flag takes a value\n";
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--bindir") {
      o.bindir = v;
    } else if (k == "--tenant") {
      o.tenant = v;
    } else if (k == "--seconds") {
      o.seconds = std::atoi(v.c_str());
    } else if (k == "--tenants") {
      o.tenants = std::atoi(v.c_str());
    } else if (k == "--rss-growth-mib") {
      o.rss_growth_mib = std::atoi(v.c_str());
    } else if (k == "--seed") {
      o.seed = static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10));
    } else if (k == "--settle-seconds") {
      o.settle_seconds = std::atoi(v.c_str());
    } else {
      std::cerr << "soak: unknown flag " << k << "\n";
      return 2;
    }
  }
  if (o.bindir.empty() || o.tenant.empty() || o.seconds <= 0 || o.tenants < 2 ||
      o.settle_seconds <= 0) {
    std::cerr << "usage: soak --bindir DIR --tenant PROGRAM [--seconds N] [--tenants N>=2]\n"
                 "            [--rss-growth-mib N] [--settle-seconds N] [--seed N]\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  return Soak(std::move(o)).Run();
}
