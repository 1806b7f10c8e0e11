// tests/emu_ptx/kernels/samples.cu - kernels in the style of NVIDIA's classic CUDA samples:
// transpose with a padded shared tile, bitonic sort in shared memory, shfl_scan, atomic
// intrinsics (with atomicInc/Dec wrap), vote intrinsics, clock64 timing per block.
#include <cstdint>

#define TILE_DIM 32
#define BLOCK_ROWS 8

// transposeNoBankConflicts: a (TILE_DIM x TILE_DIM+1) tile; blocks of TILE_DIM x BLOCK_ROWS.
extern "C" __global__ void transposeNoBankConflicts(float* odata, const float* idata, int width,
                                                    int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// bitonicSort: one block sorts SHARED_SIZE keys (with values) in shared memory.
#define SHARED_SIZE 1024
__device__ inline void Comparator(unsigned& keyA, unsigned& valA, unsigned& keyB, unsigned& valB,
                                  unsigned dir) {
  if ((keyA > keyB) == dir) {
    unsigned t = keyA;
    keyA = keyB;
    keyB = t;
    t = valA;
    valA = valB;
    valB = t;
  }
}
extern "C" __global__ void bitonicSortShared(unsigned* dstKey, unsigned* dstVal,
                                             const unsigned* srcKey, const unsigned* srcVal,
                                             unsigned dir) {
  __shared__ unsigned sKey[SHARED_SIZE];
  __shared__ unsigned sVal[SHARED_SIZE];
  srcKey += blockIdx.x * SHARED_SIZE + threadIdx.x;
  srcVal += blockIdx.x * SHARED_SIZE + threadIdx.x;
  dstKey += blockIdx.x * SHARED_SIZE + threadIdx.x;
  dstVal += blockIdx.x * SHARED_SIZE + threadIdx.x;
  sKey[threadIdx.x] = srcKey[0];
  sVal[threadIdx.x] = srcVal[0];
  sKey[threadIdx.x + SHARED_SIZE / 2] = srcKey[SHARED_SIZE / 2];
  sVal[threadIdx.x + SHARED_SIZE / 2] = srcVal[SHARED_SIZE / 2];
  for (unsigned size = 2; size < SHARED_SIZE; size <<= 1) {
    unsigned ddd = dir ^ ((threadIdx.x & (size / 2)) != 0);
    for (unsigned stride = size / 2; stride > 0; stride >>= 1) {
      __syncthreads();
      unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
      Comparator(sKey[pos], sVal[pos], sKey[pos + stride], sVal[pos + stride], ddd);
    }
  }
  for (unsigned stride = SHARED_SIZE / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    unsigned pos = 2 * threadIdx.x - (threadIdx.x & (stride - 1));
    Comparator(sKey[pos], sVal[pos], sKey[pos + stride], sVal[pos + stride], dir);
  }
  __syncthreads();
  dstKey[0] = sKey[threadIdx.x];
  dstVal[0] = sVal[threadIdx.x];
  dstKey[SHARED_SIZE / 2] = sKey[threadIdx.x + SHARED_SIZE / 2];
  dstVal[SHARED_SIZE / 2] = sVal[threadIdx.x + SHARED_SIZE / 2];
}

// shfl_scan_test: inclusive scan of each block with __shfl_up_sync, warp sums through shared
// memory; partial_sums gets each block's total.
extern "C" __global__ void shfl_scan_test(int* data, int width, int* partial_sums) {
  extern __shared__ int sums[];
  int id = blockIdx.x * blockDim.x + threadIdx.x;
  int lane_id = id % warpSize;
  int warp_id = threadIdx.x / warpSize;
  int value = data[id];
  for (int i = 1; i <= width; i *= 2) {
    unsigned mask = 0xffffffff;
    int n = __shfl_up_sync(mask, value, i, width);
    if (lane_id >= i) value += n;
  }
  if (threadIdx.x % warpSize == warpSize - 1) sums[warp_id] = value;
  __syncthreads();
  if (warp_id == 0 && lane_id < (blockDim.x / warpSize)) {
    int warp_sum = sums[lane_id];
    int mask = (1 << (blockDim.x / warpSize)) - 1;
    for (int i = 1; i <= (blockDim.x / warpSize); i *= 2) {
      int n = __shfl_up_sync(mask, warp_sum, i, (blockDim.x / warpSize));
      if (lane_id >= i) warp_sum += n;
    }
    sums[lane_id] = warp_sum;
  }
  __syncthreads();
  int blockSum = 0;
  if (warp_id > 0) blockSum = sums[warp_id - 1];
  value += blockSum;
  data[id] = value;
  if (partial_sums != nullptr && threadIdx.x == blockDim.x - 1) partial_sums[blockIdx.x] = value;
}

// simpleAtomicIntrinsics: g_odata[0..10] as in the sample, plus 64-bit and shared variants.
extern "C" __global__ void atomicIntrinsics(int* g_odata, unsigned long long* g_u64) {
  const unsigned tid = blockDim.x * blockIdx.x + threadIdx.x;
  __shared__ unsigned s_inc;
  if (threadIdx.x == 0) s_inc = 0;
  __syncthreads();
  atomicAdd(&g_odata[0], 10);
  atomicSub(&g_odata[1], 10);
  atomicExch(&g_odata[2], tid);
  atomicMax(&g_odata[3], tid);
  atomicMin(&g_odata[4], tid);
  atomicInc((unsigned*)&g_odata[5], 17);
  atomicDec((unsigned*)&g_odata[6], 137);
  atomicCAS(&g_odata[7], tid - 1, tid);
  atomicAnd(&g_odata[8], 2 * tid + 7);
  atomicOr(&g_odata[9], 1 << (tid % 32));
  atomicXor(&g_odata[10], tid);
  atomicAdd(&g_u64[0], (unsigned long long)tid << 20);
  atomicMax(&g_u64[1], (unsigned long long)tid * 0x100000001ull);
  atomicMin((long long*)&g_u64[2], -(long long)tid);
  unsigned old = atomicInc(&s_inc, 5);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd((unsigned*)&g_odata[11], s_inc);
  atomicAdd((unsigned*)&g_odata[12], old);
}

// simpleVoteIntrinsics: any/all/ballot over warps (and a divergent half-warp any).
extern "C" __global__ void voteAnyAllBallot(const unsigned* input, unsigned* result) {
  int tx = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned v = input[tx];
  unsigned any = __any_sync(0xffffffff, v & 1);
  unsigned all = __all_sync(0xffffffff, v & 2);
  unsigned ballot = __ballot_sync(0xffffffff, v & 4);
  unsigned half = 0;
  if ((threadIdx.x & 31) < 16) half = __any_sync(0x0000ffff, v & 8);
  result[tx * 4 + 0] = any;
  result[tx * 4 + 1] = all;
  result[tx * 4 + 2] = ballot;
  result[tx * 4 + 3] = half;
}

// clock: timedReduction records clock64 at start and end of each block's min reduction.
extern "C" __global__ void timedReduction(const float* input, float* output, long long* timer) {
  extern __shared__ float shared[];
  const int tid = threadIdx.x;
  const int bid = blockIdx.x;
  if (tid == 0) timer[bid] = clock64();
  shared[tid] = input[tid];
  shared[tid + blockDim.x] = input[tid + blockDim.x];
  for (int d = blockDim.x; d > 0; d /= 2) {
    __syncthreads();
    if (tid < d) {
      float f0 = shared[tid];
      float f1 = shared[tid + d];
      if (f1 < f0) shared[tid] = f1;
    }
  }
  if (tid == 0) output[bid] = shared[0];
  __syncthreads();
  if (tid == 0) timer[bid + gridDim.x] = clock64();
}
