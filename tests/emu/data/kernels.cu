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

// Device-side heap: each thread news an array of `n` ints, fills it with its id, publishes the
// pointer; after a barrier each thread reads its neighbour's array, then deletes its own.
// sums[t] = the neighbour's sum, or -1 if new returned null.
extern "C" __global__ void heapNeighbours(int n, long long* sums, unsigned long long* ptrs) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int* mine = new int[n];
  ptrs[t] = reinterpret_cast<unsigned long long>(mine);
  if (mine != nullptr)
    for (int i = 0; i < n; ++i) mine[i] = t + i;
  __syncthreads();
  const int other = blockIdx.x * blockDim.x + (threadIdx.x + 1) % blockDim.x;
  const int* theirs = reinterpret_cast<const int*>(ptrs[other]);
  long long s = -1;
  if (theirs != nullptr) {
    s = 0;
    for (int i = 0; i < n; ++i) s += theirs[i];
  }
  sums[t] = s;
  __syncthreads();
  delete[] mine;
}

// malloc(bytes) once, writing the pointer (0 when the heap cannot hold it); free(p) of what
// an earlier launch got.
extern "C" __global__ void heapMalloc(unsigned long long bytes, unsigned long long* out) {
  *out = reinterpret_cast<unsigned long long>(malloc(bytes));
}
extern "C" __global__ void heapFree(unsigned long long p) { free(reinterpret_cast<void*>(p)); }

// A recursion `depth` deep, each level holding a 1 KiB array across the call below it: about
// `depth` KiB of call stack per thread.
__device__ __noinline__ unsigned descend(int depth, unsigned x) {
  volatile unsigned buf[256];
  for (int i = 0; i < 256; ++i) buf[i] = x * 2654435761u + i;
  const unsigned below = depth > 0 ? descend(depth - 1, buf[x % 256] >> 3) : 0;
  return below + buf[(x >> 5) % 256] % 1000;
}
extern "C" __global__ void recurse(int depth, unsigned x, unsigned* out) {
  *out = descend(depth, x);
}

// A software grid barrier: thread 0 of every block counts in, then waits until all have. A GPU
// keeps every block of a grid it can hold resident, so all pass; `passed[b]` records block b.
extern "C" __global__ void gridBarrier(unsigned* count, int* passed) {
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(count, 1u);
    while (*static_cast<volatile unsigned*>(count) < gridDim.x) {
    }
    passed[blockIdx.x] = 1;
  }
}
