// emu/module.cc - module loading: the cached Program, then globals into device memory.
#include "emu/module.h"

#include <algorithm>
#include <cstdio>
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

namespace {

// Sets what `f` derives from its kernel's description, then marks it loaded.
void Describe(Function& f, std::shared_ptr<const ptx::Program> program, size_t index) {
  f.program = std::move(program);
  f.index = index;
  f.info = &f.program->kernels()[index];
  f.num_regs = f.image_regs ? f.image_regs : f.info->num_regs;
  f.max_dynamic_shared =
      std::max(0, kSharedPerBlock - static_cast<int>(f.info->static_shared_bytes));
  f.loaded.store(true, std::memory_order_release);
}

// The outline of `ptx` if it is to load lazily (one large source with several kernels, each
// defined once, whose variables name no function: a pointer to one would not be the same in
// every kernel's program), and in `bare` its declarations alone.
std::unique_ptr<Module::Lazy> LazyOutline(const std::vector<std::string>& ptx, std::string* bare) {
  if (ptx.size() != 1 || ptx[0].size() < kLazyModuleBytes) return nullptr;
  Result<ptx::PtxOutline> outline = ptx::OutlinePtx(ptx[0]);
  if (!outline.ok()) return nullptr;  // parsed whole: the parser names what is wrong
  size_t entries = 0, kept = 0;
  for (const auto& d : outline->definitions) entries += d.entry;
  if (entries < 2) return nullptr;
  *bare = ptx::PrunePtx(ptx[0], *outline, {}, &kept);
  if (kept != 0) return nullptr;
  auto lazy = std::make_unique<Module::Lazy>();
  lazy->ptx = ptx[0];
  lazy->outline = std::move(outline).value();
  return lazy;
}

}  // namespace

std::optional<size_t> Module::Find(std::string_view name) const {
  if (!lazy) return program->FindKernel(name);
  for (size_t i = 0; i < functions.size(); ++i)
    if (functions[i].name == name) return i;
  return std::nullopt;
}

CUresult LoadModule(const std::vector<std::string>& ptx, DeviceMemory& memory,
                    std::shared_ptr<Module>* out) {
  auto mod = std::make_shared<Module>();
  std::string bare;
  mod->lazy = LazyOutline(ptx, &bare);
  std::shared_ptr<const ParsedProgram> parsed;
  if (mod->lazy) {  // the declarations alone, for the globals
    if (CUresult r = GetProgram(std::span(&bare, 1), "cannot load module", &parsed);
        r != CUDA_SUCCESS)
      return r;
  } else if (CUresult r = GetProgram(ptx, "cannot load module", &parsed); r != CUDA_SUCCESS) {
    return r;
  }
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
  if (mod->lazy) {
    for (const auto& d : mod->lazy->outline.definitions)
      if (d.entry) mod->functions.emplace_back().name = d.name;
  } else {
    const auto& kernels = program->kernels();
    for (size_t i = 0; i < kernels.size(); ++i) {
      Function& f = mod->functions.emplace_back();
      f.name = kernels[i].name;
      Describe(f, mod->program, i);
    }
  }
  *out = std::move(mod);
  return CUDA_SUCCESS;
}

CUresult LoadFunction(Module& module, Function& f) {
  if (f.loaded.load(std::memory_order_acquire)) return CUDA_SUCCESS;
  std::lock_guard lock(module.lazy->mu);
  if (f.loaded.load(std::memory_order_relaxed)) return CUDA_SUCCESS;
  const std::string source =
      ptx::PrunePtx(module.lazy->ptx, module.lazy->outline, std::span(&f.name, 1));
  std::shared_ptr<const ParsedProgram> parsed;
  const std::string what = "cannot load kernel " + f.name;
  if (CUresult r = GetProgram(std::span(&source, 1), what.c_str(), &parsed); r != CUDA_SUCCESS)
    return r;
  const std::optional<size_t> index = parsed->program->FindKernel(f.name);
  const auto& globals = parsed->program->globals();
  if (!index || globals.size() != module.global_addrs.size()) {
    std::fprintf(stderr, "remora-emu: %s: its pruned module does not match the whole\n",
                 what.c_str());
    return CUDA_ERROR_INVALID_PTX;
  }
  const ptx::Program* program = parsed->program.get();
  Describe(f, std::shared_ptr<const ptx::Program>(std::move(parsed), program), *index);
  return CUDA_SUCCESS;
}

void FreeModuleGlobals(const Module& module, DeviceMemory& memory) {
  for (uint64_t p : module.global_addrs) (void)memory.Free(p);
}

}  // namespace remora::emu
