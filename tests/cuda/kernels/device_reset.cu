// tests/cuda/kernels/device_reset.cu - work after cudaDeviceReset: the same kernels launch again,
// on new allocations and streams, with results checked each round. NVIDIA's runtime keeps the
// kernel handles it took before the reset, so its driver must keep them working (the
// NVIDIA_RUNTIME build runs over Remora's libcuda.so.1).
#include <vector>

#include "common.h"

__global__ void Scale(float* y, const float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 4096));
  Rng rng(Flag(argc, argv, "seed", 5));
  int failures = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<float> x(n), y(n);
    for (float& v : x) v = rng.Uniform(-8, 8);
    float *dx, *dy;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMemcpyAsync(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice, s));
    const float a = 1.5f + round;
    Scale<<<(n + 255) / 256, 256, 0, s>>>(dy, dx, a, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) failures += !Near(y[i], a * x[i], 1e-6);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaDeviceReset());  // everything above is gone; the kernel is not
  }
  return Finish(failures, "device_reset");
}
