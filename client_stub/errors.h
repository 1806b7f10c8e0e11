// client_stub/errors.h - cudaError_t names and texts (cuda_errors.def).
#pragma once

#include <cstdint>

namespace remora::client_stub {

// "cudaErrorInvalidValue" for a code of CUDA 13's cudaError_t, else nullptr.
const char* CudaErrorName(int32_t code);
// NVIDIA's text for the code ("invalid argument"), else nullptr.
const char* CudaErrorText(int32_t code);

// For a call that cannot work through Remora: prints "remora: <call>: <why>
// (cudaErrorNotSupported)" to stderr the first time each `call` fails this way,
// and returns cudaErrorNotSupported (the caller records it as last error).
// `call` must be a string literal.
int32_t Unsupported(const char* call, const char* why);

}  // namespace remora::client_stub
