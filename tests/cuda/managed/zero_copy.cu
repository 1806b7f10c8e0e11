// tests/cuda/managed/zero_copy.cu - a kernel reading and writing mapped pinned
// host memory (cudaHostAllocMapped) through cudaHostGetDevicePointer; no copies. A large
// mapped buffer comes first, so the small ones lie past its first 64 MiB, and the kernel
// also runs over a range of it across that mark (Remora page-locks its arena in chunks of
// 64 MiB as the program allocates). Then memory from malloc, registered with cudaHostRegister:
// mapped through cudaHostGetDevicePointer, copied to and from, kept when unregistered.
#include <cstdlib>
#include <vector>

#include "common.h"

__global__ void scale(const int* in, int* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * k + i;
}

// malloc'd memory (from an odd offset), registered mapped: a kernel scales it in place through
// its device pointer, copies go to and from it, and it keeps its contents once unregistered.
int Registered(int n, Rng& rng) {
  char* raw = static_cast<char*>(std::malloc(n * sizeof(int) + 64));
  REQUIRE(raw != nullptr);
  int* h = reinterpret_cast<int*>(raw + 12);
  std::vector<int> want(n);
  for (int i = 0; i < n; ++i) {
    h[i] = rng.Int(-1000, 1000);
    want[i] = h[i] * 7 + i;
  }
  CHECK(cudaHostRegister(h, n * sizeof(int), cudaHostRegisterMapped));
  int* d = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d), h, 0));
  cudaPointerAttributes attrs;
  CHECK(cudaPointerGetAttributes(&attrs, h));
  REQUIRE(attrs.type == cudaMemoryTypeHost && attrs.devicePointer == d && attrs.hostPointer == h);
  scale<<<(n + 127) / 128, 128>>>(d, d, n, 7);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int failures = 0;
  for (int i = 0; i < n; ++i)
    if (h[i] != want[i] && failures++ < 5)
      std::printf("registered[%d] = %d, expected %d\n", i, h[i], want[i]);
  // Copies from and into registered memory.
  int* dev = nullptr;
  CHECK(cudaMalloc(&dev, n * sizeof(int)));
  CHECK(cudaMemcpy(dev, h, n * sizeof(int), cudaMemcpyHostToDevice));
  for (int i = 0; i < n; ++i) h[i] = -1;
  CHECK(cudaMemcpy(h, dev, n * sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(dev));
  CHECK(cudaHostUnregister(h));
  // The program's memory after: what the device wrote, and its own again.
  for (int i = 0; i < n; ++i) {
    if (h[i] != want[i] && failures++ < 10)
      std::printf("after unregistering [%d] = %d, expected %d\n", i, h[i], want[i]);
    h[i] = i;
  }
  for (int i = 0; i < n; ++i) failures += h[i] != i;
  std::free(raw);
  return failures;
}

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 10000));
  CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
  const size_t big_n = size_t(80) << 20 >> 2;  // 80 MiB of ints
  int *h_in = nullptr, *h_out = nullptr, *h_big = nullptr;
  cudaError_t e = cudaHostAlloc(&h_big, big_n * sizeof(int), cudaHostAllocMapped);
  if (e == cudaErrorNotSupported) Unsupported("cudaHostAllocMapped", cudaDevAttrCanMapHostMemory);
  CHECK(e);
  CHECK(cudaHostAlloc(&h_in, n * sizeof(int), cudaHostAllocMapped));
  CHECK(cudaHostAlloc(&h_out, n * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  int can_map = 0;
  CHECK(cudaDeviceGetAttribute(&can_map, cudaDevAttrCanMapHostMemory, 0));
  REQUIRE(can_map == 1);
  unsigned flags = 0;
  CHECK(cudaHostGetFlags(&flags, h_out));
  REQUIRE(flags == (cudaHostAllocMapped | cudaHostAllocPortable));

  int *d_in = nullptr, *d_out = nullptr, *d_big = nullptr;
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d_big), h_big, 0));
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

  // In place over n ints of the large buffer around its 64 MiB mark.
  const size_t at = (size_t(64) << 20 >> 2) - size_t(n) / 2;
  std::vector<int> want(n);
  for (int i = 0; i < n; ++i) {
    h_big[at + i] = rng.Int(-1000, 1000);
    want[i] = h_big[at + i] * 5 + i;
  }
  scale<<<(n + 127) / 128, 128>>>(d_big + at, d_big + at, n, 5);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  for (int i = 0; i < n; ++i)
    if (h_big[at + i] != want[i] && failures++ < 10)
      std::printf("big[%zu] = %d, expected %d\n", at + i, h_big[at + i], want[i]);
  CHECK(cudaFreeHost(h_big));
  CHECK(cudaFreeHost(h_in));
  CHECK(cudaFreeHost(h_out));
  failures += Registered(n, rng);
  return Finish(failures, "zero-copy mapped host memory");
}
