// bench/e2e/emu_blas.cc - the library baseline: SGEMM on the emulated GPU's cuBLAS, in-process.
//
// Runs in a child process (this binary with --e2e_child=emu_sgemm N) so the emulator
// never shares a process with the stub: dlopen the emulated libcublas.so.13 beside
// the emulated libcuda.so.1 (which it loads), cuInit, retain and make current the
// primary context, allocate three N x N matrices, cublasCreate, one warm-up call;
// prints "ready", then for each line read from stdin runs cublasSgemm + cuCtxSynchronize
// and prints "s=<seconds>", until EOF.
#include "bench/e2e/children.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

template <typename F>
bool Sym(void* lib, const char* name, F** out) {
  *out = reinterpret_cast<F*>(dlsym(lib, name));
  if (*out == nullptr) std::fprintf(stderr, "emu_sgemm: %s missing\n", name);
  return *out != nullptr;
}

}  // namespace

int RunEmuSgemmChild(int n) {
  std::string dir = Paths::EmuDriver();
  dir = dir.substr(0, dir.rfind('/'));
  void* cuda = dlopen((dir + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
  void* blas = cuda ? dlopen((dir + "/libcublas.so.13").c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
  if (blas == nullptr) {
    std::fprintf(stderr, "emu_sgemm: dlopen: %s\n", dlerror());
    return 1;
  }
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) get;
  decltype(&cuDevicePrimaryCtxRetain) retain;
  decltype(&cuCtxSetCurrent) set;
  decltype(&cuMemAlloc_v2) alloc;
  decltype(&cuMemsetD32_v2) memset;
  decltype(&cuCtxSynchronize) sync;
  decltype(&cublasCreate_v2) create;
  decltype(&cublasSgemm_v2) sgemm;
  if (!Sym(cuda, "cuInit", &init) || !Sym(cuda, "cuDeviceGet", &get) ||
      !Sym(cuda, "cuDevicePrimaryCtxRetain", &retain) || !Sym(cuda, "cuCtxSetCurrent", &set) ||
      !Sym(cuda, "cuMemAlloc_v2", &alloc) || !Sym(cuda, "cuMemsetD32_v2", &memset) ||
      !Sym(cuda, "cuCtxSynchronize", &sync) || !Sym(blas, "cublasCreate_v2", &create) ||
      !Sym(blas, "cublasSgemm_v2", &sgemm))
    return 1;
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr m[3];
  const size_t bytes = size_t(n) * n * sizeof(float);
  if (init(0) || get(&dev, 0) || retain(&ctx, dev) || set(ctx)) return 1;
  for (CUdeviceptr& p : m)
    if (alloc(&p, bytes) || memset(p, 0x3f800000u, size_t(n) * n)) return 1;  // 1.0f
  cublasHandle_t h;
  if (create(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  const float alpha = 1, beta = 0;
  auto run = [&] {
    auto* a = reinterpret_cast<const float*>(m[0]);
    auto* b = reinterpret_cast<const float*>(m[1]);
    auto* c = reinterpret_cast<float*>(m[2]);
    return sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta, c, n) ==
               CUBLAS_STATUS_SUCCESS &&
           sync() == CUDA_SUCCESS;
  };
  if (!run()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof line, stdin)) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!run()) return 1;
    std::printf("s=%.9f\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace remora::bench::e2e
