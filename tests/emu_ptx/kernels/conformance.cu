// tests/emu_ptx/kernels/conformance.cu - the shapes public programs reduce in, for every width:
// warp collectives and shared memory over 8- to 64-bit values, block reductions in the
// classic sample's shape (grid-stride loop, full-mask then ballot-mask warp sums), cooperative
// groups tile reductions and scans, CUB's block and warp reductions. Instantiated per type below
// (extern "C" names); compiled for compute_75 and compute_90 (where int sums take redux.sync).
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cooperative_groups/scan.h>

#include <cub/block/block_reduce.cuh>
#include <cub/warp/warp_reduce.cuh>

namespace cg = cooperative_groups;

template <class T>
__device__ T* DynShared() {
  extern __shared__ __align__(16) unsigned char conformance_smem[];
  return reinterpret_cast<T*>(conformance_smem);
}

template <class T>
__device__ __forceinline__ T WarpSum(unsigned mask, T v) {
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down_sync(mask, v, o);
  return v;
}
#if __CUDA_ARCH__ >= 800
template <>
__device__ __forceinline__ int WarpSum<int>(unsigned mask, int v) {
  return __reduce_add_sync(mask, v);
}
template <>
__device__ __forceinline__ unsigned WarpSum<unsigned>(unsigned mask, unsigned v) {
  return __reduce_add_sync(mask, v);
}
#endif

// The classic sample's last kernel: each thread sums a grid-stride loop two elements at a
// time, a warp sums with the full mask, warp sums go through shared memory, and the first
// warp's lanes that hold one sum it again with the ballot of themselves as the mask.
template <class T, unsigned kBlock, bool kPow2>
__device__ void ReduceClassic(const T* __restrict__ in, T* __restrict__ out, unsigned n) {
  T* sdata = DynShared<T>();
  const unsigned tid = threadIdx.x;
  unsigned grid = kBlock * gridDim.x;
  unsigned short_by = kBlock & 31;
  short_by = short_by ? 32 - short_by : 0;
  const unsigned mask = 0xffffffffu >> short_by;
  T sum = 0;
  if (kPow2) {
    unsigned i = blockIdx.x * kBlock * 2 + tid;
    grid <<= 1;
    while (i < n) {
      sum += in[i];
      if (i + kBlock < n) sum += in[i + kBlock];
      i += grid;
    }
  } else {
    for (unsigned i = blockIdx.x * kBlock + tid; i < n; i += grid) sum += in[i];
  }
  sum = WarpSum<T>(mask, sum);
  if (tid % warpSize == 0) sdata[tid / warpSize] = sum;
  __syncthreads();
  const unsigned extent = kBlock / warpSize > 0 ? kBlock / warpSize : 1;
  const unsigned ballot = __ballot_sync(mask, tid < extent);
  if (tid < extent) {
    sum = sdata[tid];
    sum = WarpSum<T>(ballot, sum);
  }
  if (tid == 0) out[blockIdx.x] = sum;
}

// Per lane, eight results of warp collectives on v = in[global thread]: shfl down 1, up 3, xor
// 5, idx (lane * 7) & 31, a width-8 xor 2, the full-warp xor-butterfly sum, ballot of v's low bit
// (as T), and match_any's mask of lanes holding the same v (as T).
template <class T>
__device__ void WarpCollectives(const T* in, T* out) {
  const unsigned g = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  const T v = in[g];
  T* o = out + size_t(g) * 8;
  o[0] = __shfl_down_sync(0xffffffffu, v, 1);
  o[1] = __shfl_up_sync(0xffffffffu, v, 3);
  o[2] = __shfl_xor_sync(0xffffffffu, v, 5);
  o[3] = __shfl_sync(0xffffffffu, v, (lane * 7) & 31);
  o[4] = __shfl_xor_sync(0xffffffffu, v, 2, 8);
  T s = v;
  for (int m = 16; m > 0; m /= 2) s += __shfl_xor_sync(0xffffffffu, s, m);
  o[5] = s;
  o[6] = T(__ballot_sync(0xffffffffu, (static_cast<long long>(v) & 1) != 0));
  o[7] = T(__match_any_sync(0xffffffffu, v));
}

// Values of T through shared memory in mixed widths: stored whole, read back as bytes in
// reverse block order, then summed by a tree with a barrier per step.
template <class T>
__device__ void SharedMixed(const T* in, T* reversed, T* sums) {
  T* s = DynShared<T>();
  const unsigned t = threadIdx.x, n = blockDim.x;
  const size_t g = size_t(blockIdx.x) * n + t;
  s[t] = in[g];
  __syncthreads();
  T r;
  const unsigned char* src = reinterpret_cast<const unsigned char*>(&s[n - 1 - t]);
  unsigned char* dst = reinterpret_cast<unsigned char*>(&r);
  for (unsigned k = 0; k < sizeof(T); ++k) dst[k] = src[k];
  reversed[g] = r;
  __syncthreads();
  for (unsigned step = n / 2; step > 0; step /= 2) {
    if (t < step) s[t] += s[t + step];
    __syncthreads();
  }
  if (t == 0) sums[blockIdx.x] = s[0];
}

// cg::reduce over tiles of 32 and of 8, and cg::inclusive_scan over a tile of 16.
template <class T>
__device__ void CgTiles(const T* in, T* sum32, T* sum8, T* scan16) {
  cg::thread_block block = cg::this_thread_block();
  const size_t g = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const T v = in[g];
  auto t32 = cg::tiled_partition<32>(block);
  const T a = cg::reduce(t32, v, cg::plus<T>());
  if (t32.thread_rank() == 0) sum32[g / 32] = a;
  auto t8 = cg::tiled_partition<8>(block);
  const T b = cg::reduce(t8, v, cg::plus<T>());
  if (t8.thread_rank() == 0) sum8[g / 8] = b;
  auto t16 = cg::tiled_partition<16>(block);
  scan16[g] = cg::inclusive_scan(t16, v, cg::plus<T>());
}

// CUB's block reduction of a grid-stride loop, and its warp reduction of partial logical warps
// (valid lanes 0..n%32 of the last warp).
template <class T>
__device__ void CubReduce(const T* in, unsigned n, T* block_sums, T* warp_sums) {
  using BlockReduce = cub::BlockReduce<T, 256>;
  using WarpReduce = cub::WarpReduce<T>;
  __shared__ typename BlockReduce::TempStorage block_tmp;
  __shared__ typename WarpReduce::TempStorage warp_tmp[8];
  T v = 0;
  for (unsigned i = blockIdx.x * 256 + threadIdx.x; i < n; i += 256 * gridDim.x) v += in[i];
  const T total = BlockReduce(block_tmp).Sum(v);
  if (threadIdx.x == 0) block_sums[blockIdx.x] = total;
  const unsigned g = blockIdx.x * 256 + threadIdx.x, warp = threadIdx.x / 32;
  const int valid = int(n > g - threadIdx.x % 32 ? min(32u, n - (g - threadIdx.x % 32)) : 0u);
  if (valid > 0) {
    const T w = WarpReduce(warp_tmp[warp]).Sum(g < n ? in[g] : T(0), valid);
    if (threadIdx.x % 32 == 0) warp_sums[g / 32] = w;
  }
}

#define CONFORMANCE_KERNELS(T, S)                                                             \
  extern "C" __global__ void reduceClassic_##S(const T* in, T* out, unsigned n) {              \
    ReduceClassic<T, 256, true>(in, out, n);                                                   \
  }                                                                                            \
  extern "C" __global__ void reduceClassicNp2_##S(const T* in, T* out, unsigned n) {           \
    ReduceClassic<T, 96, false>(in, out, n);                                                   \
  }                                                                                            \
  extern "C" __global__ void warpCollectives_##S(const T* in, T* out) {                        \
    WarpCollectives<T>(in, out);                                                               \
  }                                                                                            \
  extern "C" __global__ void sharedMixed_##S(const T* in, T* reversed, T* sums) {              \
    SharedMixed<T>(in, reversed, sums);                                                        \
  }                                                                                            \
  extern "C" __global__ void cgTiles_##S(const T* in, T* s32, T* s8, T* scan16) {              \
    CgTiles<T>(in, s32, s8, scan16);                                                           \
  }                                                                                            \
  extern "C" __global__ void cubReduce_##S(const T* in, unsigned n, T* block_sums, T* warp_sums) { \
    CubReduce<T>(in, n, block_sums, warp_sums);                                                \
  }

CONFORMANCE_KERNELS(int, i32)
CONFORMANCE_KERNELS(unsigned, u32)
CONFORMANCE_KERNELS(long long, i64)
CONFORMANCE_KERNELS(unsigned long long, u64)
CONFORMANCE_KERNELS(float, f32)
CONFORMANCE_KERNELS(double, f64)

// Narrow values widened on the way: 8- and 16-bit inputs summed as int and as long long.
extern "C" __global__ void widenSum(const signed char* a, const short* b, int* out32,
                                    long long* out64, unsigned n) {
  long long s64 = 0;
  int s32 = 0;
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    s32 += a[i] + b[i];
    s64 += static_cast<long long>(a[i]) * b[i];
  }
  s32 = cg::reduce(cg::tiled_partition<32>(cg::this_thread_block()), s32, cg::plus<int>());
  s64 = cg::reduce(cg::tiled_partition<32>(cg::this_thread_block()), s64, cg::plus<long long>());
  if (threadIdx.x % 32 == 0) {
    atomicAdd(out32, s32);
    atomicAdd(reinterpret_cast<unsigned long long*>(out64), static_cast<unsigned long long>(s64));
  }
}

// Signed loads straight into 64-bit registers (nvcc emits ld.s32 %rd for a list walk): a list of
// cells summed as long long, and the same cells' 8- and 16-bit fields.
struct Cell {
  int value;
  short half;
  signed char byte;
  const Cell* next;
};
extern "C" __global__ void listSum(const Cell* head, long long* out) {
  long long s = 0, h = 0, b = 0;
  for (const Cell* p = head; p != nullptr; p = p->next) {
    s += p->value;
    h += p->half;
    b += p->byte;
  }
  out[0] = s;
  out[1] = h;
  out[2] = b;
}
