// tests/soak/churn_tenant.cu - one churning tenant: allocate, copy, launch, check, repeat.
//
// Flags ("-name value"): -iters N rounds (0: until a call fails), -n elements per
// buffer, -leak 1 exits without freeing anything, -seed S, -lat FILE appends the
// microseconds of each round's small copy round trip (host to device and back),
// one per line, -hold FILE waits after the first round until FILE exists.
// Prints "READY" after the first round and PASS at the end; any CUDA error or
// wrong result prints FAIL and exits 1.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "common.h"

__global__ void combine(const int* x, int* y, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2 * y[i] + k * x[i];
}

namespace {

const char* StringFlag(int argc, char** argv, const char* name) {
  for (int i = 1; i + 1 < argc; ++i)
    if (argv[i][0] == '-' && std::strcmp(argv[i] + 1, name) == 0) return argv[i + 1];
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const long iters = Flag(argc, argv, "iters", 4);
  const int n = static_cast<int>(Flag(argc, argv, "n", 4096));
  const bool leak = Flag(argc, argv, "leak", 0) != 0;
  const char* lat_path = StringFlag(argc, argv, "lat");
  const char* hold = StringFlag(argc, argv, "hold");
  Rng rng(Flag(argc, argv, "seed", static_cast<long>(getpid())));
  const size_t bytes = n * sizeof(int);
  // Held from start to end, so the session always holds memory.
  int* keep = nullptr;
  CHECK(cudaMalloc(&keep, 1 << 20));
  std::vector<int> x(n), y(n), out(n), ping(64), pong(64);
  std::vector<long> micros;
  int failures = 0;
  for (long round = 0; iters == 0 || round < iters; ++round) {
    for (int i = 0; i < n; ++i) {
      x[i] = rng.Int(-1000, 1000);
      y[i] = rng.Int(-1000, 1000);
    }
    const int k = rng.Int(-5, 6);
    int *dx = nullptr, *dy = nullptr;
    CHECK(cudaMalloc(&dx, bytes));
    CHECK(cudaMalloc(&dy, bytes));
    CHECK(cudaMemcpy(dx, x.data(), bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), bytes, cudaMemcpyHostToDevice));
    combine<<<(n + 255) / 256, 256>>>(dx, dy, k, n);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(out.data(), dy, bytes, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) failures += out[i] != 2 * y[i] + k * x[i];

    for (int i = 0; i < 64; ++i) ping[i] = static_cast<int>(round) * 64 + i;
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(cudaMemcpy(keep, ping.data(), sizeof(int) * 64, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(pong.data(), keep, sizeof(int) * 64, cudaMemcpyDeviceToHost));
    const auto t1 = std::chrono::steady_clock::now();
    micros.push_back(std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count());
    failures += pong != ping;
    if (failures != 0) break;

    const bool last = iters != 0 && round + 1 == iters;
    if (!(leak && last)) {
      CHECK(cudaFree(dx));
      CHECK(cudaFree(dy));
    }
    if (round == 0) {
      std::printf("READY\n");
      std::fflush(stdout);
      while (hold && access(hold, F_OK) != 0) usleep(10000);
    }
  }
  if (lat_path) {
    if (FILE* f = std::fopen(lat_path, "a")) {
      for (long us : micros) std::fprintf(f, "%ld\n", us);
      std::fclose(f);
    }
  }
  if (!leak) CHECK(cudaFree(keep));
  return Finish(failures, leak ? "churn_tenant (left its memory)" : "churn_tenant");
}
