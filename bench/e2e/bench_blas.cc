// bench/e2e/bench_blas.cc - remoted SGEMM over shm against the same call in-process, same run.
//
//   BM_RemoteSgemm/<N>  one iteration = one baseline call, then one measured call:
//                       measured: cublasSgemm N x N x N through the stub libcublas.so.13
//                       (one frame over shm) + cudaDeviceSynchronize;
//                       baseline: a child of this binary (--e2e_child=emu_sgemm N) making
//                       the same call on the emulated GPU's libcublas.so.13 in-process
//                       + cuCtxSynchronize, timed inside the child.
// gflops is over shm, base_gflops the baseline's; ratio = base time / shm time
// (1.0 = as fast as in-process; target >= 0.9).
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(120);

void BM_RemoteSgemm(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string log = Env().dir + "/children.log";
  Child base;
  std::string err, line;
  if (!base.Start({SelfExe(), "--e2e_child=emu_sgemm", std::to_string(n)}, {}, log, &err,
                  /*with_stdin=*/true))
    return state.SkipWithError(err.c_str());
  if (!base.ReadLine(&line, kChildTimeout) || line != "ready")
    return state.SkipWithError(("in-process SGEMM child did not start; see " + log).c_str());

  const size_t bytes = size_t(n) * n * sizeof(float);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cublasHandle_t h = nullptr;
  auto malloc = [&](float** p) { return cudaMalloc(reinterpret_cast<void**>(p), bytes); };
  if (malloc(&a) || malloc(&b) || malloc(&c) || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
    return state.SkipWithError("cudaMalloc or cublasCreate failed");
  const std::vector<float> ones(size_t(n) * n, 1.0f);
  (void)cudaMemcpy(a, ones.data(), bytes, cudaMemcpyHostToDevice);
  (void)cudaMemcpy(b, ones.data(), bytes, cudaMemcpyHostToDevice);
  const float alpha = 1, beta = 0;
  auto call = [&]() -> bool {
    return cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n) ==
               CUBLAS_STATUS_SUCCESS &&
           cudaDeviceSynchronize() == cudaSuccess;
  };
  if (!call()) return state.SkipWithError("cublasSgemm failed");
  double shm_s = 0, base_s = 0;
  for (auto _ : state) {
    if (!base.WriteLine("call") || !base.ReadLine(&line, kChildTimeout) ||
        line.rfind("s=", 0) != 0) {
      state.SkipWithError(("in-process SGEMM child failed; see " + log).c_str());
      break;
    }
    base_s += std::stod(line.substr(2));
    const auto t0 = Clock::now();
    const bool ok = call();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!ok) {
      state.SkipWithError("cublasSgemm failed");
      break;
    }
    shm_s += s;
    state.SetIterationTime(s);
  }
  float corner = 0;
  (void)cudaMemcpy(&corner, c, sizeof corner, cudaMemcpyDeviceToHost);
  cublasDestroy(h);
  cudaFree(a), cudaFree(b), cudaFree(c);
  base.CloseStdin();
  if (base.Wait() != 0 && !state.error_occurred())
    state.SkipWithError(("in-process SGEMM child failed at exit; see " + log).c_str());
  if (state.error_occurred()) return;
  if (corner != static_cast<float>(n)) return state.SkipWithError("SGEMM computed a wrong result");
  const double flops = 2.0 * n * n * n * static_cast<double>(state.iterations());
  state.counters["gflops"] = shm_s > 0 ? flops / shm_s / 1e9 : 0;
  state.counters["base_gflops"] = base_s > 0 ? flops / base_s / 1e9 : 0;
  state.counters["ratio"] = shm_s > 0 ? base_s / shm_s : 0;
}
BENCHMARK(BM_RemoteSgemm)
    ->Arg(1024)
    ->UseManualTime()
    ->Iterations(10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
