// emu/driver_vmm.cc - entry points: virtual memory management (cuMemAddressReserve,
// cuMemCreate, cuMemMap, cuMemSetAccess and their inverses), on DeviceMemory's reservations,
// memfd-backed physical allocations and shared mappings (emu/memory.h).
//
// What the emulated device does not have is refused as NVIDIA's driver refuses what a device
// lacks: shareable handle types (IPC), memory on the host or another device, compression,
// read-only access (a kernel's store there would fault the host process).
#include "emu/driver.h"

namespace {

using remora::emu::Context;
using remora::emu::kVmmGranularity;

// The properties the emulated device can honour: pinned device memory on device 0, no
// shareable handle, no compression.
CUresult CheckProperties(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (prop->location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
  if (prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_NONE ||
      prop->allocFlags.compressionType != 0)
    return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

// Read-write or no access for device 0, from `count` descriptors.
CUresult AccessOf(const CUmemAccessDesc* desc, size_t count, bool* read_write) {
  if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (desc[i].location.id != 0) return CUDA_ERROR_INVALID_DEVICE;
    if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) return CUDA_ERROR_NOT_SUPPORTED;
    if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE &&
        desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE)
      return CUDA_ERROR_INVALID_VALUE;
    *read_write = desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  return CUDA_SUCCESS;
}

}  // namespace

REMORA_EMU_API CUresult CUDAAPI cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option) {
  EMU_CURRENT_CONTEXT(ctx);
  (void)ctx;
  if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckProperties(prop));
  *granularity = kVmmGranularity;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                                    CUdeviceptr addr, unsigned long long flags) {
  EMU_CURRENT_CONTEXT(ctx);
  (void)addr;  // a hint: the emulated device places reservations itself
  if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return ctx->memory().Reserve(size, alignment, ptr);
}

REMORA_EMU_API CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->memory().Unreserve(ptr, size);
}

REMORA_EMU_API CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                            const CUmemAllocationProp* prop,
                                            unsigned long long flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if (handle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  EMU_RETURN_IF_ERROR(CheckProperties(prop));
  uint64_t h = 0;
  EMU_RETURN_IF_ERROR(ctx->memory().CreatePhysical(size, &h));
  *handle = h;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  EMU_CURRENT_CONTEXT(ctx);
  return ctx->memory().ReleasePhysical(handle);
}

REMORA_EMU_API CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                         CUmemGenericAllocationHandle handle,
                                         unsigned long long flags) {
  EMU_CURRENT_CONTEXT(ctx);
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return ctx->memory().Map(ptr, size, offset, handle);
}

REMORA_EMU_API CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  EMU_CURRENT_CONTEXT(ctx);
  // Work queued before that reads or writes the range runs first, as cuMemFree waits.
  EMU_RETURN_IF_ERROR(ctx->Synchronize());
  return ctx->memory().Unmap(ptr, size);
}

REMORA_EMU_API CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                               const CUmemAccessDesc* desc, size_t count) {
  EMU_CURRENT_CONTEXT(ctx);
  bool read_write = false;
  EMU_RETURN_IF_ERROR(AccessOf(desc, count, &read_write));
  return ctx->memory().SetAccess(ptr, size, read_write);
}

REMORA_EMU_API CUresult CUDAAPI cuMemGetAccess(unsigned long long* flags,
                                               const CUmemLocation* location, CUdeviceptr ptr) {
  EMU_CURRENT_CONTEXT(ctx);
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  if (location->id != 0) return CUDA_ERROR_INVALID_DEVICE;
  bool read_write = false;
  EMU_RETURN_IF_ERROR(ctx->memory().GetAccess(ptr, &read_write));
  *flags = read_write ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                            void* addr) {
  EMU_CURRENT_CONTEXT(ctx);
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t h = 0;
  EMU_RETURN_IF_ERROR(ctx->memory().RetainMapped(reinterpret_cast<CUdeviceptr>(addr), &h));
  *handle = h;
  return CUDA_SUCCESS;
}

REMORA_EMU_API CUresult CUDAAPI cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  EMU_CURRENT_CONTEXT(ctx);
  if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint64_t bytes = 0;
  EMU_RETURN_IF_ERROR(ctx->memory().PhysicalSize(handle, &bytes));
  *prop = CUmemAllocationProp{};
  prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop->location.id = 0;
  prop->requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
  return CUDA_SUCCESS;
}
