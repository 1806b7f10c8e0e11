// bench/emu_dnn/dnn_bench.cc - a 3x3 convolution forward through the emulated
// libcudnn.so.9 vs the same oneDNN convolution called directly on the very
// same buffers, measured alternately in one run.
//
// Each iteration runs cudnnConvolutionForward (x 32x64x56x56 float NCHW, 64
// filters 3x3, pad 1) on a created stream + cuStreamSynchronize (the timed
// figure), then the oneDNN primitive on the same buffers (device pointers are
// host addresses in the emulator). Counters: emu_gflops, onednn_gflops,
// ratio = emulated throughput / oneDNN throughput (1.0: no overhead).
#include <benchmark/benchmark.h>
#include <cuda.h>
#include <cudnn.h>
#include <dlfcn.h>

#include <chrono>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

namespace {

#define BENCH_STR_INNER(x) #x
#define BENCH_STR(x) BENCH_STR_INNER(x)

// The export `name` (as cuda.h / cudnn.h spell it) of `lib`, typed.
#define SYM(lib, name) reinterpret_cast<decltype(&::name)>(dlsym(lib, BENCH_STR(name)))

struct Emu {
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) cuDevicePrimaryCtxRetain = nullptr;
  decltype(&::cuCtxSetCurrent) cuCtxSetCurrent = nullptr;
  decltype(&::cuMemAlloc) cuMemAlloc = nullptr;
  decltype(&::cuMemFree) cuMemFree = nullptr;
  decltype(&::cuStreamCreate) cuStreamCreate = nullptr;
  decltype(&::cuStreamSynchronize) cuStreamSynchronize = nullptr;
  decltype(&::cudnnCreate) cudnnCreate = nullptr;
  decltype(&::cudnnSetStream) cudnnSetStream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) cudnnCreateTensorDescriptor = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) cudnnSetTensorNdDescriptor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) cudnnCreateFilterDescriptor = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) cudnnSetFilterNdDescriptor = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) cudnnCreateConvolutionDescriptor = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) cudnnSetConvolutionNdDescriptor = nullptr;
  decltype(&::cudnnConvolutionForward) cudnnConvolutionForward = nullptr;
  CUstream stream = nullptr;
  cudnnHandle_t handle = nullptr;
  std::string error;
};

// Loads the libraries and sets up a context, a stream and a handle once.
const Emu& Setup() {
  static const Emu emu = [] {
    Emu e;
    void* dnn = dlopen(REMORA_EMU_DNN_LIB, RTLD_NOW | RTLD_LOCAL);
    void* cuda = dnn != nullptr ? dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) : nullptr;
    if (cuda == nullptr) {
      const char* err = dlerror();
      e.error = err != nullptr ? err : "dlopen failed";
      return e;
    }
    e.cuInit = SYM(cuda, cuInit);
    e.cuDevicePrimaryCtxRetain = SYM(cuda, cuDevicePrimaryCtxRetain);
    e.cuCtxSetCurrent = SYM(cuda, cuCtxSetCurrent);
    e.cuMemAlloc = SYM(cuda, cuMemAlloc);
    e.cuMemFree = SYM(cuda, cuMemFree);
    e.cuStreamCreate = SYM(cuda, cuStreamCreate);
    e.cuStreamSynchronize = SYM(cuda, cuStreamSynchronize);
    e.cudnnCreate = SYM(dnn, cudnnCreate);
    e.cudnnSetStream = SYM(dnn, cudnnSetStream);
    e.cudnnCreateTensorDescriptor = SYM(dnn, cudnnCreateTensorDescriptor);
    e.cudnnSetTensorNdDescriptor = SYM(dnn, cudnnSetTensorNdDescriptor);
    e.cudnnCreateFilterDescriptor = SYM(dnn, cudnnCreateFilterDescriptor);
    e.cudnnSetFilterNdDescriptor = SYM(dnn, cudnnSetFilterNdDescriptor);
    e.cudnnCreateConvolutionDescriptor = SYM(dnn, cudnnCreateConvolutionDescriptor);
    e.cudnnSetConvolutionNdDescriptor = SYM(dnn, cudnnSetConvolutionNdDescriptor);
    e.cudnnConvolutionForward = SYM(dnn, cudnnConvolutionForward);
    CUcontext ctx = nullptr;
    if (e.cuInit(0) != CUDA_SUCCESS || e.cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        e.cuCtxSetCurrent(ctx) != CUDA_SUCCESS || e.cuStreamCreate(&e.stream, 0) != CUDA_SUCCESS ||
        e.cudnnCreate(&e.handle) != CUDNN_STATUS_SUCCESS ||
        e.cudnnSetStream(e.handle, reinterpret_cast<cudaStream_t>(e.stream)) !=
            CUDNN_STATUS_SUCCESS) {
      e.error = "emulated context, stream or cuDNN handle setup failed";
    }
    return e;
  }();
  return emu;
}

void BM_Conv3x3(benchmark::State& state) {
  const Emu& emu = Setup();
  if (!emu.error.empty()) {
    state.SkipWithError(emu.error.c_str());
    return;
  }
  CUcontext ctx = nullptr;
  emu.cuDevicePrimaryCtxRetain(&ctx, 0);
  emu.cuCtxSetCurrent(ctx);
  const int N = 32, C = 64, K = 64, H = 56, W = 56;
  const int xd[4] = {N, C, H, W}, xs[4] = {C * H * W, H * W, W, 1};
  const int wd[4] = {K, C, 3, 3};
  const int yd[4] = {N, K, H, W}, ys[4] = {K * H * W, H * W, W, 1};
  const size_t xn = size_t{N} * C * H * W, wn = size_t{K} * C * 9, yn = size_t{N} * K * H * W;
  CUdeviceptr x = 0, w = 0, y = 0;
  if (emu.cuMemAlloc(&x, xn * 4) != CUDA_SUCCESS || emu.cuMemAlloc(&w, wn * 4) != CUDA_SUCCESS ||
      emu.cuMemAlloc(&y, yn * 4) != CUDA_SUCCESS) {
    state.SkipWithError("device allocation failed");
    return;
  }
  auto* X = reinterpret_cast<float*>(x);
  auto* Wt = reinterpret_cast<float*>(w);
  auto* Y = reinterpret_cast<float*>(y);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (size_t i = 0; i < xn; ++i) X[i] = dist(rng);
  for (size_t i = 0; i < wn; ++i) Wt[i] = dist(rng);

  cudnnTensorDescriptor_t xdesc = nullptr, ydesc = nullptr;
  cudnnFilterDescriptor_t wdesc = nullptr;
  cudnnConvolutionDescriptor_t cdesc = nullptr;
  const int pad[2] = {1, 1}, one[2] = {1, 1};
  if (emu.cudnnCreateTensorDescriptor(&xdesc) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnSetTensorNdDescriptor(xdesc, CUDNN_DATA_FLOAT, 4, xd, xs) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnCreateTensorDescriptor(&ydesc) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnSetTensorNdDescriptor(ydesc, CUDNN_DATA_FLOAT, 4, yd, ys) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnCreateFilterDescriptor(&wdesc) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnSetFilterNdDescriptor(wdesc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, wd) !=
          CUDNN_STATUS_SUCCESS ||
      emu.cudnnCreateConvolutionDescriptor(&cdesc) != CUDNN_STATUS_SUCCESS ||
      emu.cudnnSetConvolutionNdDescriptor(cdesc, 2, pad, one, one, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT) != CUDNN_STATUS_SUCCESS) {
    state.SkipWithError("descriptor setup failed");
    return;
  }

  // The same convolution on oneDNN directly: plain NCHW/OIHW, the same buffers.
  using dnnl::memory;
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  const memory::desc xm({N, C, H, W}, memory::data_type::f32, memory::format_tag::nchw);
  const memory::desc wm({K, C, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  const memory::desc ym({N, K, H, W}, memory::data_type::f32, memory::format_tag::nchw);
  const dnnl::convolution_forward::desc cd(dnnl::prop_kind::forward_training,
                                           dnnl::algorithm::convolution_direct, xm, wm, ym, {1, 1},
                                           {0, 0}, {1, 1}, {1, 1});
  const dnnl::convolution_forward conv(dnnl::convolution_forward::primitive_desc(cd, eng));
  const memory xmem(xm, eng, X), wmem(wm, eng, Wt), ymem(ym, eng, Y);
  dnnl::stream strm(eng);

  const float alpha = 1.0f, beta = 0.0f;
  using Clock = std::chrono::steady_clock;
  double emu_s = 0, native_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    if (emu.cudnnConvolutionForward(emu.handle, &alpha, xdesc, X, wdesc, Wt, cdesc,
                                    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, nullptr, 0,
                                    &beta, ydesc, Y) != CUDNN_STATUS_SUCCESS ||
        emu.cuStreamSynchronize(emu.stream) != CUDA_SUCCESS) {
      state.SkipWithError("cudnnConvolutionForward failed");
      return;
    }
    const auto t1 = Clock::now();
    conv.execute(strm, {{DNNL_ARG_SRC, xmem}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, ymem}});
    strm.wait();
    const auto t2 = Clock::now();
    benchmark::DoNotOptimize(Y[0]);
    const double e = std::chrono::duration<double>(t1 - t0).count();
    emu_s += e;
    native_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(e);
  }
  emu.cuMemFree(x);
  emu.cuMemFree(w);
  emu.cuMemFree(y);
  const double flops = 2.0 * N * K * H * W * C * 9 * static_cast<double>(state.iterations());
  state.counters["emu_gflops"] = flops / emu_s / 1e9;
  state.counters["onednn_gflops"] = flops / native_s / 1e9;
  state.counters["ratio"] = native_s / emu_s;
}
BENCHMARK(BM_Conv3x3)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
