// bench/e2e/sync_call.cc - timing one synchronous CUDA runtime call through the stub.
#include "bench/e2e/sync_call.h"

#include <cuda_runtime_api.h>
#include <x86intrin.h>

#include <vector>

namespace remora::bench::e2e {

const char* SyncCallName(SyncCall c) {
  return c == SyncCall::kStreamQuery ? "cudaStreamQuery" : "cudaMemGetInfo";
}

int DoSyncCall(SyncCall which, void* stream) {
  if (which == SyncCall::kStreamQuery) return cudaStreamQuery(static_cast<cudaStream_t>(stream));
  size_t free_b = 0, total_b = 0;
  return cudaMemGetInfo(&free_b, &total_b);
}

bool MeasureSyncCall(SyncCall which, size_t iters, Stats* out, std::string* err) {
  cudaStream_t stream = nullptr;
  if (cudaError_t e = cudaStreamCreate(&stream)) {
    *err = std::string("cudaStreamCreate: ") + cudaGetErrorName(e);
    return false;
  }
  bool ok = true;
  for (int i = 0; i < 2000 && ok; ++i) ok = DoSyncCall(which, stream) == cudaSuccess;
  std::vector<uint64_t> ticks(iters);
  TickClock clock;
  for (size_t i = 0; i < iters && ok; ++i) {
    const uint64_t t0 = __rdtsc();
    const int e = DoSyncCall(which, stream);
    ticks[i] = __rdtsc() - t0;
    if (e != cudaSuccess) [[unlikely]] {
      *err =
          std::string(SyncCallName(which)) + ": " + cudaGetErrorName(static_cast<cudaError_t>(e));
      ok = false;
    }
  }
  if (ok)
    *out = Summarize(ticks, clock.NsPerTick());
  else if (err->empty())
    *err = std::string(SyncCallName(which)) + " failed during warm-up";
  (void)cudaStreamDestroy(stream);
  return ok;
}

}  // namespace remora::bench::e2e
