// tests/cuda/kernels/rdc_lib.cu - device functions and a __device__ variable used from rdc_main.cu
// (-rdc=true).
#include "rdc_lib.h"

__device__ int g_calls = 0;

__device__ float smoothstep(float edge0, float edge1, float x) {
  float t = fminf(fmaxf((x - edge0) / (edge1 - edge0), 0.0f), 1.0f);
  atomicAdd(&g_calls, 1);
  return t * t * (3.0f - 2.0f * t);
}

__device__ int collatzSteps(unsigned long long v) {
  int steps = 0;
  while (v != 1) {
    v = (v & 1) ? 3 * v + 1 : v / 2;
    ++steps;
  }
  return steps;
}

__global__ void libKernel(int* out) {
  out[threadIdx.x] = collatzSteps(threadIdx.x + 1);
}
