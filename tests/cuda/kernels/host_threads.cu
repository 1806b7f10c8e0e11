// tests/cuda/kernels/host_threads.cu - a tenant's host threads do not wait for each other.
//
// Thread A launches a kernel that spins until a device flag is set and waits for it in
// cudaStreamSynchronize; thread B, meanwhile, allocates, copies random data both ways on its
// own stream, checks it, and only then sets the flag. If the server served B's calls only
// after A's wait, the kernel would give up (its bound) and say so. A host function on one
// stream must not hold up another stream either.
// With "-stall 1" the program instead enqueues a host function that never returns, prints
// STALLING and synchronizes the device forever (tests/cuda/stall_test.py kills it).
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common.h"

__global__ void WaitForFlag(const volatile int* flag, int* result, long long bound) {
  long long i = 0;
  while (*flag == 0 && ++i < bound) {
  }
  *result = *flag != 0 ? 1 : 2;  // 2: gave up waiting
}

std::atomic<bool> g_slow_done{false};

void CUDART_CB SlowHostFunc(void*) {
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  g_slow_done = true;
}

void CUDART_CB NeverReturns(void*) {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

int main(int argc, char** argv) {
  Rng rng(Flag(argc, argv, "seed", 23));
  const size_t n = static_cast<size_t>(Flag(argc, argv, "n", 1 << 16));
  if (Flag(argc, argv, "stall", 0)) {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaLaunchHostFunc(s, NeverReturns, nullptr));
    std::printf("STALLING\n");
    std::fflush(stdout);
    CHECK(cudaDeviceSynchronize());
    std::printf("FAIL: the device synchronized past a host function that never returns\n");
    return 1;
  }
  int failures = 0;

  int *flag, *result;
  CHECK(cudaMalloc(&flag, sizeof(int)));
  CHECK(cudaMalloc(&result, sizeof(int)));
  CHECK(cudaMemset(flag, 0, sizeof(int)));
  CHECK(cudaMemset(result, 0, sizeof(int)));
  cudaStream_t sa, sb;
  CHECK(cudaStreamCreateWithFlags(&sa, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));

  std::atomic<bool> a_waiting{false};
  std::thread a([&] {
    WaitForFlag<<<1, 1, 0, sa>>>(flag, result, 1'000'000'000LL);
    CHECK(cudaGetLastError());
    a_waiting = true;
    CHECK(cudaStreamSynchronize(sa));
  });
  std::thread b([&] {
    while (!a_waiting) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // A is inside its wait
    std::vector<unsigned> host(n), back(n);
    for (auto& v : host) v = static_cast<unsigned>(rng.Next());
    unsigned* d = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
    CHECK(cudaMemcpyAsync(d, host.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice, sb));
    CHECK(cudaMemcpyAsync(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, sb));
    CHECK(cudaStreamSynchronize(sb));
    if (back != host) {
      std::printf("mismatch: thread B's round trip\n");
      ++failures;
    }
    const int one = 1;
    CHECK(cudaMemcpyAsync(flag, &one, sizeof one, cudaMemcpyHostToDevice, sb));
    CHECK(cudaStreamSynchronize(sb));
    CHECK(cudaFree(d));  // after the flag: cudaFree waits for all of the program's work
  });
  a.join();
  b.join();
  int got = 0;
  CHECK(cudaMemcpy(&got, result, sizeof got, cudaMemcpyDeviceToHost));
  if (got != 1) {
    std::printf("mismatch: the spinning kernel %s\n",
                got == 2 ? "gave up: thread B was held behind thread A's wait" : "never ran");
    ++failures;
  }

  // A slow host function on one stream; another stream's work completes meanwhile.
  cudaStream_t sc, sd;
  CHECK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&sd, cudaStreamNonBlocking));
  CHECK(cudaLaunchHostFunc(sc, SlowHostFunc, nullptr));
  unsigned char* buf = nullptr;
  std::vector<unsigned char> seen(4096, 0);
  CHECK(cudaMalloc(&buf, seen.size()));
  CHECK(cudaMemsetAsync(buf, 0x5a, seen.size(), sd));
  CHECK(cudaMemcpyAsync(seen.data(), buf, seen.size(), cudaMemcpyDeviceToHost, sd));
  CHECK(cudaStreamSynchronize(sd));
  if (g_slow_done) {
    std::printf("mismatch: stream D waited for stream C's host function\n");
    ++failures;
  }
  for (unsigned char c : seen) failures += c != 0x5a;
  CHECK(cudaStreamSynchronize(sc));
  if (!g_slow_done) {
    std::printf("mismatch: stream C synchronized before its host function ran\n");
    ++failures;
  }
  CHECK(cudaFree(buf));
  CHECK(cudaFree(flag));
  CHECK(cudaFree(result));
  return Finish(failures, "host threads and host functions");
}
