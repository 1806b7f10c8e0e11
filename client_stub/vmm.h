// client_stub/vmm.h - the session's virtual memory management calls (proto/calls.def:
// MemAddressReserve, MemCreate, MemMap, MemSetAccess and their inverses), shared by
// libcuda.so.1's entry points (driver_vmm.cc) and graph memory (graph_memory.h). Each is one
// call; the server checks it against the tenant's own and charges physical memory to its quota
// (server/handlers/vmm.cc). What becomes accessible, or stops being so, enters the process's
// device ranges as the server reports it, so copies over mapped memory are checked here as over
// cudaMalloc'ed memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace remora::client_stub::vmm {

// The device's allocation granularity once connected: 0 where it has no virtual memory
// management.
cudaError_t Granularity(uint64_t* out);
// Reserves `size` bytes of address space (`addr` a hint, `alignment` 0 or a power of two).
cudaError_t Reserve(uint64_t size, uint64_t alignment, uint64_t addr, uint64_t* base);
cudaError_t FreeAddress(uint64_t base, uint64_t size);
// A physical allocation of `size` bytes on the tenant's device, charged to its quota.
cudaError_t Create(uint64_t size, uint64_t* handle);
cudaError_t Release(uint64_t handle);
// Maps [offset, offset + size) of `handle` at `ptr`, inaccessible until SetAccess.
cudaError_t Map(uint64_t ptr, uint64_t size, uint64_t offset, uint64_t handle);
// Unmaps [ptr, ptr + size) once the tenant's work already issued is done.
cudaError_t Unmap(uint64_t ptr, uint64_t size);
// Makes mapped [ptr, ptr + size) read-write, or inaccessible once the work issued is done.
cudaError_t SetAccess(uint64_t ptr, uint64_t size, bool read_write);

}  // namespace remora::client_stub::vmm
