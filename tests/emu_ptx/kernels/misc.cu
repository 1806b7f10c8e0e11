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

// alloca: each thread takes n[t] ints of its own stack (a size per lane), in a loop, and a
// callee takes more below them while they live; `big` asks for more than the stack holds.
__device__ __noinline__ int sumSquares(const int* v, int n) {
  int* sq = static_cast<int*>(alloca(n * sizeof(int)));
  for (int i = 0; i < n; ++i) sq[i] = v[i] * v[i];
  int s = 0;
  for (int i = n - 1; i >= 0; --i) s += sq[i];
  return s;
}

extern "C" __global__ void stackAlloc(const int* n, int* out, int big) {
  const int t = threadIdx.x;
  int total = 0;
  int* first = nullptr;
  for (int round = 0; round < 3; ++round) {
    const int k = n[t] + round + (big ? 1 << 28 : 0);
    int* v = static_cast<int*>(alloca(k * sizeof(int)));
    if (round == 0) first = v;
    for (int i = 0; i < k; ++i) v[i] = t + i * (round + 1);
    total += sumSquares(v, k);
  }
  out[t] = total + first[0];
}
