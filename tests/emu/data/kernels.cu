// tests/emu/data/kernels.cu - kernels the emulator tests load as PTX and as a fat binary.
#include <cassert>
#include <cstdio>

__device__ int counter = 7;
__constant__ float scale[4] = {1.0f, 2.0f, 3.0f, 4.0f};

extern "C" __global__ void vecAdd(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// Adds scale[k] to each element and counts the threads that ran.
extern "C" __global__ void scaleAndCount(float* x, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = x[i] * scale[k];
    atomicAdd(&counter, 1);
  }
}

extern "C" __global__ void hello(int tag) { printf("hello %d from %d\n", tag, threadIdx.x); }

// Writes through whatever pointer it is given: a bad one faults.
extern "C" __global__ void poke(int* p, int v) { *p = v; }

struct Mixed {
  char c;
  double d;
  int i;
};

extern "C" __global__ void mixedParams(char c, Mixed m, const short* s, double d) {
  (void)c;
  (void)m;
  (void)s;
  (void)d;
}

extern "C" __global__ void checkPositive(int v) { assert(v > 0); }

extern "C" __global__ void trapIf(int v) {
  if (v != 0) __trap();
}
