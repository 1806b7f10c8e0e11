// emu/memory.h - device memory: one reserved host range, carved into allocations.
//
// A CUdeviceptr is a host address inside a PROT_NONE range reserved at start
// (MAP_NORESERVE), kAddressSpaceFactor times the device's memory: as on a GPU,
// whose allocations are mapped pages, free memory split between allocations
// still serves one large allocation (only the bytes allocated count against
// the total). An allocation commits its pages read-write; freeing returns
// whole free pages to PROT_NONE, so a stray host access to freed device memory
// faults. Allocations start at 512-byte aligned addresses, as a GPU's do (the device's
// texture alignment, device_attrs.def: a texture over an allocation is accepted), and are
// sized in 256-byte units; the free list is coalesced on every free.
//
// Virtual memory management (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess):
// a reservation is a range of the same address space, carved like an allocation but holding
// no memory; a physical allocation is a memfd of its size (counted against the total as an
// allocation is); a mapping maps part of one at a granularity-aligned place of a reservation
// (MAP_SHARED: two mappings of one allocation see the same bytes) and stays inaccessible
// until its access is set read-write. Accessible mappings are device memory as allocations
// are: kernels, copies and memsets may use them, and a copy may span adjacent ones.
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

#include "emu/device.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

inline constexpr uint64_t kAllocAlign = 256;                    // allocations' sizes are multiples
inline constexpr uint64_t kAllocPlacement = kTextureAlignment;  // and their addresses
inline constexpr uint64_t kVmmGranularity = 2ull << 20;         // cuMemGetAllocationGranularity
inline constexpr uint64_t kAddressSpaceFactor = 64;
inline constexpr uint64_t kCommitGranule = 2ull << 20;  // what a GPU maps at once

class DeviceMemory final : public ptx::AddressSpace {
  struct Mapping {
    uint64_t size;
    uint64_t handle;
    uint64_t offset;  // into the physical allocation
    bool access;      // read-write (cuMemSetAccess)
  };

 public:
  // Reserves `total` bytes of address space. If the reservation fails every
  // Allocate returns CUDA_ERROR_OUT_OF_MEMORY.
  explicit DeviceMemory(uint64_t total);
  ~DeviceMemory() override;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  // Allocates `bytes` (> 0) at a kAllocPlacement-aligned address; `pooled` marks stream-ordered
  // allocations (a memory pool's), which stream memory operations refuse, as on an H200.
  // Errors: CUDA_ERROR_INVALID_VALUE for 0, CUDA_ERROR_OUT_OF_MEMORY past the
  // total (or, rarely, with no free range of addresses large enough). Thread-safe.
  CUresult Allocate(uint64_t bytes, CUdeviceptr* out, bool pooled = false);
  // Frees the allocation starting exactly at `p`.
  // Errors: CUDA_ERROR_INVALID_VALUE for any other address. Thread-safe.
  CUresult Free(CUdeviceptr p);
  // Frees every allocation and forgets every mapped host range (context reset).
  // Thread-safe.
  void FreeAll();

  // Virtual memory management. Sizes, offsets and addresses are multiples of kVmmGranularity
  // (else CUDA_ERROR_INVALID_VALUE), and every call is thread-safe.
  // Reserves `bytes` of addresses aligned to `align` (0: the granularity; else a power of
  // two). Errors: CUDA_ERROR_OUT_OF_MEMORY with no free range large enough.
  CUresult Reserve(uint64_t bytes, uint64_t align, CUdeviceptr* out);
  // Frees the reservation [p, p + bytes) exactly as reserved, with nothing mapped in it.
  CUresult Unreserve(CUdeviceptr p, uint64_t bytes);
  // Creates a physical allocation of `bytes`; *handle is never 0. Errors:
  // CUDA_ERROR_OUT_OF_MEMORY past the total.
  CUresult CreatePhysical(uint64_t bytes, uint64_t* handle);
  // Drops one reference to `handle` (cuMemRelease); its memory goes once no reference and
  // no mapping is left. Errors: CUDA_ERROR_INVALID_VALUE for an unknown handle.
  CUresult ReleasePhysical(uint64_t handle);
  // Maps [offset, offset + bytes) of `handle` at p, inside one reservation, over nothing
  // mapped; inaccessible until SetAccess.
  CUresult Map(CUdeviceptr p, uint64_t bytes, uint64_t offset, uint64_t handle);
  // Unmaps [p, p + bytes), which must be whole mappings with no gap.
  CUresult Unmap(CUdeviceptr p, uint64_t bytes);
  // Makes [p, p + bytes), mapped with no gap, accessible (read-write) or not.
  CUresult SetAccess(CUdeviceptr p, uint64_t bytes, bool read_write);
  // Whether the mapping at `p` is accessible; CUDA_ERROR_INVALID_VALUE if none is there.
  CUresult GetAccess(CUdeviceptr p, bool* read_write) const;
  // The handle mapped at `p`, with one more reference (cuMemRetainAllocationHandle).
  CUresult RetainMapped(CUdeviceptr p, uint64_t* handle);
  // The size of `handle`'s physical allocation; CUDA_ERROR_INVALID_VALUE if unknown.
  CUresult PhysicalSize(uint64_t handle, uint64_t* bytes) const;

  // Makes host range [base, base + bytes) device-accessible (DEVICEMAP). The
  // caller (Context) has already refused overlapping registrations. Thread-safe.
  void MapHost(uint64_t base, uint64_t bytes);
  // Forgets the mapped host range starting at `base`, if any. Thread-safe.
  void UnmapHost(uint64_t base);

  // The range a kernel may touch around `addr`: the committed granules of an allocation (a
  // granule holding any live allocation is read-write as a GPU's mapped page is, so an access a
  // little past an allocation's end reads or writes memory instead of faulting), an accessible
  // mapping or a mapped host range. Thread-safe (shared lock).
  bool Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const override;
  // The live allocation or accessible mapping (device memory only) containing `addr`.
  // Thread-safe.
  bool LookupAllocation(uint64_t addr, uint64_t* base, uint64_t* size) const;
  // True if `addr` lies in an allocation Allocate made with `pooled`.
  bool Pooled(uint64_t addr) const;
  // True if [addr, addr + bytes) lies inside one live allocation or in accessible mappings
  // with no gap between them (bytes > 0).
  bool Contains(uint64_t addr, uint64_t bytes) const;

  uint64_t total() const { return total_; }
  // Bytes held by live allocations, in 256-byte units. Thread-safe.
  uint64_t used() const;

 private:
  void Decommit(uint64_t offset, uint64_t size);
  // The kCommitGranule-aligned range of addresses, as offsets, covering [offset, offset + size).
  void GranulesLocked(uint64_t offset, uint64_t size, uint64_t* lo, uint64_t* hi) const;
  // Carves `bytes` at an `align`-aligned offset from the free list; false if none fits.
  bool CarveLocked(uint64_t bytes, uint64_t align, uint64_t* offset);
  // Returns [offset, offset + size) to the free list, coalesced, and decommits it.
  void ReturnLocked(uint64_t offset, uint64_t size);
  // The accessible mapping containing offset `off`, as [*lo, *hi) offsets.
  bool MappedLocked(uint64_t off, uint64_t* lo, uint64_t* hi) const;
  struct Live;
  // The allocation holding offset `off`, and its start in *start; nullptr if none.
  // REQUIRES: mu_ (shared).
  const Live* LiveAtLocked(uint64_t off, uint64_t* start) const;
  // The mapping containing offset `off`, accessible or not; mappings_.end() if none.
  std::map<uint64_t, Mapping>::const_iterator FindMappingLocked(uint64_t off) const;
  // The mapping containing address `p`, accessible or not; null if none.
  const Mapping* MappingAtLocked(CUdeviceptr p) const;
  // Offsets of p's range in the address space, if [p, p + bytes) is inside it and aligned.
  bool VmmRange(CUdeviceptr p, uint64_t bytes, uint64_t* off) const;
  // The mappings making up [off, off + bytes) exactly, with no gap; end() if they do not.
  bool WholeMappingsLocked(uint64_t off, uint64_t bytes) const;
  void DropMappingLocked(uint64_t off);
  void FreePhysicalIfUnusedLocked(uint64_t handle);

  uint64_t total_;     // device memory: what allocations may hold together
  uint64_t span_ = 0;  // reserved address space
  char* base_ = nullptr;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // offset -> size, disjoint, coalesced
  struct Live {
    uint64_t size;     // as requested
    uint64_t rounded;  // as carved from the free list
    bool pooled;       // stream-ordered (cuMemAllocAsync)
  };
  std::map<uint64_t, Live> live_;             // offset -> allocation
  std::map<uint64_t, uint64_t> mapped_host_;  // host address -> bytes (DEVICEMAP)
  uint64_t used_ = 0;
  struct Physical {
    int fd;
    uint64_t size;
    uint32_t refs;      // cuMemCreate's, and each cuMemRetainAllocationHandle's
    uint32_t mappings;  // live mappings of it
  };
  std::map<uint64_t, Physical> physical_;  // handle -> allocation
  uint64_t next_handle_ = 1;
  std::map<uint64_t, uint64_t> reserved_;  // offset -> size
  std::map<uint64_t, Mapping> mappings_;   // offset -> mapping
};

}  // namespace remora::emu
