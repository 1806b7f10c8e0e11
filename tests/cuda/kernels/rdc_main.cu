// tests/cuda/kernels/rdc_main.cu - calls __device__ functions defined in rdc_lib.cu (built with
// -rdc=true).
#include <vector>

#include "common.h"
#include "rdc_lib.h"

__global__ void mainKernel(const float* x, float* y, int* steps, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  y[i] = smoothstep(-1.0f, 1.0f, x[i]);
  steps[i] = collatzSteps(i + 1);
}

int HostCollatz(unsigned long long v) {
  int steps = 0;
  for (; v != 1; ++steps) v = (v & 1) ? 3 * v + 1 : v / 2;
  return steps;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 2000));
  Rng rng(Flag(argc, argv, "seed", 16));
  std::vector<float> x(n), y(n);
  std::vector<int> steps(n), lib(64);
  for (float& v : x) v = rng.Uniform(-1.5f, 1.5f);
  float *dx, *dy;
  int *dsteps, *dlib;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMalloc(&dsteps, n * sizeof(int)));
  CHECK(cudaMalloc(&dlib, 64 * sizeof(int)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  mainKernel<<<(n + 127) / 128, 128>>>(dx, dy, dsteps, n);
  CHECK(cudaGetLastError());
  libKernel<<<1, 64>>>(dlib);  // a kernel defined in the other unit
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(steps.data(), dsteps, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(lib.data(), dlib, 64 * sizeof(int), cudaMemcpyDeviceToHost));
  int calls = 0;
  CHECK(cudaMemcpyFromSymbol(&calls, g_calls, sizeof(int)));

  int failures = 0;
  for (int i = 0; i < n; ++i) {
    float t = std::fmin(std::fmax((x[i] + 1.0f) / 2.0f, 0.0f), 1.0f);
    failures += !Near(y[i], t * t * (3.0f - 2.0f * t), 1e-6);
    failures += steps[i] != HostCollatz(i + 1);
  }
  for (int i = 0; i < 64; ++i) failures += lib[i] != HostCollatz(i + 1);
  if (calls != n) std::printf("g_calls %d, expected %d\n", calls, n);
  failures += calls != n;
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dsteps));
  CHECK(cudaFree(dlib));
  return Finish(failures, "rdc");
}
