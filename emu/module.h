// emu/module.h - a loaded module: its decoded Program, globals and functions.
//
// Loading takes the parsed Program of the PTX sources from the program cache
// (program_cache.h: parsed once, shared by every module of the same sources)
// and allocates this module's own copy of every module variable in device
// memory, with its initialiser: `__device__`/`__constant__` variables are
// never shared between modules. Functions live as long as their module; a
// CUfunction is the address of a Function.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

#include "emu/memory.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

struct Function {
  size_t index;  // into program->kernels()
  const ptx::KernelInfo* info;
  // Registers per thread: what ptxas gave the kernel where the image carries machine code for
  // this device (a GPU runs that, and is limited by it), else info->num_regs.
  uint32_t num_regs = 0;
  std::atomic<int> max_dynamic_shared;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  std::atomic<int> carveout{-1};        // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  std::atomic<int> cache_config{CU_FUNC_CACHE_PREFER_NONE};
};

struct Module {
  // Shared with every module of the same sources; holds their cache entry.
  std::shared_ptr<const ptx::Program> program;
  std::vector<uint64_t> global_addrs;  // device address of each program->globals()
  uint64_t const_bytes = 0;            // total size of .const variables
  int ptx_target = 0;                  // lowest `.target sm_N` of its sources (0: none)
  std::deque<Function> functions;      // one per kernel, same order
};

// Loads `ptx` (one or more sources linked together; parsed only if no live
// module or link state has the same sources) and places its globals in
// `memory`, relocated. Errors: as GetProgram (CUDA_ERROR_INVALID_PTX, ...),
// CUDA_ERROR_OUT_OF_MEMORY if a global does not fit. On error nothing stays
// allocated.
CUresult LoadModule(const std::vector<std::string>& ptx, DeviceMemory& memory,
                    std::shared_ptr<Module>* out);

// Frees `module`'s globals. REQUIRES: no pending work still uses them.
void FreeModuleGlobals(const Module& module, DeviceMemory& memory);

// Maps an error Status from emu/ptx or fatbin/ to the CUresult the driver returns.
CUresult ToCuResult(const Status& s);

}  // namespace remora::emu
