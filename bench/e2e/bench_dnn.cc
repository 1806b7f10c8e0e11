// bench/e2e/bench_dnn.cc - a remoted cuDNN convolution over shm against the same call in-process.
//
//   BM_RemoteConv  one iteration = one baseline call, then one measured call:
//                  measured: conv_problem.h's 3x3 convolution forward (32x64x56x56, 64 filters)
//                  through the stub libcudnn.so.9 (one frame over shm) + cudaDeviceSynchronize;
//                  baseline: a child of this binary (--e2e_child=emu_conv) making the same
//                  calls on the emulated GPU's libcudnn.so.9 in-process + cuCtxSynchronize,
//                  timed inside the child.
// gflops is over shm, base_gflops the baseline's; ratio = base time / shm time
// (1.0 = as fast as in-process; target >= 0.9).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "bench/e2e/conv_problem.h"
#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

constexpr auto kChildTimeout = std::chrono::seconds(300);

void BM_RemoteConv(benchmark::State& state) {
  const std::string log = Env().dir + "/children.log";
  Child base;
  std::string err, line;
  if (!base.Start({SelfExe(), "--e2e_child=emu_conv"}, {}, log, &err, /*with_stdin=*/true))
    return state.SkipWithError(err.c_str());
  if (!base.ReadLine(&line, kChildTimeout) || line != "ready")
    return state.SkipWithError(("in-process convolution child did not start; see " + log).c_str());
  const ConvShape s;
  void *x = nullptr, *w = nullptr, *y = nullptr;
  if (cudaMalloc(&x, s.XBytes()) || cudaMalloc(&w, s.WBytes()) || cudaMalloc(&y, s.YBytes()))
    return state.SkipWithError("cudaMalloc failed");
  const std::vector<float> ones(s.XBytes() / 4, 1.0f);
  (void)cudaMemcpy(x, ones.data(), s.XBytes(), cudaMemcpyHostToDevice);
  (void)cudaMemcpy(w, ones.data(), s.WBytes(), cudaMemcpyHostToDevice);
  ConvProblem p;
  if (!p.Setup(ConvApi(), x, w, y)) return state.SkipWithError("cuDNN set-up failed");
  auto call = [&] { return p.Run() && cudaDeviceSynchronize() == cudaSuccess; };
  if (!call()) return state.SkipWithError("cudnnConvolutionForward failed");
  double shm_s = 0, base_s = 0;
  for (auto _ : state) {
    if (!base.WriteLine("call") || !base.ReadLine(&line, kChildTimeout) ||
        line.rfind("s=", 0) != 0) {
      state.SkipWithError(("in-process convolution child failed; see " + log).c_str());
      break;
    }
    base_s += std::stod(line.substr(2));
    const auto t0 = Clock::now();
    const bool ok = call();
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (!ok) {
      state.SkipWithError("cudnnConvolutionForward failed");
      break;
    }
    shm_s += t;
    state.SetIterationTime(t);
  }
  float corner = 0;
  (void)cudaMemcpy(&corner, y, sizeof corner, cudaMemcpyDeviceToHost);
  cudaFree(x), cudaFree(w), cudaFree(y);
  base.CloseStdin();
  if (base.Wait() != 0 && !state.error_occurred())
    state.SkipWithError(("in-process convolution child failed at exit; see " + log).c_str());
  if (state.error_occurred()) return;
  // All ones with padding 1: the corner output sums a 2x2 window over every channel.
  if (corner != static_cast<float>(s.c * 4))
    return state.SkipWithError("the convolution computed a wrong result");
  const double flops = s.Flops() * static_cast<double>(state.iterations());
  state.counters["gflops"] = shm_s > 0 ? flops / shm_s / 1e9 : 0;
  state.counters["base_gflops"] = base_s > 0 ? flops / base_s / 1e9 : 0;
  state.counters["ratio"] = shm_s > 0 ? base_s / shm_s : 0;
}
BENCHMARK(BM_RemoteConv)->UseManualTime()->Iterations(6)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
