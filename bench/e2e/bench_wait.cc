// bench/e2e/bench_wait.cc - how soon a synchronization returns once the device work it waits
// for has ended, through Remora and in-process, same run.
//
//   BM_WaitFound/<wait_us>/<how>  a kernel spinning until a deadline wait_us ahead, then
//                       cudaStreamSynchronize (how 0) or cudaEventSynchronize of an event
//                       recorded after it (how 1); a sample is how long after the kernel ended
//                       (its %globaltimer, the host's CLOCK_REALTIME on the emulated GPU) the
//                       call returned. Three children, a block of kWaitBlock waits each in
//                       turn: a tenant of this run's server (the emulated GPU's way: a waiter
//                       spins briefly, then a doorbell host function wakes the executor); a
//                       tenant of a server started with REMORA_WAIT_SPIN=long (a GPU's way:
//                       the waiter spins 500 us and rings no doorbell, so the executor's polls
//                       find the end, and its tenants poll 200 us for a reply before they
//                       sleep); and the same calls on the emulated driver in-process.
// Counters (us, p50 and p99 of every sample): late_*, gpu_way_*, inproc_*; added_us and
// gpu_way_added_us = p50 - the in-process p50 (issue 24: a synchronization returns within a
// few microseconds of the work's end); gpu_way_added_frac = gpu_way_added_us / wait_us.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/e2e/children.h"
#include "bench/e2e/server.h"

extern "C" int RemoraE2eLaunchUntilOn(cudaStream_t s, unsigned long long deadline_ns,
                                      unsigned long long* ended);  // empty_kernel.cu

namespace remora::bench::e2e {

uint64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

int ServeWaitBlocks(const WaitLateness& wait, int wait_us) {
  const uint64_t wait_ns = static_cast<uint64_t>(wait_us) * 1000;
  std::vector<uint64_t> late;
  uint64_t ns = 0;
  for (int i = 0; i < 5; ++i) {
    if (!wait(RealtimeNs() + wait_ns, &ns)) {
      std::printf("error=1\n");
      return 1;
    }
  }
  std::printf("ready\n");
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof line, stdin) != nullptr) {
    for (size_t i = 0; i < kWaitBlock; ++i) {
      if (!wait(RealtimeNs() + wait_ns, &ns)) {
        std::printf("error=1\n");
        return 1;
      }
      late.push_back(ns);
    }
    std::printf("ok\n");
    std::fflush(stdout);
  }
  const Stats s = Summarize(late, 1.0);
  std::printf("mean_ns=%.1f p50_ns=%.1f p99_ns=%.1f n=%llu\n", s.mean_ns, s.p50_ns, s.p99_ns,
              static_cast<unsigned long long>(s.n));
  return 0;
}

int RunWaitChild(int wait_us, int how) {
  if (wait_us <= 0 || how < 0 || how > 1) return 2;
  cudaStream_t stream = nullptr;
  cudaEvent_t after = nullptr;
  unsigned long long* ended = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess ||
      cudaEventCreateWithFlags(&after, cudaEventDisableTiming) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void**>(&ended), sizeof *ended) != cudaSuccess) {
    std::printf("error=1\n");
    return 1;
  }
  const WaitLateness wait = [&](uint64_t deadline_ns, uint64_t* late_ns) {
    if (RemoraE2eLaunchUntilOn(stream, deadline_ns, ended) != cudaSuccess) return false;
    const cudaError_t e =
        how == 0 ? cudaStreamSynchronize(stream)
                 : (cudaEventRecord(after, stream) != cudaSuccess ? cudaErrorUnknown
                                                                  : cudaEventSynchronize(after));
    const uint64_t back = RealtimeNs();
    unsigned long long end = 0;
    if (e != cudaSuccess ||
        cudaMemcpy(&end, ended, sizeof end, cudaMemcpyDeviceToHost) != cudaSuccess)
      return false;
    *late_ns = back > end ? back - end : 0;
    return true;
  };
  return ServeWaitBlocks(wait, wait_us);
}

namespace {

constexpr auto kChildTimeout = std::chrono::seconds(60);

void BM_WaitFound(benchmark::State& state) {
  const int wait_us = static_cast<int>(state.range(0));
  const int how = static_cast<int>(state.range(1));
  state.SetLabel(how == 0 ? "kernel + cudaStreamSynchronize" : "kernel + cudaEventSynchronize");
  const std::string log = Env().dir + "/children.log";
  std::string err;
  const std::string gpu_dir = Env().dir + "/gpu_way";
  std::filesystem::create_directories(gpu_dir);
  auto gpu_way = BenchServer::Start(gpu_dir, &err, {}, {{"REMORA_WAIT_SPIN", "long"}});
  if (!gpu_way) return state.SkipWithError(err.c_str());
  // 0: this run's server; 1: the GPU's way; 2: in-process.
  std::array<Child, 3> kids;
  const std::string us = std::to_string(wait_us), h = std::to_string(how);
  const std::string inproc_which = std::to_string(3 + how);
  const bool started =
      kids[0].Start({SelfExe(), "--e2e_child=wait", us, h},
                    {{"REMORA_SERVER", Env().server->shm_address()}}, log, &err, true) &&
      kids[1].Start({SelfExe(), "--e2e_child=wait", us, h},
                    {{"REMORA_SERVER", gpu_way->shm_address()}}, log, &err, true) &&
      kids[2].Start({SelfExe(), "--e2e_child=emu_sync", inproc_which, us}, {}, log, &err, true);
  if (!started) return state.SkipWithError(err.c_str());
  std::string line;
  for (Child& k : kids) {
    if (!k.ReadLine(&line, kChildTimeout) || line != "ready")
      return state.SkipWithError(("a wait child did not start; see " + log).c_str());
  }
  size_t round = 0;
  for (auto _ : state) {
    // Each child goes first in turn.
    for (size_t j = 0; j < kids.size(); ++j) {
      Child& k = kids[(round + j) % kids.size()];
      if (!k.WriteLine("block") || !k.ReadLine(&line, kChildTimeout) || line != "ok") {
        state.SkipWithError(("a wait child failed; see " + log).c_str());
        break;
      }
    }
    if (state.error_occurred()) break;
    ++round;
  }
  std::array<std::map<std::string, double>, 3> kv;
  for (size_t j = 0; j < kids.size(); ++j) {
    kids[j].CloseStdin();
    if (kids[j].ReadLine(&line, kChildTimeout)) kv[j] = ParseKeyValues(line);
    if (kids[j].WaitOrStop(kChildTimeout) != 0 || kv[j].count("p50_ns") == 0) {
      if (!state.error_occurred())
        state.SkipWithError(("a wait child failed at exit; see " + log).c_str());
    }
  }
  if (state.error_occurred()) return;
  const char* names[] = {"late", "gpu_way", "inproc"};
  for (size_t j = 0; j < kids.size(); ++j) {
    state.counters[std::string(names[j]) + "_p50_us"] = kv[j]["p50_ns"] / 1e3;
    state.counters[std::string(names[j]) + "_p99_us"] = kv[j]["p99_ns"] / 1e3;
  }
  state.counters["added_us"] = (kv[0]["p50_ns"] - kv[2]["p50_ns"]) / 1e3;
  state.counters["gpu_way_added_us"] = (kv[1]["p50_ns"] - kv[2]["p50_ns"]) / 1e3;
  state.counters["gpu_way_added_frac"] = (kv[1]["p50_ns"] - kv[2]["p50_ns"]) / 1e3 / wait_us;
}
BENCHMARK(BM_WaitFound)
    ->Args({300, 0})
    ->Args({3000, 0})
    ->Args({3000, 1})
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
