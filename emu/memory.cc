// emu/memory.cc - device memory: reservation, first-fit allocator, page commit.
#include "emu/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>

namespace remora::emu {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uint64_t RoundUp(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

uint64_t RoundDown(uint64_t v, uint64_t a) {
  return v / a * a;
}

}  // namespace

DeviceMemory::DeviceMemory(uint64_t total) : total_(total / kAllocAlign * kAllocAlign) {
  // Less address space where that much cannot be had (ThreadSanitizer refuses 1 TiB), but
  // never only the device's memory if more can be: with no room to spare, freed holes between
  // live allocations would refuse an allocation the device's free memory holds, as no GPU does.
  for (uint64_t factor = kAddressSpaceFactor; factor >= 1; factor /= 2) {
    const uint64_t span = total_ * factor;
    void* p = mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) continue;
    base_ = static_cast<char*>(p);
    span_ = span;
    free_.emplace(0, span_);
    return;
  }
  std::fprintf(stderr, "remora-emu: cannot reserve %llu bytes of device memory: %s\n",
               static_cast<unsigned long long>(total_), std::strerror(errno));
  total_ = 0;
}

DeviceMemory::~DeviceMemory() {
  if (base_ != nullptr) munmap(base_, span_);
}

CUresult DeviceMemory::Allocate(uint64_t bytes, CUdeviceptr* out, bool pooled) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > total_) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t rounded = RoundUp(bytes, kAllocAlign);
  std::unique_lock lock(mu_);
  if (rounded > total_ - used_) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t offset = 0;
  if (!CarveLocked(rounded, kAllocPlacement, &offset)) return CUDA_ERROR_OUT_OF_MEMORY;
  // Granules shared with a neighbour are already read-write; mprotect is idempotent.
  uint64_t lo = 0, hi = 0;
  GranulesLocked(offset, rounded, &lo, &hi);
  if (mprotect(base_ + lo, hi - lo, PROT_READ | PROT_WRITE) != 0) [[unlikely]] {
    ReturnLocked(offset, rounded);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  live_.emplace(offset, Live{bytes, rounded, pooled});
  used_ += rounded;
  *out = reinterpret_cast<CUdeviceptr>(base_ + offset);
  return CUDA_SUCCESS;
}

bool DeviceMemory::CarveLocked(uint64_t bytes, uint64_t align, uint64_t* offset) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = RoundUp(reinterpret_cast<uint64_t>(base_) + it->first, align) -
                           reinterpret_cast<uint64_t>(base_);
    const uint64_t end = it->first + it->second;
    if (start > end || end - start < bytes) continue;
    const uint64_t block = it->first;
    free_.erase(it);
    if (start > block) free_.emplace(block, start - block);
    if (end > start + bytes) free_.emplace(start + bytes, end - start - bytes);
    *offset = start;
    return true;
  }
  return false;
}

CUresult DeviceMemory::Free(CUdeviceptr p) {
  const uint64_t addr = p;
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < begin || addr >= begin + span_) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  auto it = live_.find(addr - begin);
  if (it == live_.end()) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t offset = it->first;
  const uint64_t size = it->second.rounded;
  used_ -= size;
  live_.erase(it);
  ReturnLocked(offset, size);
  return CUDA_SUCCESS;
}

void DeviceMemory::ReturnLocked(uint64_t offset, uint64_t size) {
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(offset, size);
  Decommit(offset, size);
}

void DeviceMemory::GranulesLocked(uint64_t offset, uint64_t size, uint64_t* lo,
                                  uint64_t* hi) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  *lo = std::max(RoundDown(begin + offset, kCommitGranule), begin) - begin;
  *hi = std::min(RoundUp(begin + offset + size, kCommitGranule), begin + span_) - begin;
}

// Returns the whole pages inside the free block [offset, offset + size) to the kernel, and
// makes the whole granules inside it inaccessible: a granule the block shares with a live
// neighbour (a free block is coalesced, so only at its ends) stays read-write.
void DeviceMemory::Decommit(uint64_t offset, uint64_t size) {
  const uint64_t lo = RoundUp(offset, PageSize());
  const uint64_t hi = RoundDown(offset + size, PageSize());
  if (hi <= lo) return;
  madvise(base_ + lo, hi - lo, MADV_DONTNEED);
  // The address space's first and last granules may be partial: nothing lies beyond them.
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  const uint64_t glo = offset == 0 ? 0 : RoundUp(begin + offset, kCommitGranule) - begin;
  const uint64_t ghi =
      offset + size == span_
          ? span_
          : std::max(RoundDown(begin + offset + size, kCommitGranule), begin) - begin;
  if (ghi > glo) mprotect(base_ + glo, ghi - glo, PROT_NONE);
}

void DeviceMemory::FreeAll() {
  std::unique_lock lock(mu_);
  while (!mappings_.empty()) DropMappingLocked(mappings_.begin()->first);
  for (auto& [handle, phys] : physical_) close(phys.fd);
  physical_.clear();
  reserved_.clear();
  mapped_host_.clear();
  live_.clear();
  free_.clear();
  used_ = 0;
  if (base_ == nullptr) return;
  free_.emplace(0, span_);
  Decommit(0, span_);
}

void DeviceMemory::MapHost(uint64_t base, uint64_t bytes) {
  std::unique_lock lock(mu_);
  mapped_host_[base] = bytes;
}

void DeviceMemory::UnmapHost(uint64_t base) {
  std::unique_lock lock(mu_);
  mapped_host_.erase(base);
}

bool DeviceMemory::Lookup(uint64_t addr, uint64_t* base, uint64_t* size) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  std::shared_lock lock(mu_);
  if (base_ != nullptr && addr >= begin && addr < begin + span_) {
    const uint64_t off = addr - begin;
    uint64_t lo = 0, hi = 0;
    if (MappedLocked(off, &lo, &hi)) {
      *base = begin + lo;
      *size = hi - lo;
      return true;
    }
    // The allocation at or before `off` reaching furthest: the one holding it, else the last
    // one before it, which is the only one that can reach into its granule from below.
    GranulesLocked(off, 1, &lo, &hi);
    auto next = live_.upper_bound(off);
    if (next != live_.begin()) {
      const auto& [start, live] = *std::prev(next);
      uint64_t alo = 0, ahi = 0;
      GranulesLocked(start, live.rounded, &alo, &ahi);
      if (ahi > off) {
        *base = begin + alo;
        *size = ahi - alo;
        return true;
      }
    }
    if (next != live_.end() && next->first < hi) {  // one starting later in its granule
      *base = begin + lo;
      *size = hi - lo;
      return true;
    }
    return false;
  }
  auto it = mapped_host_.upper_bound(addr);
  if (it == mapped_host_.begin()) return false;
  --it;
  if (addr - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

const DeviceMemory::Live* DeviceMemory::LiveAtLocked(uint64_t off, uint64_t* start) const {
  auto it = live_.upper_bound(off);
  if (it == live_.begin()) return nullptr;
  --it;
  if (off - it->first >= it->second.size) return nullptr;
  *start = it->first;
  return &it->second;
}

bool DeviceMemory::Pooled(uint64_t addr) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < begin || addr >= begin + span_) return false;
  std::shared_lock lock(mu_);
  uint64_t start = 0;
  const Live* live = LiveAtLocked(addr - begin, &start);
  return live != nullptr && live->pooled;
}

bool DeviceMemory::LookupAllocation(uint64_t addr, uint64_t* base, uint64_t* size) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < begin || addr >= begin + span_) return false;
  std::shared_lock lock(mu_);
  uint64_t start = 0;
  if (const Live* live = LiveAtLocked(addr - begin, &start)) {
    *base = begin + start;
    *size = live->size;
    return true;
  }
  uint64_t lo = 0, hi = 0;
  if (!MappedLocked(addr - begin, &lo, &hi)) return false;
  *base = begin + lo;
  *size = hi - lo;
  return true;
}

bool DeviceMemory::Contains(uint64_t addr, uint64_t bytes) const {
  uint64_t base = 0, size = 0;
  if (bytes == 0 || !LookupAllocation(addr, &base, &size)) return false;
  if (bytes <= size - (addr - base)) return true;
  // Accessible mappings that follow each other with no gap hold one range.
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (addr > UINT64_MAX - bytes || addr + bytes > begin + span_) return false;
  std::shared_lock lock(mu_);
  uint64_t lo = 0, hi = 0;
  uint64_t at = addr - begin;
  while (MappedLocked(at, &lo, &hi)) {
    if (hi >= addr - begin + bytes) return true;
    at = hi;
  }
  return false;
}

bool DeviceMemory::MappedLocked(uint64_t off, uint64_t* lo, uint64_t* hi) const {
  auto it = FindMappingLocked(off);
  if (it == mappings_.end() || !it->second.access) return false;
  *lo = it->first;
  *hi = it->first + it->second.size;
  return true;
}

std::map<uint64_t, DeviceMemory::Mapping>::const_iterator DeviceMemory::FindMappingLocked(
    uint64_t off) const {
  auto it = mappings_.upper_bound(off);
  if (it == mappings_.begin()) return mappings_.end();
  --it;
  return off < it->first + it->second.size ? it : mappings_.end();
}

// ---- Virtual memory management ---------------------------------------------

bool DeviceMemory::VmmRange(CUdeviceptr p, uint64_t bytes, uint64_t* off) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || bytes == 0 || bytes % kVmmGranularity != 0 || p % kVmmGranularity != 0 ||
      p < begin || p - begin > span_ || bytes > span_ - (p - begin))
    return false;
  *off = p - begin;
  return true;
}

CUresult DeviceMemory::Reserve(uint64_t bytes, uint64_t align, CUdeviceptr* out) {
  if (bytes == 0 || bytes % kVmmGranularity != 0 || (align & (align - 1)) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (base_ == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::unique_lock lock(mu_);
  uint64_t offset = 0;
  if (!CarveLocked(bytes, std::max(align, kVmmGranularity), &offset))
    return CUDA_ERROR_OUT_OF_MEMORY;
  reserved_.emplace(offset, bytes);
  *out = reinterpret_cast<CUdeviceptr>(base_ + offset);
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::Unreserve(CUdeviceptr p, uint64_t bytes) {
  uint64_t off = 0;
  if (!VmmRange(p, bytes, &off)) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  auto it = reserved_.find(off);
  if (it == reserved_.end() || it->second != bytes) return CUDA_ERROR_INVALID_VALUE;
  auto m = mappings_.lower_bound(off);
  if (m != mappings_.end() && m->first < off + bytes) return CUDA_ERROR_INVALID_VALUE;
  reserved_.erase(it);
  ReturnLocked(off, bytes);
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::CreatePhysical(uint64_t bytes, uint64_t* handle) {
  if (bytes == 0 || bytes % kVmmGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  if (bytes > total_ - used_) return CUDA_ERROR_OUT_OF_MEMORY;
  const int fd = memfd_create("remora-emu-vmm", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  used_ += bytes;
  *handle = next_handle_++;
  physical_.emplace(*handle, Physical{fd, bytes, 1, 0});
  return CUDA_SUCCESS;
}

void DeviceMemory::FreePhysicalIfUnusedLocked(uint64_t handle) {
  auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.refs > 0 || it->second.mappings > 0) return;
  close(it->second.fd);
  used_ -= it->second.size;
  physical_.erase(it);
}

CUresult DeviceMemory::ReleasePhysical(uint64_t handle) {
  std::unique_lock lock(mu_);
  auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.refs == 0) return CUDA_ERROR_INVALID_VALUE;
  --it->second.refs;
  FreePhysicalIfUnusedLocked(handle);
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::Map(CUdeviceptr p, uint64_t bytes, uint64_t offset, uint64_t handle) {
  uint64_t off = 0;
  if (!VmmRange(p, bytes, &off) || offset % kVmmGranularity != 0) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  auto ph = physical_.find(handle);
  if (ph == physical_.end() || ph->second.refs == 0 || offset > ph->second.size ||
      bytes > ph->second.size - offset)
    return CUDA_ERROR_INVALID_VALUE;
  auto r = reserved_.upper_bound(off);  // the reservation holding the whole range
  if (r == reserved_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --r;
  if (off + bytes > r->first + r->second) return CUDA_ERROR_INVALID_VALUE;
  auto m = mappings_.lower_bound(off);  // nothing mapped there yet
  if (m != mappings_.end() && m->first < off + bytes) return CUDA_ERROR_INVALID_VALUE;
  if (m != mappings_.begin() && std::prev(m)->first + std::prev(m)->second.size > off)
    return CUDA_ERROR_INVALID_VALUE;
  void* at = mmap(base_ + off, bytes, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->second.fd,
                  static_cast<off_t>(offset));
  if (at == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  ++ph->second.mappings;
  mappings_.emplace(off, Mapping{bytes, handle, offset, false});
  return CUDA_SUCCESS;
}

bool DeviceMemory::WholeMappingsLocked(uint64_t off, uint64_t bytes) const {
  uint64_t at = off;  // where the next mapping must start
  for (auto m = mappings_.find(off); m != mappings_.end() && m->first == at; ++m) {
    at = m->first + m->second.size;
    if (at >= off + bytes) return at == off + bytes;
  }
  return false;
}

void DeviceMemory::DropMappingLocked(uint64_t off) {
  auto m = mappings_.find(off);
  const Mapping dropped = m->second;
  mappings_.erase(m);
  // The addresses stay reserved: inaccessible anonymous pages in place of the mapping.
  (void)mmap(base_ + off, dropped.size, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  auto ph = physical_.find(dropped.handle);
  if (ph == physical_.end()) return;
  --ph->second.mappings;
  FreePhysicalIfUnusedLocked(dropped.handle);
}

CUresult DeviceMemory::Unmap(CUdeviceptr p, uint64_t bytes) {
  uint64_t off = 0;
  if (!VmmRange(p, bytes, &off)) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  if (!WholeMappingsLocked(off, bytes)) return CUDA_ERROR_INVALID_VALUE;
  while (true) {
    auto m = mappings_.lower_bound(off);
    if (m == mappings_.end() || m->first >= off + bytes) break;
    DropMappingLocked(m->first);
  }
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::SetAccess(CUdeviceptr p, uint64_t bytes, bool read_write) {
  uint64_t off = 0;
  if (!VmmRange(p, bytes, &off)) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  if (!WholeMappingsLocked(off, bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (mprotect(base_ + off, bytes, read_write ? PROT_READ | PROT_WRITE : PROT_NONE) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (auto m = mappings_.find(off); m != mappings_.end() && m->first < off + bytes; ++m)
    m->second.access = read_write;
  return CUDA_SUCCESS;
}

const DeviceMemory::Mapping* DeviceMemory::MappingAtLocked(CUdeviceptr p) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || p < begin || p - begin >= span_) return nullptr;
  auto it = FindMappingLocked(p - begin);
  return it == mappings_.end() ? nullptr : &it->second;
}

CUresult DeviceMemory::GetAccess(CUdeviceptr p, bool* read_write) const {
  std::shared_lock lock(mu_);
  const Mapping* m = MappingAtLocked(p);
  if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *read_write = m->access;
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::RetainMapped(CUdeviceptr p, uint64_t* handle) {
  std::unique_lock lock(mu_);
  const Mapping* m = MappingAtLocked(p);
  if (m == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ++physical_.at(m->handle).refs;
  *handle = m->handle;
  return CUDA_SUCCESS;
}

CUresult DeviceMemory::PhysicalSize(uint64_t handle, uint64_t* bytes) const {
  std::shared_lock lock(mu_);
  auto it = physical_.find(handle);
  if (it == physical_.end() || it->second.refs == 0) return CUDA_ERROR_INVALID_VALUE;
  *bytes = it->second.size;
  return CUDA_SUCCESS;
}

uint64_t DeviceMemory::used() const {
  std::shared_lock lock(mu_);
  return used_;
}

}  // namespace remora::emu
