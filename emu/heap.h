// emu/heap.h - the device-side heap of a context: malloc/free/new/delete in kernels.
//
// One block of device memory (CU_LIMIT_MALLOC_HEAP_SIZE bytes, 8 MiB by default as on a
// GPU), allocated at the first malloc and carved first-fit into 16-byte aligned blocks.
// Kernels reach it as any allocation, so an access past a block but inside the heap is not
// caught (nor is it on a GPU); outside the heap it is CUDA_ERROR_ILLEGAL_ADDRESS.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

#include "emu/memory.h"
#include "emu/ptx/ptx.h"

namespace remora::emu {

inline constexpr uint64_t kDefaultHeapBytes = 8ull << 20;
// A thread's call stack, whatever its stack limit (PTX frames are smaller than a GPU's, which
// also hold spilled and saved registers, so a GPU's default of 1 KiB is not enough here).
inline constexpr uint64_t kMinCallStackBytes = 16ull << 10;
// The most stack a thread may be given: a GPU's most local memory per thread.
inline constexpr uint64_t kMaxStackBytes = 512ull << 10;
// The parameter buffers of device-side launches waiting to run (ptx::LaunchConfig::launch_pool).
inline constexpr uint64_t kLaunchPoolBytes = 16ull << 20;

class Heap final : public ptx::DeviceHeap {
 public:
  explicit Heap(DeviceMemory& memory, uint64_t limit = kDefaultHeapBytes)
      : memory_(memory), limit_(limit) {}
  ~Heap() override;

  uint64_t Malloc(uint64_t bytes) override;
  bool Free(uint64_t addr) override;

  uint64_t limit() const;
  // cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE): before the first malloc only, as on a GPU.
  // Errors: CUDA_ERROR_INVALID_VALUE once the heap is in use, or for 0 bytes.
  CUresult SetLimit(uint64_t bytes);
  // The context was reset: its memory is gone (DeviceMemory::FreeAll); start afresh.
  void Reset();

 private:
  mutable std::mutex mu_;
  DeviceMemory& memory_;
  uint64_t limit_;                               // guarded by mu_
  CUdeviceptr base_ = 0;                         // 0 until the first malloc (guarded by mu_)
  bool failed_ = false;                          // the heap's block could not be allocated
  std::map<uint64_t, uint64_t> free_;            // offset -> bytes, coalesced (guarded by mu_)
  std::unordered_map<uint64_t, uint64_t> used_;  // offset -> bytes (guarded by mu_)
};

}  // namespace remora::emu
