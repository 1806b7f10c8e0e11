// emu/driver_module.cc - entry points: modules, functions, launches, the linker.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "emu/device.h"
#include "emu/driver.h"
#include "emu/image.h"

namespace {

using remora::emu::Context;
using remora::emu::Function;
using remora::emu::FunctionRef;
using remora::emu::Module;

constexpr int kPtxVersion = remora::emu::kArch;
constexpr int kBinaryVersion = remora::emu::kArch;
constexpr unsigned kMaxBlockDim[3] = {1024, 1024, 64};
constexpr unsigned kMaxGridDim[3] = {2147483647u, 65535, 65535};
// A cooperative launch's grid workspace: grid.sync() keeps its arrival counter at offset 4.
constexpr uint64_t kGridWorkspaceBytes = 256;

// The function `f` names, its kernel loaded (a lazy module's, on first use).
CUresult ResolveFunction(Context* ctx, CUfunction f, FunctionRef* out) {
  *out = ctx->FindFunction(f);
  if (out->fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return LoadFunction(*out->module, *out->fn);
}

// Registers a warp of `f` holds: its threads', rounded up to the unit a GPU allocates (256).
uint64_t WarpRegisters(const Function& f) {
  return (uint64_t{std::max<uint32_t>(f.num_regs, 1)} * 32 + 255) / 256 * 256;
}

// The most threads a block of `f` may have: its own bound (.maxntid), the device's, and the
// warps whose registers one block may hold; a larger launch fails.
uint32_t MaxThreads(const Function& f) {
  const uint64_t by_registers = remora::emu::kRegistersPerBlock / WarpRegisters(f) * 32;
  return static_cast<uint32_t>(std::min<uint64_t>(
      {f.info->max_threads_per_block, remora::emu::kMaxThreadsPerBlock, by_registers}));
}

// The CU_FUNC_ATTRIBUTE_* values of `f`; false if `a` is not an attribute.
bool FunctionAttribute(const Function& f, const Module& m, CUfunction_attribute a, int* out) {
  const auto& k = *f.info;
  struct Row {
    CUfunction_attribute attr;
    int value;
  };
  const Row rows[] = {
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, static_cast<int>(MaxThreads(f))},
      {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, static_cast<int>(k.static_shared_bytes)},
      {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, static_cast<int>(m.const_bytes)},
      {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, static_cast<int>(k.local_bytes)},
      {CU_FUNC_ATTRIBUTE_NUM_REGS, static_cast<int>(f.num_regs)},
      // The arch the PTX was compiled for: CUB picks its tuning from it.
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, m.ptx_target ? m.ptx_target : kPtxVersion},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, kBinaryVersion},
      {CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, 0},
      {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f.max_dynamic_shared.load()},
      {CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, f.carveout.load()},
      {CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET, k.explicit_cluster ? 1 : 0},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, static_cast<int>(k.cluster[0])},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT, static_cast<int>(k.cluster[1])},
      {CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH, static_cast<int>(k.cluster[2])},
      {CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 0},
      {CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, 0},
  };
  static_assert(std::size(rows) == CU_FUNC_ATTRIBUTE_MAX);
  for (const Row& r : rows) {
    if (r.attr == a) {
      *out = r.value;
      return true;
    }
  }
  return false;
}

// Packs the launch parameters: kernelParams (one pointer per declared
// parameter) or `extra` (a BUFFER_POINTER/BUFFER_SIZE list ending in END).
CUresult PackParams(const remora::emu::ptx::KernelInfo& k, void** kernelParams, void** extra,
                    std::vector<std::byte>* out) {
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  out->assign(k.param_bytes, std::byte{0});
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(out->data() + k.params[i].offset, kernelParams[i], k.params[i].size);
    }
    return CUDA_SUCCESS;
  }
  if (extra == nullptr) return k.params.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  const void* buffer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      buffer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (k.param_bytes == 0) return CUDA_SUCCESS;
  if (buffer == nullptr || size == nullptr || *size < k.param_bytes)
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(out->data(), buffer, k.param_bytes);
  return CUDA_SUCCESS;
}

// Blocks of `k` with `threads` threads and `dynamic_shared` bytes that fit on one SM at once:
// the least of the block, thread, register and shared memory limits (NVIDIA's occupancy).
uint64_t MaxBlocksPerSm(const Function& f, uint64_t threads, uint64_t dynamic_shared) {
  const auto& k = *f.info;
  if (threads > MaxThreads(f)) return 0;
  const uint64_t warps = (threads + 31) / 32;
  uint64_t blocks =
      std::min<uint64_t>(remora::emu::kBlocksPerSm, remora::emu::kThreadsPerSm / (warps * 32));
  blocks = std::min<uint64_t>(blocks, remora::emu::kRegistersPerSm / (WarpRegisters(f) * warps));
  // Each block also holds the shared memory the driver reserves (kReservedSmemBytes).
  const uint64_t shared =
      k.static_shared_bytes + dynamic_shared + remora::emu::ptx::kReservedSmemBytes;
  blocks = std::min<uint64_t>(blocks, remora::emu::kSharedPerSm / shared);
  return blocks;
}

struct PrintfBuffer {
  std::mutex mu;
  std::string text;
};

}  // namespace

using namespace remora::emu;  // NOLINT: entry points are global by ABI

REMORA_EMU_API CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  EMU_CURRENT_CONTEXT(ctx);
  if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ClearJitError();
  std::vector<std::string> ptx;
  KernelRegisters registers;
  EMU_RETURN_IF_ERROR(DecodeImage(image, &ptx, &registers));
  std::shared_ptr<Module> m;
  EMU_RETURN_IF_ERROR(LoadModule(ptx, ctx->memory(), &m));
  if (!registers.empty()) {
    const std::unordered_map<std::string, uint32_t> by_name(registers.begin(), registers.end());
    for (Function& f : m->functions)
      if (auto it = by_name.find(f.name); it != by_name.end())
        f.num_regs = f.image_regs = it->second;
  }
  return ctx->AddModule(std::move(m), module);
}

// cuModuleLoadData with JIT options: the error log says why PTX was refused (the emulated GPU
// compiles nothing else, so the other options change nothing).
REMORA_EMU_API CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image,
                                                   unsigned int numOptions, CUjit_option* options,
                                                   void** optionValues) {
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr))
    return CUDA_ERROR_INVALID_VALUE;
  const CUresult r = cuModuleLoadData(module, image);
  WriteJitLogs(numOptions, options, optionValues, r);
  return r;
}

REMORA_EMU_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->UnloadModule(hmod);
}

REMORA_EMU_API CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod,
                                                    const char* name) {
  EMU_CURRENT_CONTEXT(ctx);
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->GetFunction(hmod, name, hfunc);
}

REMORA_EMU_API CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int* count, CUmodule hmod) {
  EMU_CURRENT_CONTEXT(ctx);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->ListFunctions(hmod, count, nullptr, 0);
}

REMORA_EMU_API CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction* functions, unsigned int n,
                                                           CUmodule hmod) {
  EMU_CURRENT_CONTEXT(ctx);
  if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return ctx->ListFunctions(hmod, nullptr, functions, n);
}

REMORA_EMU_API CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                                  const char* name) {
  EMU_CURRENT_CONTEXT(ctx);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto m = ctx->FindModule(hmod);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto index = m->program->FindGlobal(name);
  if (!index) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = m->global_addrs[*index];
  if (bytes != nullptr) *bytes = m->program->globals()[*index].size;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                                   size_t* paramOffset, size_t* paramSize) {
  EMU_CURRENT_CONTEXT(ctx);
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, func, &f));
  const auto& params = f.fn->info->params;
  if (paramIndex >= params.size() || paramOffset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *paramOffset = params[paramIndex].offset;
  if (paramSize != nullptr) *paramSize = params[paramIndex].size;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
  EMU_CURRENT_CONTEXT(ctx);
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const FunctionRef f = ctx->FindFunction(hfunc);  // the name needs no parse
  if (f.fn == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *name = f.fn->name.c_str();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib,
                                                   CUfunction hfunc) {
  EMU_CURRENT_CONTEXT(ctx);
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, hfunc, &f));
  return FunctionAttribute(*f.fn, *f.module, attrib, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

REMORA_EMU_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                                   int value) {
  EMU_CURRENT_CONTEXT(ctx);
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, hfunc, &f));
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    const int limit = kSharedPerBlockOptin - static_cast<int>(f.fn->info->static_shared_bytes);
    if (value < 0 || value > limit) return CUDA_ERROR_INVALID_VALUE;
    f.fn->max_dynamic_shared = value;
    return CUDA_SUCCESS;
  }
  if (attrib == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
    if (value < -1 || value > 100) return CUDA_ERROR_INVALID_VALUE;
    f.fn->carveout = value;
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

REMORA_EMU_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  EMU_CURRENT_CONTEXT(ctx);
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, hfunc, &f));
  if (config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  f.fn->cache_config = config;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize) {
  EMU_CURRENT_CONTEXT(ctx);
  if (numBlocks == nullptr || blockSize <= 0) return CUDA_ERROR_INVALID_VALUE;
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, func, &f));
  *numBlocks = static_cast<int>(MaxBlocksPerSm(*f.fn, uint64_t(blockSize), dynamicSMemSize));
  return CUDA_SUCCESS;
}

namespace {

// cuLaunchKernel and cuLaunchCooperativeKernel. A cooperative launch also refuses a grid
// larger than can be resident at once, and gets a zeroed grid workspace in device memory
// (what grid.sync() counts arrivals in, read through %envreg1:%envreg2), freed after it.
CUresult EnqueueLaunch(Context* ctx, CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                       unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                       unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                       void** kernelParams, void** extra, bool cooperative) {
  FunctionRef fr;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, f, &fr));
  const auto& k = *fr.fn->info;
  if (!k.unrunnable.empty()) {
    // Refused before it runs: failing when reached would break the context for every user.
    std::fprintf(stderr, "remora-emu: kernel %s refused: the emulated GPU cannot run it: %s\n",
                 k.name.c_str(), k.unrunnable.c_str());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (uint64_t{k.cluster[0]} * std::max(1u, k.cluster[1]) * std::max(1u, k.cluster[2]) > 1) {
    // Compiled with __cluster_dims__: its blocks would share a cluster, which this device
    // (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0) cannot give them, as for cuLaunchKernelEx's.
    std::fprintf(stderr,
                 "remora-emu: kernel %s refused: it requires clusters of %ux%ux%u blocks "
                 "(__cluster_dims__), which the emulated GPU does not launch\n",
                 k.name.c_str(), k.cluster[0], k.cluster[1], k.cluster[2]);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  for (int i = 0; i < 3; ++i) {
    if (grid[i] == 0 || grid[i] > kMaxGridDim[i] || block[i] == 0 || block[i] > kMaxBlockDim[i]) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  const uint64_t threads = uint64_t{blockDimX} * blockDimY * blockDimZ;
  if (threads > std::min<uint32_t>(k.max_threads_per_block, kMaxThreadsPerBlock)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (sharedMemBytes > static_cast<unsigned>(fr.fn->max_dynamic_shared.load())) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (WarpRegisters(*fr.fn) * ((threads + 31) / 32) > uint64_t{kRegistersPerBlock}) {
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;  // "too many resources requested for launch"
  }
  // The blocks a GPU of this size keeps resident at once: a cooperative grid may not exceed
  // them, and an ordinary one whose blocks wait on each other gets them all resident.
  const uint64_t resident =
      MaxBlocksPerSm(*fr.fn, threads, sharedMemBytes) * uint64_t(Config().sm_count);
  if (cooperative && uint64_t{gridDimX} * gridDimY * gridDimZ > resident) {
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  std::vector<std::byte> params;
  EMU_RETURN_IF_ERROR(PackParams(k, kernelParams, extra, &params));
  int priority = 0;
  EMU_RETURN_IF_ERROR(ctx->StreamPriority(hStream, &priority));

  // Per launch the closure owns the packed parameters (no shared_ptr), and the
  // printf buffer lives on the worker's stack: ptx::Launch returns only after
  // every block ran, so the sink (one pointer, stored inline) cannot outlive it.
  Work w;
  w.device_time = true;
  w.run = [ctx, mod = fr.module, program = fr.fn->program, index = fr.fn->index,
           params = std::move(params), hStream, grid = std::to_array(grid),
           block = std::to_array(block), sharedMemBytes, priority, cooperative, resident,
           heap = ctx->LaunchHeap(), stack = ctx->CallStackBytes()] {
    PrintfBuffer out;
    ptx::LaunchConfig cfg;
    std::copy(grid.begin(), grid.end(), cfg.grid);
    std::copy(block.begin(), block.end(), cfg.block);
    cfg.dynamic_shared_bytes = sharedMemBytes;
    cfg.params = params;
    cfg.global_addresses = mod->global_addrs;
    cfg.relocated = true;  // at load, into this module's own globals
    cfg.memory = &ctx->memory();
    cfg.priority = priority;
    cfg.cancel = CurrentWorkCancelled();
    cfg.call_stack_bytes = stack;
    cfg.resident_blocks = resident;
    cfg.heap = heap.get();
    cfg.launch_pool = &ctx->launch_pool();
    cfg.textures = &ctx->textures();
    cfg.printf_sink = [sink = &out](std::string_view text) {
      std::lock_guard lock(sink->mu);
      sink->text.append(text);
    };
    CUdeviceptr workspace = 0;
    if (cooperative) {
      // Allocated here rather than at enqueue, so that dropped (cancelled) work holds none.
      if (ctx->memory().Allocate(kGridWorkspaceBytes, &workspace) != CUDA_SUCCESS) {
        ctx->Fail(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
                  "kernel " + program->kernels()[index].name + ": no grid workspace", hStream);
        return;
      }
      std::memset(reinterpret_cast<void*>(workspace), 0, kGridWorkspaceBytes);
      cfg.grid_workspace = workspace;
      cfg.cooperative = true;
    }
    const remora::Status s = ptx::Launch(*program, index, cfg);
    if (workspace != 0) ctx->memory().Free(workspace);
    if (!out.text.empty()) DeliverPrintf(hStream, out.text);
    if (!s.ok() && cfg.cancel && cfg.cancel->load()) {
      // Cancelled (remoraEmuCancelStream): its user is gone; the context stays healthy.
      std::fprintf(stderr, "remora-emu: kernel %s cancelled\n",
                   program->kernels()[index].name.c_str());
    } else if (!s.ok()) {
      // The faults a GPU names; anything else a kernel meets is an unspecified launch failure.
      CUresult code = ToCuResult(s);
      switch (code) {
        case CUDA_ERROR_ILLEGAL_ADDRESS:
        case CUDA_ERROR_MISALIGNED_ADDRESS:
        case CUDA_ERROR_INVALID_ADDRESS_SPACE:
        case CUDA_ERROR_ASSERT:
          break;
        default:
          code = CUDA_ERROR_LAUNCH_FAILED;
      }
      ctx->Fail(code, "kernel " + program->kernels()[index].name + " failed: " + s.ToString(),
                hStream);
    }
  };
  return ctx->Enqueue(hStream, std::move(w));
}

}  // namespace

REMORA_EMU_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                               unsigned int gridDimY, unsigned int gridDimZ,
                                               unsigned int blockDimX, unsigned int blockDimY,
                                               unsigned int blockDimZ, unsigned int sharedMemBytes,
                                               CUstream hStream, void** kernelParams,
                                               void** extra) {
  EMU_CURRENT_CONTEXT(ctx);
  return EnqueueLaunch(ctx, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, hStream, kernelParams, extra, false);
}

REMORA_EMU_API CUresult CUDAAPI cuLaunchCooperativeKernel(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams) {
  EMU_CURRENT_CONTEXT(ctx);
  return EnqueueLaunch(ctx, f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
                       sharedMemBytes, hStream, kernelParams, nullptr, true);
}

// Launch attributes: cooperative is served; a cluster of more than one block is refused (this
// device reports CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH 0, and a stream-ordered launch cannot give
// blocks a shared cluster); those that only hint or relax ordering are accepted.
REMORA_EMU_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f,
                                                 void** kernelParams, void** extra) {
  EMU_CURRENT_CONTEXT(ctx);
  if (config == nullptr || (config->numAttrs > 0 && config->attrs == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const CUlaunchAttribute& a = config->attrs[i];
    switch (a.id) {
      case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        cooperative = a.value.cooperative != 0;
        break;
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: {
        const auto& d = a.value.clusterDim;
        if (d.x == 0 || d.y == 0 || d.z == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
        if (d.x > 1 || d.y > 1 || d.z > 1) return CUDA_ERROR_NOT_SUPPORTED;
        break;
      }
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
      case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
      case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
        return CUDA_ERROR_NOT_SUPPORTED;
      case CU_LAUNCH_ATTRIBUTE_IGNORE:
      case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
      case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
      case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
      case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
      case CU_LAUNCH_ATTRIBUTE_PRIORITY:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
      case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
      case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
      case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return EnqueueLaunch(ctx, f, config->gridDimX, config->gridDimY, config->gridDimZ,
                       config->blockDimX, config->blockDimY, config->blockDimZ,
                       config->sharedMemBytes, config->hStream, kernelParams, extra, cooperative);
}

namespace {

// Clusters: this device has none to report (CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH is 0).
CUresult RefuseClusterQuery(int* out, CUfunction func, const CUlaunchConfig* config) {
  EMU_CURRENT_CONTEXT(ctx);
  if (out == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  FunctionRef f;
  EMU_RETURN_IF_ERROR(ResolveFunction(ctx, func, &f));
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace

REMORA_EMU_API CUresult CUDAAPI cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                             const CUlaunchConfig* config) {
  return RefuseClusterQuery(numClusters, func, config);
}

REMORA_EMU_API CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(int* clusterSize,
                                                                   CUfunction func,
                                                                   const CUlaunchConfig* config) {
  return RefuseClusterQuery(clusterSize, func, config);
}

// --- linker ----------------------------------------------------------------------------

REMORA_EMU_API CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option* options,
                                             void** optionValues, CUlinkState* stateOut) {
  EMU_CURRENT_CONTEXT(ctx);
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  EMU_RETURN_IF_ERROR(ctx->CreateLink(stateOut));
  LinkState* link = ctx->FindLink(*stateOut);
  link->options.assign(options, options + numOptions);
  link->values = optionValues;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void* data,
                                              size_t size, const char* name,
                                              unsigned int numOptions, CUjit_option* options,
                                              void** optionValues) {
  (void)name;
  EMU_CURRENT_CONTEXT(ctx);
  LinkState* link = ctx->FindLink(state);
  if (link == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (data == nullptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  switch (type) {
    case CU_JIT_INPUT_PTX: {
      const char* text = static_cast<const char*>(data);
      link->sources.emplace_back(text, strnlen(text, size));
      return CUDA_SUCCESS;
    }
    case CU_JIT_INPUT_FATBINARY:
      return PtxFromFatbin(data, size, &link->sources, nullptr, kNewestLinkedPtx);
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY:
      return CUDA_ERROR_NO_BINARY_FOR_GPU;
    case CU_JIT_INPUT_NVVM:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

REMORA_EMU_API CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut,
                                               size_t* sizeOut) {
  EMU_CURRENT_CONTEXT(ctx);
  LinkState* link = ctx->FindLink(state);
  if (link == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr || sizeOut == nullptr || link->sources.empty()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Link now, as nvlink would, so unresolved symbols fail here and not at load.
  // The program is cached under these sources, which the image decodes to: the
  // cuModuleLoadData of it that follows does not parse again.
  std::shared_ptr<const ParsedProgram> parsed;
  ClearJitError();
  const CUresult r = GetProgram(link->sources, "cannot link", &parsed);
  WriteJitLogs(unsigned(link->options.size()), link->options.data(), link->values, r);
  EMU_RETURN_IF_ERROR(r);
  link->parsed = std::move(parsed);
  link->image = EncodeLinked(link->sources);
  *cubinOut = link->image.data();
  *sizeOut = link->image.size();
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->DestroyLink(state);
}
