// emu/driver.h - shared plumbing of the exported entry points (emu/driver*.cc).
//
// Every entry point starts with one of the guards below, in the order NVIDIA's
// driver checks: initialisation, then the calling thread's current context,
// then that context's state (inactive or broken by a kernel fault).
#pragma once

#include <atomic>

#include <cuda.h>

#include "emu/context.h"

// Marks a definition as one of libcuda.so.1's exports.
#define REMORA_EMU_API extern "C" __attribute__((visibility("default")))

namespace remora::emu {

struct Driver {
  std::atomic<bool> initialized{false};
  Context primary;
};

// The process-wide driver state; never destroyed (worker threads may outlive
// static destruction at exit).
Driver& TheDriver();

// CUDA_ERROR_NOT_INITIALIZED before a successful cuInit.
CUresult CheckInit();
// Checks CheckInit, that the calling thread has a current context
// (CUDA_ERROR_INVALID_CONTEXT) and Context::Check; sets *ctx on success.
CUresult CurrentContext(Context** ctx);
// The calling thread's current context, or null.
Context* GetCurrent();
void SetCurrent(Context* ctx);

// Returns from the entry point unless `expr` (a CUresult) is CUDA_SUCCESS.
#define EMU_RETURN_IF_ERROR(expr)            \
  do {                                       \
    CUresult emu_r_ = (expr);                \
    if (emu_r_ != CUDA_SUCCESS) [[unlikely]] \
      return emu_r_;                         \
  } while (0)

// Declares `Context* ctx` as the current context or returns its error.
#define EMU_CURRENT_CONTEXT(ctx)         \
  ::remora::emu::Context* ctx = nullptr; \
  EMU_RETURN_IF_ERROR(::remora::emu::CurrentContext(&ctx))

}  // namespace remora::emu
