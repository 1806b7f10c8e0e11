// bench/e2e/bench_shares.cc - GPU time shared among real tenants by compute share, end to
// end: nvcc-built programs (tests/cuda host_threads -busy: batches of equal, CPU-checked
// kernels, two batches in flight, so each tenant is always backlogged) run through
// `remora run --gpu-compute ...` against a remora-server of its own on the emulated GPU.
// The server's /metrics (remora_tenant_gpu_seconds_total, the device time it charged
// each tenant) is read every window; the baseline each share is compared with is the
// target the tenants' requests give, measured in the same run as the total charged.
//
// Kernel throughput is the other measure (issue 24: charges can meet their targets while
// throughput does not, when overlapped time is charged twice): each tenant prints its kernel
// rate, compared with one tenant's alone (AloneRate: a server of its own, measured once per
// run before the first benchmark that needs it; alone_kps shows it, kernels per second).
//
//   BM_ComputeShares/3, /9  two tenants at 0.1 and 0.3 (0.09 and 0.81): the small one's
//                           target is 1/4 (1/10). Counters: share (small tenant, over
//                           the whole run), target, err_pct = worst window's
//                           |share / target - 1|, err_points = worst window's
//                           |share - target| in points of GPU time; tput_ratio = the
//                           tenants' kernel rates, each over its rate alone, small / large,
//                           tput_err_pct = |tput_ratio / (1/3 or 1/9) - 1| (issue target
//                           <= 5%), total_vs_alone = both rates over one alone (>= 0.9),
//                           achieved_sum = the largest sum over tenants of device time
//                           charged per wall second in a window (remora list's ACHIEVED
//                           column summed; <= 1).
//   BM_EqualShares/8        8 tenants at 0.1: jain = Jain's index over the whole run,
//                           jain_min = worst window's, jain_tput = over kernel rates
//                           (target >= 0.99); total_vs_alone, achieved_sum as above.
//   BM_IdleThenSaturate     tenants at 0.3 (saturating throughout) and 0.1, the small one
//                           busy for 1 s, idle for 10 s, then saturating: its share of
//                           the first window after it wakes (share_first; target 1/4),
//                           over_pct = how far that exceeds the target (issue target:
//                           <= 5%; banked credit would show here), err_pct = the worst
//                           window's |share / target - 1| over the windows after it.
//   BM_PriorityLatency      see the function.
//   BM_ComputeLimitAlone    one tenant, request 0.3, limit 0.3, alone on the GPU:
//                           share = device time / wall time (target <= 0.31), share_max
//                           over the windows, tput_vs_alone = its kernel rate over one
//                           tenant's alone without a limit (target 0.3 within 5%).
// A window is 200 kernel lengths (kernels of about 3 ms: 0.6 s).
#include <benchmark/benchmark.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

// About 3 ms per kernel on the emulator; REMORA_BENCH_ITERS sets another length (a GPU's
// kernels of about 0.15 ms: 6000).
const char* const kIters =
    std::getenv("REMORA_BENCH_ITERS") ? std::getenv("REMORA_BENCH_ITERS") : "100000";
constexpr auto kWindow = std::chrono::milliseconds(600);
constexpr auto kWarmup = std::chrono::milliseconds(1500);
constexpr int kWindows = 10;
constexpr int kAloneSeconds = 6;

// A server with /metrics, and tenants on it.
class ShareRun {
 public:
  explicit ShareRun(benchmark::State& state) : state_(state) {
    if (*REMORA_E2E_BUSY == '\0') {
      state.SkipWithError("built without tests/cuda (REMORA_CUDA_TESTS=OFF): no tenant program");
      return;
    }
    static int runs = 0;  // a directory per run: the server's log is appended to
    dir_ = Env().dir + "/shares" + std::to_string(++runs);
    std::filesystem::create_directories(dir_);
    std::string err;
    server_ = BenchServer::Start(
        dir_, &err,
        {"--metrics", "127.0.0.1:0", "--open-max-fraction", "1", "--open-max-priority", "high"});
    if (!server_) {
      state.SkipWithError(err.c_str());
      return;
    }
    std::smatch m;
    const std::string log = ReadFile(server_->log_path());
    static const std::regex port_re(R"(transport=metrics .*port=(\d+))");
    if (std::regex_search(log, m, port_re)) metrics_port_ = std::stoi(m[1].str());
    if (metrics_port_ == 0) state.SkipWithError("no metrics port in the server's log");
  }
  bool ok() const { return server_ && metrics_port_ != 0; }

  // Starts a tenant that keeps the GPU busy for `seconds` with kernels of `iters`
  // iterations, with `remora run` flags `flags`; its pid names it in /metrics.
  bool AddTenant(const std::vector<std::string>& flags, int seconds, const char* iters = kIters) {
    return Spawn(flags, {"-busy", std::to_string(seconds), "-iters", iters}) != nullptr;
  }
  // Starts host_threads with `args` under `remora run` `flags`; null (state skipped) on failure.
  Child* Spawn(const std::vector<std::string>& flags, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {REMORA_E2E_CLI, "run", "--server", server_->shm_address()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.push_back(REMORA_E2E_BUSY);
    argv.insert(argv.end(), args.begin(), args.end());
    const int seed = static_cast<int>(tenants_.size()) + 1;
    argv.push_back("-seed");
    argv.push_back(std::to_string(seed));
    auto c = std::make_unique<Child>();
    std::string err;
    if (!c->Start(argv, {}, dir_ + "/tenant" + std::to_string(seed) + ".log", &err)) {
      state_.SkipWithError(err.c_str());
      return nullptr;
    }
    tenants_.push_back(std::move(c));
    return tenants_.back().get();
  }

  // Device seconds charged so far to each tenant, in AddTenant order; empty on failure.
  std::vector<double> Charged() {
    httplib::Client http("127.0.0.1", metrics_port_);
    auto res = http.Get("/metrics");
    if (!res || res->status != 200) return {};
    std::map<pid_t, double> by_pid;
    static const std::regex line_re(
        R"re(remora_tenant_gpu_seconds_total\{[^}]*tenant="[^"]*-(\d+)@[^"]*"[^}]*\} ([0-9.eE+-]+))re");
    for (auto it = std::sregex_iterator(res->body.begin(), res->body.end(), line_re);
         it != std::sregex_iterator(); ++it)
      by_pid[static_cast<pid_t>(std::stol((*it)[1].str()))] += std::stod((*it)[2].str());
    std::vector<double> out;
    for (const auto& t : tenants_) {
      auto f = by_pid.find(t->pid());
      if (f == by_pid.end()) return {};
      out.push_back(f->second);
    }
    return out;
  }

  // Waits until every tenant is charged and kWarmup more (unless `at_once`), then
  // samples `windows` + 1 times, kWindow apart. Each row: the charges at that moment;
  // `at` gets when each was read. Empty (and the state skipped) on failure.
  std::vector<std::vector<double>> Sample(std::vector<Clock::time_point>* at = nullptr,
                                          int windows = kWindows, bool at_once = false) {
    if (!at_once) {
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      while (Clock::now() < deadline && Charged().empty())
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::this_thread::sleep_for(kWarmup);
    }
    std::vector<std::vector<double>> rows;
    for (int w = 0; w <= windows; ++w) {
      if (w > 0) std::this_thread::sleep_for(kWindow);
      if (at) at->push_back(Clock::now());
      rows.push_back(Charged());
      if (rows.back().empty()) {
        state_.SkipWithError("a tenant left /metrics early (see the tenant logs)");
        return {};
      }
    }
    return rows;
  }

  // Every tenant must have exited 0 (their kernels are checked against the CPU). Returns each
  // busy tenant's kernels per second (its last "KERNELS_PER_S"), in Spawn order (0 if none).
  std::vector<double> Finish() {
    std::vector<double> rates;
    for (auto& t : tenants_) {
      if (t->WaitOrStop(std::chrono::seconds(60)) != 0)
        state_.SkipWithError("a tenant failed (wrong results or an error; see its log)");
      static const std::regex rate_re(R"(KERNELS_PER_S ([0-9.]+))");
      const std::string out = t->ReadAll();
      double rate = 0;
      for (auto it = std::sregex_iterator(out.begin(), out.end(), rate_re);
           it != std::sregex_iterator(); ++it)
        rate = std::stod((*it)[1].str());
      rates.push_back(rate);
    }
    tenants_.clear();
    return rates;
  }

 private:
  benchmark::State& state_;
  std::string dir_;
  std::unique_ptr<BenchServer> server_;
  int metrics_port_ = 0;
  std::vector<std::unique_ptr<Child>> tenants_;
};

std::vector<double> Delta(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = b[i] - a[i];
  return d;
}

// Kernels per second of one busy tenant alone on a server of its own (no quota), measured once
// per run: what each tenant's throughput is compared with.
double AloneRate(benchmark::State& state) {
  static double rate = 0;
  if (rate > 0) return rate;
  ShareRun run(state);
  if (!run.ok() || !run.AddTenant({}, kAloneSeconds)) return 0;
  std::vector<double> r = run.Finish();
  rate = r.empty() ? 0 : r[0];
  if (rate <= 0) state.SkipWithError("the tenant alone reported no rate (see its log)");
  return rate;
}

// The largest sum over tenants of device time charged per wall second in any window:
// remora list's ACHIEVED column summed (target <= 1).
double AchievedSumMax(const std::vector<std::vector<double>>& rows,
                      const std::vector<Clock::time_point>& at) {
  double worst = 0;
  for (size_t w = 1; w < rows.size(); ++w) {
    double sum = 0;
    for (size_t t = 0; t < rows[w].size(); ++t) sum += rows[w][t] - rows[w - 1][t];
    worst = std::max(worst, sum / std::chrono::duration<double>(at[w] - at[w - 1]).count());
  }
  return worst;
}

double Jain(const std::vector<double>& x) {
  double s = 0, s2 = 0;
  for (double v : x) s += v, s2 += v * v;
  return s2 > 0 ? s * s / (static_cast<double>(x.size()) * s2) : 0;
}

constexpr int kSeconds = 2 + 6 + 10;  // start-up, warm-up and windows, with a margin

void BM_ComputeShares(benchmark::State& state) {
  const double ratio = static_cast<double>(state.range(0));
  const double small = ratio == 3 ? 0.1 : 0.09, large = small * ratio;
  const double target = 1 / (1 + ratio);
  for (auto _ : state) {
    const double alone = AloneRate(state);  // first: its server is gone before theirs starts
    if (alone <= 0) return;
    ShareRun run(state);
    if (!run.ok()) return;
    if (!run.AddTenant({"--gpu-compute", std::to_string(small)}, kSeconds) ||
        !run.AddTenant({"--gpu-compute", std::to_string(large)}, kSeconds))
      return;
    std::vector<Clock::time_point> at;
    auto rows = run.Sample(&at);
    std::vector<double> rates = run.Finish();
    if (rows.empty() || rates.size() != 2) return;
    double worst = 0, worst_abs = 0;
    for (size_t w = 1; w < rows.size(); ++w) {
      std::vector<double> d = Delta(rows[w - 1], rows[w]);
      const double share = d[0] / (d[0] + d[1]);
      worst = std::max(worst, std::abs(share / target - 1));
      worst_abs = std::max(worst_abs, std::abs(share - target));
    }
    std::vector<double> all = Delta(rows.front(), rows.back());
    state.counters["share"] = all[0] / (all[0] + all[1]);
    state.counters["target"] = target;
    state.counters["err_pct"] = 100 * worst;
    state.counters["err_points"] = 100 * worst_abs;
    state.counters["windows"] = static_cast<double>(rows.size() - 1);
    // Kernel throughput, each relative to its rate alone (the tenants run equal kernels).
    const double tput_ratio = (rates[0] / alone) / (rates[1] / alone);
    state.counters["tput_ratio"] = tput_ratio;
    state.counters["tput_err_pct"] = 100 * std::abs(tput_ratio * ratio - 1);
    state.counters["total_vs_alone"] = (rates[0] + rates[1]) / alone;
    state.counters["achieved_sum"] = AchievedSumMax(rows, at);
    state.counters["alone_kps"] = alone;
  }
}
BENCHMARK(BM_ComputeShares)->Arg(3)->Arg(9)->Iterations(1)->Unit(benchmark::kSecond);

void BM_EqualShares(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) {
    const double alone = AloneRate(state);  // first: its server is gone before theirs starts
    if (alone <= 0) return;
    ShareRun run(state);
    if (!run.ok()) return;
    for (int i = 0; i < n; ++i)
      if (!run.AddTenant({"--gpu-compute", "0.1"}, kSeconds + n)) return;
    std::vector<Clock::time_point> at;
    auto rows = run.Sample(&at);
    std::vector<double> rates = run.Finish();
    if (rows.empty() || rates.size() != size_t(n)) return;
    double worst = 1;
    for (size_t w = 1; w < rows.size(); ++w)
      worst = std::min(worst, Jain(Delta(rows[w - 1], rows[w])));
    state.counters["jain"] = Jain(Delta(rows.front(), rows.back()));
    state.counters["jain_min"] = worst;
    double total = 0;
    for (double r : rates) total += r;
    state.counters["jain_tput"] = Jain(rates);
    state.counters["total_vs_alone"] = total / alone;
    state.counters["achieved_sum"] = AchievedSumMax(rows, at);
    state.counters["alone_kps"] = alone;
  }
}
BENCHMARK(BM_EqualShares)->Arg(8)->Iterations(1)->Unit(benchmark::kSecond);

void BM_ComputeLimitAlone(benchmark::State& state) {
  for (auto _ : state) {
    const double alone = AloneRate(state);  // first: its server is gone before theirs starts
    if (alone <= 0) return;
    ShareRun run(state);
    if (!run.ok()) return;
    if (!run.AddTenant({"--gpu-compute", "0.3", "--gpu-compute-limit", "0.3"}, kSeconds)) return;
    std::vector<Clock::time_point> at;
    auto rows = run.Sample(&at);
    std::vector<double> rates = run.Finish();
    if (rows.empty() || rates.size() != 1) return;
    auto seconds = [&](size_t a, size_t b) {
      return std::chrono::duration<double>(at[b] - at[a]).count();
    };
    double worst = 0;
    for (size_t w = 1; w < rows.size(); ++w)
      worst = std::max(worst, (rows[w][0] - rows[w - 1][0]) / seconds(w - 1, w));
    state.counters["share"] = (rows.back()[0] - rows.front()[0]) / seconds(0, rows.size() - 1);
    state.counters["share_max"] = worst;
    state.counters["tput_vs_alone"] = rates[0] / alone;
    state.counters["alone_kps"] = alone;
  }
}
BENCHMARK(BM_ComputeLimitAlone)->Iterations(1)->Unit(benchmark::kSecond);

void BM_IdleThenSaturate(benchmark::State& state) {
  constexpr double kTarget = 0.25;
  constexpr int kIdle = 10, kAfter = 5;
  for (auto _ : state) {
    ShareRun run(state);
    if (!run.ok()) return;
    if (!run.AddTenant({"--gpu-compute", "0.3"}, 1 + kIdle + kSeconds)) return;
    Child* sleeper = run.Spawn(
        {"--gpu-compute", "0.1"},
        {"-idle", std::to_string(kIdle), "-busy", std::to_string(kAfter + 3), "-iters", kIters});
    if (sleeper == nullptr) return;
    std::string line;
    while (sleeper->ReadLine(&line, std::chrono::seconds(kIdle + 30)) && line != "SATURATING") {
    }
    if (line != "SATURATING") {
      state.SkipWithError("the idle tenant never woke (see its log)");
      run.Finish();
      return;
    }
    auto rows = run.Sample(nullptr, kAfter, /*at_once=*/true);
    run.Finish();
    if (rows.empty()) return;
    auto share = [&](size_t w) {
      std::vector<double> d = Delta(rows[w - 1], rows[w]);
      return d[1] / (d[0] + d[1]);
    };
    double worst = 0;
    for (size_t w = 2; w < rows.size(); ++w)
      worst = std::max(worst, std::abs(share(w) / kTarget - 1));
    state.counters["share_first"] = share(1);
    state.counters["target"] = kTarget;
    state.counters["over_pct"] = 100 * std::max(0.0, share(1) / kTarget - 1);
    state.counters["err_pct"] = 100 * worst;
  }
}
BENCHMARK(BM_IdleThenSaturate)->Iterations(1)->Unit(benchmark::kSecond);

// The high-priority tenant's kernel latency (launch to checked result; kernels of about
// 3 ms, 4,000 of them) beside two saturating low-priority tenants whose kernels are a tenth
// as long, and alone. Alone and loaded are sampled interleaved: every kPhase the low
// tenants are stopped (SIGSTOP) or continued, and a kernel counts for the phase it started
// in, kSettle after the switch or later (their queued work has drained, or they run
// again). So both see the same host: this VM's speed drifts by tens of percent within
// seconds, more than the effect measured. Counters: p50/p99 alone and loaded, ratio =
// p99 loaded / p99 alone (target <= 1.10), extra_ms = p99 loaded - p99 alone (to compare
// with one best-effort kernel, about p50_alone_ms / 10), samples per phase kind,
// ratio_p5/ratio_p95 = the ratio's 5th/95th percentiles over bootstrap resamples (how far
// sampling alone moves it).
void BM_PriorityLatency(benchmark::State& state) {
  constexpr auto kPhase = std::chrono::milliseconds(400);
  constexpr auto kSettle = std::chrono::milliseconds(50);
  for (auto _ : state) {
    ShareRun run(state);
    if (!run.ok()) return;
    std::vector<Child*> low;
    for (int i = 0; i < 2; ++i) {
      low.push_back(run.Spawn({"--priority", "low"}, {"-busy", "25", "-iters", "10000"}));
      if (low.back() == nullptr) return;
    }
    std::this_thread::sleep_for(kWarmup);
    Child* high =
        run.Spawn({"--priority", "high"}, {"-latency", "4000", "-iters", kIters, "-samples", "1"});
    if (high == nullptr) return;
    std::string out;
    std::atomic<bool> done{false};
    std::thread reader([&] {
      out = high->ReadAll();
      done = true;
    });
    std::vector<std::pair<Clock::time_point, bool>> phases{{Clock::now(), true}};
    while (!done) {
      std::this_thread::sleep_for(kPhase);
      const bool loaded = !phases.back().second;
      for (Child* c : low) kill(c->pid(), loaded ? SIGCONT : SIGSTOP);
      phases.emplace_back(Clock::now(), loaded);
    }
    reader.join();
    for (Child* c : low) kill(c->pid(), SIGCONT);
    bool low_alive = true;
    for (Child* c : low) low_alive = low_alive && c->Running();
    run.Finish();
    if (!low_alive) {
      state.SkipWithError("the low-priority tenants ended before the measurement did");
      return;
    }
    std::vector<double> alone, loaded;
    static const std::regex re(R"(SAMPLE (\d+) ([0-9.]+))");
    for (auto it = std::sregex_iterator(out.begin(), out.end(), re); it != std::sregex_iterator();
         ++it) {
      const Clock::time_point at{std::chrono::nanoseconds(std::stoll((*it)[1].str()))};
      auto next = std::upper_bound(phases.begin(), phases.end(), at,
                                   [](Clock::time_point t, const auto& p) { return t < p.first; });
      if (next == phases.begin()) continue;
      const auto& phase = *std::prev(next);
      if (at - phase.first < kSettle) continue;
      (phase.second ? loaded : alone).push_back(std::stod((*it)[2].str()));
    }
    if (alone.size() < 100 || loaded.size() < 100) {
      state.SkipWithError("too few latency samples (see the high-priority tenant's log)");
      return;
    }
    auto pct = [](std::vector<double>& v, int p) {
      std::sort(v.begin(), v.end());
      return v[v.size() * p / 100] / 1000;
    };
    // How far the ratio moves by sampling alone: p99 of a few hundred kernels
    // rests on their slowest handful. The 5th and 95th percentiles of the
    // ratio over bootstrap resamples of both sets.
    std::mt19937 rng(1);
    std::vector<double> ratios, ra, rl;
    for (int b = 0; b < 1000; ++b) {
      ra.clear();
      rl.clear();
      for (size_t k = 0; k < alone.size(); ++k) ra.push_back(alone[rng() % alone.size()]);
      for (size_t k = 0; k < loaded.size(); ++k) rl.push_back(loaded[rng() % loaded.size()]);
      ratios.push_back(pct(rl, 99) / pct(ra, 99));
    }
    std::sort(ratios.begin(), ratios.end());
    state.counters["ratio_p5"] = ratios[ratios.size() * 5 / 100];
    state.counters["ratio_p95"] = ratios[ratios.size() * 95 / 100];
    const double a50 = pct(alone, 50), a99 = pct(alone, 99);
    const double l50 = pct(loaded, 50), l99 = pct(loaded, 99);
    state.counters["p50_alone_ms"] = a50;
    state.counters["p99_alone_ms"] = a99;
    state.counters["p50_loaded_ms"] = l50;
    state.counters["p99_loaded_ms"] = l99;
    state.counters["ratio"] = l99 / a99;
    state.counters["extra_ms"] = l99 - a99;
    state.counters["samples_alone"] = static_cast<double>(alone.size());
    state.counters["samples_loaded"] = static_cast<double>(loaded.size());
  }
}
BENCHMARK(BM_PriorityLatency)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
}  // namespace remora::bench::e2e
