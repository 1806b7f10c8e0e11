// tests/cuda/kernels/symbols.cu - __constant__ and __device__ variables via
// cudaMemcpyToSymbol/FromSymbol.
#include <vector>

#include "common.h"

constexpr int kCoeffs = 16;
__constant__ float c_coeffs[kCoeffs];
__constant__ int c_scale;
__device__ int d_counter;
__device__ float d_table[256];
__device__ int d_initialised = 1234;  // initialiser must reach the device image

// Polynomial in x with the constant coefficients; counts calls in a __device__ variable.
__global__ void poly(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc = 0;
  for (int k = kCoeffs - 1; k >= 0; --k) acc = acc * x[i] + c_coeffs[k];
  y[i] = acc * c_scale;
  atomicAdd(&d_counter, 1);
}

__global__ void fillTable() {
  int i = threadIdx.x;
  d_table[i] = i * 0.5f + d_initialised;
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 3000));
  Rng rng(Flag(argc, argv, "seed", 15));
  float coeffs[kCoeffs];
  for (float& c : coeffs) c = rng.Uniform(-0.5f, 0.5f);
  int scale = 3, zero = 0;
  CHECK(cudaMemcpyToSymbol(c_coeffs, coeffs, sizeof(coeffs)));
  CHECK(cudaMemcpyToSymbol(c_scale, &scale, sizeof(int)));
  CHECK(cudaMemcpyToSymbol(d_counter, &zero, sizeof(int)));

  int failures = 0;
  float back[kCoeffs];
  CHECK(cudaMemcpyFromSymbol(back, c_coeffs, sizeof(back)));
  failures += std::memcmp(back, coeffs, sizeof(back)) != 0;
  float tail[4];  // an offset into the symbol
  CHECK(cudaMemcpyFromSymbol(tail, c_coeffs, sizeof(tail), 12 * sizeof(float)));
  failures += std::memcmp(tail, coeffs + 12, sizeof(tail)) != 0;

  std::vector<float> x(n), y(n);
  for (float& v : x) v = rng.Uniform(-1, 1);
  float *dx, *dy;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dy, n * sizeof(float)));
  CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  poly<<<(n + 255) / 256, 256>>>(dx, dy, n);
  CHECK(cudaGetLastError());
  fillTable<<<1, 256>>>();
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i) {
    float acc = 0;
    for (int k = kCoeffs - 1; k >= 0; --k) acc = acc * x[i] + coeffs[k];
    failures += !Near(y[i], acc * scale, 1e-5);
  }
  int counter = -1;
  CHECK(cudaMemcpyFromSymbol(&counter, d_counter, sizeof(int)));
  if (counter != n) std::printf("d_counter %d, expected %d\n", counter, n);
  failures += counter != n;

  std::vector<float> table(256);
  CHECK(cudaMemcpyFromSymbol(table.data(), d_table, 256 * sizeof(float)));
  for (int i = 0; i < 256; ++i) failures += table[i] != i * 0.5f + 1234;

  // The address of a __device__ variable works like any device pointer.
  float* table_ptr = nullptr;
  size_t table_size = 0;
  CHECK(cudaGetSymbolAddress(reinterpret_cast<void**>(&table_ptr), d_table));
  CHECK(cudaGetSymbolSize(&table_size, d_table));
  failures += table_size != 256 * sizeof(float);
  float t10;
  CHECK(cudaMemcpy(&t10, table_ptr + 10, sizeof(float), cudaMemcpyDeviceToHost));
  failures += t10 != 5.0f + 1234;

  CHECK(cudaFree(dx));
  CHECK(cudaFree(dy));
  return Finish(failures, "symbols");
}
