// bench/e2e/emu_launch.cc - the launch baseline: the empty kernel on the emulated driver,
// in-process.
//
// Runs in a child process (this binary with --e2e_child=emu_launch) so the
// emulator's threads never share a process with the stub: dlopen the emulated
// libcuda.so.1, cuInit, retain the primary context, cuModuleLoadData the
// kernel's PTX, then per batch cuLaunchKernel x N + cuCtxSynchronize, after one
// warm-up batch. With batches > 0, runs them and prints launches_per_s (median)
// and best_launches_per_s. With batches == 0, prints "ready", then runs one batch
// per line read from stdin and prints "s=<seconds>" for each, until EOF: the
// parent interleaves these with its own batches.
#include "bench/e2e/children.h"

#include <cuda.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/e2e/server.h"

namespace remora::bench::e2e {
namespace {

struct Driver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuCtxSynchronize)();
};

template <typename F>
bool Load(void* lib, const char* name, F** out) {
  *out = reinterpret_cast<F*>(dlsym(lib, name));
  if (*out == nullptr) std::fprintf(stderr, "emu_launch: %s missing\n", name);
  return *out != nullptr;
}

int Fail(const char* what, CUresult r) {
  std::printf("error=%d\n", static_cast<int>(r));
  std::fprintf(stderr, "emu_launch: %s failed: %d\n", what, static_cast<int>(r));
  return 1;
}

}  // namespace

int RunEmuLaunchChild(int launches, int batches) {
  void* lib = dlopen(Paths::EmuDriver(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "emu_launch: dlopen: %s\n", dlerror());
    return 1;
  }
  Driver d{};
  if (!Load(lib, "cuInit", &d.cuInit) || !Load(lib, "cuDeviceGet", &d.cuDeviceGet) ||
      !Load(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain) ||
      !Load(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent) ||
      !Load(lib, "cuModuleLoadData", &d.cuModuleLoadData) ||
      !Load(lib, "cuModuleGetFunction", &d.cuModuleGetFunction) ||
      !Load(lib, "cuLaunchKernel", &d.cuLaunchKernel) ||
      !Load(lib, "cuCtxSynchronize", &d.cuCtxSynchronize))
    return 1;
  std::string ptx = ReadFile(Paths::KernelPtx());
  if (ptx.empty()) {
    std::fprintf(stderr, "emu_launch: cannot read %s\n", Paths::KernelPtx());
    return 1;
  }
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  if (CUresult r = d.cuInit(0)) return Fail("cuInit", r);
  if (CUresult r = d.cuDeviceGet(&dev, 0)) return Fail("cuDeviceGet", r);
  if (CUresult r = d.cuDevicePrimaryCtxRetain(&ctx, dev))
    return Fail("cuDevicePrimaryCtxRetain", r);
  if (CUresult r = d.cuCtxSetCurrent(ctx)) return Fail("cuCtxSetCurrent", r);
  if (CUresult r = d.cuModuleLoadData(&mod, ptx.c_str())) return Fail("cuModuleLoadData", r);
  if (CUresult r = d.cuModuleGetFunction(&fn, mod, "remora_e2e_empty"))
    return Fail("cuModuleGetFunction", r);

  auto batch = [&]() -> CUresult {
    for (int i = 0; i < launches; ++i) {
      if (CUresult r = d.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr))
        return r;
    }
    return d.cuCtxSynchronize();
  };
  if (CUresult r = batch()) return Fail("warm-up batch", r);
  if (batches == 0) {
    std::printf("ready\n");
    std::fflush(stdout);
    char line[64];
    while (std::fgets(line, sizeof line, stdin) != nullptr) {
      const auto t0 = Clock::now();
      if (CUresult r = batch()) return Fail("batch", r);
      std::printf("s=%.9f\n", std::chrono::duration<double>(Clock::now() - t0).count());
      std::fflush(stdout);
    }
    return 0;
  }
  std::vector<double> rates;
  for (int b = 0; b < batches; ++b) {
    const auto t0 = Clock::now();
    if (CUresult r = batch()) return Fail("batch", r);
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    rates.push_back(s > 0 ? launches / s : 0);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("launches_per_s=%.1f best_launches_per_s=%.1f batches=%d\n", rates[rates.size() / 2],
              rates.back(), batches);
  return 0;
}

}  // namespace remora::bench::e2e
