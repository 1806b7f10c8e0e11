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
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <string>

#include "bench/e2e/server.h"

extern "C" int RemoraE2eLaunchEmpty(int n);  // empty_kernel.cu

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(120);

void BM_LaunchEmpty(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string log = Env().dir + "/children.log";
  Child base;
  std::string err, line;
  if (!base.Start({SelfExe(), "--e2e_child=emu_launch", std::to_string(n), "0"}, {}, log, &err,
                  /*with_stdin=*/true))
    return state.SkipWithError(err.c_str());
  if (!base.ReadLine(&line, kChildTimeout) || line != "ready")
    return state.SkipWithError(("in-process launch child did not start; see " + log).c_str());

  auto batch = [&]() -> cudaError_t {
    if (int e = RemoraE2eLaunchEmpty(n)) return static_cast<cudaError_t>(e);
    return cudaDeviceSynchronize();
  };
  if (cudaError_t e = batch())  // registers the fat binary, loads the module, warms up
    return state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
  double shm_s = 0, base_s = 0;
  for (auto _ : state) {
    if (!base.WriteLine("batch") || !base.ReadLine(&line, kChildTimeout) ||
        line.rfind("s=", 0) != 0) {
      state.SkipWithError(("in-process launch child failed; see " + log).c_str());
      break;
    }
    base_s += std::stod(line.substr(2));
    const auto t0 = Clock::now();
    const cudaError_t e = batch();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (e != cudaSuccess) {
      state.SkipWithError((std::string("launch: ") + cudaGetErrorName(e)).c_str());
      break;
    }
    shm_s += s;
    state.SetIterationTime(s);
  }
  base.CloseStdin();
  if (base.Wait() != 0 && !state.error_occurred())
    state.SkipWithError(("in-process launch child failed at exit; see " + log).c_str());
  if (state.error_occurred()) return;

  const double launches = static_cast<double>(state.iterations()) * n;
  state.SetItemsProcessed(static_cast<int64_t>(launches));
  state.counters["launches_per_s"] = shm_s > 0 ? launches / shm_s : 0;
  state.counters["base_launches_per_s"] = base_s > 0 ? launches / base_s : 0;
  state.counters["ratio"] = shm_s > 0 ? base_s / shm_s : 0;
}
BENCHMARK(BM_LaunchEmpty)
    ->Arg(10'000)
    ->UseManualTime()
    ->Iterations(8)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
