// tests/cuda/kernels/histogram.cu - 64-bin histogram: shared-memory atomics, merged with global
// atomics.
#include <vector>

#include "common.h"

constexpr int kBins = 64;

__global__ void histogram(const unsigned char* data, int n, unsigned* bins) {
  __shared__ unsigned local[kBins];
  for (int b = threadIdx.x; b < kBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i] % kBins], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < kBins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&bins[b], local[b]);
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 30000));
  Rng rng(Flag(argc, argv, "seed", 7));
  std::vector<unsigned char> data(n);
  // Skewed data, so some bins are hot.
  for (auto& d : data) d = static_cast<unsigned char>(rng.Int(0, 4) == 0 ? 7 : rng.Int(0, 256));

  unsigned char* d_data;
  unsigned* d_bins;
  CHECK(cudaMalloc(&d_data, n));
  CHECK(cudaMalloc(&d_bins, kBins * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_data, data.data(), n, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_bins, 0, kBins * sizeof(unsigned)));
  histogram<<<5, 192>>>(d_data, n, d_bins);
  CHECK(cudaGetLastError());
  std::vector<unsigned> bins(kBins), ref(kBins, 0);
  CHECK(cudaMemcpy(bins.data(), d_bins, kBins * sizeof(unsigned), cudaMemcpyDeviceToHost));
  for (unsigned char d : data) ++ref[d % kBins];
  int failures = 0;
  for (int b = 0; b < kBins; ++b) {
    if (bins[b] != ref[b]) {
      std::printf("bin %d: %u, expected %u\n", b, bins[b], ref[b]);
      ++failures;
    }
  }
  CHECK(cudaFree(d_data));
  CHECK(cudaFree(d_bins));
  return Finish(failures, "histogram");
}
