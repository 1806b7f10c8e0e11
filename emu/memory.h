// emu/memory.h - device memory: one reserved host range, carved into allocations.
//
// A CUdeviceptr is a host address inside a PROT_NONE range reserved at start
// (MAP_NORESERVE), kAddressSpaceFactor times the device's memory: as on a GPU,
// whose allocations are mapped pages, free memory split between allocations
// still serves one large allocation (only the bytes allocated count against
// the total). An allocation commits its pages read-write; freeing returns
// whole free pages to PROT_NONE, so a stray host access to freed device memory
// faults. Allocations are 256-byte aligned and
// sized in 256-byte units; the free list is coalesced on every free.
//
// Host memory registered with CU_MEMHOSTREGISTER_DEVICEMAP is mapped into the
// device's address space at its host address (unified addressing): kernels may
// access it (Lookup finds it), while copies and memsets, which take device
// pointers, still accept only allocations (Contains).
//
//   DeviceMemory mem(16ull << 30);
//   CUdeviceptr p;
//   if (mem.Allocate(1000, &p) == CUDA_SUCCESS) { ... mem.Free(p); }
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>

#include <cuda.h>

#include "emu/ptx/ptx.h"

namespace remora::emu {

inline constexpr uint64_t kAllocAlign = 256;
inline constexpr uint64_t kAddressSpaceFactor = 4;

class DeviceMemory final : public ptx::AddressSpace {
 public:
  // Reserves `total` bytes of address space. If the reservation fails every
  // Allocate returns CUDA_ERROR_OUT_OF_MEMORY.
  explicit DeviceMemory(uint64_t total);
  ~DeviceMemory() override;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Allocates `bytes` (> 0) at a 256-byte aligned address.
  // Errors: CUDA_ERROR_INVALID_VALUE for 0, CUDA_ERROR_OUT_OF_MEMORY past the
  // total (or, rarely, with no free range of addresses large enough). Thread-safe.
  CUresult Allocate(uint64_t bytes, CUdeviceptr* out);
  // Frees the allocation starting exactly at `p`.
  // Errors: CUDA_ERROR_INVALID_VALUE for any other address. Thread-safe.
  CUresult Free(CUdeviceptr p);
  // Frees every allocation and forgets every mapped host range (context reset).
  // Thread-safe.
  void FreeAll();

  // Makes host range [base, base + bytes) device-accessible (DEVICEMAP). The
  // caller (Context) has already refused overlapping registrations. Thread-safe.
  void MapHost(uint64_t base, uint64_t bytes);
  // Forgets the mapped host range starting at `base`, if any. Thread-safe.
  void UnmapHost(uint64_t base);

  // The live allocation or mapped host range containing `addr`: what a kernel
  // may touch. Thread-safe (shared lock).
  bool Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const override;
  // The live allocation (device memory only) containing `addr`. Thread-safe.
  bool LookupAllocation(uint64_t addr, uint64_t* base, uint64_t* size) const;
  // True if [addr, addr + bytes) lies inside one live allocation (bytes > 0).
  bool Contains(uint64_t addr, uint64_t bytes) const;

  uint64_t total() const { return total_; }
  // Bytes held by live allocations, in 256-byte units. Thread-safe.
  uint64_t used() const;

 private:
  void Decommit(uint64_t offset, uint64_t size);

  uint64_t total_;     // device memory: what allocations may hold together
  uint64_t span_ = 0;  // reserved address space
  char* base_ = nullptr;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, disjoint, coalesced
  struct Live {
    uint64_t size;     // as requested
    uint64_t rounded;  // as carved from the free list
  };
  std::map<uint64_t, Live> live_;             // offset -> allocation
  std::map<uint64_t, uint64_t> mapped_host_;  // host address -> bytes (DEVICEMAP)
  uint64_t used_ = 0;
};

}  // namespace remora::emu
