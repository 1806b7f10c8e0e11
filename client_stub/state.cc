// client_stub/state.cc - device properties, errors, handle and address tables, host memory.
#include "client_stub/state.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "client_stub/no_destructor.h"
#include "proto/status.h"

namespace remora::client_stub {

cudaDeviceProp BuildDeviceProp(const v1::DeviceInfo& info) {
  cudaDeviceProp p;
  std::memset(&p, 0, sizeof p);
  std::strncpy(p.name, info.name().c_str(), sizeof p.name - 1);
  std::memcpy(p.uuid.bytes, info.uuid().data(), std::min(info.uuid().size(), sizeof p.uuid.bytes));
  p.totalGlobalMem = info.total_mem();
  auto attr = [&info](int a) -> int {
    return a >= 0 && a < info.attributes_size() ? info.attributes(a) : 0;
  };
#define DEVICE_PROP(field, attribute) \
  p.field = static_cast<std::remove_reference_t<decltype(p.field)>>(attr(attribute));
#include "client_stub/device_props.def"
  return p;
}

// ---- errors ---------------------------------------------------------------------

namespace {
thread_local cudaError_t t_last_error = cudaSuccess;
std::atomic<int> g_sticky{0};
}  // namespace

cudaError_t RecordError(cudaError_t e) {
  if (e == cudaSuccess) [[likely]]
    return e;
  t_last_error = e;
  if (ErrorIsSticky(e)) {
    int expected = 0;
    g_sticky.compare_exchange_strong(expected, e, std::memory_order_relaxed);
  }
  return e;
}

cudaError_t TakeLastError() {
  if (int s = g_sticky.load(std::memory_order_relaxed)) return static_cast<cudaError_t>(s);
  return std::exchange(t_last_error, cudaSuccess);
}

cudaError_t PeekLastError() {
  if (int s = g_sticky.load(std::memory_order_relaxed)) return static_cast<cudaError_t>(s);
  return t_last_error;
}

cudaError_t StickyError() {
  return static_cast<cudaError_t>(g_sticky.load(std::memory_order_relaxed));
}

// ---- streams --------------------------------------------------------------------

namespace {
constexpr uint64_t kAliasBit = uint64_t{1} << 63;
}

uint64_t StreamId(cudaStream_t s) {
  auto v = reinterpret_cast<uintptr_t>(s);
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return 0;
  return v & ~kAliasBit;
}

cudaStream_t StreamHandle(uint64_t id) {
  uint64_t v = id;
  if (id == reinterpret_cast<uintptr_t>(cudaStreamLegacy) ||
      id == reinterpret_cast<uintptr_t>(cudaStreamPerThread))
    v |= kAliasBit;
  return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(v));
}

void HandleSet::Add(uint64_t id, uint64_t value) {
  std::unique_lock lock(mu_);
  ids_[id] = value;
}

bool HandleSet::Remove(uint64_t id) {
  std::unique_lock lock(mu_);
  return ids_.erase(id) != 0;
}

std::optional<uint64_t> HandleSet::Find(uint64_t id) const {
  std::shared_lock lock(mu_);
  auto it = ids_.find(id);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void HandleSet::Clear() {
  std::unique_lock lock(mu_);
  ids_.clear();
}

// ---- ranges ---------------------------------------------------------------------

void RangeTable::Add(uint64_t base, uint64_t size) {
  std::unique_lock lock(mu_);
  ranges_[base] = size;
}

bool RangeTable::Remove(uint64_t base) {
  std::unique_lock lock(mu_);
  return ranges_.erase(base) != 0;
}

std::optional<RangeTable::Range> RangeTable::Find(uint64_t p) const {
  std::shared_lock lock(mu_);
  auto it = ranges_.upper_bound(p);
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (p - it->first >= std::max<uint64_t>(it->second, 1)) return std::nullopt;
  return Range{it->first, it->second};
}

void RangeTable::Clear() {
  std::unique_lock lock(mu_);
  ranges_.clear();
}

// ---- host memory ----------------------------------------------------------------

void HostMemory::FreeDeleter::operator()(void* p) const {
  std::free(p);
}

void HostMemory::Attach(std::byte* base, uint64_t size, uint64_t heap_offset, uint64_t heap_bytes) {
  std::lock_guard lock(mu_);
  base_ = base;
  size_ = base ? size : 0;
  if (base && heap_offset <= size && heap_bytes <= size - heap_offset)
    heap_ = PinnedHeap(heap_offset, heap_bytes);
}

void* HostMemory::Allocate(size_t bytes) {
  std::lock_guard lock(mu_);
  if (base_) {
    if (std::optional<uint64_t> off = heap_.Allocate(bytes)) return base_ + *off;
  }
  size_t rounded =
      (std::max<size_t>(bytes, 1) + PinnedHeap::kAlign - 1) & ~(PinnedHeap::kAlign - 1);
  void* p = std::aligned_alloc(PinnedHeap::kAlign, rounded);
  if (!p) return nullptr;
  malloced_.emplace(
      reinterpret_cast<uintptr_t>(p),
      std::make_pair(std::unique_ptr<std::byte, FreeDeleter>(static_cast<std::byte*>(p)), rounded));
  return p;
}

bool HostMemory::Free(void* p) {
  std::lock_guard lock(mu_);
  auto* b = static_cast<std::byte*>(p);
  if (base_ && b >= base_ && b < base_ + size_) return heap_.Free(static_cast<uint64_t>(b - base_));
  return malloced_.erase(reinterpret_cast<uintptr_t>(p)) != 0;
}

bool HostMemory::Register(void* p, size_t bytes) {
  std::lock_guard lock(mu_);
  auto v = reinterpret_cast<uintptr_t>(p);
  auto next = registered_.lower_bound(v);
  if (next != registered_.end() && next->first < v + bytes) return false;
  if (next != registered_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > v) return false;
  }
  registered_.emplace_hint(next, v, bytes);
  return true;
}

bool HostMemory::Unregister(void* p) {
  std::lock_guard lock(mu_);
  return registered_.erase(reinterpret_cast<uintptr_t>(p)) != 0;
}

namespace {
template <class Map>
bool InMap(const Map& m, uintptr_t v, auto size_of) {
  auto it = m.upper_bound(v);
  if (it == m.begin()) return false;
  --it;
  return v - it->first < size_of(it->second);
}
}  // namespace

HostMemory::Where HostMemory::Locate(const void* p, size_t n) const {
  std::lock_guard lock(mu_);
  auto* b = static_cast<const std::byte*>(p);
  if (base_ && b >= base_ && b < base_ + size_ && n <= size_ - static_cast<uint64_t>(b - base_))
    return {Kind::kArena, static_cast<uint64_t>(b - base_)};
  auto v = reinterpret_cast<uintptr_t>(p);
  if (InMap(malloced_, v, [](const auto& e) { return e.second; })) return {Kind::kPinnedMalloc, 0};
  if (InMap(registered_, v, [](size_t s) { return s; })) return {Kind::kRegistered, 0};
  return {};
}

bool HostMemory::IsPinned(const void* p) const {
  {
    std::lock_guard lock(mu_);
    auto* b = static_cast<const std::byte*>(p);
    if (base_ && b >= base_ && b < base_ + size_)
      return heap_.Find(static_cast<uint64_t>(b - base_)).has_value();
  }
  return Locate(p, 1).kind != Kind::kPageable;
}

State& St() {
  static NoDestructor<State> state;
  return *state;
}

}  // namespace remora::client_stub
