// tests/cuda/kernels/link.cpp - the driver's linker at run time, as JIT compilers use it: a
// kernel and the device function it calls, compiled apart (-rdc: rdc_link_*.cu), linked with
// cuLinkCreate, cuLinkAddData and cuLinkAddFile, loaded from cuLinkComplete's image (and from a
// copy of it) and run on random data against a CPU reference. A link missing the function fails, at
// cuLinkComplete on NVIDIA's driver or when the image is loaded under Remora.
// Usage: link KERNEL_PTX KERNEL_FATBIN LIBRARY_PTX
#include <cuda.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common.h"
#include "cu_check.h"

namespace {

std::string ReadFile(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::printf("FAIL: cannot read %s\n", path);
    std::exit(1);
  }
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs `apply` of `mod` over n random values; returns the mismatches.
int Run(CUmodule mod, unsigned seed) {
  CUfunction fn;
  CU_CHECK(cuModuleGetFunction(&fn, mod, "apply"));
  const int n = 5000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = float((seed = seed * 1664525u + 1013904223u) >> 8) / 65536.0f;
  CUdeviceptr dx, dy;
  CU_CHECK(cuMemAlloc(&dx, n * sizeof(float)));
  CU_CHECK(cuMemAlloc(&dy, n * sizeof(float)));
  CU_CHECK(cuMemcpyHtoD(dx, x.data(), n * sizeof(float)));
  float a = 1.5f, b = -3.25f;
  int count = n;
  void* args[] = {&dx, &dy, &a, &b, &count};
  CU_CHECK(cuLaunchKernel(fn, (n + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr));
  CU_CHECK(cuMemcpyDtoH(y.data(), dy, n * sizeof(float)));
  CU_CHECK(cuMemFree(dx));
  CU_CHECK(cuMemFree(dy));
  int bad = 0;
  for (int i = 0; i < n; ++i)
    // The device may fuse the multiply and add (nvcc's default): one rounding either way.
    if (std::fabs(y[i] - (a * x[i] + b)) > 1e-6f * std::fabs(a * x[i] + b) + 1e-6f && bad++ < 5)
      std::printf("apply[%d] = %g, want %g\n", i, y[i], a * x[i] + b);
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::printf("FAIL: usage: link KERNEL_PTX KERNEL_FATBIN LIBRARY_PTX\n");
    return 1;
  }
  std::string kernel_ptx = ReadFile(argv[1]);
  CU_CHECK(cuInit(0));
  CUdevice dev;
  CU_CHECK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CU_CHECK(cuCtxSetCurrent(ctx));
  int bad = 0;

  // PTX from memory and from a file, with the log buffers and wall time JIT compilers ask for:
  // written by cuLinkComplete, each log NUL-terminated within its buffer.
  char log[1024] = {};
  char info[1024];
  std::memset(info, 'x', sizeof info);
  CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                         CU_JIT_WALL_TIME};
  void* vals[] = {log, reinterpret_cast<void*>(sizeof log), info,
                  reinterpret_cast<void*>(sizeof info), reinterpret_cast<void*>(~uintptr_t{0})};
  CUlinkState link;
  CU_CHECK(cuLinkCreate(5, opts, vals, &link));
  CU_CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, kernel_ptx.data(), kernel_ptx.size() + 1, "kernel",
                         0, nullptr, nullptr));
  CU_CHECK(cuLinkAddFile(link, CU_JIT_INPUT_PTX, argv[3], 0, nullptr, nullptr));
  void* image = nullptr;
  size_t size = 0;
  CU_CHECK(cuLinkComplete(link, &image, &size));
  REQUIRE(image != nullptr && size > 0);
  float wall = -1;
  std::memcpy(&wall, &vals[4], sizeof wall);
  REQUIRE(std::isfinite(wall) && wall >= 0);
  REQUIRE(std::memchr(info, '\0', sizeof info) != nullptr);
  REQUIRE(reinterpret_cast<uintptr_t>(vals[3]) < sizeof info);
  CUmodule mod;
  CU_CHECK(cuModuleLoadData(&mod, image));
  // A copy of the image, loaded after the link state is gone.
  std::vector<char> copy(static_cast<char*>(image), static_cast<char*>(image) + size);
  CU_CHECK(cuLinkDestroy(link));
  bad += Run(mod, 7);
  CU_CHECK(cuModuleUnload(mod));
  CU_CHECK(cuModuleLoadData(&mod, copy.data()));
  bad += Run(mod, 8);
  CU_CHECK(cuModuleUnload(mod));

  // The kernel from a fat binary file, the function from PTX.
  CU_CHECK(cuLinkCreate(0, nullptr, nullptr, &link));
  CU_CHECK(cuLinkAddFile(link, CU_JIT_INPUT_FATBINARY, argv[2], 0, nullptr, nullptr));
  CU_CHECK(cuLinkAddFile(link, CU_JIT_INPUT_PTX, argv[3], 0, nullptr, nullptr));
  CU_CHECK(cuLinkComplete(link, &image, &size));
  CU_CHECK(cuModuleLoadData(&mod, image));
  CU_CHECK(cuLinkDestroy(link));
  bad += Run(mod, 9);
  CU_CHECK(cuModuleUnload(mod));

  // The kernel alone: `axpb` is unresolved, so no module comes of it.
  CU_CHECK(cuLinkCreate(0, nullptr, nullptr, &link));
  CU_CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, kernel_ptx.data(), kernel_ptx.size() + 1, "kernel",
                         0, nullptr, nullptr));
  CUresult r = cuLinkComplete(link, &image, &size);
  if (r == CUDA_SUCCESS) r = cuModuleLoadData(&mod, image);
  REQUIRE(r != CUDA_SUCCESS);
  CU_CHECK(cuLinkDestroy(link));

  // PTX that does not compile: the error log says why, naming the line (as ptxas's
  // "ptx input, line 4; error" does).
  std::memset(log, 'x', sizeof log);
  void* load_vals[] = {log, reinterpret_cast<void*>(sizeof log)};
  const char broken[] = ".version 8.0\n.target sm_75\n.address_size 64\n.entry k() { bogus; }\n";
  r = cuModuleLoadDataEx(&mod, broken, 2, opts, load_vals);
  REQUIRE(r != CUDA_SUCCESS);
  REQUIRE(std::memchr(log, '\0', sizeof log) != nullptr && log[0] != '\0');
  REQUIRE(std::strstr(log, "line 4") != nullptr);
  std::printf("error log: %s\n", log);

  CU_CHECK(cuDevicePrimaryCtxRelease(dev));
  if (bad) {
    std::printf("FAIL link: %d mismatches\n", bad);
    return 1;
  }
  std::printf("PASS link\n");
  return 0;
}
