// tests/emu_ptx/kernels/async.cu - asynchronous copies to shared memory (cp.async, mbarrier):
// cooperative_groups::memcpy_async, cuda::memcpy_async with cuda::barrier, cuda::pipeline
// (thread and block scope, several stages) and the __pipeline_* intrinsics. Needs compute_80+.
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda_pipeline.h>
#include <cuda/barrier>
#include <cuda/pipeline>
namespace cg = cooperative_groups;

// Each block copies its `chunk` floats (a multiple of 4: 16-byte pieces) of `in` to shared memory
// with cg::memcpy_async, waits, and writes them back reversed within the chunk, times 2.
extern "C" __global__ void cgCopyReverse(const float* in, float* out, int chunk) {
  extern __shared__ float smem[];
  cg::thread_block block = cg::this_thread_block();
  const float* src = in + size_t(blockIdx.x) * chunk;
  cg::memcpy_async(block, smem, src, sizeof(float) * chunk);
  cg::wait(block);
  for (int i = threadIdx.x; i < chunk; i += blockDim.x)
    out[size_t(blockIdx.x) * chunk + i] = 2.f * smem[chunk - 1 - i];
}

// Two batches in flight: wait_prior<1> waits for the first only.
extern "C" __global__ void cgCopyTwoBatches(const int* a, const int* b, int* out, int n) {
  extern __shared__ int sh[];
  cg::thread_block block = cg::this_thread_block();
  cg::memcpy_async(block, sh, a + size_t(blockIdx.x) * n, sizeof(int) * n);
  cg::memcpy_async(block, sh + n, b + size_t(blockIdx.x) * n, sizeof(int) * n);
  cg::wait_prior<1>(block);
  int s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += sh[i];
  cg::wait(block);
  for (int i = threadIdx.x; i < n; i += blockDim.x) s ^= sh[n + i] * 3;
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

// cuda::memcpy_async by the whole block onto a block-scope cuda::barrier, then one element per
// thread onto the same barrier in a second phase.
extern "C" __global__ void barrierCopy(const float* in, float* out, int chunk) {
  extern __shared__ float smem[];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  cg::thread_block block = cg::this_thread_block();
  if (block.thread_rank() == 0) init(&bar, block.size());
  block.sync();
  const float* src = in + size_t(blockIdx.x) * chunk;
  cuda::memcpy_async(block, smem, src, cuda::aligned_size_t<16>(sizeof(float) * chunk), bar);
  bar.arrive_and_wait();
  float sum = 0;
  for (int i = 0; i < chunk; ++i) sum += smem[i];
  block.sync();
  // Phase 2: each thread copies one element (4 bytes) of the next chunk and waits on a token.
  int t = threadIdx.x;
  if (t < chunk) cuda::memcpy_async(&smem[t], &src[t] + chunk, sizeof(float), bar);
  auto token = bar.arrive();
  bar.wait(std::move(token));
  float mine = t < chunk ? smem[chunk - 1 - t] : 0.f;
  out[blockIdx.x * blockDim.x + t] = sum + mine;
}

// Tiled matrix multiply C = A * B (n x n, n a multiple of kTile) with a kStages-deep
// thread-scope cuda::pipeline: tiles for later k steps are in flight while one is consumed, as in
// NVIDIA's globalToShmemAsyncCopy sample (MatrixMulAsyncCopyMultiStageLargeChunk).
constexpr int kTile = 16;
constexpr int kStages = 3;
extern "C" __global__ void matmulPipeline(const float* A, const float* B, float* C, int n) {
  __shared__ alignas(16) float As[kStages][kTile][kTile];
  __shared__ alignas(16) float Bs[kStages][kTile][kTile];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx;
  int steps = n / kTile;
  auto fetch = [&](int step) {
    int s = step % kStages;
    pipe.producer_acquire();
    cuda::memcpy_async(&As[s][ty][tx], &A[row * n + step * kTile + tx], sizeof(float), pipe);
    cuda::memcpy_async(&Bs[s][ty][tx], &B[(step * kTile + ty) * n + col], sizeof(float), pipe);
    pipe.producer_commit();
  };
  for (int f = 0; f < kStages - 1 && f < steps; ++f) fetch(f);
  float acc = 0;
  for (int step = 0; step < steps; ++step) {
    if (step + kStages - 1 < steps) fetch(step + kStages - 1);
    // Wait for this step's tile; later stages may still be in flight.
    constexpr int kAhead = kStages - 1;
    int ahead = steps - 1 - step < kAhead ? steps - 1 - step : kAhead;
    if (ahead >= 2)
      cuda::pipeline_consumer_wait_prior<2>(pipe);
    else if (ahead == 1)
      cuda::pipeline_consumer_wait_prior<1>(pipe);
    else
      cuda::pipeline_consumer_wait_prior<0>(pipe);
    __syncthreads();
    int s = step % kStages;
    for (int k = 0; k < kTile; ++k) acc = fmaf(As[s][ty][k], Bs[s][k][tx], acc);
    __syncthreads();
    pipe.consumer_release();
  }
  C[row * n + col] = acc;
}

// A block-scope pipeline with shared state: the last warp produces (16-byte pieces),
// the other warps consume, over `nchunks` chunks and 2 stages; the stages' mbarriers make the
// consumers spin in try_wait while the producer warp has not yet run.
constexpr int kChunk = 256;  // floats per chunk
extern "C" __global__ void pipelineProducerConsumer(const float* in, float* out, int nchunks) {
  constexpr int stages = 2;
  __shared__ alignas(16) float buf[stages][kChunk];
  __shared__ cuda::pipeline_shared_state<cuda::thread_scope_block, stages> state;
  cg::thread_block block = cg::this_thread_block();
  const bool producer = threadIdx.x >= blockDim.x - 32;  // the last warp: consumers run first
  const auto role = producer ? cuda::pipeline_role::producer : cuda::pipeline_role::consumer;
  auto pipe = cuda::make_pipeline(block, &state, role);
  const float* src = in + size_t(blockIdx.x) * nchunks * kChunk;
  float* dst = out + size_t(blockIdx.x) * nchunks * kChunk;
  if (producer) {
    for (int c = 0; c < nchunks; ++c) {
      pipe.producer_acquire();
      for (int i = (threadIdx.x % 32) * 4; i < kChunk; i += 32 * 4)
        cuda::memcpy_async(&buf[c % stages][i], &src[c * kChunk + i], cuda::aligned_size_t<16>(16),
                           pipe);
      pipe.producer_commit();
    }
  } else {
    int nc = blockDim.x - 32, t = threadIdx.x;
    for (int c = 0; c < nchunks; ++c) {
      pipe.consumer_wait();
      for (int i = t; i < kChunk; i += nc) dst[c * kChunk + i] = buf[c % stages][i] + float(c);
      pipe.consumer_release();
    }
  }
}

// __pipeline_* intrinsics: per thread, copies of 4, 8 and 16 bytes; the 16-byte copy reads
// only 16 - zfill source bytes and zero-fills the rest. Two commits, waited in order.
extern "C" __global__ void pipelinePrimitives(const int4* in, int4* out, const int* zfill, int n) {
  __shared__ int4 a[128], b[128];
  __shared__ int2 c[128];
  __shared__ int d[128];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  if (i >= n) return;
  a[t] = make_int4(-1, -1, -1, -1);
  __pipeline_memcpy_async(&a[t], &in[i], sizeof(int4), zfill[i]);
  __pipeline_commit();
  __pipeline_memcpy_async(&b[t], &in[(i + 1) % n], sizeof(int4));
  __pipeline_memcpy_async(&c[t], reinterpret_cast<const int2*>(&in[(i + 2) % n]), sizeof(int2));
  __pipeline_memcpy_async(&d[t], reinterpret_cast<const int*>(&in[(i + 3) % n]) + 3, sizeof(int));
  __pipeline_commit();
  __pipeline_wait_prior(1);
  int4 r = a[t];
  __pipeline_wait_prior(0);
  out[i * 3 + 0] = r;
  out[i * 3 + 1] = b[t];
  out[i * 3 + 2] = make_int4(c[t].x, c[t].y, d[t], 0);
}

// cuda::barrier used directly, the block's warps spinning on each other: thread t arrives
// only after it has published a value; every thread then reads all values. Repeated `rounds`
// times on one barrier (phases alternate parity).
extern "C" __global__ void barrierPhases(const int* in, int* out, int rounds) {
  __shared__ int vals[256];
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  int t = threadIdx.x, nt = blockDim.x;
  if (t == 0) init(&bar, nt);
  __syncthreads();
  int acc = 0;
  for (int r = 0; r < rounds; ++r) {
    vals[t] = in[(blockIdx.x * nt + t) * rounds + r];
    bar.arrive_and_wait();
    acc = acc * 31 + vals[(t + r + 1) % nt];
    bar.arrive_and_wait();
  }
  out[blockIdx.x * nt + t] = acc;
}
