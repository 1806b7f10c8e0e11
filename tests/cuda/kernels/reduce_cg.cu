// tests/cuda/kernels/reduce_cg.cu - reductions with cooperative groups: tiled_partition,
// cg::reduce.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

// Block sum: each 32-thread tile reduces with cg::reduce, tile leaders meet in shared memory.
__global__ void blockSum(const int* in, int n, int* out) {
  __shared__ int partial[32];
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += in[i];
  int tile_sum = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) partial[tile.meta_group_rank()] = tile_sum;
  block.sync();
  if (tile.meta_group_rank() == 0) {
    int w = tile.thread_rank() < tile.meta_group_size() ? partial[tile.thread_rank()] : 0;
    int total = cg::reduce(tile, w, cg::plus<int>());
    if (tile.thread_rank() == 0) atomicAdd(out, total);
  }
}

// Max over 8-thread tiles with explicit shuffles on the tile; one result per tile.
__global__ void tileMax(const int* in, int n, int* out) {
  cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : INT_MIN;
  for (int offset = tile.size() / 2; offset > 0; offset /= 2) v = max(v, tile.shfl_down(v, offset));
  if (tile.thread_rank() == 0 && i < n) out[i / 8] = v;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 20000));
  Rng rng(Flag(argc, argv, "seed", 5));
  std::vector<int> in(n);
  for (int& x : in) x = rng.Int(-1000, 1000);
  int tiles = (n + 7) / 8;

  int *d_in, *d_sum, *d_max;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sum, sizeof(int)));
  CHECK(cudaMalloc(&d_max, tiles * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_sum, 0, sizeof(int)));
  blockSum<<<4, 256>>>(d_in, n, d_sum);
  CHECK(cudaGetLastError());
  tileMax<<<(n + 127) / 128, 128>>>(d_in, n, d_max);
  CHECK(cudaGetLastError());

  int sum;
  std::vector<int> maxes(tiles);
  CHECK(cudaMemcpy(&sum, d_sum, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(maxes.data(), d_max, tiles * sizeof(int), cudaMemcpyDeviceToHost));
  int failures = 0, ref_sum = 0;
  for (int x : in) ref_sum += x;
  if (sum != ref_sum) {
    std::printf("sum %d, expected %d\n", sum, ref_sum);
    ++failures;
  }
  for (int t = 0; t < tiles; ++t) {
    int ref = INT_MIN;
    for (int i = t * 8; i < std::min(n, t * 8 + 8); ++i) ref = std::max(ref, in[i]);
    failures += maxes[t] != ref;
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sum));
  CHECK(cudaFree(d_max));
  return Finish(failures, "reduce_cg");
}
