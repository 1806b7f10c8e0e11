// tests/cuda/managed/managed_copy.cu - cudaMemcpy and cudaMemset with managed
// memory on one side, whatever cudaMemcpyKind the program names, in stream order
// with kernels that write the managed memory directly.
#include "common.h"

__global__ void twice(int* p, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] *= 2;
}

int main(int argc, char** argv) {
  const int n = static_cast<int>(Flag(argc, argv, "n", 5000));
  const size_t bytes = n * sizeof(int);
  int* m = nullptr;
  cudaError_t e = cudaMallocManaged(&m, bytes);
  if (e == cudaErrorNotSupported) Unsupported("cudaMallocManaged", cudaDevAttrManagedMemory);
  CHECK(e);
  int* m2 = nullptr;
  CHECK(cudaMallocManaged(&m2, bytes, cudaMemAttachHost));
  int* d = nullptr;
  CHECK(cudaMalloc(&d, bytes));
  std::vector<int> host(n), back(n);
  for (int i = 0; i < n; ++i) host[i] = i * 7 - 3;

  int failures = 0;
  auto expect = [&](const int* got, int mul, const char* what) {
    for (int i = 0; i < n; ++i)
      if (got[i] != host[i] * mul) {
        if (failures++ < 5) std::printf("%s[%d] = %d, expected %d\n", what, i, got[i], host[i] * mul);
      }
  };

  // pageable -> managed (named as host-to-device), then a kernel doubles it in place.
  CHECK(cudaMemcpy(m, host.data(), bytes, cudaMemcpyHostToDevice));
  expect(m, 1, "m after H2D");
  twice<<<(n + 255) / 256, 256>>>(m, n);
  CHECK(cudaGetLastError());
  // managed -> pageable waits for the kernel (legacy stream order).
  CHECK(cudaMemcpy(back.data(), m, bytes, cudaMemcpyDeviceToHost));
  expect(back.data(), 2, "back after kernel");
  // managed -> device -> kernel -> managed.
  CHECK(cudaMemcpy(d, m, bytes, cudaMemcpyHostToDevice));
  twice<<<(n + 255) / 256, 256>>>(d, n);
  CHECK(cudaMemcpy(m2, d, bytes, cudaMemcpyDeviceToHost));
  CHECK(cudaDeviceSynchronize());
  expect(m2, 4, "m2 from device");
  // managed -> managed with cudaMemcpyDeviceToDevice and cudaMemcpyDefault.
  CHECK(cudaMemcpy(m2, m, bytes, cudaMemcpyDeviceToDevice));
  expect(m2, 2, "m2 D2D");
  CHECK(cudaMemset(m2, 0, bytes));
  for (int i = 0; i < n; ++i)
    if (m2[i] != 0 && failures++ < 5) std::printf("m2[%d] = %d after memset\n", i, m2[i]);
  CHECK(cudaMemcpy(m2, m, bytes, cudaMemcpyDefault));
  expect(m2, 2, "m2 default");
  // Async on a stream, after a kernel on that stream.
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  twice<<<(n + 255) / 256, 256, 0, s>>>(m, n);
  CHECK(cudaMemcpyAsync(back.data(), m, bytes, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  expect(back.data(), 4, "back async");
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(d));
  CHECK(cudaFree(m));
  CHECK(cudaFree(m2));
  return Finish(failures, "copies with managed memory");
}
