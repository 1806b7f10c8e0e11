// tests/cuda/kernels/reduction_classic.cu - the classic multi-kernel parallel reduction, written
// the way the well-known CUDA sample writes it: reduce0 ... reduce6 templated on the element
// type, the block size and "n is a power of two", dynamic shared memory reached through a
// SharedMemory<T> helper (with a double specialization), a switch over block sizes 1..512,
// warp-synchronous tails with cooperative groups and __shfl_down_sync. Every kernel is run for
// int, long long (high words in use), float and double on several sizes (non-powers of two
// included), reducing on the GPU pass after pass until one value is left, and checked against a
// host sum of the same data.
//
// Flags: -seed <n>, -max <largest n> (default 70001).
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

// Dynamic shared memory of type T. `extern __shared__ T smem[]` cannot be declared in a
// template for several T (the declarations would conflict), hence the sample's helper.
template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return reinterpret_cast<T*>(__smem);
  }
  __device__ inline operator const T*() const {
    extern __shared__ int __smem[];
    return reinterpret_cast<T*>(__smem);
  }
};

// double needs 8-byte alignment.
template <>
struct SharedMemory<double> {
  __device__ inline operator double*() {
    extern __shared__ double __smem_d[];
    return __smem_d;
  }
  __device__ inline operator const double*() const {
    extern __shared__ double __smem_d[];
    return __smem_d;
  }
};

// Lanes [0, width) of a warp, width = min(blockSize, 32): the threads a warp of a block of
// blockSize threads really has.
template <unsigned int blockSize>
__device__ __forceinline__ unsigned int laneMask() {
  return blockSize >= 32 ? 0xffffffffu : (0xffffffffu >> (32 - blockSize));
}

// Tree sum over the first `width` lanes with __shfl_down_sync; lane 0 gets the total. A shuffle
// never reads a lane outside [0, width), so blocks smaller than a warp are summed exactly.
template <class T, unsigned int width>
__device__ __forceinline__ T warpReduceSum(unsigned int mask, T mySum) {
  constexpr unsigned int w = width < 32 ? width : 32;
  for (unsigned int offset = w / 2; offset > 0; offset /= 2)
    mySum += __shfl_down_sync(mask, mySum, offset);
  return mySum;
}

// The last 32 partial sums (in mySum of threads 0..31) to thread 0: a cooperative-groups tile
// shuffle when the block has a full warp, a masked __shfl_down_sync otherwise.
template <class T, unsigned int blockSize>
__device__ __forceinline__ T finalWarp(cg::thread_block cta, const T* sdata, T mySum) {
  const unsigned int tid = threadIdx.x;
  if (blockSize >= 32) {
    cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
    if (cta.thread_rank() < 32) {
      if (blockSize >= 64) mySum += sdata[tid + 32];  // the second warp's partial sum
      for (int offset = tile32.size() / 2; offset > 0; offset /= 2)
        mySum += tile32.shfl_down(mySum, offset);
    }
  } else {
    mySum = warpReduceSum<T, blockSize>(laneMask<blockSize>(), mySum);
  }
  return mySum;
}

// reduce0: interleaved addressing, divergent branch and modulo.
template <class T>
__global__ void reduce0(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    if ((tid % (2 * s)) == 0) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// reduce1: interleaved addressing, contiguous threads (shared memory bank conflicts).
template <class T>
__global__ void reduce1(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = 1; s < blockDim.x; s *= 2) {
    int index = 2 * s * tid;
    if (index < blockDim.x) sdata[index] += sdata[index + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// reduce2: sequential addressing.
template <class T>
__global__ void reduce2(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  sdata[tid] = (i < n) ? g_idata[i] : 0;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] += sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// reduce3: the first add during the global load, each block reduces 2 * blockDim.x elements.
template <class T>
__global__ void reduce3(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockDim.x < n) mySum += g_idata[i + blockDim.x];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

// reduce4: as reduce3, the last warp by warp shuffles of a 32-thread tile.
template <class T, unsigned int blockSize>
__global__ void reduce4(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  cg::sync(cta);
  for (unsigned int s = blockDim.x / 2; s > 32; s >>= 1) {
    if (tid < s) sdata[tid] = mySum = mySum + sdata[tid + s];
    cg::sync(cta);
  }
  mySum = finalWarp<T, blockSize>(cta, sdata, mySum);
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}

// reduce5: the shared-memory steps unrolled on the compile-time block size.
template <class T, unsigned int blockSize>
__global__ void reduce5(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  T mySum = (i < n) ? g_idata[i] : 0;
  if (i + blockSize < n) mySum += g_idata[i + blockSize];
  sdata[tid] = mySum;
  cg::sync(cta);
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  cg::sync(cta);
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  cg::sync(cta);
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  cg::sync(cta);
  mySum = finalWarp<T, blockSize>(cta, sdata, mySum);
  if (cta.thread_rank() == 0) g_odata[blockIdx.x] = mySum;
}

// reduce6: many elements per thread (grid-stride; two per step when n is a power of two),
// per-warp shuffle sums, warp leaders meet in shared memory, a ballot picks the final lanes.
template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int gridSize = blockSize * gridDim.x;
  const unsigned int mask = laneMask<blockSize>();
  T mySum = 0;
  if (nIsPow2) {
    unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
    gridSize = gridSize << 1;
    while (i < n) {
      mySum += g_idata[i];
      if ((i + blockSize) < n) mySum += g_idata[i + blockSize];
      i += gridSize;
    }
  } else {
    unsigned int i = blockIdx.x * blockSize + threadIdx.x;
    while (i < n) {
      mySum += g_idata[i];
      i += gridSize;
    }
  }
  mySum = warpReduceSum<T, blockSize>(mask, mySum);
  if ((tid % warpSize) == 0) sdata[tid / warpSize] = mySum;
  cg::sync(cta);
  constexpr unsigned int shmem_extent = (blockSize / 32) > 0 ? (blockSize / 32) : 1;
  const unsigned int ballot_result = __ballot_sync(mask, tid < shmem_extent);
  if (tid < shmem_extent) {
    mySum = sdata[tid];
    mySum = warpReduceSum<T, shmem_extent>(ballot_result, mySum);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

// The sample's dispatch: the block size is a template argument, chosen at run time.
#define REDUCE_CASE(K, B)                                                  \
  case B:                                                                  \
    K<T, B><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size);      \
    break;
#define REDUCE6_CASE(B, P)                                                 \
  case B:                                                                  \
    reduce6<T, B, P><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size); \
    break;
#define ALL_SIZES(M, ...)                                                                   \
  M(__VA_ARGS__, 512) M(__VA_ARGS__, 256) M(__VA_ARGS__, 128) M(__VA_ARGS__, 64)            \
  M(__VA_ARGS__, 32) M(__VA_ARGS__, 16) M(__VA_ARGS__, 8) M(__VA_ARGS__, 4) M(__VA_ARGS__, 2) \
  M(__VA_ARGS__, 1)
#define REDUCE6_POW2(dummy, B) REDUCE6_CASE(B, true)
#define REDUCE6_NPOW2(dummy, B) REDUCE6_CASE(B, false)

bool isPow2(unsigned int x) { return ((x & (x - 1)) == 0); }

unsigned int nextPow2(unsigned int x) {
  --x;
  x |= x >> 1;
  x |= x >> 2;
  x |= x >> 4;
  x |= x >> 8;
  x |= x >> 16;
  return ++x;
}

template <class T>
void reduce(int size, int threads, int blocks, int whichKernel, const T* d_idata, T* d_odata) {
  dim3 dimBlock(threads, 1, 1);
  dim3 dimGrid(blocks, 1, 1);
  // With 32 threads or fewer, the sample allocates two warps' worth so that tid + 32 stays in.
  int smemSize = (threads <= 32) ? 2 * threads * sizeof(T) : threads * sizeof(T);
  switch (whichKernel) {
    case 0:
      reduce0<T><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size);
      break;
    case 1:
      reduce1<T><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size);
      break;
    case 2:
      reduce2<T><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size);
      break;
    case 3:
      reduce3<T><<<dimGrid, dimBlock, smemSize>>>(d_idata, d_odata, size);
      break;
    case 4:
      switch (threads) { ALL_SIZES(REDUCE_CASE, reduce4) }
      break;
    case 5:
      switch (threads) { ALL_SIZES(REDUCE_CASE, reduce5) }
      break;
    case 6:
    default:
      if (isPow2(size)) {
        switch (threads) { ALL_SIZES(REDUCE6_POW2, 0) }
      } else {
        switch (threads) { ALL_SIZES(REDUCE6_NPOW2, 0) }
      }
      break;
  }
}

// The sample's launch geometry: kernels 0-2 take one element per thread, 3-5 two, and 6 as
// many as it needs to fit in maxBlocks blocks.
void getNumBlocksAndThreads(int whichKernel, int n, int maxBlocks, int maxThreads, int& blocks,
                            int& threads) {
  if (whichKernel < 3) {
    threads = (n < maxThreads) ? nextPow2(n) : maxThreads;
    blocks = (n + threads - 1) / threads;
  } else {
    threads = (n < maxThreads * 2) ? nextPow2((n + 1) / 2) : maxThreads;
    blocks = (n + (threads * 2 - 1)) / (threads * 2);
  }
  if (whichKernel == 6) blocks = std::min(maxBlocks, blocks);
}

template <class T>
T hostSum(const std::vector<T>& v) {
  T s = 0;
  for (T x : v) s += x;
  return s;
}
template <>
float hostSum<float>(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return static_cast<float>(s);
}

template <class T>
void fill(Rng& rng, std::vector<T>& v);
template <>
void fill<int>(Rng& rng, std::vector<int>& v) {
  for (int& x : v) x = rng.Int(-1000, 1000);
}
template <>
void fill<long long>(Rng& rng, std::vector<long long>& v) {  // high words in use
  for (long long& x : v) x = static_cast<long long>(rng.Next() % (1ull << 41)) - (1ll << 40);
}
template <>
void fill<float>(Rng& rng, std::vector<float>& v) {
  for (float& x : v) x = rng.Uniform(0.0f, 1.0f);
}
template <>
void fill<double>(Rng& rng, std::vector<double>& v) {
  for (double& x : v) x = rng.UniformD(-1.0, 1.0);
}

template <class T>
bool same(T got, T want);
template <>
bool same<int>(int got, int want) {
  return got == want;
}
template <>
bool same<long long>(long long got, long long want) {
  return got == want;
}
template <>
bool same<float>(float got, float want) {
  return Near(got, want, 2e-5);
}
template <>
bool same<double>(double got, double want) {
  return Near(got, want, 1e-11);
}

const char* typeName(int) { return "int"; }
const char* typeName(long long) { return "long long"; }
const char* typeName(float) { return "float"; }
const char* typeName(double) { return "double"; }

// Reduces n random values with kernel k, pass after pass on the GPU (ping-pong buffers), and
// compares with the host sum. Returns the number of mismatches (0 or 1).
template <class T>
int runOne(Rng& rng, int k, int n, int maxThreads, int maxBlocks, T* d_a, T* d_b, T* d_c) {
  std::vector<T> h(n);
  fill(rng, h);
  CHECK(cudaMemcpy(d_a, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  int threads = 0, blocks = 0;
  getNumBlocksAndThreads(k, n, maxBlocks, maxThreads, blocks, threads);
  reduce<T>(n, threads, blocks, k, d_a, d_b);
  CHECK(cudaGetLastError());
  int passes = 1, s = blocks;
  T* in = d_b;
  T* out = d_c;
  while (s > 1) {
    getNumBlocksAndThreads(k, s, maxBlocks, maxThreads, blocks, threads);
    reduce<T>(s, threads, blocks, k, in, out);
    CHECK(cudaGetLastError());
    std::swap(in, out);
    s = blocks;
    ++passes;
  }
  CHECK(cudaDeviceSynchronize());
  T got;
  CHECK(cudaMemcpy(&got, in, sizeof(T), cudaMemcpyDeviceToHost));
  T want = hostSum(h);
  if (!same(got, want)) {
    std::printf("reduce%d<%s> n=%d maxThreads=%d: got %.17g, expected %.17g (%d passes)\n", k,
                typeName(T()), n, maxThreads, static_cast<double>(got),
                static_cast<double>(want), passes);
    return 1;
  }
  return 0;
}

template <class T>
int runType(Rng& rng, const std::vector<int>& sizes, int& cases) {
  int maxN = *std::max_element(sizes.begin(), sizes.end());
  T *d_a, *d_b, *d_c;
  CHECK(cudaMalloc(&d_a, maxN * sizeof(T)));
  CHECK(cudaMalloc(&d_b, maxN * sizeof(T)));
  CHECK(cudaMalloc(&d_c, maxN * sizeof(T)));
  int failures = 0;
  const int configs[][2] = {{256, 64}, {512, 16}, {64, 8}};  // {maxThreads, maxBlocks}
  for (int k = 0; k <= 6; ++k) {
    int c = 0;
    for (int n : sizes) {
      const int* cfg = configs[c++ % 3];
      failures += runOne<T>(rng, k, n, cfg[0], cfg[1], d_a, d_b, d_c);
      ++cases;
    }
  }
  CHECK(cudaFree(d_a));
  CHECK(cudaFree(d_b));
  CHECK(cudaFree(d_c));
  return failures;
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 17));
  int maxN = static_cast<int>(Flag(argc, argv, "max", 70001));
  // Powers of two and not, tiny (one block of one thread) to several passes.
  std::vector<int> sizes = {1, 2, 7, 32, 100, 1000, 1024, 4097, 16384, maxN};
  int cases = 0, failures = 0;
  failures += runType<int>(rng, sizes, cases);
  failures += runType<long long>(rng, sizes, cases);
  failures += runType<float>(rng, sizes, cases);
  failures += runType<double>(rng, sizes, cases);
  std::printf("%d reductions (7 kernels x 4 types x %zu sizes)\n", cases, sizes.size());
  return Finish(failures, "reduction_classic");
}
