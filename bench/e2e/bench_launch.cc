// bench/e2e/bench_launch.cc - empty-kernel launch throughput over shm against in-process, same run.
//
//   BM_LaunchEmpty/<N>  one iteration = one baseline batch, then one measured batch:
//                       measured: remora_e2e_empty<<<1,1>>> launched N times through the
//                       stub (fire-and-forget frames over shm) + cudaDeviceSynchronize;
//                       baseline: a child of this binary (--e2e_child=emu_launch) launching
//                       the same kernel's PTX N times on the emulated libcuda.so.1
//                       in-process + cuCtxSynchronize, timed inside the child.
//                       Alternating batch by batch puts both under the same machine load.
// launches_per_s is over shm (the time column is its batch), base_launches_per_s the
// baseline's; ratio = launches_per_s / base_launches_per_s (1.0 = as fast as in-process;
// target >= 0.9).
//
//   BM_LaunchFairVsFifo/<N>  the same batch (N empty launches + cudaDeviceSynchronize,
//                       through the stub over shm) by two tenant processes of this binary
//                       (--e2e_child=stub_launch), one against a server with the fair
//                       queue (the default), one against a server with --scheduler fifo,
//                       alternating batch by batch (and which goes first); 10 batch
//                       pairs on each of 12 fresh server pairs. ratio = fair
//                       launches/s over FIFO's, over all batches (ratio_median: of the
//                       median batches; round_min/max: of one server pair's batches;
//                       issue target: a lone tenant >= 0.95 of FIFO); cpu_ratio = the
//                       FIFO server's CPU seconds over the fair one's.
//
//   BM_StaticRuntimeLaunch/<N>  the same tenant program (launch_batches.cu: N empty launches +
//                       cudaDeviceSynchronize per batch) built with nvcc's default, NVIDIA's
//                       static runtime over Remora's libcuda.so.1, and with the shared runtime,
//                       Remora's stub; both over shm to this run's server, alternating batch by
//                       batch (and which goes first). ratio = the static build's launches/s over
//                       the stub's (issue 23 target >= 0.9).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"

extern "C" int RemoraE2eLaunchEmpty(int n);  // empty_kernel.cu

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(120);

// `n` empty launches through the stub and a synchronize: one batch.
cudaError_t StubBatch(int n) {
  if (int e = RemoraE2eLaunchEmpty(n)) return static_cast<cudaError_t>(e);
  return cudaDeviceSynchronize();
}

// A child of this binary serving batches on request (emu_launch with 0 batches,
// stub_launch): "ready" after a warm-up batch, then "s=<seconds>" per line read,
// the batch timed in the child, where the launches are made.
class BatchChild {
 public:
  bool Start(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             const std::string& log, std::string* err) {
    if (!child_.Start(argv, env, log, err, /*with_stdin=*/true)) return false;
    std::string line;
    if (child_.ReadLine(&line, kChildTimeout) && line == "ready") return true;
    *err = argv[1] + " child did not start (" + line + "); see " + log;
    return false;
  }
  // The next batch's seconds; < 0 if the child failed.
  double Batch() {
    std::string line;
    if (!child_.WriteLine("batch") || !child_.ReadLine(&line, kChildTimeout) ||
        line.rfind("s=", 0) != 0)
      return -1;
    return std::stod(line.substr(2));
  }
  // Closes its stdin; its exit status.
  int Finish() {
    child_.CloseStdin();
    return child_.Wait();
  }

 private:
  Child child_;
};

void BM_LaunchEmpty(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string log = Env().dir + "/children.log";
  BatchChild base;
  std::string err;
  if (!base.Start({SelfExe(), "--e2e_child=emu_launch", std::to_string(n), "0"}, {}, log, &err))
    return state.SkipWithError(err.c_str());
  if (cudaError_t e = StubBatch(n))  // registers the fat binary, loads the module, warms up
    return state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
  double shm_s = 0, base_s = 0, server_cpu_s = 0;
  for (auto _ : state) {
    const double b = base.Batch();
    if (b < 0) {
      state.SkipWithError(("in-process launch child failed; see " + log).c_str());
      break;
    }
    base_s += b;
    const double cpu0 = CpuSeconds(Env().server->pid());
    const auto t0 = Clock::now();
    const cudaError_t e = StubBatch(n);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    server_cpu_s += CpuSeconds(Env().server->pid()) - cpu0;
    if (e != cudaSuccess) {
      state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
      break;
    }
    shm_s += s;
    state.SetIterationTime(s);
  }
  if (base.Finish() != 0 && !state.error_occurred())
    state.SkipWithError(("in-process launch child failed at exit; see " + log).c_str());
  if (state.error_occurred()) return;

  const double launches = static_cast<double>(state.iterations()) * n;
  state.SetItemsProcessed(static_cast<int64_t>(launches));
  state.counters["launches_per_s"] = shm_s > 0 ? launches / shm_s : 0;
  state.counters["base_launches_per_s"] = base_s > 0 ? launches / base_s : 0;
  state.counters["ratio"] = shm_s > 0 ? base_s / shm_s : 0;
  // The serving process's CPU (its emulated GPU's included) per launch over shm.
  state.counters["server_cpu_ns_per_launch"] = server_cpu_s * 1e9 / launches;
}
BENCHMARK(BM_LaunchEmpty)
    ->Arg(10'000)
    ->UseManualTime()
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);

constexpr int kRounds = 12;  // BM_LaunchFairVsFifo's server pairs

void BM_LaunchFairVsFifo(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::string err;
  const std::string log = Env().dir + "/children.log";
  // One round: a fresh pair of servers, each with its tenant. Where the host's
  // scheduler puts their threads favours one or the other for as long as they
  // live (±15% between runs here), so the batches are spread over kRounds pairs.
  struct Round {
    std::unique_ptr<BenchServer> fair, fifo;
    BatchChild on_fair, on_fifo;
    double fair_cpu0 = 0, fifo_cpu0 = 0;  // each server's CPU seconds before the batches
  };
  std::unique_ptr<Round> round;
  int started = 0;
  double fair_cpu = 0, fifo_cpu = 0;
  auto end_round = [&] {
    if (round && round->fair && round->fifo) {
      fair_cpu += CpuSeconds(round->fair->pid()) - round->fair_cpu0;
      fifo_cpu += CpuSeconds(round->fifo->pid()) - round->fifo_cpu0;
    }
    const bool ok = !round || (round->on_fair.Finish() | round->on_fifo.Finish()) == 0;
    round.reset();
    return ok;
  };
  auto start_round = [&] {
    round = std::make_unique<Round>();
    const std::string tag = std::to_string(++started);
    auto server = [&](const char* order) {
      const std::string dir = Env().dir + "/" + order + tag;
      std::filesystem::create_directories(dir);
      return BenchServer::Start(dir, &err, {"--scheduler", order});
    };
    auto tenant = [&](BatchChild& c, const BenchServer& srv) {
      return c.Start({SelfExe(), "--e2e_child=stub_launch", std::to_string(n)},
                     {{"REMORA_SERVER", srv.shm_address()}}, log, &err);
    };
    // Which server starts first alternates too.
    Round& r = *round;
    if (started % 2) {
      r.fair = server("fair");
      r.fifo = r.fair ? server("fifo") : nullptr;
    } else {
      r.fifo = server("fifo");
      r.fair = r.fifo ? server("fair") : nullptr;
    }
    if (!r.fair || !r.fifo || !tenant(r.on_fair, *r.fair) || !tenant(r.on_fifo, *r.fifo))
      return false;
    r.fair_cpu0 = CpuSeconds(r.fair->pid());
    r.fifo_cpu0 = CpuSeconds(r.fifo->pid());
    return true;
  };
  const size_t per_round = (static_cast<size_t>(state.max_iterations) + kRounds - 1) / kRounds;
  std::vector<double> fair_s, fifo_s;
  for (auto _ : state) {
    if (fair_s.size() % per_round == 0) {
      state.PauseTiming();
      const bool ok = end_round() && start_round();
      state.ResumeTiming();
      if (!ok) {
        state.SkipWithError(err.empty() ? ("a launch tenant failed; see " + log).c_str()
                                        : err.c_str());
        break;
      }
    }
    // Alternating which goes first: neither always runs right after the other.
    const bool fifo_first = fair_s.size() % 2 == 0;
    double b = fifo_first ? round->on_fifo.Batch() : 0;
    const double s = round->on_fair.Batch();
    if (!fifo_first) b = round->on_fifo.Batch();
    if (b < 0 || s < 0) {
      state.SkipWithError(("a launch tenant failed; see " + log).c_str());
      break;
    }
    fifo_s.push_back(b);
    fair_s.push_back(s);
    state.SetIterationTime(s);
  }
  if (!end_round() && !state.error_occurred())
    state.SkipWithError(("a launch tenant failed at exit; see " + log).c_str());
  if (state.error_occurred()) return;
  // Throughput over all batches; medians beside it, which a batch the
  // hypervisor or another process interrupted does not move.
  auto sum = [](const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0); };
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double launches = static_cast<double>(fair_s.size()) * n;
  state.SetItemsProcessed(static_cast<int64_t>(launches));
  state.counters["fair_launches_per_s"] = launches / sum(fair_s);
  state.counters["fifo_launches_per_s"] = launches / sum(fifo_s);
  state.counters["ratio"] = sum(fifo_s) / sum(fair_s);
  state.counters["ratio_median"] = median(fifo_s) / median(fair_s);
  // Each server pair's own ratio: how far placement alone moves it.
  std::vector<double> rounds;
  for (size_t r = 0; r < fair_s.size(); r += per_round) {
    const size_t e = std::min(fair_s.size(), r + per_round);
    rounds.push_back(std::accumulate(fifo_s.begin() + r, fifo_s.begin() + e, 0.0) /
                     std::accumulate(fair_s.begin() + r, fair_s.begin() + e, 0.0));
  }
  // The servers' CPU time over their rounds (idle gaps between batches
  // included): a cost that where their threads ran moves less than it moves
  // throughput.
  state.counters["cpu_ratio"] = fair_cpu > 0 ? fifo_cpu / fair_cpu : 0;
  state.counters["round_min"] = *std::min_element(rounds.begin(), rounds.end());
  state.counters["round_max"] = *std::max_element(rounds.begin(), rounds.end());
}
BENCHMARK(BM_LaunchFairVsFifo)
    ->Arg(10'000)
    ->UseManualTime()
    ->Iterations(kRounds * 10)
    ->Unit(benchmark::kMillisecond);

void BM_StaticRuntimeLaunch(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string log = Env().dir + "/children.log";
  const std::map<std::string, std::string> env = {{"REMORA_SERVER", Env().server->shm_address()},
                                                  {"LD_LIBRARY_PATH", REMORA_E2E_STUB_DIR}};
  BatchChild nvidia, stub;
  std::string err;
  if (!nvidia.Start({REMORA_E2E_BATCHES_STATIC, std::to_string(n)}, env, log, &err) ||
      !stub.Start({REMORA_E2E_BATCHES_SHARED, std::to_string(n)}, env, log, &err))
    return state.SkipWithError(err.c_str());
  double static_s = 0, stub_s = 0;
  bool static_first = true;  // which goes first alternates
  for (auto _ : state) {
    double a = 0, b = 0;
    if (static_first) {
      a = nvidia.Batch();
      b = stub.Batch();
    } else {
      b = stub.Batch();
      a = nvidia.Batch();
    }
    static_first = !static_first;
    if (a < 0 || b < 0) {
      state.SkipWithError(("a launch_batches child failed; see " + log).c_str());
      break;
    }
    static_s += a;
    stub_s += b;
    state.SetIterationTime(a);
  }
  if ((nvidia.Finish() != 0 || stub.Finish() != 0) && !state.error_occurred())
    state.SkipWithError(("a launch_batches child failed at exit; see " + log).c_str());
  const double launches = static_cast<double>(n) * state.iterations();
  state.counters["static_launches_per_s"] = static_s > 0 ? launches / static_s : 0;
  state.counters["stub_launches_per_s"] = stub_s > 0 ? launches / stub_s : 0;
  state.counters["ratio"] = static_s > 0 ? stub_s / static_s : 0;
}
BENCHMARK(BM_StaticRuntimeLaunch)
    ->Arg(10'000)
    ->UseManualTime()
    ->Iterations(40)
    ->Unit(benchmark::kMillisecond);

}  // namespace

int RunStubLaunchChild(int n) {
  if (cudaError_t e = StubBatch(n)) {  // registers the fat binary, loads the module, warms up
    std::fprintf(stderr, "stub_launch: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
    const auto t0 = Clock::now();
    if (cudaError_t e = StubBatch(n)) {
      std::fprintf(stderr, "stub_launch: %s\n", cudaGetErrorString(e));
      return 1;
    }
    std::printf("s=%.9f\n", std::chrono::duration<double>(Clock::now() - t0).count());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace remora::bench::e2e
