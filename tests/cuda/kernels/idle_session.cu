// tests/cuda/kernels/idle_session.cu - a program that computes on the host for seconds between
// CUDA calls keeps its device memory and its results (over gRPC its session once ended after two
// keepalive periods of 2 s, the client's connection unread while nobody called).
// Usage: idle_session [-seconds N] (default 5).
#include <unistd.h>

#include <vector>

#include "common.h"

__global__ void Scale(float* x, int n, float by) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= by;
}

int main(int argc, char** argv) {
  const long seconds = Flag(argc, argv, "seconds", 5);
  const int n = 4096;
  Rng rng(7);
  std::vector<float> h(n), want(n);
  for (int i = 0; i < n; ++i) want[i] = h[i] = rng.Uniform(-1, 1);
  float* d = nullptr;
  CHECK(cudaMalloc(&d, n * sizeof(float)));
  CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  Scale<<<(n + 255) / 256, 256>>>(d, n, 2.0f);
  CHECK(cudaDeviceSynchronize());
  sleep(static_cast<unsigned>(seconds));  // the host's own work: no CUDA call
  Scale<<<(n + 255) / 256, 256>>>(d, n, -0.5f);
  CHECK(cudaGetLastError());
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  int bad = 0;
  for (int i = 0; i < n; ++i) bad += h[i] != -want[i];
  return Finish(bad, "idle_session");
}
