// tests/cuda/kernels/templates.cu - templated kernels and device functors over int, float and
// double.
#include <vector>

#include "common.h"

template <typename T>
struct Square {
  __device__ __host__ T operator()(T v) const { return v * v; }
};
template <typename T>
struct AddConst {
  T c;
  __device__ __host__ T operator()(T v) const { return v + c; }
};

template <typename T, typename F>
__global__ void mapKernel(const T* in, T* out, int n, F f) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = f(in[i]);
}

// Dot product with the block size as a template parameter.
template <typename T, int kBlock>
__global__ void dot(const T* a, const T* b, int n, T* result) {
  __shared__ T partial[kBlock];
  T sum = 0;
  for (int i = threadIdx.x; i < n; i += kBlock) sum += a[i] * b[i];
  partial[threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    T total = 0;
    for (int t = 0; t < kBlock; ++t) total += partial[t];
    *result = total;
  }
}

template <typename T, typename F>
int CheckMap(int n, Rng& rng, F f, double tol, const char* what) {
  std::vector<T> in(n), out(n);
  for (T& v : in) v = static_cast<T>(rng.Int(-1000, 1000)) / static_cast<T>(4);
  T *d_in, *d_out;
  CHECK(cudaMalloc(&d_in, n * sizeof(T)));
  CHECK(cudaMalloc(&d_out, n * sizeof(T)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  mapKernel<<<(n + 127) / 128, 128>>>(d_in, d_out, n, f);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(T), cudaMemcpyDeviceToHost));
  int failures = 0;
  for (int i = 0; i < n; ++i)
    failures += !Near(static_cast<double>(out[i]), static_cast<double>(f(in[i])), tol);
  if (failures) std::printf("%s: %d mismatches\n", what, failures);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  return failures;
}

template <typename T, int kBlock>
int CheckDot(int n, Rng& rng, double tol) {
  std::vector<T> a(n), b(n);
  double ref = 0;
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<T>(rng.Int(-50, 50));
    b[i] = static_cast<T>(rng.Int(-50, 50));
    ref += static_cast<double>(a[i]) * b[i];
  }
  T *da, *db, *dr, r;
  CHECK(cudaMalloc(&da, n * sizeof(T)));
  CHECK(cudaMalloc(&db, n * sizeof(T)));
  CHECK(cudaMalloc(&dr, sizeof(T)));
  CHECK(cudaMemcpy(da, a.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(db, b.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  dot<T, kBlock><<<1, kBlock>>>(da, db, n, dr);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(&r, dr, sizeof(T), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(da));
  CHECK(cudaFree(db));
  CHECK(cudaFree(dr));
  if (!Near(static_cast<double>(r), ref, tol)) {
    std::printf("dot<%d>: %f, expected %f\n", kBlock, static_cast<double>(r), ref);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 2000));
  Rng rng(Flag(argc, argv, "seed", 13));
  int failures = 0;
  failures += CheckMap<int>(n, rng, Square<int>(), 0, "Square<int>");
  failures += CheckMap<float>(n, rng, Square<float>(), 1e-6, "Square<float>");
  failures += CheckMap<double>(n, rng, AddConst<double>{0.5}, 0, "AddConst<double>");
  failures += CheckMap<long long>(n, rng, AddConst<long long>{1ll << 40}, 0, "AddConst<long long>");
  failures += CheckDot<int, 64>(n, rng, 0);
  failures += CheckDot<float, 128>(n, rng, 1e-6);
  failures += CheckDot<double, 32>(n, rng, 0);
  return Finish(failures, "templates");
}
