// client_stub/driver_internal.h - what driver.cc and driver_module.cc share: the runtime's
// errors as the driver spells them, and the checks every entry point starts with.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>

#include "client_stub/driver_api.h"
#include "client_stub/state.h"

namespace remora::client_stub::driver {

// The runtime's error as the driver spells it. Most codes are the same number; some differ.
CUresult ToCu(cudaError_t e);
// CUDA_ERROR_NOT_INITIALIZED before cuInit: what every call but cuInit and the queries of
// errors and versions needs.
CUresult NeedInit();
// What calls that act on the device need as well: a current context on this thread
// (CUDA_ERROR_INVALID_CONTEXT).
CUresult NeedContext();
// NeedInit, and `dev` one of the devices (CUDA_ERROR_INVALID_DEVICE).
CUresult NeedDevice(CUdevice dev);

// The per-thread default stream twin of entry point F (its _ptsz or _ptds export,
// driver_per_thread.cc): F, with the null stream standing for the calling thread's
// per-thread default stream.
template <auto F>
struct PerThreadTwin;
template <typename R, typename... A, R (*F)(A...)>
struct PerThreadTwin<F> {
  static R Call(A... a) {
    NullIsPerThread scope;
    return F(a...);
  }
};

// The process's one context: the session every thread's context stands for.
CUcontext TheContext();

// NVIDIA's runtime's private export table `id` (driver_tables.cc); CUDA_ERROR_INVALID_VALUE
// for a table Remora does not serve, said once per table on stderr naming the file of the code
// at `caller` that asked (unless the table is one NVIDIA's runtime does without).
CUresult ExportTable(const void** table, const CUuuid* id, const void* caller);
// For `remora run --check` (REMORA_CHECK_REPORT): records, once per object, that the code at
// `caller` (NVIDIA's runtime, linked into a program or a library) runs over this driver.
void NoteNvidiaRuntime(const void* caller);
// Runs and forgets what NVIDIA's runtime stored for `ctx` (context-local storage), as a
// context's destruction does.
void DestroyContextStorage(CUcontext ctx);

// What NVIDIA's JIT writes back into a load's or a link's options: CU_JIT_WALL_TIME (the
// milliseconds since `start`), the info log (empty: the server's linker logs to the server's
// log) and, when `result` is an error, the error log (the server's reason), each NUL-terminated
// within the caller's size, whose option slot then holds the bytes written. Null `options` or
// `values` write nothing.
void WriteJitOutputs(unsigned n, const CUjit_option* options, void** values,
                     std::chrono::steady_clock::time_point start, CUresult result);

// A driver entry point that is one call of the stub runtime: made as the driver's own
// (DriverCallScope), once NeedContext allows it, its error spelled as the driver's.
template <class Call>
CUresult ForwardInContext(Call call) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return ToCu(call());
}

}  // namespace remora::client_stub::driver
