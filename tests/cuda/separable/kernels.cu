// tests/cuda/separable/kernels.cu - kernels that call __device__ functions and use
// extern __device__/__constant__ data defined in device_math.cu.
#include "separable.cuh"

__global__ void saxpy(int n, const float* x, float* y) {
  countLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = axpy(g_alpha, x[i], y[i]);
}

// C[M x N] = A[M x K] * B[K x N], row-major, any sizes: 32 x 32 tiles staged in shared memory.
__global__ void matmulTiled(const float* A, const float* B, float* C, int M, int K, int N) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  countLaunch();
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + kTile - 1) / kTile; ++t) {
    int ka = t * kTile + threadIdx.x;
    int kb = t * kTile + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (kb < K && col < N) ? B[kb * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < kTile; ++k) acc = axpy(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

// g_total += sum of mix(in[i]): a grid-stride loop, a warp shuffle sum, one atomic per warp.
__global__ void sumMixed(const unsigned int* in, int n) {
  countLaunch();
  unsigned long long v = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += mix(in[i]);
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) atomicAdd(&g_total, v);
}

// out[i] = in[i] * c_weights[i % kWeights].
__global__ void weighted(const int* in, int* out, int n) {
  countLaunch();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * c_weights[i % kWeights];
}
