// tests/cuda/kernels/reduce_shared.cu - sum and max by tree reduction in shared memory.
#include <vector>

#include "common.h"

constexpr int kBlock = 256;

// Each block writes the sum and max of its grid-stride slice.
__global__ void reduceBlocks(const int* in, int n, long long* sums, int* maxes) {
  __shared__ long long s_sum[kBlock];
  __shared__ int s_max[kBlock];
  long long sum = 0;
  int mx = INT_MIN;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    sum += in[i];
    mx = max(mx, in[i]);
  }
  s_sum[threadIdx.x] = sum;
  s_max[threadIdx.x] = mx;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      s_sum[threadIdx.x] += s_sum[threadIdx.x + stride];
      s_max[threadIdx.x] = max(s_max[threadIdx.x], s_max[threadIdx.x + stride]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    sums[blockIdx.x] = s_sum[0];
    maxes[blockIdx.x] = s_max[0];
  }
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 20000));
  int blocks = static_cast<int>(Flag(argc, argv, "blocks", 8));
  Rng rng(Flag(argc, argv, "seed", 3));
  std::vector<int> in(n);
  for (int& x : in) x = rng.Int(-1000000, 1000000);

  int *d_in, *d_max;
  long long* d_sum;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_sum, blocks * sizeof(long long)));
  CHECK(cudaMalloc(&d_max, blocks * sizeof(int)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  reduceBlocks<<<blocks, kBlock>>>(d_in, n, d_sum, d_max);
  CHECK(cudaGetLastError());
  std::vector<long long> sums(blocks);
  std::vector<int> maxes(blocks);
  CHECK(cudaMemcpy(sums.data(), d_sum, blocks * sizeof(long long), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(maxes.data(), d_max, blocks * sizeof(int), cudaMemcpyDeviceToHost));

  long long sum = 0, ref_sum = 0;
  int mx = INT_MIN, ref_max = INT_MIN;
  for (int b = 0; b < blocks; ++b) {
    sum += sums[b];
    mx = std::max(mx, maxes[b]);
  }
  for (int x : in) {
    ref_sum += x;
    ref_max = std::max(ref_max, x);
  }
  std::printf("sum %lld (expected %lld), max %d (expected %d)\n", sum, ref_sum, mx, ref_max);
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_sum));
  CHECK(cudaFree(d_max));
  return Finish((sum != ref_sum) + (mx != ref_max), "reduce_shared");
}
