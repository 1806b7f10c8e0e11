// client_stub/pinned_heap.cc - first fit with coalescing on free.
#include "client_stub/pinned_heap.h"

#include <iterator>

namespace remora::client_stub {
namespace {
constexpr uint64_t RoundUp(uint64_t v) {
  return (v + PinnedHeap::kAlign - 1) & ~(PinnedHeap::kAlign - 1);
}
}  // namespace

PinnedHeap::PinnedHeap(uint64_t offset, uint64_t bytes) {
  uint64_t begin = RoundUp(offset);
  uint64_t end = (offset + bytes) & ~(kAlign - 1);
  if (end > begin) free_.emplace(begin, end - begin);
}

std::optional<uint64_t> PinnedHeap::Allocate(uint64_t bytes) {
  if (bytes > UINT64_MAX - kAlign) return std::nullopt;
  uint64_t need = bytes == 0 ? kAlign : RoundUp(bytes);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    uint64_t off = it->first, left = it->second - need;
    free_.erase(it);
    if (left) free_.emplace(off + need, left);
    used_.emplace(off, need);
    return off;
  }
  return std::nullopt;
}

bool PinnedHeap::Free(uint64_t offset) {
  auto u = used_.find(offset);
  if (u == used_.end()) return false;
  uint64_t off = u->first, size = u->second;
  used_.erase(u);
  auto next = free_.lower_bound(off);
  if (next != free_.end() && off + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += size;
      return true;
    }
  }
  free_.emplace_hint(next, off, size);
  return true;
}

std::optional<std::pair<uint64_t, uint64_t>> PinnedHeap::Find(uint64_t offset) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return std::nullopt;
  --it;
  if (offset - it->first >= it->second) return std::nullopt;
  return *it;
}

uint64_t PinnedHeap::free_bytes() const {
  uint64_t n = 0;
  for (const auto& [off, size] : free_) n += size;
  return n;
}

}  // namespace remora::client_stub
