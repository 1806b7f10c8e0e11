// emu/heap.cc - first-fit blocks inside one device allocation.
#include "emu/heap.h"

#include <iterator>

namespace remora::emu {

namespace {
constexpr uint64_t kBlockAlign = 16;
}  // namespace

Heap::~Heap() {
  std::lock_guard lock(mu_);
  if (base_ != 0) (void)memory_.Free(base_);
}

uint64_t Heap::Malloc(uint64_t bytes) {
  if (bytes == 0 || bytes > (1ull << 62)) return 0;
  const uint64_t need = (bytes + kBlockAlign - 1) / kBlockAlign * kBlockAlign;
  std::lock_guard lock(mu_);
  if (base_ == 0) {
    if (failed_ || memory_.Allocate(limit_, &base_) != CUDA_SUCCESS) {
      failed_ = true;
      base_ = 0;
      return 0;
    }
    free_.emplace(0, limit_);
  }
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < need) continue;
    const uint64_t off = it->first, left = it->second - need;
    free_.erase(it);
    if (left > 0) free_.emplace(off + need, left);
    used_.emplace(off, need);
    return base_ + off;
  }
  return 0;
}

bool Heap::Free(uint64_t addr) {
  if (addr == 0) return true;
  std::lock_guard lock(mu_);
  if (base_ == 0 || addr < base_) return false;
  auto u = used_.find(addr - base_);
  if (u == used_.end()) return false;
  uint64_t off = u->first, size = u->second;
  used_.erase(u);
  auto next = free_.lower_bound(off);
  if (next != free_.end() && off + size == next->first) {  // merge with the block after
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {  // and with the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == off) {
      prev->second += size;
      return true;
    }
  }
  free_.emplace(off, size);
  return true;
}

uint64_t Heap::limit() const {
  std::lock_guard lock(mu_);
  return limit_;
}

CUresult Heap::SetLimit(uint64_t bytes) {
  std::lock_guard lock(mu_);
  if (bytes == 0 || base_ != 0) return CUDA_ERROR_INVALID_VALUE;
  limit_ = bytes;
  failed_ = false;
  return CUDA_SUCCESS;
}

void Heap::Reset() {
  std::lock_guard lock(mu_);
  base_ = 0;
  failed_ = false;
  free_.clear();
  used_.clear();
}

}  // namespace remora::emu
