// tests/cuda/kernels/blas_test.h - what the cuBLAS test programs share: their failure count,
// tolerances, host data with a device copy, and the comparison against double-precision loops.
#pragma once

#include <cublas_v2.h>

#include <vector>

#include "common.h"

namespace blas_test {

inline int failures = 0;

#define BLAS_OK(call) STATUS_OK(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusName)
#define EXPECT_BLAS(call, expected) EXPECT_STATUS(call, expected, cublasGetStatusName)

// The relative tolerance of a result in T against its double-precision reference.
template <typename T>
double Tol() {
  return sizeof(T) == 4 ? 2e-4 : 1e-10;
}

// Host data (uniform in [-scale, scale]) with a device copy. The routines run on a
// non-blocking stream: Up and Down wait for the device first.
template <typename T>
struct Buf {
  std::vector<T> h;
  T* d = nullptr;
  Buf(size_t n, Rng& rng, double scale = 1) : h(n) {
    for (T& v : h) v = static_cast<T>(scale * rng.UniformD(-1, 1));
    CHECK(cudaMalloc(&d, n * sizeof(T) + 1));
    Up();
  }
  ~Buf() { cudaFree(d); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  void Up() {
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  std::vector<T> Down() const {
    CHECK(cudaDeviceSynchronize());
    std::vector<T> out(h.size());
    CHECK(cudaMemcpy(out.data(), d, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    return out;
  }
};

// Counts a failure unless every got[i] is within `tol` (relative) of want[i]; prints the first.
template <typename T>
void Compare(const char* what, const std::vector<T>& got, const std::vector<double>& want,
             double tol) {
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!Near(static_cast<double>(got[i]), want[i], tol) && bad++ < 3)
      std::printf("  %s[%zu] = %.10g, want %.10g\n", what, i, static_cast<double>(got[i]), want[i]);
  if (bad) {
    std::printf("FAIL %s: %d of %zu wrong\n", what, bad, want.size());
    ++failures;
  }
}

}  // namespace blas_test
