// tests/cuda/kernels/matmul_tiled.cu - C = A * B with 16x16 tiles staged in shared memory.
#include <vector>

#include "common.h"

constexpr int kTile = 16;

// A is m x k, B is k x n, C is m x n, all row-major; any sizes (edges are padded with 0).
__global__ void matmul(const float* A, const float* B, float* C, int m, int n, int k) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  int row = blockIdx.y * kTile + threadIdx.y;
  int col = blockIdx.x * kTile + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < k; t += kTile) {
    int ak = t + threadIdx.x, bk = t + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? A[row * k + ak] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? B[bk * n + col] : 0.0f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += As[threadIdx.y][i] * Bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) C[row * n + col] = acc;
}

int main(int argc, char** argv) {
  int m = static_cast<int>(Flag(argc, argv, "m", 48));
  int n = static_cast<int>(Flag(argc, argv, "n", 40));
  int k = static_cast<int>(Flag(argc, argv, "k", 37));
  Rng rng(Flag(argc, argv, "seed", 2));
  std::vector<float> a(m * k), b(k * n), c(m * n);
  for (float& x : a) x = rng.Uniform(-1, 1);
  for (float& x : b) x = rng.Uniform(-1, 1);

  float *da, *db, *dc;
  CHECK(cudaMalloc(&da, a.size() * sizeof(float)));
  CHECK(cudaMalloc(&db, b.size() * sizeof(float)));
  CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  CHECK(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));

  dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  matmul<<<grid, block>>>(da, db, dc, m, n, k);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));

  int failures = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int p = 0; p < k; ++p) ref += static_cast<double>(a[i * k + p]) * b[p * n + j];
      if (!Near(c[i * n + j], ref, 1e-4)) {
        if (failures < 5) std::printf("C[%d][%d] = %f, expected %f\n", i, j, c[i * n + j], ref);
        ++failures;
      }
    }
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  return Finish(failures, "matmul_tiled");
}
