// bench/e2e/bench_copy.cc - 64 MiB cudaMemcpy through shm against a plain memcpy, same run.
//
//   BM_Copy64MiB/<dir>/<mem>   dir 0 = host-to-device, 1 = device-to-host;
//                              mem 0 = pinned (cudaMallocHost, inside the shm arena),
//                                  1 = pageable (malloc, staged through arena slots).
// Each iteration times a plain 64 MiB memcpy between two private, pre-faulted buffers,
// then the synchronous cudaMemcpy. Bytes/s (SetBytesProcessed) and the time column are
// the cudaMemcpy's (manual time); memcpy_Bps is the baseline's;
// ratio = cudaMemcpy bytes/s / memcpy bytes/s (1.0 = as fast as memcpy).
// host_buf_memcpy_Bps (diagnostic, untimed by the framework): a plain memcpy into the
// host buffer itself, i.e. into shm arena pages when pinned.
// The device buffer's contents are checked after the last iteration.
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bench/e2e/common.h"

namespace remora::bench::e2e {
namespace {

constexpr size_t kBytes = size_t{64} << 20;

struct FreeHost {
  bool pinned;
  void operator()(void* p) const {
    if (pinned)
      (void)cudaFreeHost(p);
    else
      std::free(p);
  }
};
using HostBuf = std::unique_ptr<void, FreeHost>;
struct FreeDevice {
  void operator()(void* p) const { (void)cudaFree(p); }
};

void Fill(std::byte* p, size_t n, uint8_t seed) {
  for (size_t i = 0; i < n; i += 64) p[i] = static_cast<std::byte>(seed + i / 64);
}

void BM_Copy64MiB(benchmark::State& state) {
  const bool h2d = state.range(0) == 0;
  const bool pinned = state.range(1) == 0;
  state.SetLabel(std::string(h2d ? "HtoD " : "DtoH ") + (pinned ? "pinned" : "pageable"));

  void* raw = nullptr;
  if (pinned) {
    if (cudaError_t e = cudaMallocHost(&raw, kBytes))
      return state.SkipWithError((std::string("cudaMallocHost: ") + cudaGetErrorName(e)).c_str());
  } else {
    raw = std::malloc(kBytes);
    if (raw == nullptr) return state.SkipWithError("malloc failed");
  }
  HostBuf host(raw, FreeHost{pinned});
  void* draw = nullptr;
  if (cudaError_t e = cudaMalloc(&draw, kBytes))
    return state.SkipWithError((std::string("cudaMalloc: ") + cudaGetErrorName(e)).c_str());
  std::unique_ptr<void, FreeDevice> dev(draw);

  std::vector<std::byte> a(kBytes), b(kBytes);
  auto* h = static_cast<std::byte*>(host.get());
  std::memset(a.data(), 1, kBytes);  // fault everything in before timing
  std::memset(b.data(), 2, kBytes);
  std::memset(h, 3, kBytes);
  Fill(h, kBytes, 7);
  if (cudaError_t e = cudaMemcpy(dev.get(), h, kBytes, cudaMemcpyHostToDevice))  // warm device
    return state.SkipWithError((std::string("cudaMemcpy: ") + cudaGetErrorName(e)).c_str());

  double memcpy_s = 0, cuda_s = 0, host_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), kBytes);
    benchmark::DoNotOptimize(b.data());
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    const cudaError_t e = h2d ? cudaMemcpy(dev.get(), h, kBytes, cudaMemcpyHostToDevice)
                              : cudaMemcpy(h, dev.get(), kBytes, cudaMemcpyDeviceToHost);
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    if (e != cudaSuccess) {
      state.SkipWithError((std::string("cudaMemcpy: ") + cudaGetErrorName(e)).c_str());
      break;
    }
    memcpy_s += std::chrono::duration<double>(t1 - t0).count();
    const double c = std::chrono::duration<double>(t2 - t1).count();
    cuda_s += c;
    state.SetIterationTime(c);
    // Diagnostic: a plain memcpy into the tenant's own host buffer (for pinned memory,
    // shm arena pages), separating the arena's page cost from the call's.
    const auto t3 = Clock::now();
    std::memcpy(h, b.data(), kBytes);
    benchmark::ClobberMemory();
    host_s += std::chrono::duration<double>(Clock::now() - t3).count();
  }
  if (state.error_occurred()) return;

  // Round-trip check: a fresh pattern up and back down through a separate buffer.
  std::vector<std::byte> check(kBytes);
  Fill(a.data(), kBytes, 11);
  if (cudaMemcpy(dev.get(), a.data(), kBytes, cudaMemcpyHostToDevice) != cudaSuccess ||
      cudaMemcpy(check.data(), dev.get(), kBytes, cudaMemcpyDeviceToHost) != cudaSuccess ||
      std::memcmp(check.data(), a.data(), kBytes) != 0)
    return state.SkipWithError("device contents differ after the copies");

  const double bytes = static_cast<double>(state.iterations()) * kBytes;
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["memcpy_Bps"] = memcpy_s > 0 ? bytes / memcpy_s : 0;
  state.counters["copy_Bps"] = cuda_s > 0 ? bytes / cuda_s : 0;
  state.counters["host_buf_memcpy_Bps"] = host_s > 0 ? bytes / host_s : 0;
  state.counters["ratio"] = cuda_s > 0 ? memcpy_s / cuda_s : 0;
}
BENCHMARK(BM_Copy64MiB)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"dir", "mem"})
    ->UseManualTime()
    ->Iterations(20)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace remora::bench::e2e
