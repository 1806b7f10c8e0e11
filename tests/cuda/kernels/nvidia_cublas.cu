// tests/cuda/kernels/nvidia_cublas.cu - NVIDIA's own cuBLAS (loaded from the toolkit through
// the program's RPATH, as a framework loads it from its own directory) running over Remora's
// driver: an SGEMM against a host reference on random data.
//
// On a GPU it must pass. On the emulated GPU, which runs PTX only, cuBLAS's kernels (machine
// code for real GPUs, PTX newer than the device) cannot load: cublasCreate must fail, and the
// tenant's stderr must name the module the device cannot run, never a silent wrong answer.
#include <cublas_v2.h>

#include <vector>

#include "common.h"

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 96));
  Rng rng(Flag(argc, argv, "seed", 3));
  std::vector<float> a(n * n), b(n * n), c(n * n), want(n * n, 0.0f);
  for (float& v : a) v = rng.Uniform(-1, 1);
  for (float& v : b) v = rng.Uniform(-1, 1);
  for (int j = 0; j < n; ++j)  // column-major, as cuBLAS
    for (int k = 0; k < n; ++k)
      for (int i = 0; i < n; ++i) want[i + j * n] += a[i + k * n] * b[k + j * n];
  cublasHandle_t h;
  cublasStatus_t s = cublasCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::printf("FAIL: cublasCreate -> %d\n", static_cast<int>(s));
    return 1;
  }
  float *da, *db, *dc;
  const size_t bytes = sizeof(float) * n * n;
  CHECK(cudaMalloc(&da, bytes));
  CHECK(cudaMalloc(&db, bytes));
  CHECK(cudaMalloc(&dc, bytes));
  CHECK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  const float one = 1, zero = 0;
  s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n);
  REQUIRE(s == CUBLAS_STATUS_SUCCESS);
  CHECK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int i = 0; i < n * n; ++i) failures += !Near(c[i], want[i], 1e-4);
  cublasDestroy(h);
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dc));
  return Finish(failures, "nvidia_cublas");
}
