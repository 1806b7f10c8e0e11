// client_stub/cudart_refused.cc - the rest of libcudart.so.13: exported, refused by name.
//
// NVIDIA's runtime entry points the stub does not forward (cudart_refused.def: graphs,
// textures and surfaces, arrays, IPC, external memory, graphics interop, libraries, ...) exist so a
// program that links them loads, and a call gets cudaErrorNotSupported, recorded as the thread's
// last error as CUDA records errors, with one line on stderr naming it (errors.h: Unsupported).
// Every one returns cudaError_t; the C ABI leaves the arguments to the caller, so one body serves
// every signature (refused.h). This file includes no runtime header: its definitions would clash
// with NVIDIA's prototypes.
#include "client_stub/errors.h"
#include "client_stub/state.h"

#define REFUSED(name)                                                                       \
  extern "C" __attribute__((visibility("default"))) int name() {                            \
    return ::remora::client_stub::RecordError(static_cast<cudaError_t>(                     \
        ::remora::client_stub::Unsupported(#name, "not forwarded by Remora's libcudart"))); \
  }
#include "client_stub/cudart_refused.def"
