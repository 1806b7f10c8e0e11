// bench/emu_ptx/kernels/scan.cu - the shape of the classic shared-memory prefix-sum sample:
// uint4 per thread, a block-wide inclusive scan in shared memory with two barriers per step,
// a second-level scan of block sums and a uniform add. Public samples of this shape run
// 1,500 scans of 6.8M elements; the bench times one launch sequence of each kernel.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

constexpr unsigned kBlock = 256;

__device__ unsigned BlockScanInclusive(unsigned v, volatile unsigned* s, unsigned size,
                                       cg::thread_block block) {
  unsigned pos = 2 * threadIdx.x - (threadIdx.x & (size - 1));
  s[pos] = 0;
  pos += size;
  s[pos] = v;
  for (unsigned step = 1; step < size; step <<= 1) {
    cg::sync(block);
    unsigned t = s[pos] + s[pos - step];
    cg::sync(block);
    s[pos] = t;
  }
  return s[pos];
}

// Exclusive scan of the block's 4 * blockDim.x elements, `size` of them per independent array.
__device__ uint4 Scan4Exclusive(uint4 a, volatile unsigned* s, unsigned size,
                                cg::thread_block block) {
  unsigned sum = a.x + a.y + a.z + a.w;
  unsigned ex = BlockScanInclusive(sum, s, size / 4, block) - sum;
  return make_uint4(ex, ex + a.x, ex + a.x + a.y, ex + a.x + a.y + a.z);
}

extern "C" __global__ void scan_shared(uint4* out, const uint4* in, unsigned size) {
  cg::thread_block block = cg::this_thread_block();
  __shared__ unsigned s[2 * kBlock];
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = Scan4Exclusive(in[i], s, size, block);
}

extern "C" __global__ void uniform_add(uint4* data, const unsigned* sums) {
  __shared__ unsigned add;
  if (threadIdx.x == 0) add = sums[blockIdx.x];
  __syncthreads();
  uint4 v = data[blockIdx.x * blockDim.x + threadIdx.x];
  v.x += add;
  v.y += add;
  v.z += add;
  v.w += add;
  data[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
