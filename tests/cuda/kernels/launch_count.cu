// tests/cuda/kernels/launch_count.cu - every one of many back-to-back launches runs exactly once.
//
// Launches a kernel that counts itself (one atomic add) "-n" times on a created stream with
// nothing in between, synchronizes once, and checks the count; then the same on two streams
// at once from two host threads, each with its own counter. Prints the single stream's rate,
// "LAUNCHES_PER_S r", and the launching thread's own CPU time per launch,
// "LAUNCH_CPU_US c" (what the runtime costs the program; on a GPU, scripts/gpu/run.sh
// compares both natively and through Remora).
#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "common.h"

__global__ void CountMe(unsigned long long* count) {
  atomicAdd(count, 1ull);
}

namespace {

double ThreadCpuUs() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e6 + u.ru_utime.tv_usec + u.ru_stime.tv_usec;
}

// Launches CountMe `n` times on `s` and synchronizes; returns the count it left.
unsigned long long Burst(cudaStream_t s, unsigned long long* d_count, long n) {
  CHECK(cudaMemsetAsync(d_count, 0, sizeof *d_count, s));
  for (long i = 0; i < n; ++i) CountMe<<<1, 1, 0, s>>>(d_count);
  CHECK(cudaGetLastError());
  unsigned long long got = 0;
  CHECK(cudaMemcpyAsync(&got, d_count, sizeof got, cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  return got;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = Flag(argc, argv, "n", 20000);
  int failures = 0;
  cudaStream_t s[2];
  unsigned long long* d_count[2];
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
    CHECK(cudaMalloc(&d_count[i], sizeof(unsigned long long)));
  }
  if (Burst(s[0], d_count[0], 100) != 100) ++failures;  // warm-up: module load, first launch

  const double cpu0 = ThreadCpuUs();
  const auto t0 = std::chrono::steady_clock::now();
  const unsigned long long got = Burst(s[0], d_count[0], n);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = ThreadCpuUs() - cpu0;
  if (got != static_cast<unsigned long long>(n)) {
    std::printf("one stream: %llu of %ld launches ran\n", got, n);
    ++failures;
  }
  std::printf("LAUNCHES_PER_S %.0f\nLAUNCH_CPU_US %.2f\n", n / secs, cpu / n);

  unsigned long long both[2] = {0, 0};
  std::thread other([&] { both[1] = Burst(s[1], d_count[1], n); });
  both[0] = Burst(s[0], d_count[0], n);
  other.join();
  for (int i = 0; i < 2; ++i) {
    if (both[i] != static_cast<unsigned long long>(n)) {
      std::printf("two streams: stream %d counted %llu of %ld launches\n", i, both[i], n);
      ++failures;
    }
    CHECK(cudaFree(d_count[i]));
    CHECK(cudaStreamDestroy(s[i]));
  }
  return Finish(failures, "launch_count");
}
