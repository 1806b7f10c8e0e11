// tests/emu_ptx/kernels/misc.cu - globals, printf, recursion, faults.
#include <cstdio>
#include <cassert>
__constant__ float kCoef[4] = {1.0f, 2.5f, -3.0f, 0.125f};
__device__ int gTable[5] = {10, 20, 30, 40, 50};
__device__ unsigned long long gCounter = 7;
__device__ int* gPtr = &gTable[2];

extern "C" __global__ void useGlobals(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = kCoef[i & 3] * gTable[i % 5] + *gPtr;
  if (i == 0) atomicAdd(&gCounter, 5ull);
}

__device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__device__ __noinline__ int sumTo(int n, int acc) { return n == 0 ? acc : sumTo(n - 1, acc + n); }

extern "C" __global__ void recursive(const int* in, int* out) {
  int t = threadIdx.x;
  out[t] = fib(in[t]) + sumTo(in[t], 0);
}

extern "C" __global__ void hello(int base) {
  printf("t%d b%d v=%d f=%.3f s=%s x=%x c=%c ll=%lld\n", threadIdx.x, blockIdx.x, base + threadIdx.x,
         base * 0.5, "ok", 255, 'Z', -1234567890123ll);
}

extern "C" __global__ void oob(int* p, int n) {
  p[threadIdx.x * n] = 1;
}

extern "C" __global__ void checker(const int* p) {
  assert(p[threadIdx.x] < 100);
}

extern "C" __global__ void dynShared(const float* in, float* out) {
  extern __shared__ float s[];
  int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[blockDim.x - 1 - t] * 2.0f;
}
