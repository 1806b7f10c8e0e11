// tests/cuda/kernels/scan.cu - inclusive prefix sum: per-block Hillis-Steele scans, then block
// offsets.
#include <vector>

#include "common.h"

constexpr int kBlock = 128;

// Scans each block's slice in shared memory (double-buffered) and records its total.
__global__ void scanBlocks(const int* in, int* out, int* block_totals, int n) {
  __shared__ int buf[2][kBlock];
  int i = blockIdx.x * kBlock + threadIdx.x;
  int cur = 0;
  buf[cur][threadIdx.x] = i < n ? in[i] : 0;
  __syncthreads();
  for (int offset = 1; offset < kBlock; offset *= 2) {
    int v = buf[cur][threadIdx.x];
    if (threadIdx.x >= offset) v += buf[cur][threadIdx.x - offset];
    buf[1 - cur][threadIdx.x] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][threadIdx.x];
  if (threadIdx.x == kBlock - 1) block_totals[blockIdx.x] = buf[cur][threadIdx.x];
}

// Exclusive scan of the block totals by one thread (there are few blocks).
__global__ void scanTotals(int* totals, int blocks) {
  int running = 0;
  for (int b = 0; b < blocks; ++b) {
    int t = totals[b];
    totals[b] = running;
    running += t;
  }
}

__global__ void addOffsets(int* out, const int* offsets, int n) {
  int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) out[i] += offsets[blockIdx.x];
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 5000));
  Rng rng(Flag(argc, argv, "seed", 6));
  std::vector<int> in(n), out(n);
  for (int& x : in) x = rng.Int(-100, 100);
  int blocks = (n + kBlock - 1) / kBlock;

  int *d_in, *d_out, *d_tot;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMalloc(&d_tot, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  scanBlocks<<<blocks, kBlock>>>(d_in, d_out, d_tot, n);
  CHECK(cudaGetLastError());
  scanTotals<<<1, 1>>>(d_tot, blocks);
  CHECK(cudaGetLastError());
  addOffsets<<<blocks, kBlock>>>(d_out, d_tot, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));

  int failures = 0, running = 0;
  for (int i = 0; i < n; ++i) {
    running += in[i];
    if (out[i] != running) {
      if (failures < 5) std::printf("out[%d] = %d, expected %d\n", i, out[i], running);
      ++failures;
    }
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_tot));
  return Finish(failures, "scan");
}
