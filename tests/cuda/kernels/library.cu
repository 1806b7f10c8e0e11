// tests/cuda/kernels/library.cu - the runtime's cudaLibrary* API: kernels loaded at run time
// from a fat binary file and from PTX text, launched with cudaLaunchKernel and in a graph, and
// a __device__ variable found by name; then, with the PTX text freed, the kernels of both
// libraries launched again after cudaDeviceReset. Against host references on random data.
// Usage: library [FATBIN [PTX]] (driver_kernels.cu built with -fatbin and -ptx; by default the
// copies linked into the program).
#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common.h"
#include "driver_kernels_files.h"

int main(int argc, char** argv) {
  if (argc > 3) {
    std::printf("FAIL: usage: library [FATBIN [PTX]]\n");
    return 1;
  }
  const DriverKernelFiles files = DriverKernelPaths(argc, argv);
  const int n = 3000;
  Rng rng(11);
  std::vector<float> x(n), y(n), want(n), out(n);
  for (float& v : x) v = rng.Uniform(-3, 3);
  for (float& v : y) v = rng.Uniform(-3, 3);
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  int failures = 0;

  // From the fat binary file: y = 2x + y, then y += offset_by (set through the library).
  cudaLibrary_t lib;
  CHECK(cudaLibraryLoadFromFile(&lib, files.fatbin.c_str(), nullptr, nullptr, 0, nullptr, nullptr,
                                0));
  cudaKernel_t saxpy, add_offset;
  CHECK(cudaLibraryGetKernel(&saxpy, lib, "saxpy"));
  CHECK(cudaLibraryGetKernel(&add_offset, lib, "add_offset"));
  EXPECT_CUDA(cudaLibraryGetKernel(&saxpy, lib, "no_such_kernel"), cudaErrorSymbolNotFound);
  CHECK(cudaLibraryGetKernel(&saxpy, lib, "saxpy"));
  // Every kernel of the library, listed: driver_kernels.cu defines four.
  unsigned int count = 0;
  CHECK(cudaLibraryGetKernelCount(&count, lib));
  std::vector<cudaKernel_t> all(count);
  CHECK(cudaLibraryEnumerateKernels(all.data(), count, lib));
  if (count != 4 || std::count(all.begin(), all.end(), saxpy) != 1 ||
      std::count(all.begin(), all.end(), add_offset) != 1) {
    std::printf("FAIL: the library lists %u kernels, not its four\n", count);
    ++failures;
  }
  void* offset_by = nullptr;
  size_t bytes = 0;
  CHECK(cudaLibraryGetGlobal(&offset_by, &bytes, lib, "offset_by"));
  REQUIRE(offset_by != nullptr && bytes == sizeof(float));
  const float off = 0.5f;
  CHECK(cudaMemcpy(offset_by, &off, sizeof off, cudaMemcpyHostToDevice));
  int nn = n;
  float a = 2;
  void* saxpy_args[] = {&nn, &a, &dx, &dy};
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(saxpy), dim3(8), dim3(128), saxpy_args, 0,
                         nullptr));
  void* offset_args[] = {&nn, &dy};
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(add_offset), dim3(8), dim3(128), offset_args,
                         0, nullptr));
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    want[i] = 2 * x[i] + y[i] + off;
    failures += !Near(out[i], want[i], 1e-5);
  }

  // From PTX text, in a graph: y = -x + y, twice.
  std::ifstream f(files.ptx, std::ios::binary);
  std::string ptx((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(!ptx.empty());
  cudaLibrary_t lib2;
  CHECK(cudaLibraryLoadData(&lib2, ptx.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  cudaKernel_t saxpy2;
  CHECK(cudaLibraryGetKernel(&saxpy2, lib2, "saxpy"));
  a = -1;
  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(saxpy2);
  p.gridDim = dim3(4);
  p.blockDim = dim3(256);
  p.kernelParams = saxpy_args;
  cudaGraphNode_t first, second;
  CHECK(cudaGraphAddKernelNode(&first, g, nullptr, 0, &p));
  CHECK(cudaGraphAddKernelNode(&second, g, &first, 1, &p));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  CHECK(cudaGraphLaunch(exec, nullptr));
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) failures += !Near(out[i], want[i] - 2 * x[i], 1e-5);

  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));

  // Neither image is kept by the program any more; the libraries outlive a device reset.
  std::fill(ptx.begin(), ptx.end(), '\0');
  std::string().swap(ptx);
  CHECK(cudaDeviceReset());
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dy, 0, n * sizeof(float)));
  a = 3;
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(saxpy), dim3(8), dim3(128), saxpy_args, 0,
                         nullptr));
  CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(saxpy2), dim3(8), dim3(128), saxpy_args, 0,
                         nullptr));
  CHECK(cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) failures += !Near(out[i], 6 * x[i], 1e-5);

  CHECK(cudaLibraryUnload(lib2));
  CHECK(cudaLibraryUnload(lib));
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return Finish(failures, "library");
}
