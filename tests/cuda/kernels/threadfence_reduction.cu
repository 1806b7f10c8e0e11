// tests/cuda/kernels/threadfence_reduction.cu - the single-pass reduction of the classic
// "threadFenceReduction" sample: every block writes its partial sum, makes it visible with
// __threadfence(), takes a ticket from a __device__ retirement counter with atomicInc, and the
// block that draws the last ticket sums all partial sums and resets the counter. The counter
// is reset from the host with cudaMemcpyToSymbol before each run, as the sample does.
//
// Checked on random data against a host sum, for several sizes and block sizes (a switch over
// the compile-time block size), for int (exact) and float; also that exactly one block per
// run saw itself last, and that the last block left the counter at zero.
//
// Flags: -seed <n>, -runs <repetitions per configuration> (default 3).
#include <cooperative_groups.h>

#include <vector>

#include "common.h"

namespace cg = cooperative_groups;

template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return reinterpret_cast<T*>(__smem);
  }
};

// Sums the block's values (mySum of each thread) into sdata[0]: 32-lane tiles reduce through
// volatile shared memory (warp-synchronous, synced per tile), then thread 0 adds the tiles.
template <class T, unsigned int blockSize>
__device__ void reduceBlock(volatile T* sdata, T mySum, const unsigned int tid,
                            cg::thread_block cta) {
  cg::thread_block_tile<32> tile32 = cg::tiled_partition<32>(cta);
  sdata[tid] = mySum;
  cg::sync(tile32);
  const int VEC = 32;
  const int vid = tid & (VEC - 1);
  T beta = mySum;
  T temp;
  for (int i = VEC / 2; i > 0; i >>= 1) {
    if (vid < i) {
      temp = sdata[tid + i];
      beta += temp;
      sdata[tid] = beta;
    }
    cg::sync(tile32);
  }
  cg::sync(cta);
  if (cta.thread_rank() == 0) {
    beta = 0;
    for (int i = 0; i < blockSize; i += VEC) beta += sdata[i];
    sdata[0] = beta;
  }
  cg::sync(cta);
}

// Each block sums a grid-strided share of g_idata (two elements per step when n is a power of
// two) and writes it to g_odata[blockIdx.x].
template <class T, unsigned int blockSize, bool nIsPow2>
__device__ void reduceBlocks(const T* g_idata, T* g_odata, unsigned int n, cg::thread_block cta) {
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int i = blockIdx.x * (blockSize * 2) + threadIdx.x;
  unsigned int gridSize = blockSize * 2 * gridDim.x;
  T mySum = 0;
  while (i < n) {
    mySum += g_idata[i];
    if (nIsPow2 || i + blockSize < n) mySum += g_idata[i + blockSize];
    i += gridSize;
  }
  reduceBlock<T, blockSize>(sdata, mySum, tid, cta);
  if (tid == 0) g_odata[blockIdx.x] = sdata[0];
}

// Blocks that have finished; the last one to finish sums the partial sums.
__device__ unsigned int retirementCount = 0;
// How many blocks saw themselves last (must be exactly one per launch with gridDim.x > 1).
__device__ unsigned int lastBlocks = 0;

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduceSinglePass(const T* g_idata, T* g_odata, unsigned int n) {
  cg::thread_block cta = cg::this_thread_block();
  reduceBlocks<T, blockSize, nIsPow2>(g_idata, g_odata, n, cta);

  if (gridDim.x > 1) {
    const unsigned int tid = threadIdx.x;
    __shared__ bool amLast;
    T* smem = SharedMemory<T>();
    // Thread 0 of each block, once its partial sum is visible to every other block, takes a
    // ticket; the block with the last ticket reduces.
    if (tid == 0) {
      __threadfence();
      unsigned int ticket = atomicInc(&retirementCount, gridDim.x);
      amLast = (ticket == gridDim.x - 1);
    }
    cg::sync(cta);
    if (amLast) {
      unsigned int i = tid;
      T mySum = 0;
      while (i < gridDim.x) {
        mySum += g_odata[i];
        i += blockSize;
      }
      reduceBlock<T, blockSize>(smem, mySum, tid, cta);
      if (tid == 0) {
        g_odata[0] = smem[0];
        atomicAdd(&lastBlocks, 1u);
        // Reset for the next launch, as the sample does.
        retirementCount = 0;
      }
    }
  }
}

bool isPow2(unsigned int x) { return ((x & (x - 1)) == 0); }

#define SP_CASE(B)                                                                          \
  case B:                                                                                   \
    if (pow2)                                                                               \
      reduceSinglePass<T, B, true><<<blocks, threads, smemSize>>>(d_idata, d_odata, size);  \
    else                                                                                    \
      reduceSinglePass<T, B, false><<<blocks, threads, smemSize>>>(d_idata, d_odata, size); \
    break;

template <class T>
void reduceSinglePassLaunch(int size, int threads, int blocks, const T* d_idata, T* d_odata) {
  int smemSize = threads * sizeof(T);
  bool pow2 = isPow2(size);
  switch (threads) {
    SP_CASE(512)
    SP_CASE(256)
    SP_CASE(128)
    SP_CASE(64)
    SP_CASE(32)
  }
}

// The sample's host helper.
cudaError_t setRetirementCount(unsigned int retCnt) {
  return cudaMemcpyToSymbol(retirementCount, &retCnt, sizeof(unsigned int), 0,
                            cudaMemcpyHostToDevice);
}

template <class T>
T hostSum(const std::vector<T>& v);
template <>
int hostSum<int>(const std::vector<int>& v) {
  long long s = 0;
  for (int x : v) s += x;
  return static_cast<int>(s);
}
template <>
float hostSum<float>(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return static_cast<float>(s);
}

void fill(Rng& rng, std::vector<int>& v) {
  for (int& x : v) x = rng.Int(-100000, 100000);
}
void fill(Rng& rng, std::vector<float>& v) {
  for (float& x : v) x = rng.Uniform(-1.0f, 1.0f);
}
bool same(int got, int want) { return got == want; }
bool same(float got, float want) { return Near(got, want, 1e-4); }

template <class T>
int runConfig(Rng& rng, int n, int threads, int maxBlocks, int runs, const char* type) {
  int blocks = std::min(maxBlocks, (n + threads * 2 - 1) / (threads * 2));
  T *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, blocks * sizeof(T)));
  int failures = 0;
  std::vector<T> h(n);
  for (int r = 0; r < runs; ++r) {
    fill(rng, h);
    CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    // A value the host wrote must be read back before the reset (the symbol is really there).
    unsigned int probe = static_cast<unsigned int>(rng.Int(1, 1 << 30)), back = 0;
    CHECK(cudaMemcpyToSymbol(retirementCount, &probe, sizeof(probe)));
    CHECK(cudaMemcpyFromSymbol(&back, retirementCount, sizeof(back)));
    if (back != probe) {
      std::printf("retirementCount read back %u, wrote %u\n", back, probe);
      ++failures;
    }
    CHECK(setRetirementCount(0));
    unsigned int zero = 0;
    CHECK(cudaMemcpyToSymbol(lastBlocks, &zero, sizeof(zero)));

    reduceSinglePassLaunch<T>(n, threads, blocks, d_in, d_out);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());

    T got;
    unsigned int last = 0, count = 0;
    CHECK(cudaMemcpy(&got, d_out, sizeof(T), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpyFromSymbol(&last, lastBlocks, sizeof(last)));
    CHECK(cudaMemcpyFromSymbol(&count, retirementCount, sizeof(count)));
    T want = hostSum(h);
    unsigned int wantLast = blocks > 1 ? 1 : 0;
    if (!same(got, want) || last != wantLast || count != 0) {
      std::printf("%s n=%d threads=%d blocks=%d run %d: sum %.9g expected %.9g, "
                  "last blocks %u expected %u, counter left at %u\n",
                  type, n, threads, blocks, r, static_cast<double>(got),
                  static_cast<double>(want), last, wantLast, count);
      ++failures;
    }
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return failures;
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 23));
  int runs = static_cast<int>(Flag(argc, argv, "runs", 3));
  // {n, threads, maxBlocks}: powers of two and not, one block and many.
  const int configs[][3] = {{1 << 16, 128, 64}, {100003, 256, 64}, {4096, 512, 4},
                            {777, 32, 16},      {50000, 64, 48},   {300, 128, 64}};
  int failures = 0, cases = 0;
  for (const auto& c : configs) {
    failures += runConfig<int>(rng, c[0], c[1], c[2], runs, "int");
    failures += runConfig<float>(rng, c[0], c[1], c[2], runs, "float");
    cases += 2 * runs;
  }
  std::printf("%d single-pass reductions\n", cases);
  return Finish(failures, "threadfence_reduction");
}
