// proto/range_table.h - a tenant's device address ranges, as the stub and the server keep them.
//
// Ranges [base, base + size) that do not overlap: device allocations and registered symbols.
// The stub answers "is this pointer device memory, and how far does it reach" from one; the
// server checks every pointer a call names against its own. A pointer outside every range is
// refused with OutsideAllocations's error, NVIDIA's for the same mistake.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "proto/status.h"

namespace remora {

// Not synchronized: the owner serializes access (the server's session holds its lock).
class RangeTable {
 public:
  struct Range {
    uint64_t base = 0, size = 0;
  };
  // Adds (or resizes) the range starting at `base`.
  void Add(uint64_t base, uint64_t size) { ranges_[base] = size; }
  // Removes the range starting exactly at `base`; false if there is none.
  bool Remove(uint64_t base) { return ranges_.erase(base) > 0; }
  // Removes every range starting in [lo, hi).
  void RemoveWithin(uint64_t lo, uint64_t hi) {
    ranges_.erase(ranges_.lower_bound(lo), ranges_.lower_bound(hi));
  }
  // The size of the range starting exactly at `base`, if there is one.
  std::optional<uint64_t> SizeAt(uint64_t base) const {
    auto it = ranges_.find(base);
    return it == ranges_.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  }
  // The range containing `p` (a zero-size range contains its base), if any.
  std::optional<Range> Find(uint64_t p) const {
    auto it = ranges_.upper_bound(p);
    if (it == ranges_.begin()) return std::nullopt;
    --it;
    if (p - it->first >= std::max<uint64_t>(it->second, 1)) return std::nullopt;
    return Range{it->first, it->second};
  }
  // True if [ptr, ptr + size) lies inside one range (overflow-safe).
  bool Covers(uint64_t ptr, uint64_t size) const {
    auto it = ranges_.upper_bound(ptr);
    if (it == ranges_.begin()) return false;
    --it;
    const uint64_t off = ptr - it->first;
    return off < it->second && size <= it->second - off;
  }
  size_t size() const { return ranges_.size(); }
  void Clear() { ranges_.clear(); }
  auto begin() const { return ranges_.begin(); }
  auto end() const { return ranges_.end(); }

 private:
  std::map<uint64_t, uint64_t> ranges_;
};

// A RangeTable shared by threads (the stub's: any tenant thread may allocate or copy).
class SharedRangeTable {
 public:
  void Add(uint64_t base, uint64_t size) {
    std::unique_lock lock(mu_);
    table_.Add(base, size);
  }
  bool Remove(uint64_t base) {
    std::unique_lock lock(mu_);
    return table_.Remove(base);
  }
  void RemoveWithin(uint64_t lo, uint64_t hi) {
    std::unique_lock lock(mu_);
    table_.RemoveWithin(lo, hi);
  }
  std::optional<RangeTable::Range> Find(uint64_t p) const {
    std::shared_lock lock(mu_);
    return table_.Find(p);
  }
  void Clear() {
    std::unique_lock lock(mu_);
    table_.Clear();
  }

 private:
  mutable std::shared_mutex mu_;
  RangeTable table_;
};

// The refusal of a pointer range that lies in none of the tenant's allocations:
// cudaErrorInvalidValue, as NVIDIA's runtime gives under unified addressing (its
// cudaErrorInvalidDevicePointer is deprecated and not returned for this), with a message
// naming `what` and the range.
Status OutsideAllocations(const char* what, uint64_t ptr, uint64_t size);

}  // namespace remora
