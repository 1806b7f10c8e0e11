// emu/memory.cc - device memory: reservation, first-fit allocator, page commit.
#include "emu/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
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

}  // namespace

DeviceMemory::DeviceMemory(uint64_t total) : total_(total / kAllocAlign * kAllocAlign) {
  // As much address space as the device's memory if no more can be had.
  for (uint64_t span : {total_ * kAddressSpaceFactor, total_}) {
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

CUresult DeviceMemory::Allocate(uint64_t bytes, CUdeviceptr* out) {
  if (bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (bytes > total_) return CUDA_ERROR_OUT_OF_MEMORY;
  const uint64_t rounded = RoundUp(bytes, kAllocAlign);
  std::unique_lock lock(mu_);
  if (rounded > total_ - used_) return CUDA_ERROR_OUT_OF_MEMORY;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < rounded) continue;
    const uint64_t offset = it->first;
    const uint64_t rest = it->second - rounded;
    free_.erase(it);
    if (rest > 0) free_.emplace(offset + rounded, rest);
    // Pages shared with a neighbour are already read-write; mprotect is idempotent.
    const uint64_t lo = offset / PageSize() * PageSize();
    const uint64_t hi = RoundUp(offset + rounded, PageSize());
    if (mprotect(base_ + lo, hi - lo, PROT_READ | PROT_WRITE) != 0) [[unlikely]] {
      free_.emplace(offset, rounded);  // re-coalesced by the next Free
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    live_.emplace(offset, Live{bytes, rounded});
    used_ += rounded;
    *out = reinterpret_cast<CUdeviceptr>(base_ + offset);
    return CUDA_SUCCESS;
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult DeviceMemory::Free(CUdeviceptr p) {
  const uint64_t addr = p;
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < begin || addr >= begin + span_) return CUDA_ERROR_INVALID_VALUE;
  std::unique_lock lock(mu_);
  auto it = live_.find(addr - begin);
  if (it == live_.end()) return CUDA_ERROR_INVALID_VALUE;
  uint64_t offset = it->first;
  uint64_t size = it->second.rounded;
  used_ -= size;
  live_.erase(it);
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
  return CUDA_SUCCESS;
}

// Returns the whole pages inside the free block [offset, offset + size) to the
// kernel and makes them inaccessible; partial pages still hold live neighbours.
void DeviceMemory::Decommit(uint64_t offset, uint64_t size) {
  const uint64_t lo = RoundUp(offset, PageSize());
  const uint64_t hi = (offset + size) / PageSize() * PageSize();
  if (hi <= lo) return;
  madvise(base_ + lo, hi - lo, MADV_DONTNEED);
  mprotect(base_ + lo, hi - lo, PROT_NONE);
}

void DeviceMemory::FreeAll() {
  std::unique_lock lock(mu_);
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
  if (LookupAllocation(addr, base, size)) return true;
  std::shared_lock lock(mu_);
  auto it = mapped_host_.upper_bound(addr);
  if (it == mapped_host_.begin()) return false;
  --it;
  if (addr - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

bool DeviceMemory::LookupAllocation(uint64_t addr, uint64_t* base, uint64_t* size) const {
  const uint64_t begin = reinterpret_cast<uint64_t>(base_);
  if (base_ == nullptr || addr < begin || addr >= begin + span_) return false;
  std::shared_lock lock(mu_);
  auto it = live_.upper_bound(addr - begin);
  if (it == live_.begin()) return false;
  --it;
  if (addr - begin >= it->first + it->second.size) return false;
  *base = begin + it->first;
  *size = it->second.size;
  return true;
}

bool DeviceMemory::Contains(uint64_t addr, uint64_t bytes) const {
  uint64_t base = 0, size = 0;
  if (bytes == 0 || !LookupAllocation(addr, &base, &size)) return false;
  return bytes <= size - (addr - base);
}

uint64_t DeviceMemory::used() const {
  std::shared_lock lock(mu_);
  return used_;
}

}  // namespace remora::emu
