// client_stub/trace.h - REMORA_TRACE: each forwarded call on the tenant's stderr.
//
// With REMORA_TRACE=1 (or `remora run --trace`) the stub prints one line per
// call it forwards, with the request's fields (long byte strings cut short),
// the cudaError_t it returns and, on failure, the server's reason:
//
//   remora[4242] Malloc {size: 4096} -> cudaSuccess {dptr: 140737...}
//   remora[4242] RegisterModule {hash: "..." rdc: true kernels: "_Z2mm..."} ->
//       cudaErrorNoKernelImageForDevice (module with kernel _Z2mm...: no PTX ...)
//   remora[4242] LaunchKernel {kernel: 4097 grid_x: 2 ...} -> posted
//
// Calls the stub refuses before sending (a launch of a kernel whose module did
// not load) are printed too, marked "not sent".
#pragma once

#include <driver_types.h>

#include <string_view>

#include "proto/calls.h"

namespace google::protobuf {
class Message;
}

namespace remora::client_stub {

// True when REMORA_TRACE is set and not "0" (read once, at first use).
bool TraceEnabled();

// Prints a SYNC call: its request, result and, when `reply` is non-null, the reply.
// `why` is the server's message for a failure ("" if none).
void TraceCall(CallId id, const google::protobuf::Message& req, cudaError_t result,
               const google::protobuf::Message* reply, std::string_view why);

// Prints an ORDERED call as posted (or the error that stopped it being sent).
void TracePost(CallId id, const google::protobuf::Message& req, cudaError_t result);

// Prints a call the stub answered itself without sending, with why.
void TraceLocal(std::string_view call, std::string_view what, cudaError_t result,
                std::string_view why);

}  // namespace remora::client_stub
