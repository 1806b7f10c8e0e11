// emu/module.cc - module loading: ptx::Load, then globals into device memory.
#include "emu/module.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "emu/device.h"
#include "emu/image.h"

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
  for (const auto& src : ptx) {
    if (CUresult r = CheckPtxHeader(src); r != CUDA_SUCCESS) return r;
  }
  auto program = ptx::Load(ptx);
  if (!program.ok()) {
    // The driver has no JIT log here: the reason (module, line, token) goes to stderr.
    std::fprintf(stderr, "remora-emu: cannot load module: %s\n",
                 program.status().ToString().c_str());
    return ToCuResult(program.status());
  }
  auto mod = std::make_shared<Module>();
  mod->program = std::move(program).value();
  for (const auto& src : ptx) {
    const int t = PtxTarget(src);
    if (t && (!mod->ptx_target || t < mod->ptx_target)) mod->ptx_target = t;
  }
  for (const ptx::GlobalInfo& g : mod->program->globals()) {
    CUdeviceptr p = 0;
    if (CUresult r = memory.Allocate(g.size == 0 ? 1 : g.size, &p); r != CUDA_SUCCESS) {
      FreeModuleGlobals(*mod, memory);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!g.init.empty()) std::memcpy(reinterpret_cast<void*>(p), g.init.data(), g.init.size());
    mod->global_addrs.push_back(p);
    if (g.is_const) mod->const_bytes += g.size;
  }
  const auto& kernels = mod->program->kernels();
  for (size_t i = 0; i < kernels.size(); ++i) {
    Function& f = mod->functions.emplace_back();
    f.index = i;
    f.info = &kernels[i];
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
