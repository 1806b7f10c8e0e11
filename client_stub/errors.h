// client_stub/errors.h - cudaError_t names and texts (cuda_errors.def).
#pragma once

#include <cstdint>

namespace remora::client_stub {

// "cudaErrorInvalidValue" for a code of CUDA 13's cudaError_t, else nullptr.
const char* CudaErrorName(int32_t code);
// NVIDIA's text for the code ("invalid argument"), else nullptr.
const char* CudaErrorText(int32_t code);

}  // namespace remora::client_stub
