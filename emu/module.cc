// emu/module.cc - module loading: the cached Program, then globals into device memory.
#include "emu/module.h"

#include <algorithm>
#include <cstring>

#include "emu/device.h"
#include "emu/program_cache.h"

namespace remora::emu {

CUresult ToCuResult(const Status& s) {
  struct Row {
    int32_t from;
    CUresult to;
  };
  // cudaError_t codes whose CUresult differs in number; the rest coincide.
  static constexpr Row kRows[] = {
      {err::kInvalidDevicePointer, CUDA_ERROR_INVALID_VALUE},
      {err::kInvalidMemcpyDirection, CUDA_ERROR_INVALID_VALUE},
      {err::kInvalidDeviceFunction, CUDA_ERROR_INVALID_HANDLE},
      {err::kInvalidSymbol, CUDA_ERROR_NOT_FOUND},
      {err::kInitializationError, CUDA_ERROR_NOT_INITIALIZED},
  };
  if (s.ok()) return CUDA_SUCCESS;
  for (const Row& r : kRows) {
    if (r.from == s.code()) return r.to;
  }
  return static_cast<CUresult>(s.code());
}

CUresult LoadModule(const std::vector<std::string>& ptx, DeviceMemory& memory,
                    std::shared_ptr<Module>* out) {
  std::shared_ptr<const ParsedProgram> parsed;
  if (CUresult r = GetProgram(ptx, "cannot load module", &parsed); r != CUDA_SUCCESS) return r;
  auto mod = std::make_shared<Module>();
  const ptx::Program* program = parsed->program.get();
  mod->ptx_target = parsed->ptx_target;
  mod->program = std::shared_ptr<const ptx::Program>(std::move(parsed), program);  // aliasing
  for (const ptx::GlobalInfo& g : program->globals()) {
    CUdeviceptr p = 0;
    if (CUresult r = memory.Allocate(g.size == 0 ? 1 : g.size, &p); r != CUDA_SUCCESS) {
      FreeModuleGlobals(*mod, memory);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!g.init.empty()) std::memcpy(reinterpret_cast<void*>(p), g.init.data(), g.init.size());
    mod->global_addrs.push_back(p);
    if (g.is_const) mod->const_bytes += g.size;
  }
  // This module's pointer-valued initialisers point at its own globals.
  ptx::ApplyRelocations(*program, mod->global_addrs);
  const auto& kernels = program->kernels();
  for (size_t i = 0; i < kernels.size(); ++i) {
    Function& f = mod->functions.emplace_back();
    f.index = i;
    f.info = &kernels[i];
    f.num_regs = kernels[i].num_regs;
    f.max_dynamic_shared =
        std::max(0, kSharedPerBlock - static_cast<int>(kernels[i].static_shared_bytes));
  }
  *out = std::move(mod);
  return CUDA_SUCCESS;
}

void FreeModuleGlobals(const Module& module, DeviceMemory& memory) {
  for (uint64_t p : module.global_addrs) (void)memory.Free(p);
}

}  // namespace remora::emu
