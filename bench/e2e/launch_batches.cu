// bench/e2e/launch_batches.cu - a tenant program as users build it, for BM_StaticRuntimeLaunch:
// built twice, with nvcc's default (NVIDIA's static runtime, over Remora's libcuda.so.1) and
// with -cudart shared (Remora's stub runtime). Usage: launch_batches N. After a warm-up it
// prints "ready"; then, per line read from stdin, it launches an empty kernel N times,
// synchronizes and prints "s=SECONDS". It exits at the end of its input.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

__global__ void Empty() {}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  Empty<<<1, 1>>>();
  if (cudaError_t e = cudaDeviceSynchronize()) {
    std::fprintf(stderr, "launch_batches: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) Empty<<<1, 1>>>();
    if (cudaError_t e = cudaDeviceSynchronize()) {
      std::fprintf(stderr, "launch_batches: %s\n", cudaGetErrorString(e));
      return 1;
    }
    std::printf("s=%.9f\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fflush(stdout);
  }
  return 0;
}
