// tests/cuda/separable/device_math.cu - __device__ functions and data that other translation
// units use: nothing here is launched, everything is reached through the device link.
#include "separable.cuh"

__device__ float g_alpha = 0.0f;
__device__ unsigned int g_launches = 0;
__device__ unsigned long long g_total = 0;
__constant__ int c_weights[kWeights];

__device__ float axpy(float a, float x, float y) { return fmaf(a, x, y); }

__device__ float clampf(float x, float lo, float hi) { return fminf(fmaxf(x, lo), hi); }

__device__ unsigned int mix(unsigned int x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x & 0xffffu;
}

__device__ void countLaunch() {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0 && blockIdx.x == 0 &&
      blockIdx.y == 0 && blockIdx.z == 0)
    atomicAdd(&g_launches, 1u);
}
