// client_stub/driver_forward.cc - driver entry points served by the stub runtime's: those that
// are one runtime call (driver_forward.def), and those that take a few (copies and memsets
// described by structures, occupancy searches, attribute lists). Copies described by
// CUDA_MEMCPY2D/3D are driver_graph.cc's, as a graph's memcpy node makes them.
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

#include "client_stub/driver_internal.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
#include "client_stub/memcpy.h"
#include "client_stub/state.h"

namespace remora::client_stub::driver {
namespace {

CUresult Fill(CUdeviceptr dst, size_t pitch, uint32_t value, size_t elem, size_t width,
              size_t height, CUstream s, bool async) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return ToCu(
      FillPattern(reinterpret_cast<void*>(dst), pitch, value, elem, width, height, s, async));
}

// Bytes cuPointerGetAttributes writes for `a` (zeroes, for a pointer the driver does not know).
size_t AttributeBytes(CUpointer_attribute a) {
  switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      return 8;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
      return sizeof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
    default:
      return 4;
  }
}

const Kernel* KernelOfHandle(const void* f) {
  return static_cast<const Kernel*>(f);
}

// The device whose pool of `type` memory at `at` `call` is about.
CUresult PoolDevice(const CUmemLocation* at, CUmemAllocationType type, const char* call,
                    CUdevice* dev) {
  if (at == nullptr || type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  if (at->type == CU_MEM_LOCATION_TYPE_HOST || at->type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
      at->type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
    return ToCu(cudaError_t(
        remora::client_stub::Unsupported(call, "memory pools of host memory are not served")));
  if (at->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  *dev = at->id;
  return CUDA_SUCCESS;
}

}  // namespace
}  // namespace remora::client_stub::driver

using namespace remora::client_stub::driver;  // NOLINT: the exported C entry points below
using remora::client_stub::DriverCallScope;

extern "C" {

#define DRIVER_FORWARD(name, params, call)         \
  CUresult name params {                           \
    return ForwardInContext([&] { return call; }); \
  }
#define DRIVER_FORWARD_POOL(name, params, call) \
  CUresult name params {                        \
    DriverCallScope scope;                      \
    if (CUresult r = NeedInit()) return r;      \
    return ToCu(call);                          \
  }
#define DRIVER_FORWARD_DEVICE(name, params, device, call) \
  CUresult name params {                                  \
    DriverCallScope scope;                                \
    if (CUresult r = NeedDevice(device)) return r;        \
    return ToCu(call);                                    \
  }
// The shared-memory bank configuration is deprecated, in the driver API as in the runtime's.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include "client_stub/driver_forward.def"
#pragma GCC diagnostic pop

// The per-thread default stream twin of cuMemcpyBatchAsync: 0 names the per-thread stream, which
// batches take, not the legacy one, which they refuse (as NVIDIA's do). cuda.h declares the name
// only in builds for the per-thread default stream, so it is made visible here.
__attribute__((visibility("default"))) CUresult cuMemcpyBatchAsync_v2_ptsz(
    CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, CUmemcpyAttributes* attrs,
    size_t* idxs, size_t nattrs, CUstream s) {
  return cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, idxs, nattrs,
                            s == nullptr ? CU_STREAM_PER_THREAD : s);
}

static_assert(sizeof(CUDA_MEMCPY3D_BATCH_OP) == sizeof(cudaMemcpy3DBatchOp));

__attribute__((visibility("default"))) CUresult cuMemcpy3DBatchAsync_v2_ptsz(
    size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream s) {
  return cuMemcpy3DBatchAsync(n, ops, flags, s == nullptr ? CU_STREAM_PER_THREAD : s);
}

CUresult cuMemsetD16(CUdeviceptr d, unsigned short v, size_t n) {
  return Fill(d, 0, v, 2, n, 1, nullptr, false);
}
CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream s) {
  return Fill(d, 0, v, 2, n, 1, s, true);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  return Fill(d, 0, v, 4, n, 1, s, true);
}
CUresult cuMemsetD2D8(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h) {
  return Fill(d, pitch, v, 1, w, h, nullptr, false);
}
CUresult cuMemsetD2D16(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h) {
  return Fill(d, pitch, v, 2, w, h, nullptr, false);
}
CUresult cuMemsetD2D32(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h) {
  return Fill(d, pitch, v, 4, w, h, nullptr, false);
}
CUresult cuMemsetD2D8Async(CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h,
                           CUstream s) {
  return Fill(d, pitch, v, 1, w, h, s, true);
}
CUresult cuMemsetD2D16Async(CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h,
                            CUstream s) {
  return Fill(d, pitch, v, 2, w, h, s, true);
}
CUresult cuMemsetD2D32Async(CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h,
                            CUstream s) {
  return Fill(d, pitch, v, 4, w, h, s, true);
}

// Unlike cuPointerGetAttribute, a pointer the driver does not know is no error: each value
// is zeroed.
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs, void** data,
                                CUdeviceptr p) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (n > 0 && (attrs == nullptr || data == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned int i = 0; i < n; ++i) {
    if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (cuPointerGetAttribute(data[i], attrs[i], p) != CUDA_SUCCESS)
      std::memset(data[i], 0, AttributeBytes(attrs[i]));
  }
  return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange(CUdeviceptr* base, size_t* size, CUdeviceptr p) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  auto& st = remora::client_stub::St();
  if (auto range = st.device_ranges.Find(p)) {
    if (base) *base = range->base;
    if (size) *size = range->size;
    return CUDA_SUCCESS;
  }
  // Managed memory in the arena (a mirrored block is among the device ranges above).
  auto block = st.host.ManagedBlock(reinterpret_cast<const void*>(p));
  if (!block) return CUDA_ERROR_NOT_FOUND;
  if (base) *base = reinterpret_cast<CUdeviceptr>(block->first);
  if (size) *size = block->second;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction f,
                                                              int block_size, size_t smem,
                                                              unsigned int) {
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(blocks, f, block_size, smem);
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* bytes, CUfunction f, int blocks,
                                                 int block_size) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (bytes == nullptr || blocks <= 0 || block_size <= 0) return CUDA_ERROR_INVALID_VALUE;
  *bytes = remora::client_stub::AvailableDynamicShared(*KernelOfHandle(f),
                                                       remora::client_stub::St().prop, blocks);
  return CUDA_SUCCESS;
}

// The block size (a multiple of the warp size) that keeps the most threads resident per
// multiprocessor, as NVIDIA's search does; ties go to the larger block.
CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int* min_grid, int* block_size, CUfunction f,
                                                   CUoccupancyB2DSize smem_of, size_t smem,
                                                   int limit, unsigned int) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (min_grid == nullptr || block_size == nullptr || f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int most = KernelOfHandle(f)->max_threads_per_block, sms = 0, warp = 32;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0))
    return ToCu(e);
  (void)cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, 0);
  if (most <= 0) (void)cudaDeviceGetAttribute(&most, cudaDevAttrMaxThreadsPerBlock, 0);
  if (limit > 0) most = std::min(most, limit);
  int best_threads = -1, best_size = 0, best_blocks = 0;
  for (int bs = most / warp * warp; bs > 0; bs -= warp) {
    int blocks = 0;
    const size_t need = smem_of ? smem_of(bs) : smem;
    if (CUresult r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, bs, need)) return r;
    if (blocks * bs > best_threads) {
      best_threads = blocks * bs;
      best_size = bs;
      best_blocks = blocks;
    }
  }
  *block_size = best_size;
  *min_grid = best_blocks * sms;
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size, CUfunction f,
                                          CUoccupancyB2DSize smem_of, size_t smem, int limit) {
  return cuOccupancyMaxPotentialBlockSizeWithFlags(min_grid, block_size, f, smem_of, smem, limit,
                                                   0);
}

// A CUkernel is usable as a CUfunction here (driver_module.cc): its attributes are the
// function's, on the one device.
CUresult cuKernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  if (CUresult r = NeedDevice(d)) return r;
  return cuFuncGetAttribute(v, a, reinterpret_cast<CUfunction>(k));
}
CUresult cuKernelSetAttribute(CUfunction_attribute a, int v, CUkernel k, CUdevice d) {
  if (CUresult r = NeedDevice(d)) return r;
  return cuFuncSetAttribute(reinterpret_cast<CUfunction>(k), a, v);
}
// The cache configuration is a preference a device may ignore; this one does.
CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache, CUdevice d) {
  if (CUresult r = NeedDevice(d)) return r;
  return k ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
// CUDA 13's memory pools by location: a device's are the device's (cuDeviceGetMemPool and its
// kin); pools of host memory are not served, and say so (PoolDevice).
CUresult cuMemGetDefaultMemPool(CUmemoryPool* pool, CUmemLocation* at, CUmemAllocationType type) {
  CUdevice dev = 0;
  if (CUresult r = PoolDevice(at, type, "cuMemGetDefaultMemPool", &dev)) return r;
  return cuDeviceGetDefaultMemPool(pool, dev);
}
CUresult cuMemGetMemPool(CUmemoryPool* pool, CUmemLocation* at, CUmemAllocationType type) {
  CUdevice dev = 0;
  if (CUresult r = PoolDevice(at, type, "cuMemGetMemPool", &dev)) return r;
  return cuDeviceGetMemPool(pool, dev);
}
CUresult cuMemSetMemPool(CUmemLocation* at, CUmemAllocationType type, CUmemoryPool pool) {
  CUdevice dev = 0;
  if (CUresult r = PoolDevice(at, type, "cuMemSetMemPool", &dev)) return r;
  return cuDeviceSetMemPool(dev, pool);
}
// Shared memory's banks are four bytes wide on every device this serves; the deprecated
// setting is a preference, ignored, as such devices ignore it.
CUresult cuFuncSetSharedMemConfig(CUfunction f, CUsharedconfig c) {
  DriverCallScope scope;
  if (CUresult r = NeedContext()) return r;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return c <= CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuFuncGetName(const char** name, CUfunction f) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (name == nullptr || f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = KernelOfHandle(f)->name.c_str();
  return CUDA_SUCCESS;
}
CUresult cuKernelGetName(const char** name, CUkernel k) {
  return cuFuncGetName(name, reinterpret_cast<CUfunction>(k));
}
CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t* offset, size_t* size) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  const auto& k = *KernelOfHandle(f);
  if (i >= k.offsets.size() || offset == nullptr || size == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  *offset = k.offsets[i];
  *size = k.sizes[i];
  return CUDA_SUCCESS;
}
CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t* offset, size_t* size) {
  return cuFuncGetParamInfo(reinterpret_cast<CUfunction>(k), i, offset, size);
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long* id) {
  DriverCallScope scope;
  if (CUresult r = NeedInit()) return r;
  if (id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (ctx != nullptr ? ctx != TheContext() : NeedContext() != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_CONTEXT;
  *id = 1;
  return CUDA_SUCCESS;
}

CUresult cuDeviceCanAccessPeer(int* can, CUdevice d, CUdevice peer) {
  DriverCallScope scope;
  if (CUresult r = NeedDevice(d)) return r;
  if (CUresult r = NeedDevice(peer)) return r;
  return ToCu(cudaDeviceCanAccessPeer(can, d, peer));
}

}  // extern "C"
