// client_stub/driver_api.h - the CUDA driver API libcuda.so.1 exports: NVIDIA's declarations,
// made visible.
//
// The library is built with -fvisibility=hidden; what cuda.h declares between the pragmas is
// exported (cuda.map). cuda.h maps each entry point to its current ABI (cuMemAlloc is
// cuMemAlloc_v2), so a definition written with the plain name defines the symbol NVIDIA's
// libcuda.so.1 exports for it, and the compiler checks its prototype.
#pragma once

#pragma GCC visibility push(default)
#include <cuda.h>
#include <cudaProfiler.h>
#pragma GCC visibility pop
