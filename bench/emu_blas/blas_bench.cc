// bench/emu_blas/blas_bench.cc - SGEMM through the emulated libcublas.so.13 vs
// cblas_sgemm on the very same matrices, measured alternately in one run.
//
// Each iteration runs cublasSgemm on a created stream + cuStreamSynchronize
// (the timed figure), then cblas_sgemm on the same buffers (device pointers
// are host addresses in the emulator). Counters: emu_gflops, openblas_gflops,
// ratio = emulated throughput / OpenBLAS throughput (1.0: no overhead).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

namespace {

#define BENCH_STR_INNER(x) #x
#define BENCH_STR(x) BENCH_STR_INNER(x)

// The export `name` (as cuda.h / cublas_v2.h spell it) of `lib`, typed.
#define SYM(lib, name) reinterpret_cast<decltype(&::name)>(dlsym(lib, BENCH_STR(name)))

struct Emu {
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) cuCtxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) cuMemAlloc = nullptr;
  decltype(&::cuMemcpyHtoD) cuMemcpyHtoD = nullptr;
  decltype(&::cuMemFree) cuMemFree = nullptr;
  decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
  decltype(&::cuStreamSynchronize) cuStreamSynchronize = nullptr;
  decltype(&::cublasCreate) cublasCreate = nullptr;
  decltype(&::cublasSetStream) cublasSetStream = nullptr;
  decltype(&::cublasSgemm) cublasSgemm = nullptr;
  CUstream stream = nullptr;
  cublasHandle_t handle = nullptr;
  std::string error;
};

// Loads the libraries and sets up a context, a stream and a handle once.
const Emu& Setup() {
  static const Emu emu = [] {
    Emu e;
    void* blas = dlopen(REMORA_EMU_BLAS_LIB, RTLD_NOW | RTLD_LOCAL);
    void* cuda = blas != nullptr ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (cuda == nullptr) {
      const char* err = dlerror();
      e.error = err != nullptr ? err : "dlopen failed";
      return e;
    }
    e.cuInit = SYM(cuda, cuInit);
    e.cuDevicePrimaryCtxRetain = SYM(cuda, cuDevicePrimaryCtxRetain);
    e.cuCtxSetCurrent = SYM(cuda, cuCtxSetCurrent);
    e.cuMemAlloc = SYM(cuda, cuMemAlloc);
    e.cuMemcpyHtoD = SYM(cuda, cuMemcpyHtoD);
    e.cuMemFree = SYM(cuda, cuMemFree);
    e.cuStreamCreate = SYM(cuda, cuStreamCreate);
    e.cuStreamSynchronize = SYM(cuda, cuStreamSynchronize);
    e.cublasCreate = SYM(blas, cublasCreate);
    e.cublasSetStream = SYM(blas, cublasSetStream);
    e.cublasSgemm = SYM(blas, cublasSgemm);
    CUcontext ctx = nullptr;
    if (e.cuInit(0) != CUDA_SUCCESS || e.cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        e.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || e.cuStreamCreate(&e.stream, 0) != CUDA_SUCCESS ||
        e.cublasCreate(&e.handle) != CUBLAS_STATUS_SUCCESS ||
        e.cublasSetStream(e.handle, reinterpret_cast<cudaStream_t>(e.stream)) !=
            CUBLAS_STATUS_SUCCESS) {
      e.error = "emulated context, stream or cuBLAS handle setup failed";
    }
    return e;
  }();
  return emu;
}

void BM_Sgemm(benchmark::State& state) {
  const Emu& emu = Setup();
  if (!emu.error.empty()) {
    state.SkipWithError(emu.error.c_str());
    return;
  }
  // The calling thread needs the context current (Setup ran on some thread).
  CUcontext ctx = nullptr;
  emu.cuDevicePrimaryCtxRetain(&ctx, 0);
  emu.cuCtxSetCurrent(ctx);
  const int n = static_cast<int>(state.range(0));
  const size_t count = static_cast<size_t>(n) * n;
  std::vector<float> host(count);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& v : host) v = dist(rng);
  CUdeviceptr a = 0, b = 0, c = 0;
  if (emu.cuMemAlloc(&a, count * 4) != CUDA_SUCCESS ||
      emu.cuMemAlloc(&b, count * 4) != CUDA_SUCCESS ||
      emu.cuMemAlloc(&c, count * 4) != CUDA_SUCCESS ||
      emu.cuMemcpyHtoD(a, host.data(), count * 4) != CUDA_SUCCESS ||
      emu.cuMemcpyHtoD(b, host.data(), count * 4) != CUDA_SUCCESS) {
    state.SkipWithError("device allocation failed");
    return;
  }
  auto* A = reinterpret_cast<float*>(a);
  auto* B = reinterpret_cast<float*>(b);
  auto* C = reinterpret_cast<float*>(c);
  const float alpha = 1.0f, beta = 0.0f;
  using Clock = std::chrono::steady_clock;
  double emu_s = 0, native_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    if (emu.cublasSgemm(emu.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, A, n, B, n, &beta, C,
                        n) != CUBLAS_STATUS_SUCCESS ||
        emu.cuStreamSynchronize(emu.stream) != CUDA_SUCCESS) {
      state.SkipWithError("cublasSgemm failed");
      return;
    }
    const auto t1 = Clock::now();
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, alpha, A, n, B, n, beta, C, n);
    const auto t2 = Clock::now();
    benchmark::DoNotOptimize(C[0]);
    const double e = std::chrono::duration<double>(t1 - t0).count();
    emu_s += e;
    native_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(e);
  }
  emu.cuMemFree(a);
  emu.cuMemFree(b);
  emu.cuMemFree(c);
  const double flops = 2.0 * n * n * n * static_cast<double>(state.iterations());
  state.counters["emu_gflops"] = flops / emu_s / 1e9;
  state.counters["openblas_gflops"] = flops / native_s / 1e9;
  state.counters["ratio"] = native_s / emu_s;
}
BENCHMARK(BM_Sgemm)->Arg(64)->Arg(256)->Arg(1024)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
