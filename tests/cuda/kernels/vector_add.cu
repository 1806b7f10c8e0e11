// tests/cuda/kernels/vector_add.cu - elementwise vector ops: add, saxpy, fused multiply-add.
#include <vector>

#include "common.h"

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void saxpy(float alpha, const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = alpha * x[i] + y[i];
}

__global__ void fma3(const float* a, const float* b, const float* c, float* d, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) d[i] = fmaf(a[i], b[i], c[i]);
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 10000));
  Rng rng(Flag(argc, argv, "seed", 1));
  std::vector<float> a(n), b(n), c(n), out(n);
  for (int i = 0; i < n; ++i) {
    a[i] = rng.Uniform(-10, 10);
    b[i] = rng.Uniform(-10, 10);
    c[i] = rng.Uniform(-10, 10);
  }
  size_t bytes = n * sizeof(float);
  float *da, *db, *dc, *dd;
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMalloc(&dc, bytes));
  CHECK(cudaMalloc(&dd, bytes));
  CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dc, c.data(), bytes, cudaMemcpyHostToDevice));

  int block = 256, grid = (n + block - 1) / block;
  int failures = 0;

  add<<<grid, block>>>(da, db, dd, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dd, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) failures += out[i] != a[i] + b[i];

  const float alpha = 1.5f;
  saxpy<<<7, 128>>>(alpha, da, db, n);  // grid-stride: fewer threads than elements
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), db, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) failures += !Near(out[i], alpha * a[i] + b[i], 1e-6);

  fma3<<<grid, block>>>(da, dc, dc, dd, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), dd, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) failures += out[i] != std::fma(a[i], c[i], c[i]);

  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  CHECK(cudaFree(dd));
  return Finish(failures, "vector_add");
}
