// tests/emu/data/coop.cu - kernels that synchronise the whole grid (cooperative launches).
//
// Built for compute_80 as PTX by tests/emu/CMakeLists.txt. grid.sync() compiles to a read of
// the launch's grid workspace (%envreg1:%envreg2), a trap if there is none, and a spin on a
// counter there: these kernels only complete when every block is resident at once.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// out[b] = the sum of all of `in`, for every block b: phase 1 writes one partial per block,
// phase 2 (after grid.sync) has every block add up every other block's partial.
extern "C" __global__ void gridSum(const int* in, long long* partial, long long* out, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ long long acc[128];
  long long s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    s += in[i];
  acc[threadIdx.x] = s;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) acc[threadIdx.x] += acc[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = acc[0];
  grid.sync();
  if (threadIdx.x == 0) {
    long long total = 0;
    for (int b = 0; b < gridDim.x; ++b) total += partial[b];
    out[blockIdx.x] = total;
  }
}

// `steps` rounds of a 3-point stencil over n values (the ends stay fixed), ping-ponging
// between a and b with a grid.sync after each: every block reads values its neighbours wrote
// in the previous step. Wrapping unsigned arithmetic keeps the reference exact.
extern "C" __global__ void stencil(unsigned* a, unsigned* b, int n, int steps) {
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < steps; ++s) {
    const unsigned* src = (s % 2 == 0) ? a : b;
    unsigned* dst = (s % 2 == 0) ? b : a;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
      dst[i] = (i == 0 || i == n - 1) ? src[i] : src[i - 1] + 2u * src[i] + 3u * src[i + 1] + s;
    grid.sync();
  }
}

// Every block but the last waits for the last to raise *flag, with a __syncthreads() in its
// wait loop (as Barnes-Hut's sort kernel does), then counts itself in *done. A GPU runs the
// blocks side by side; run one at a time it never ends.
extern "C" __global__ void waitWithBarriers(volatile int* flag, unsigned* done) {
  if (blockIdx.x == gridDim.x - 1) {
    if (threadIdx.x == 0) *flag = 1;
    return;
  }
  while (*flag == 0) __syncthreads();
  if (threadIdx.x == 0) atomicAdd(done, 1u);
}

// Counts its threads in *started, then synchronises the grid until *stop turns nonzero
// (never, in the tests: they cancel it).
extern "C" __global__ void syncForever(unsigned* started, const volatile int* stop) {
  cg::grid_group grid = cg::this_grid();
  atomicAdd(started, 1u);
  while (*stop == 0) grid.sync();
}
