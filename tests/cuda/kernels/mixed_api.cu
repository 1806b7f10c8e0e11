// tests/cuda/kernels/mixed_api.cu - the runtime and the driver API in one program, as
// frameworks mix them (PyTorch, Triton): the runtime sets the device up and allocates; a
// module is loaded at run time through the driver API into the runtime's context (current on
// this thread once the runtime has run, with no cuInit or context call of the program's own)
// and launched on a runtime stream; results checked against the CPU on random data.
//
// Usage: mixed_api [FATBIN]   (driver_kernels.cu built with nvcc -fatbin; by default the copy
// linked into the program)
#include <cuda.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "common.h"
#include "driver_kernels_files.h"

#define CU_CHECK(call)                                                                        \
  do {                                                                                        \
    CUresult r_ = (call);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                                 \
      std::printf("FAIL: %s:%d %s -> %d\n", __FILE__, __LINE__, #call, static_cast<int>(r_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

int main(int argc, char** argv) {
  if (argc > 2) {
    std::printf("FAIL: usage: mixed_api [FATBIN]\n");
    return 2;
  }
  const DriverKernelFiles files = DriverKernelPaths(argc, argv);
  std::ifstream in(files.fatbin, std::ios::binary);
  const std::string fatbin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(!fatbin.empty());

  CHECK(cudaFree(nullptr));  // the runtime's context, current on this thread
  CUcontext ctx = nullptr;
  CU_CHECK(cuCtxGetCurrent(&ctx));
  REQUIRE(ctx != nullptr);

  const int n = 4096;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(n), y(n), want(n), got(n);
  const float a = 1.5f;
  for (int i = 0; i < n; ++i) {
    x[i] = dist(rng);
    y[i] = dist(rng);
    want[i] = a * x[i] + y[i];
  }
  float *dx = nullptr, *dy = nullptr;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  CUmodule mod = nullptr;
  CU_CHECK(cuModuleLoadData(&mod, fatbin.data()));
  CUfunction saxpy = nullptr;
  CU_CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
  cudaStream_t s = nullptr;
  CHECK(cudaStreamCreate(&s));
  int nn = n;
  float aa = a;
  CUdeviceptr px = reinterpret_cast<CUdeviceptr>(dx), py = reinterpret_cast<CUdeviceptr>(dy);
  void* params[] = {&nn, &aa, &px, &py};
  CU_CHECK(cuLaunchKernel(saxpy, 8, 1, 1, 128, 1, 1, 0, s, params, nullptr));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(got.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (std::fabs(got[i] - want[i]) > 1e-5f) {
      std::printf("FAIL: y[%d] = %f, expected %f\n", i, got[i], want[i]);
      return 1;
    }
  // Driver entry points handed out by the runtime, as PyTorch takes them.
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  CHECK(cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, CUDART_VERSION, cudaEnableDefault,
                                         &found));
  REQUIRE(found == cudaDriverEntryPointSuccess && fn != nullptr);
  CUdeviceptr extra = 0;
  CU_CHECK(reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(fn)(&extra, 1 << 20));
  CU_CHECK(cuMemsetD8(extra, 0x5a, 1 << 20));
  unsigned char back = 0;
  CHECK(cudaMemcpy(&back, reinterpret_cast<void*>(extra + 12345), 1, cudaMemcpyDeviceToHost));
  REQUIRE(back == 0x5a);
  CU_CHECK(cuMemFree(extra));
  fn = reinterpret_cast<void*>(1);
  CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchEntryPoint", &fn, CUDART_VERSION,
                                         cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSymbolNotFound && fn == nullptr);

  // The driver finds the runtime's allocations, managed memory among them (a public tool asks
  // cuMemGetAddressRange for a managed buffer's size).
  {
    void* managed = nullptr;
    CHECK(cudaMallocManaged(&managed, 1 << 20));
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_CHECK(cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(managed) + 4000));
    REQUIRE(base == reinterpret_cast<CUdeviceptr>(managed) && size >= (1u << 20));
    CU_CHECK(cuMemGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(dx)));
    REQUIRE(base == reinterpret_cast<CUdeviceptr>(dx));
    CHECK(cudaFree(managed));
  }

  CU_CHECK(cuModuleUnload(mod));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  std::printf("PASS\n");
  return 0;
}
