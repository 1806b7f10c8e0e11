// tests/cuda/managed/zero_copy.cu - a kernel reading and writing mapped pinned
// host memory (cudaHostAllocMapped) through cudaHostGetDevicePointer; no copies.
#include "common.h"

__global__ void scale(const int* in, int* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * k + i;
}

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 10000));
  CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  int *h_in = nullptr, *h_out = nullptr;
  cudaError_t e = cudaHostAlloc(&h_in, n * sizeof(int), cudaHostAllocMapped);
  if (e == cudaErrorNotSupported) Unsupported("cudaHostAllocMapped", cudaDevAttrCanMapHostMemory);
  CHECK(e);
  CHECK(cudaHostAlloc(&h_out, n * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  int can_map = 0;
  CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
  REQUIRE(can_map == 1);
  unsigned flags = 0;
  CHECK(cudaHostGetFlags(&flags, h_out));
  REQUIRE(flags == (cudaHostAllocMapped | cudaHostAllocPortable));

  int *d_in = nullptr, *d_out = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_in), h_in, 0));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_out), h_out, 0));
  // Pageable memory is not mapped.
  int pageable = 0;
  void* none = nullptr;
  EXPECT_CUDA(cudaHostGetDevicePointer(&none, &pageable, 0), cudaErrorInvalidValue);
  (void)cudaGetLastError();

  Rng rng(3);
  for (int i = 0; i < n; ++i) {
    h_in[i] = rng.Int(-1000, 1000);
    h_out[i] = 0;
  }
  scale<<<(n + 127) / 128, 128>>>(d_in, d_out, n, 3);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int failures = 0;
  for (int i = 0; i < n; ++i)
    if (h_out[i] != h_in[i] * 3 + i && failures++ < 5)
      std::printf("out[%d] = %d, expected %d\n", i, h_out[i], h_in[i] * 3 + i);
  CHECK(cudaFreeHost(h_in));
  CHECK(cudaFreeHost(h_out));
  return Finish(failures, "zero-copy mapped host memory");
}
