// tests/cuda/kernels/dynamic_shared.cu - extern __shared__ arrays sized at launch, carved into two
// arrays.
#include <vector>

#include "common.h"

// Reverses each block's slice through dynamic shared memory.
__global__ void reverseBlocks(const int* in, int* out, int n) {
  extern __shared__ int tile[];
  int base = blockIdx.x * blockDim.x;
  int i = base + threadIdx.x;
  if (i < n) tile[threadIdx.x] = in[i];
  __syncthreads();
  int count = min(static_cast<int>(blockDim.x), n - base);
  if (static_cast<int>(threadIdx.x) < count)
    out[base + threadIdx.x] = tile[count - 1 - threadIdx.x];
}

// One dynamic buffer split into a double array followed by a float array.
__global__ void splitBuffers(const float* in, double* out, int n) {
  extern __shared__ double smem[];
  double* sums = smem;
  float* vals = reinterpret_cast<float*>(smem + blockDim.x);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  vals[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  int left = (threadIdx.x + blockDim.x - 1) % blockDim.x;
  sums[threadIdx.x] = static_cast<double>(vals[threadIdx.x]) + vals[left];
  __syncthreads();
  if (i < n) out[i] = sums[threadIdx.x];
}

int main(int argc, char** argv) {
  int n = static_cast<int>(Flag(argc, argv, "n", 5000));
  int block = static_cast<int>(Flag(argc, argv, "block", 96));
  Rng rng(Flag(argc, argv, "seed", 14));
  std::vector<int> in(n), out(n);
  std::vector<float> fin(n);
  std::vector<double> dout(n);
  for (int& v : in) v = rng.Int(0, 1 << 30);
  for (float& v : fin) v = rng.Uniform(-1, 1);

  int *d_in, *d_out;
  float* d_fin;
  double* d_dout;
  CHECK(cudaMalloc(&d_in, n * sizeof(int)));
  CHECK(cudaMalloc(&d_out, n * sizeof(int)));
  CHECK(cudaMalloc(&d_fin, n * sizeof(float)));
  CHECK(cudaMalloc(&d_dout, n * sizeof(double)));
  CHECK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_fin, fin.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  int grid = (n + block - 1) / block;
  reverseBlocks<<<grid, block, block * sizeof(int)>>>(d_in, d_out, n);
  CHECK(cudaGetLastError());
  splitBuffers<<<grid, block, block*(sizeof(double) + sizeof(float))>>>(d_fin, d_dout, n);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(dout.data(), d_dout, n * sizeof(double), cudaMemcpyDeviceToHost));

  int failures = 0;
  for (int b = 0; b < grid; ++b) {
    int base = b * block, count = std::min(block, n - base);
    for (int t = 0; t < count; ++t) {
      failures += out[base + t] != in[base + count - 1 - t];
      int left = base + (t + block - 1) % block;
      double lv = left < n ? fin[left] : 0.0;
      failures += dout[base + t] != static_cast<double>(fin[base + t]) + lv;
    }
  }
  CHECK(cudaFree(d_in));
  CHECK(cudaFree(d_out));
  CHECK(cudaFree(d_fin));
  CHECK(cudaFree(d_dout));
  return Finish(failures, "dynamic_shared");
}
