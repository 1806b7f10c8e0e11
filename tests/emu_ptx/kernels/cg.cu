// tests/emu_ptx/kernels/cg.cu - cooperative groups: thread_block_tile<32> with cg::reduce, and
// (compute_80 and later) a tile of four warps, whose reduce goes through the block's reserved
// shared memory (%reserved_smem_offset_1).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cgTileReduce(const int* in, int* sums, int* maxes, int n) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  int s = cg::reduce(tile, v, cg::plus<int>());
  int m = cg::reduce(tile, v, cg::greater<int>());
  __shared__ int block_sum;
  if (block.thread_rank() == 0) block_sum = 0;
  block.sync();
  if (tile.thread_rank() == 0) {
    atomicAdd(&block_sum, s);
    maxes[i / 32] = m;
  }
  block.sync();
  if (block.thread_rank() == 0) sums[blockIdx.x] = block_sum;
}

extern "C" __global__ void cgTileShuffle(const float* in, float* out) {
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = in[i];
  float s = cg::reduce(tile, v, cg::plus<float>());
  float up = tile.shfl_up(v, 1);
  out[i * 3 + 0] = s;
  out[i * 3 + 1] = tile.thread_rank() == 0 ? v : up;
  out[i * 3 + 2] = float(tile.ballot(v > 0.f) & 0xffff) + float(tile.any(v > 3.f));
}

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
extern "C" __global__ void cgMultiWarpReduce(const int* in, int* sums) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<128> tile = cg::tiled_partition<128>(block);
  int v = in[blockIdx.x * blockDim.x + threadIdx.x];
  int s = cg::reduce(tile, v, cg::plus<int>());
  if (tile.thread_rank() == 0) sums[(blockIdx.x * blockDim.x + threadIdx.x) / 128] = s;
}
#endif
