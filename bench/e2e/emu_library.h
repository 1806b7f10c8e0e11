// bench/e2e/emu_library.h - an emulated GPU library in-process, for the library baselines.
//
// Loads the emulated libcuda.so.1 and a library beside it (libcublas.so.13,
// libcudnn.so.9), makes the primary context current and offers what the
// baselines need of the driver: allocate, fill, synchronize.
//
//   EmuLibrary emu("emu_sgemm");
//   if (!emu.Open("libcublas.so.13")) return 1;
//   decltype(&cublasSgemm_v2) sgemm;
//   if (!emu.Sym("cublasSgemm_v2", &sgemm)) return 1;
#pragma once

#include <cuda.h>
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {

class EmuLibrary {
 public:
  explicit EmuLibrary(const char* who) : who_(who) {}

  // Loads the driver and `soname` beside it; cuInit; the primary context current.
  bool Open(const char* soname) {
    std::string dir = Paths::EmuDriver();
    dir = dir.substr(0, dir.rfind('/'));
    cuda_ = dlopen((dir + "/libcuda.so.1").c_str(), RTLD_NOW | RTLD_LOCAL);
    lib_ = cuda_ ? dlopen((dir + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (lib_ == nullptr) {
      std::fprintf(stderr, "%s: dlopen: %s\n", who_, dlerror());
      return false;
    }
    decltype(&cuInit) init;
    decltype(&cuDeviceGet) get;
    decltype(&cuDevicePrimaryCtxRetain) retain;
    decltype(&cuCtxSetCurrent) set;
    CUdevice dev;
    CUcontext ctx;
    return DriverSym("cuInit", &init) && DriverSym("cuDeviceGet", &get) &&
           DriverSym("cuDevicePrimaryCtxRetain", &retain) && DriverSym("cuCtxSetCurrent", &set) &&
           DriverSym("cuMemAlloc_v2", &alloc_) && DriverSym("cuMemsetD32_v2", &memset_) &&
           DriverSym("cuCtxSynchronize", &sync_) && init(0) == CUDA_SUCCESS &&
           get(&dev, 0) == CUDA_SUCCESS && retain(&ctx, dev) == CUDA_SUCCESS &&
           set(ctx) == CUDA_SUCCESS;
  }
  // `name` of the library. False (and a line on stderr) if it is missing.
  template <typename F>
  bool Sym(const char* name, F** out) {
    return Find(lib_, name, out);
  }
  // Device memory of `bytes` filled with 1.0f; 0 on failure.
  CUdeviceptr Ones(size_t bytes) {
    CUdeviceptr p = 0;
    if (alloc_(&p, bytes) != CUDA_SUCCESS || memset_(p, 0x3f800000u, bytes / 4) != CUDA_SUCCESS)
      return 0;
    return p;
  }
  bool Sync() { return sync_() == CUDA_SUCCESS; }

 private:
  template <typename F>
  bool DriverSym(const char* name, F** out) {
    return Find(cuda_, name, out);
  }
  template <typename F>
  bool Find(void* lib, const char* name, F** out) {
    *out = reinterpret_cast<F*>(dlsym(lib, name));
    if (*out == nullptr) std::fprintf(stderr, "%s: %s missing\n", who_, name);
    return *out != nullptr;
  }

  const char* who_;
  void* cuda_ = nullptr;
  void* lib_ = nullptr;
  decltype(&cuMemAlloc_v2) alloc_ = nullptr;
  decltype(&cuMemsetD32_v2) memset_ = nullptr;
  decltype(&cuCtxSynchronize) sync_ = nullptr;
};

// Serves the parent's baseline: prints "ready", then runs `call` once per line read
// from stdin and prints "s=<seconds>" for each, until EOF. Returns the exit code.
template <typename Call>
int ServeBaseline(Call call) {
  if (!call()) return 1;  // warm-up
  std::printf("ready\n");
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof line, stdin)) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!call()) return 1;
    std::printf("s=%.9f\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace remora::bench::e2e
