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
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <cuda.h>

#include "emu/memory.h"
#include "emu/ptx/outline.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

struct Function {
  std::string name;  // the kernel's mangled name
  // The program holding this kernel, its index there and its description: set at load, or for
  // a lazily loaded module when first used (LoadFunction); read only once `loaded` is true.
  std::shared_ptr<const ptx::Program> program;
  size_t index = 0;
  const ptx::KernelInfo* info = nullptr;
  std::atomic<bool> loaded{false};
  // Registers per thread: what ptxas gave the kernel where the image carries machine code for
  // this device (a GPU runs that, and is limited by it; `image_regs`, 0 if none), else
  // info->num_regs.
  uint32_t image_regs = 0;
  uint32_t num_regs = 0;
  std::atomic<int> max_dynamic_shared{0};  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  std::atomic<int> carveout{-1};           // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  std::atomic<int> cache_config{CU_FUNC_CACHE_PREFER_NONE};
};

struct Module {
  // Shared with every module of the same sources; holds their cache entry. Its globals are the
  // module's; its kernels every kernel, except in a lazy module (below), where it holds none.
  std::shared_ptr<const ptx::Program> program;
  std::vector<uint64_t> global_addrs;  // device address of each program->globals()
  uint64_t const_bytes = 0;            // total size of .const variables
  int ptx_target = 0;                  // lowest `.target sm_N` of its sources (0: none)
  std::deque<Function> functions;      // one per kernel, in the order of their definitions
  // A module of one large PTX source (a library's, of hundreds of kernels a program uses a few
  // of) is parsed a kernel at a time: each kernel, when first used, from the source pruned to
  // the functions it reaches (ptx/outline.h); every pruned program has the same globals, in the
  // same order, as `program`. A kernel that is never used is never parsed, so a fault in its
  // text goes unreported.
  struct Lazy {
    std::string ptx;
    ptx::PtxOutline outline;
    std::mutex mu;  // loading a kernel
  };
  std::unique_ptr<Lazy> lazy;

  // The index in `functions` of the kernel named `name`, if the module has one.
  std::optional<size_t> Find(std::string_view name) const;
};

// Sources of at least this many bytes (one source, not a link of several) load lazily.
inline constexpr size_t kLazyModuleBytes = size_t{1} << 20;

// Loads `ptx` (one or more sources linked together; parsed only if no live
// module or link state has the same sources) and places its globals in
// `memory`, relocated. Errors: as GetProgram (CUDA_ERROR_INVALID_PTX, ...),
// CUDA_ERROR_OUT_OF_MEMORY if a global does not fit. On error nothing stays
// allocated.
CUresult LoadModule(const std::vector<std::string>& ptx, DeviceMemory& memory,
                    std::shared_ptr<Module>* out);

// Parses `f`'s kernel if its module loads lazily and nothing did yet; then `f.loaded`. Thread-
// safe. Errors: as LoadModule's parse (CUDA_ERROR_INVALID_PTX, ...), said on stderr.
CUresult LoadFunction(Module& module, Function& f);

// Frees `module`'s globals. REQUIRES: no pending work still uses them.
void FreeModuleGlobals(const Module& module, DeviceMemory& memory);

// Maps an error Status from emu/ptx or fatbin/ to the CUresult the driver returns.
CUresult ToCuResult(const Status& s);

}  // namespace remora::emu
