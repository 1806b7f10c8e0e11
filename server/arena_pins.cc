// server/arena_pins.cc - the staging region at Hello, heap chunks on demand.
#include "server/arena_pins.h"

#include <algorithm>
#include <string>

#include "proto/arena.h"

namespace remora::server {

ArenaPins::ArenaPins(std::byte* base, uint64_t size, uint64_t heap_offset)
    : base_(base), size_(size), heap_offset_(std::min(heap_offset, size)) {
  const uint64_t heap = size_ - heap_offset_;
  chunks_.assign((heap + arena::kHeapPinChunkBytes - 1) / arena::kHeapPinChunkBytes, false);
}

Result<CUdeviceptr> ArenaPins::PinStaging(Device& dev) {
  // An arena with no heap (too small for one) is all staging.
  const uint64_t bytes = heap_offset_ > 0 ? heap_offset_ : size_;
  RETURN_IF_ERROR(dev.Check(dev.Timed("cuMemHostRegister",
                                      [&] {
                                        return dev.drv().cuMemHostRegister(
                                            base_, bytes, CU_MEMHOSTREGISTER_DEVICEMAP);
                                      }),
                            "cuMemHostRegister"));
  staging_ = true;
  pinned_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  CUdeviceptr device_address = 0;
  if (dev.drv().cuMemHostGetDevicePointer(&device_address, base_, 0) != CUDA_SUCCESS) return 0;
  return device_address;
}

bool ArenaPins::Covers(uint64_t offset, uint64_t bytes) const {
  if (heap_offset_ == 0 || offset < heap_offset_ || offset > size_ || bytes > size_ - offset)
    return false;
  if (bytes == 0) return true;
  const uint64_t first = (offset - heap_offset_) / arena::kHeapPinChunkBytes;
  const uint64_t last = (offset + bytes - 1 - heap_offset_) / arena::kHeapPinChunkBytes;
  for (uint64_t i = first; i <= last; ++i)
    if (!chunks_[i]) return false;
  return true;
}

Status ArenaPins::Pin(Device& dev, uint64_t offset, uint64_t bytes, CUdeviceptr device_base) {
  if (heap_offset_ == 0 || offset < heap_offset_ || offset > size_ || bytes > size_ - offset)
    return Error(err::kInvalidValue, "[" + std::to_string(offset) + ", +" + std::to_string(bytes) +
                                         ") is not in the arena's heap");
  if (bytes == 0) return OkStatus();
  const uint64_t first = (offset - heap_offset_) / arena::kHeapPinChunkBytes;
  const uint64_t last = (offset + bytes - 1 - heap_offset_) / arena::kHeapPinChunkBytes;
  for (uint64_t i = first; i <= last; ++i) {
    if (chunks_[i]) continue;
    const uint64_t at = heap_offset_ + i * arena::kHeapPinChunkBytes;
    const uint64_t n = std::min(arena::kHeapPinChunkBytes, size_ - at);
    std::byte* p = base_ + at;
    const CUresult r = dev.Timed("cuMemHostRegister", [&] {
      return dev.drv().cuMemHostRegister(p, n, CU_MEMHOSTREGISTER_DEVICEMAP);
    });
    if (r != CUDA_SUCCESS)
      return Error(err::kMemoryAllocation,
                   "the driver could not page-lock " + std::to_string(n >> 20) +
                       " MiB more of the tenant's pinned host memory (cuMemHostRegister: " +
                       std::to_string(int(r)) + ")");
    CUdeviceptr d = 0;
    if (device_base != 0 &&
        (dev.drv().cuMemHostGetDevicePointer(&d, p, 0) != CUDA_SUCCESS || d != device_base + at)) {
      (void)dev.drv().cuMemHostUnregister(p);
      return Error(err::kMemoryAllocation,
                   "the driver mapped a chunk of the tenant's pinned host memory apart from the "
                   "rest of its arena; kernels could not reach it at its host address");
    }
    chunks_[i] = true;
    pinned_bytes_.fetch_add(n, std::memory_order_relaxed);
  }
  return OkStatus();
}

std::vector<void*> ArenaPins::Take() {
  std::vector<void*> out;
  if (staging_) out.push_back(base_);
  for (size_t i = 0; i < chunks_.size(); ++i)
    if (chunks_[i]) out.push_back(base_ + heap_offset_ + i * arena::kHeapPinChunkBytes);
  staging_ = false;
  std::fill(chunks_.begin(), chunks_.end(), false);
  pinned_bytes_.store(0, std::memory_order_relaxed);
  return out;
}

}  // namespace remora::server
