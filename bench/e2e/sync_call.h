// bench/e2e/sync_call.h - timing one synchronous CUDA runtime call through the stub.
//
// The measured call is a real round trip to remora-server: cudaStreamQuery on an
// idle stream created for the purpose (the server queries its mapped stream
// with cuStreamQuery), or cudaMemGetInfo (the server answers from its ledger).
// Used by the shm benchmark in-process and by the gRPC child.
//
//   Stats s;
//   std::string err;
//   if (!MeasureSyncCall(SyncCall::kStreamQuery, 20000, &s, &err)) ...
#pragma once

#include <string>

#include "bench/e2e/common.h"

namespace remora::bench::e2e {

enum class SyncCall { kStreamQuery = 0, kMemGetInfo = 1 };

const char* SyncCallName(SyncCall c);

// Runs `iters` calls after a warm-up of 2000, one rdtsc sample each, into *out.
// False with *err (the CUDA error name) if any call fails.
bool MeasureSyncCall(SyncCall which, size_t iters, Stats* out, std::string* err);

// One call of `which` on `stream` (ignored by cudaMemGetInfo); returns the cudaError_t.
int DoSyncCall(SyncCall which, void* stream);

}  // namespace remora::bench::e2e
