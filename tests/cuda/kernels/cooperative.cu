// tests/cuda/kernels/cooperative.cu - cooperative launches: every block co-resident, so a
// grid-wide barrier (cooperative_groups::this_grid().sync()) holds. A two-phase grid reduction
// and an iterative 1-D stencil whose every step reads what other blocks wrote the step
// before, launched with cudaLaunchCooperativeKernel and with cudaLaunchKernelExC's cooperative
// attribute, sized by the occupancy API as NVIDIA's samples size them; checked on the host.
// Flags: -seed <n>, -n <elements> (default 100000), -steps <s> (default 20).
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

// Phase 1: each block sums a grid-stride slice into partial[block]; grid.sync(); phase 2:
// block 0 sums the partials.
__global__ void GridSum(const long long* in, long long* partial, long long* out, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ long long s[256];
  long long v = 0;
  for (long long i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) s[threadIdx.x] += s[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    long long t = 0;
    for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
    *out = t;
  }
}

// `steps` rounds of x[i] = x[i-1] + x[i] + x[i+1] (mod 2^32, zero outside), ping-ponging
// between a and b with a grid-wide barrier between rounds.
__global__ void Stencil(unsigned* a, unsigned* b, int n, int steps) {
  cg::grid_group grid = cg::this_grid();
  for (int s = 0; s < steps; ++s) {
    const unsigned* src = s % 2 ? b : a;
    unsigned* dst = s % 2 ? a : b;
    for (long long i = grid.thread_rank(); i < n; i += grid.size()) {
      const unsigned l = i > 0 ? src[i - 1] : 0u, r = i + 1 < n ? src[i + 1] : 0u;
      dst[i] = l + src[i] + r;
    }
    grid.sync();
  }
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 51));
  const int n = static_cast<int>(Flag(argc, argv, "n", 100000));
  const int steps = static_cast<int>(Flag(argc, argv, "steps", 20));
  int failures = 0;
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (!prop.cooperativeLaunch) {
    std::printf("FAIL: the device does not support cooperative launch\n");
    return 1;
  }
  const int threads = 256;
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, GridSum, threads, 0));
  const int blocks = std::min(per_sm * prop.multiProcessorCount, 64);

  std::vector<long long> h(n);
  long long want = 0;
  for (auto& v : h) {
    v = static_cast<long long>(rng.Next() % (1ull << 40)) - (1ll << 39);
    want += v;
  }
  long long *d_in, *d_partial, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(long long)));
  CHECK(cudaMalloc(&d_partial, blocks * sizeof(long long)));
  CHECK(cudaMalloc(&d_out, sizeof(long long)));
  CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(long long), cudaMemcpyHostToDevice));
  int nn = n;
  void* sum_args[] = {&d_in, &d_partial, &d_out, &nn};
  CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(GridSum), blocks, threads, sum_args, 0,
                                    nullptr));
  long long got = 0;
  CHECK(cudaMemcpy(&got, d_out, sizeof got, cudaMemcpyDeviceToHost));
  if (got != want) {
    std::printf("grid sum over %d blocks: %lld, want %lld\n", blocks, got, want);
    ++failures;
  }

  std::vector<unsigned> x(n);
  for (auto& v : x) v = static_cast<unsigned>(rng.Next());
  std::vector<unsigned> ref = x, tmp(n);
  for (int s = 0; s < steps; ++s) {
    for (int i = 0; i < n; ++i)
      tmp[i] = (i > 0 ? ref[i - 1] : 0u) + ref[i] + (i + 1 < n ? ref[i + 1] : 0u);
    ref.swap(tmp);
  }
  unsigned *d_a, *d_b;
  CHECK(cudaMalloc(&d_a, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_b, n * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_a, x.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  int st = steps;
  void* stencil_args[] = {&d_a, &d_b, &nn, &st};
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeCooperative;
  attr.val.cooperative = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  CHECK(cudaLaunchKernelExC(&cfg, reinterpret_cast<void*>(Stencil), stencil_args));
  std::vector<unsigned> out(n);
  CHECK(cudaMemcpy(out.data(), steps % 2 ? d_b : d_a, n * sizeof(unsigned),
                   cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += out[i] != ref[i];
  if (wrong) {
    std::printf("stencil: %d of %d wrong after %d steps\n", wrong, n, steps);
    ++failures;
  }
  return Finish(failures, "cooperative");
}
