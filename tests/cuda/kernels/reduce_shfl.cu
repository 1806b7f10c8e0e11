// tests/cuda/kernels/reduce_shfl.cu - warp reductions with __shfl_down_sync, combined by atomicAdd.
#include <vector>

#include "common.h"

__inline__ __device__ float warpSum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_down_sync(0xffffffff, v, offset);
  return v;
}

__inline__ __device__ unsigned long long warpSumU64(unsigned long long v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffff, v, offset);
  return v;
}

// Sums a float and an integer array; one atomicAdd per warp.
__global__ void sumKernel(const float* x, const unsigned* y, int n, float* fsum,
                          unsigned long long* usum) {
  float f = 0;
  unsigned long long u = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    f += x[i];
    u += y[i];
  }
  f = warpSum(f);
  u = warpSumU64(u);
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(fsum, f);
    atomicAdd(usum, u);
  }
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 30000));
  Rng rng(Flag(argc, argv, "seed", 4));
  std::vector<float> x(n);
  std::vector<unsigned> y(n);
  double ref_f = 0;
  unsigned long long ref_u = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = rng.Uniform(0, 1);
    y[i] = static_cast<unsigned>(rng.Next());
    ref_f += x[i];
    ref_u += y[i];
  }
  float* dx;
  unsigned* dy;
  float* dfs;
  unsigned long long* dus;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&dfs, sizeof(float)));
  CHECK(cudaMalloc(&dus, sizeof(unsigned long long)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, y.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dfs, 0, sizeof(float)));
  CHECK(cudaMemset(dus, 0, sizeof(unsigned long long)));
  sumKernel<<<6, 128>>>(dx, dy, n, dfs, dus);
  CHECK(cudaGetLastError());
  float f;
  unsigned long long u;
  CHECK(cudaMemcpy(&f, dfs, sizeof(f), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(&u, dus, sizeof(u), cudaMemcpyDeviceToHost));
  std::printf("float sum %f (expected %f), u64 sum %llu (expected %llu)\n", f, ref_f, u, ref_u);
  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  CHECK(cudaFree(dfs));
  CHECK(cudaFree(dus));
  return Finish(!Near(f, ref_f, 1e-4) + (u != ref_u), "reduce_shfl");
}
