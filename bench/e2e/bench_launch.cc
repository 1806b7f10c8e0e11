// bench/e2e/bench_launch.cc - empty-kernel launch throughput over shm against in-process, same run.
//
//   BM_LaunchEmpty/<N>  one iteration = remora_e2e_empty<<<1,1>>> launched N times through
//                       the stub (fire-and-forget frames over shm) + cudaDeviceSynchronize.
//                       Baseline: this binary as a child (--e2e_child=emu_launch) launching
//                       the same kernel's PTX N times on the emulated libcuda.so.1 in-process
//                       + cuCtxSynchronize, 5 batches (median), run before and after the
//                       measured iterations and averaged.
// launches_per_s is over shm (kIsRate), base_launches_per_s the baseline;
// ratio = launches_per_s / base_launches_per_s (1.0 = as fast as in-process).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <string>

#include "bench/e2e/server.h"

extern "C" int RemoraE2eLaunchEmpty(int n);  // empty_kernel.cu

namespace remora::bench::e2e {
namespace {

// Runs the in-process baseline child; 0 on failure (with *err).
double BaselineLaunchesPerSecond(int n, std::string* err) {
  int status = 0;
  const std::string text =
      RunToCompletion({SelfExe(), "--e2e_child=emu_launch", std::to_string(n), "5"}, {},
                      Env().dir + "/children.log", &status);
  auto kv = ParseKeyValues(text);
  if (status != 0 || kv.count("launches_per_s") == 0) {
    *err = "in-process launch child failed (exit " + std::to_string(status) + "); see " +
           Env().dir + "/children.log";
    return 0;
  }
  return kv["launches_per_s"];
}

void BM_LaunchEmpty(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  std::string err;
  const double base_before = BaselineLaunchesPerSecond(n, &err);
  if (base_before <= 0) return state.SkipWithError(err.c_str());

  auto batch = [&]() -> cudaError_t {
    if (int e = RemoraE2eLaunchEmpty(n)) return static_cast<cudaError_t>(e);
    return cudaDeviceSynchronize();
  };
  if (cudaError_t e = batch())  // registers the fat binary, loads the module, warms up
    return state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
  double total_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const cudaError_t e = batch();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e != cudaSuccess) {
      state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
      break;
    }
    total_s += s;
    state.SetIterationTime(s);
  }
  if (state.error_occurred()) return;
  const double base_after = BaselineLaunchesPerSecond(n, &err);
  if (base_after <= 0) return state.SkipWithError(err.c_str());

  const double launches = static_cast<double>(state.iterations()) * n;
  const double base = (base_before + base_after) / 2;
  const double rate = total_s > 0 ? launches / total_s : 0;
  state.SetItemsProcessed(static_cast<int64_t>(launches));
  state.counters["launches_per_s"] = rate;
  state.counters["base_launches_per_s"] = base;
  state.counters["base_spread"] = base_before > 0 ? base_after / base_before : 0;
  state.counters["ratio"] = base > 0 ? rate / base : 0;
}
BENCHMARK(BM_LaunchEmpty)
    ->Arg(10'000)
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
