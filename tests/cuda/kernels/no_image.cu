// tests/cuda/kernels/no_image.cu - a program with no code the device can run is told so.
//
// Built with -gencode arch=compute_86,code=sm_86 only: sm_86 machine code and no
// PTX. Neither the emulated GPU (compute capability 8.0, an older minor version,
// and it runs PTX only) nor an H100 (sm_90, another major version) can run it, so, as on a GPU, every use of the kernel
// fails with cudaErrorNoKernelImageForDevice and the kernel never runs: its
// output stays as it was.
#include "common.h"

__global__ void fill(int* out, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = v;
}

int main() {
  const int n = 1000;
  int* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(int)));
  CHECK(cudaMemset(d, 0, n * sizeof(int)));

  fill<<<(n + 255) / 256, 256>>>(d, 7, n);
  EXPECT_CUDA(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
  EXPECT_CUDA(cudaGetLastError(), cudaSuccess);  // not sticky: the next call works

  cudaFuncAttributes attr;
  EXPECT_CUDA(cudaFuncGetAttributes(&attr, fill), cudaErrorNoKernelImageForDevice);
  void* args[] = {&d, nullptr, nullptr};
  int v = 9, count = n;
  args[1] = &v;
  args[2] = &count;
  EXPECT_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(fill), dim3(4), dim3(256), args, 0, nullptr),
      cudaErrorNoKernelImageForDevice);
  (void)cudaGetLastError();

  CHECK(cudaDeviceSynchronize());
  int host[n];
  CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) REQUIRE(host[i] == 0);
  CHECK(cudaFree(d));
  std::printf("PASS\n");
  return 0;
}
