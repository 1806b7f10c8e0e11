// server/arena_pins.h - which parts of a session's shm arena are page-locked with the driver.
//
// A GPU copies to and from host memory in one pass, asynchronously, and kernels dereference it
// (zero-copy, managed memory), only where the driver registered it. Registering pins every
// page: an arena of 1 GiB pinned at Hello cost each tenant 0.4-0.6 s on an H200, one after
// another, and as much locked host memory as the arena's size whether used or not. So the
// staging slots, which every pageable copy uses, are registered at Hello, and the heap
// (cudaMallocHost, cudaHostAlloc, cudaMallocManaged) in chunks of arena::kHeapPinChunkBytes
// when the stub first hands out memory in them (PinArena). Not thread-safe: a session's
// calls arrive in order; pinned_bytes() may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "proto/status.h"
#include "server/device.h"

namespace remora::server {

class ArenaPins {
 public:
  // `base`..+`size` is the arena, of which [0, heap_offset) is the staging region.
  ArenaPins(std::byte* base, uint64_t size, uint64_t heap_offset);

  // Registers the staging region and returns the device address of arena byte 0, or 0 when
  // the driver gives none (kernels may then not dereference arena memory). REQUIRES: a Use.
  // Errors: the driver's, as cuMemHostRegister's.
  Result<CUdeviceptr> PinStaging(Device& dev);
  // Registers every heap chunk [offset, offset + bytes) touches that is not yet registered.
  // Errors: kInvalidValue for a range not wholly in the heap; kMemoryAllocation when the
  // driver cannot lock more memory, or maps a chunk anywhere but at `device_base` + its
  // offset (the stub relies on one mapping for the whole arena). REQUIRES: a Use.
  Status Pin(Device& dev, uint64_t offset, uint64_t bytes, CUdeviceptr device_base);
  // True if [offset, offset + bytes) lies in the heap, every chunk of it registered: memory
  // the device reaches (the tenant's pinned and managed memory, which libraries take as device
  // memory as on a GPU).
  bool Covers(uint64_t offset, uint64_t bytes) const;
  // The registered ranges' starts, for cuMemHostUnregister once the session's work is done;
  // forgets them. After a context rebuild, Take() and drop the result: the driver forgot them.
  std::vector<void*> Take();
  // Bytes of the arena registered now.
  uint64_t pinned_bytes() const { return pinned_bytes_.load(std::memory_order_relaxed); }

 private:
  std::byte* const base_;
  const uint64_t size_, heap_offset_;
  bool staging_ = false;
  std::vector<bool> chunks_;  // heap chunk i: [heap_offset_ + i * chunk, +chunk) ∩ arena
  std::atomic<uint64_t> pinned_bytes_{0};
};

}  // namespace remora::server
