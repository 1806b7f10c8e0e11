// tests/cuda/kernels/host_threads.cu - a tenant's host threads do not wait for each other.
//
// Thread A launches a kernel that spins until a device flag is set and waits for it in
// cudaStreamSynchronize; thread B, meanwhile, allocates, copies random data both ways on its
// own stream, checks it, and only then sets the flag. If the server served B's calls only
// after A's wait, the kernel would give up (its bound) and say so. A host function on one
// stream must not hold up another stream either.
// With "-stall 1" the program instead enqueues a host function that never returns, prints
// STALLING and synchronizes the device forever (tests/cuda/stall_test.py kills it).
// With "-spin 1" it launches a kernel whose every thread waits for a flag nobody sets, prints
// SPINNING and synchronizes forever (tests/cuda/lifecycle_test.py: the kernel of a tenant
// that is gone must stop).
// With "-hog MIB" it allocates that much device memory, prints HOLDING, waits for a line
// on stdin, then synchronizes and prints what that returned (reclaim_test.py).
// With "-busy SECONDS" it keeps the device busy that long with batches of equal kernels
// (each checked against the CPU) and prints how many ran, "KERNELS n" (share_test.py), and
// their rate, "KERNELS_PER_S r" (bench/e2e).
// With "-idle SECONDS" before "-busy", it first keeps the device busy for a second, then
// sleeps that long, prints "SATURATING" and goes on as "-busy" says (bench/e2e: no credit
// is banked while idle).
// With "-latency N" it runs N kernels one at a time (launch, synchronize, check) and
// prints their latencies: "LATENCY_US p50 p99" (bench/e2e's priority benchmark); with
// "-samples 1" also one line per kernel, "SAMPLE start_ns us" (start: CLOCK_MONOTONIC).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "common.h"

__global__ void WaitForFlag(const volatile int* flag, int* result, long long bound) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *reinterpret_cast<volatile int*>(result) = 3;  // began
  long long i = 0;
  while (*flag == 0 && ++i < bound) {
  }
  *result = *flag != 0 ? 1 : 2;  // 2: gave up waiting
}

// One thread per block runs a linear congruential chain `iters` long from its seed.
__global__ void Chain(const unsigned* seeds, unsigned* out, int iters) {
  if (threadIdx.x != 0) return;
  unsigned x = seeds[blockIdx.x];
  for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
  out[blockIdx.x] = x;
}

// Keeps the device busy for `seconds` with batches of Chain kernels on one stream, two
// batches in flight (results into pinned buffers, checked one batch behind), so the
// stream's queue never runs dry.
int Busy(long seconds, int iters, Rng& rng) {
  constexpr int kBlocks = 4, kBatch = 8;
  std::vector<unsigned> seeds(kBlocks), want(kBlocks);
  for (int b = 0; b < kBlocks; ++b) {
    seeds[b] = static_cast<unsigned>(rng.Next());
    unsigned x = seeds[b];
    for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
    want[b] = x;
  }
  unsigned *d_seeds, *d_out[2], *h_out[2];
  cudaEvent_t done[2];
  CHECK(cudaMalloc(&d_seeds, kBlocks * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_seeds, seeds.data(), kBlocks * sizeof(unsigned), cudaMemcpyHostToDevice));
  for (int i = 0; i < 2; ++i) {
    CHECK(cudaMalloc(&d_out[i], kBlocks * sizeof(unsigned)));
    CHECK(cudaMallocHost(&h_out[i], kBlocks * sizeof(unsigned)));
    CHECK(cudaEventCreate(&done[i]));
  }
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  const auto started = std::chrono::steady_clock::now();
  const auto until = started + std::chrono::seconds(seconds);
  long kernels = 0;
  int failures = 0;
  auto check = [&](int i) {
    CHECK(cudaEventSynchronize(done[i]));
    failures += !std::equal(want.begin(), want.end(), h_out[i]);
    kernels += kBatch;
  };
  long batch = 0;
  for (; std::chrono::steady_clock::now() < until; ++batch) {
    const int i = static_cast<int>(batch % 2);
    CHECK(cudaMemsetAsync(d_out[i], 0, kBlocks * sizeof(unsigned), s));
    for (int k = 0; k < kBatch; ++k) Chain<<<kBlocks, 32, 0, s>>>(d_seeds, d_out[i], iters);
    CHECK(cudaGetLastError());
    CHECK(
        cudaMemcpyAsync(h_out[i], d_out[i], kBlocks * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
    CHECK(cudaEventRecord(done[i], s));
    if (batch > 0) check(1 - i);  // the previous batch, while this one runs
  }
  if (batch > 0) check(static_cast<int>((batch - 1) % 2));
  const double busy_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("KERNELS %ld\nKERNELS_PER_S %.3f\n", kernels, kernels / busy_s);
  return Finish(failures, "busy kernels");
}

// Launches `n` single Chain kernels one after another, each waited for and checked,
// and prints the median and 99th-percentile launch-to-result latency in microseconds.
int Latency(long n, int iters, bool samples, Rng& rng) {
  constexpr int kBlocks = 4;
  std::vector<unsigned> seeds(kBlocks), want(kBlocks), got(kBlocks);
  for (int b = 0; b < kBlocks; ++b) {
    seeds[b] = static_cast<unsigned>(rng.Next());
    unsigned x = seeds[b];
    for (int i = 0; i < iters; ++i) x = x * 1664525u + 1013904223u;
    want[b] = x;
  }
  unsigned *d_seeds, *d_out;
  CHECK(cudaMalloc(&d_seeds, kBlocks * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_out, kBlocks * sizeof(unsigned)));
  CHECK(cudaMemcpy(d_seeds, seeds.data(), kBlocks * sizeof(unsigned), cudaMemcpyHostToDevice));
  std::vector<double> us;
  std::vector<long long> starts;
  int failures = 0;
  for (long k = 0; k < n; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    Chain<<<kBlocks, 32>>>(d_seeds, d_out, iters);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(got.data(), d_out, kBlocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    starts.push_back(
        std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count());
    failures += got != want;
  }
  if (samples)
    for (size_t k = 0; k < us.size(); ++k) std::printf("SAMPLE %lld %.1f\n", starts[k], us[k]);
  std::sort(us.begin(), us.end());
  std::printf("LATENCY_US %.1f %.1f\n", us[us.size() / 2], us[us.size() * 99 / 100]);
  return Finish(failures, "latency kernels");
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
  if (long mib = Flag(argc, argv, "hog", 0)) {
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, static_cast<size_t>(mib) << 20);
    std::printf("%s %s\n", e == cudaSuccess ? "HOLDING" : "REFUSED", cudaGetErrorName(e));
    std::fflush(stdout);
    char line[16];
    if (!std::fgets(line, sizeof line, stdin)) return 1;
    e = cudaDeviceSynchronize();
    std::printf("SYNC %s\n", cudaGetErrorName(e));
    return 0;
  }
  if (long seconds = Flag(argc, argv, "busy", 0)) {
    const int iters = static_cast<int>(Flag(argc, argv, "iters", 20000));
    if (long idle = Flag(argc, argv, "idle", 0)) {
      if (int rc = Busy(1, iters, rng)) return rc;
      std::this_thread::sleep_for(std::chrono::seconds(idle));
      std::printf("SATURATING\n");
      std::fflush(stdout);
    }
    return Busy(seconds, iters, rng);
  }
  if (long n = Flag(argc, argv, "latency", 0))
    return Latency(n, static_cast<int>(Flag(argc, argv, "iters", 20000)),
                   Flag(argc, argv, "samples", 0) != 0, rng);
  if (Flag(argc, argv, "spin", 0)) {
    int *flag, *result;
    CHECK(cudaMalloc(&flag, sizeof(int)));
    CHECK(cudaMalloc(&result, sizeof(int)));
    CHECK(cudaMemset(flag, 0, sizeof(int)));
    CHECK(cudaMemset(result, 0, sizeof(int)));
    WaitForFlag<<<64, 128>>>(flag, result, LLONG_MAX);
    CHECK(cudaGetLastError());
    // SPINNING only once the kernel runs: read through a stream that does not wait for it.
    cudaStream_t side;
    CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    int began = 0;
    while (began != 3) {
      CHECK(cudaMemcpyAsync(&began, result, sizeof(int), cudaMemcpyDeviceToHost, side));
      CHECK(cudaStreamSynchronize(side));
    }
    std::printf("SPINNING\n");
    std::fflush(stdout);
    CHECK(cudaDeviceSynchronize());
    std::printf("FAIL: a kernel waiting for a flag nobody sets ended\n");
    return 1;
  }
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
  CHECK(cudaDeviceSynchronize());  // sa and sb do not wait for the legacy stream's memsets
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
