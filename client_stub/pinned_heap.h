// client_stub/pinned_heap.h - PinnedHeap: first-fit allocator over the arena's heap region.
//
// cudaMallocHost/cudaHostAlloc carve page-aligned blocks out of
// [Welcome.heap_offset, +heap_bytes); the server only bounds-checks offsets in it.
// Offsets, not pointers, so it can be tested without an arena.
//
//   PinnedHeap heap(welcome.heap_offset(), welcome.heap_bytes());
//   std::optional<uint64_t> off = heap.Allocate(n);  // nullopt: fall back to malloc
//   heap.Free(*off);
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace remora::client_stub {

class PinnedHeap {
 public:
  static constexpr uint64_t kAlign = 4096;

  PinnedHeap() = default;
  // Manages [offset, offset + bytes), trimmed inward to page boundaries.
  PinnedHeap(uint64_t offset, uint64_t bytes);

  // Returns the offset of a free block of at least `bytes` (rounded up to a page;
  // 0 bytes takes one page), the lowest that fits, or nullopt when none does.
  // Not thread-safe: the caller serializes.
  std::optional<uint64_t> Allocate(uint64_t bytes);

  // Returns the block starting at `offset` to the free list, merging it with free
  // neighbours. False (and no change) if no allocated block starts there.
  bool Free(uint64_t offset);

  // The allocated block containing `offset`: {start, size}, or nullopt.
  std::optional<std::pair<uint64_t, uint64_t>> Find(uint64_t offset) const;

  uint64_t free_bytes() const;
  // Number of free runs (1 after everything is freed: coalescing is complete).
  size_t free_runs() const { return free_.size(); }
  const std::map<uint64_t, uint64_t>& allocated() const { return used_; }

 private:
  std::map<uint64_t, uint64_t> free_;  // offset -> size, never adjacent to each other
  std::map<uint64_t, uint64_t> used_;  // offset -> size
};

}  // namespace remora::client_stub
