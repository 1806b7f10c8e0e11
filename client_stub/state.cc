// client_stub/state.cc - device properties, errors, handle and address tables, host memory.
#include "client_stub/state.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>
#include <utility>

#include "client_stub/connection.h"
#include "client_stub/errors.h"
#include "client_stub/kernels.h"
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

void ApplySessionCaps(v1::DeviceInfo* info) {
  const std::pair<cudaDeviceAttr, int> caps[] = {
      {cudaDevAttrCanMapHostMemory, 1},
      {cudaDevAttrManagedMemory, 1},
      {cudaDevAttrConcurrentManagedAccess, 0},
      {cudaDevAttrPageableMemoryAccess, 0},
      {cudaDevAttrPageableMemoryAccessUsesHostPageTables, 0},
      {cudaDevAttrDirectManagedMemAccessFromHost, 0},
      {cudaDevAttrCanUseHostPointerForRegisteredMem, 0},
  };
  for (auto [attr, value] : caps) {
    auto i = static_cast<int>(attr);
    if (i >= info->attributes_size()) info->mutable_attributes()->Resize(i + 1, 0);
    info->mutable_attributes()->Set(i, value);
  }
}

// ---- the runtime's context, as the driver API sees it ----------------------------

namespace {
thread_local int t_driver_depth = 0;
thread_local bool t_runtime_used = false;
std::atomic<bool> g_runtime_used{false};
}  // namespace

void NoteRuntimeUse() {
  if (t_driver_depth > 0 || t_runtime_used) return;
  t_runtime_used = true;
  g_runtime_used.store(true, std::memory_order_release);
}
bool RuntimeUsedOnThisThread() {
  return t_runtime_used;
}
bool RuntimeUsedInProcess() {
  return g_runtime_used.load(std::memory_order_acquire);
}
DriverCallScope::DriverCallScope() {
  ++t_driver_depth;
}
DriverCallScope::~DriverCallScope() {
  --t_driver_depth;
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
thread_local bool t_null_is_per_thread = false;  // NullIsPerThread
}  // namespace

NullIsPerThread::NullIsPerThread() : was_(std::exchange(t_null_is_per_thread, true)) {}
NullIsPerThread::~NullIsPerThread() {
  t_null_is_per_thread = was_;
}

uint64_t StreamId(cudaStream_t s) {
  auto v = reinterpret_cast<uintptr_t>(s);
  if (s == nullptr) return t_null_is_per_thread ? PerThreadStreamId() : 0;
  if (s == cudaStreamLegacy) return 0;
  if (s == cudaStreamPerThread) return PerThreadStreamId();
  return v & ~kAliasBit;
}

namespace {

// A thread's per-thread default stream; the thread's end destroys it (its work still runs).
struct PerThreadStream {
  uint64_t id = 0;
  uint64_t epoch = 0;  // DeviceEpoch when made: a device reset took it with everything else
  ~PerThreadStream() {
    // Zeroed first: a thread-local destroyed after this one that still calls makes another.
    const uint64_t gone = std::exchange(id, 0);
    if (gone == 0 || epoch != DeviceEpoch() || !St().streams.Remove(gone)) return;
    v1::StreamRequest req;
    req.set_stream(gone);
    (void)Connection::Get().Call(CallId::kStreamDestroy, req);
  }
};
thread_local PerThreadStream t_per_thread;

}  // namespace

uint64_t PerThreadStreamId() {
  PerThreadStream& p = t_per_thread;
  const uint64_t epoch = DeviceEpoch();
  if (p.id != 0 && p.epoch == epoch) return p.id;
  v1::StreamCreateRequest req;  // flags 0: blocking, tied to the legacy stream
  v1::HandleReply rep;
  if (cudaError_t e = Connection::Get().Call(CallId::kStreamCreate, req, &rep)) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      std::fprintf(stderr,
                   "remora: a per-thread default stream could not be made (%s): this thread's "
                   "default stream is the legacy stream\n",
                   CudaErrorName(e));
    return 0;
  }
  St().streams.Add(rep.handle());
  p.id = rep.handle();
  p.epoch = epoch;
  return p.id;
}

cudaStream_t StreamHandle(uint64_t id) {
  uint64_t v = id;
  if (id == reinterpret_cast<uintptr_t>(cudaStreamLegacy) ||
      id == reinterpret_cast<uintptr_t>(cudaStreamPerThread))
    v |= kAliasBit;
  return reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(v));
}

cudaError_t CheckStream(cudaStream_t s) {
  const uint64_t id = StreamId(s);
  return id == 0 || St().streams.Contains(id) ? cudaSuccess : cudaErrorInvalidResourceHandle;
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

// ---- host memory ----------------------------------------------------------------

void HostMemory::FreeDeleter::operator()(void* p) const {
  std::free(p);
}

void HostMemory::Attach(std::byte* base, uint64_t size, uint64_t heap_offset, uint64_t heap_bytes,
                        bool device_mapped, uint64_t pin_chunk, PinFn pin) {
  std::lock_guard lock(mu_);
  base_ = base;
  size_ = base ? size : 0;
  device_mapped_ = base && device_mapped;
  if (base && heap_offset <= size && heap_bytes <= size - heap_offset) {
    heap_ = PinnedHeap(heap_offset, heap_bytes);
    heap_offset_ = heap_offset;
    pin_chunk_ = pin ? pin_chunk : 0;
    pinned_chunks_.assign(pin_chunk_ ? (heap_bytes + pin_chunk_ - 1) / pin_chunk_ : 0, false);
    pin_ = std::move(pin);
  }
}

std::optional<uint64_t> HostMemory::TakeHeap(size_t bytes, bool need_mapped) {
  std::unique_lock lock(mu_);
  if (!base_ || (need_mapped && !device_mapped_)) return std::nullopt;
  std::optional<uint64_t> off = heap_.Allocate(bytes);
  if (!off || pin_chunk_ == 0) return off;
  const std::optional<std::pair<uint64_t, uint64_t>> block = heap_.Find(*off);
  const uint64_t first = (block->first - heap_offset_) / pin_chunk_;
  const uint64_t last = (block->first + block->second - 1 - heap_offset_) / pin_chunk_;
  bool all = true;
  for (uint64_t i = first; i <= last; ++i) all = all && pinned_chunks_[i];
  if (all) return off;
  // Outside the lock: a call to the server. Another thread may pin the same chunks meanwhile;
  // the server pins each once.
  const PinFn pin = pin_;
  lock.unlock();
  const bool pinned = pin(block->first, block->second);
  lock.lock();
  if (!pinned) {
    heap_.Free(*off);
    return std::nullopt;
  }
  for (uint64_t i = first; i <= last && i < pinned_chunks_.size(); ++i) pinned_chunks_[i] = true;
  return off;
}

void* HostMemory::Allocate(size_t bytes, unsigned flags, bool need_mapped) {
  if (std::optional<uint64_t> off = TakeHeap(bytes, need_mapped)) {
    std::lock_guard lock(mu_);
    arena_flags_[*off] = flags;
    return base_ + *off;
  }
  if (need_mapped) return nullptr;
  std::lock_guard lock(mu_);
  size_t rounded =
      (std::max<size_t>(bytes, 1) + PinnedHeap::kAlign - 1) & ~(PinnedHeap::kAlign - 1);
  void* p = std::aligned_alloc(PinnedHeap::kAlign, rounded);
  if (!p) return nullptr;
  malloced_.emplace(reinterpret_cast<uintptr_t>(p),
                    Malloced{std::unique_ptr<std::byte, FreeDeleter>(static_cast<std::byte*>(p)),
                             rounded, flags});
  return p;
}

void* HostMemory::AllocateManaged(size_t bytes) {
  std::optional<uint64_t> off = TakeHeap(bytes, true);
  if (!off) return nullptr;
  std::lock_guard lock(mu_);
  managed_.insert(*off);
  return base_ + *off;
}

bool HostMemory::Free(void* p) {
  std::lock_guard lock(mu_);
  auto* b = static_cast<std::byte*>(p);
  if (base_ && b >= base_ && b < base_ + size_) {
    auto off = static_cast<uint64_t>(b - base_);
    if (arena_flags_.erase(off) == 0) return false;  // not pinned: managed, staging, or inside
    return heap_.Free(off);
  }
  return malloced_.erase(reinterpret_cast<uintptr_t>(p)) != 0;
}

namespace {
// [p, p + n) widened to the host pages it touches.
std::pair<uint64_t, uint64_t> Pages(const void* p, size_t n) {
  static const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<uintptr_t>(p);
  return {lo / page * page, (lo + n + page - 1) / page * page};
}
}  // namespace

bool HostMemory::FreeManaged(void* p) {
  std::lock_guard lock(mu_);
  auto* b = static_cast<std::byte*>(p);
  if (!base_ || b < base_ || b >= base_ + size_) return false;
  auto off = static_cast<uint64_t>(b - base_);
  if (managed_.erase(off) == 0) return false;
  if (auto block = heap_.Find(off)) {  // whole pages (the heap's blocks are): none is shared
    const auto lo = reinterpret_cast<uintptr_t>(base_ + block->first);
    advice_.Reset(lo, lo + block->second);
  }
  return heap_.Free(off);
}

namespace {
// The entry of `m` (keyed by start address) whose [start, start + size_of(value)) holds `v`,
// or nullptr.
template <class Map, class SizeOf>
const typename Map::value_type* Containing(const Map& m, uintptr_t v, SizeOf size_of) {
  auto it = m.upper_bound(v);
  if (it == m.begin()) return nullptr;
  --it;
  return v - it->first < size_of(it->second) ? &*it : nullptr;
}
}  // namespace

void HostMemory::AddMirrored(void* p, size_t bytes, std::optional<unsigned> pinned_flags) {
  std::lock_guard lock(mu_);
  mirrored_[reinterpret_cast<uintptr_t>(p)] = Mirrored{bytes, pinned_flags};
}

bool HostMemory::RemoveMirrored(void* p) {
  std::lock_guard lock(mu_);
  auto it = mirrored_.find(reinterpret_cast<uintptr_t>(p));
  if (it == mirrored_.end()) return false;
  const auto [lo, hi] = Pages(p, it->second.size);
  advice_.Reset(lo, hi);
  mirrored_.erase(it);
  return true;
}

const HostMemory::Mirrored* HostMemory::MirroredLocked(uintptr_t v) const {
  const auto* e = Containing(mirrored_, v, [](const Mirrored& m) { return m.size; });
  return e != nullptr ? &e->second : nullptr;
}

bool HostMemory::IsMirrored(const void* p) const {
  std::lock_guard lock(mu_);
  return MirroredLocked(reinterpret_cast<uintptr_t>(p)) != nullptr;
}

std::optional<std::pair<void*, size_t>> HostMemory::OwnBlock(const void* p) const {
  std::lock_guard lock(mu_);
  if (auto block = ArenaBlockLocked(p)) {
    if (arena_flags_.count(block->first) == 0) return std::nullopt;  // managed, or not a block
    return std::pair<void*, size_t>{base_ + block->first, block->second};
  }
  const auto v = reinterpret_cast<uintptr_t>(p);
  if (const auto* m = Containing(malloced_, v, [](const Malloced& b) { return b.size; }))
    return std::pair<void*, size_t>{reinterpret_cast<void*>(m->first), m->second.size};
  if (const auto* r = RegisteredLocked(v))
    return std::pair<void*, size_t>{reinterpret_cast<void*>(r->first), r->second.size};
  return std::nullopt;
}

bool HostMemory::IsManagedRange(const void* p, size_t n) const {
  return p != nullptr && IsManaged(p) && (n == 0 || IsManaged(static_cast<const char*>(p) + n - 1));
}

void HostMemory::Advise(const void* p, size_t n,
                        const std::function<void(ManagedAdvice::Attrs&)>& change) {
  std::lock_guard lock(mu_);
  const auto [lo, hi] = Pages(p, n);
  advice_.Change(lo, hi, change);
}

std::vector<ManagedAdvice::Attrs> HostMemory::AdviceOver(const void* p, size_t n) const {
  std::lock_guard lock(mu_);
  const auto [lo, hi] = Pages(p, n);
  return advice_.Over(lo, hi);
}

std::optional<std::pair<uint64_t, uint64_t>> HostMemory::ArenaBlockLocked(const void* p) const {
  auto* b = static_cast<const std::byte*>(p);
  if (!base_ || b < base_ || b >= base_ + size_) return std::nullopt;
  return heap_.Find(static_cast<uint64_t>(b - base_));
}

std::optional<unsigned> HostMemory::Flags(const void* p) const {
  std::lock_guard lock(mu_);
  if (auto block = ArenaBlockLocked(p)) {
    auto it = arena_flags_.find(block->first);
    if (it == arena_flags_.end()) return std::nullopt;
    return it->second;
  }
  auto v = reinterpret_cast<uintptr_t>(p);
  if (const Mirrored* m = MirroredLocked(v)) return m->pinned_flags;
  const auto* m = Containing(malloced_, v, [](const Malloced& b) { return b.size; });
  if (m == nullptr) return std::nullopt;
  return m->second.flags;
}

std::optional<std::pair<void*, size_t>> HostMemory::ManagedBlock(const void* p) const {
  std::lock_guard lock(mu_);
  auto block = ArenaBlockLocked(p);
  if (!block || managed_.count(block->first) == 0) return std::nullopt;
  return std::pair<void*, size_t>{base_ + block->first, block->second};
}

bool HostMemory::IsManaged(const void* p) const {
  std::lock_guard lock(mu_);
  auto block = ArenaBlockLocked(p);
  if (block) return managed_.count(block->first) > 0;
  const Mirrored* m = MirroredLocked(reinterpret_cast<uintptr_t>(p));
  return m != nullptr && !m->pinned_flags;
}

bool HostMemory::IsDeviceMapped(const void* p) const {
  std::lock_guard lock(mu_);
  return device_mapped_ && ArenaBlockLocked(p).has_value();
}

bool HostMemory::IsDeviceMappedRange(const void* p, size_t n) const {
  std::lock_guard lock(mu_);
  if (!device_mapped_) return false;
  const std::optional<std::pair<uint64_t, uint64_t>> block = ArenaBlockLocked(p);
  if (!block) return false;
  const auto into = static_cast<uint64_t>(static_cast<const std::byte*>(p) - base_) - block->first;
  return n <= block->second - into;
}

namespace {
std::atomic<bool (*)(uint64_t, uint64_t)> g_on_device_fallback{nullptr};
}  // namespace

void SetOnDeviceFallback(bool (*fallback)(uint64_t p, uint64_t bytes)) {
  g_on_device_fallback.store(fallback, std::memory_order_release);
}

bool OnDevice(uint64_t p, uint64_t bytes) {
  std::optional<RangeTable::Range> r = St().device_ranges.Find(p);
  if (r && p - r->base <= r->size && bytes <= r->size - (p - r->base)) return true;
  if (St().host.IsDeviceMappedRange(reinterpret_cast<const void*>(p), bytes)) return true;
  auto fallback = g_on_device_fallback.load(std::memory_order_acquire);
  return fallback != nullptr && fallback(p, bytes);
}

namespace {

struct BlasHandleIds {
  std::mutex mu;
  std::unordered_map<const void*, uint64_t> ids;  // guarded by mu
};

BlasHandleIds& BlasIds() {
  static NoDestructor<BlasHandleIds> ids;
  return *ids;
}

}  // namespace

void NoteBlasHandle(const void* h, uint64_t id) {
  BlasHandleIds& t = BlasIds();
  std::lock_guard lock(t.mu);
  if (id == 0)
    t.ids.erase(h);
  else
    t.ids[h] = id;
}

uint64_t BlasHandleId(const void* h) {
  BlasHandleIds& t = BlasIds();
  std::lock_guard lock(t.mu);
  auto it = t.ids.find(h);
  return it == t.ids.end() ? 0 : it->second;
}

bool HostMemory::IsRegistered(const void* p) const {
  std::lock_guard lock(mu_);
  return RegisteredLocked(reinterpret_cast<uintptr_t>(p)) != nullptr;
}

bool HostMemory::device_mapped() const {
  std::lock_guard lock(mu_);
  return device_mapped_;
}

namespace {

// Whether every mapping over [lo, hi) (no hole) has permissions `perms` and, with `anonymous`,
// no file behind it but malloc's heap (not the stack, not a file).
bool MappedAs(uintptr_t lo, uintptr_t hi, const char* want, bool anonymous) {
  std::FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return false;
  uintptr_t at = lo;
  char line[512];
  while (at < hi && std::fgets(line, sizeof line, f)) {
    unsigned long start = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = "", dev[16] = "", path[256] = "";
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %255s", &start, &end, perms, &offset, dev,
                    &inode, path) < 6 ||
        end <= at)
      continue;
    if (start > at || std::strcmp(perms, want) != 0 ||
        (anonymous && (inode != 0 || (path[0] != '\0' && std::strcmp(path, "[heap]") != 0))))
      break;
    at = end;
  }
  std::fclose(f);
  return at >= hi;
}

// Private anonymous read-write memory (malloc's, anonymous mmaps): the program's plain data,
// which can move onto the arena without the program telling.
bool PrivateAnonymous(uintptr_t lo, uintptr_t hi) {
  return MappedAs(lo, hi, "rw-p", /*anonymous=*/true);
}

}  // namespace

const std::pair<const uintptr_t, HostMemory::Registered>* HostMemory::RegisteredLocked(
    uintptr_t v) const {
  return Containing(registered_, v, [](const Registered& r) { return r.size; });
}

std::optional<uint64_t> HostMemory::MoveOntoArena(uintptr_t lo, uintptr_t hi) {
  if (!PrivateAnonymous(lo, hi)) return std::nullopt;
  const std::optional<uint64_t> off = TakeHeap(hi - lo, /*need_mapped=*/true);
  if (!off) return std::nullopt;
  std::byte* block = base_ + *off;
  std::memcpy(block, reinterpret_cast<const void*>(lo), hi - lo);
  // A second mapping of the block's shared pages, replacing the program's at their address.
  void* at = mremap(block, 0, hi - lo, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(lo));
  if (at != reinterpret_cast<void*>(lo)) {
    std::lock_guard lock(mu_);
    heap_.Free(*off);
    return std::nullopt;
  }
  return off;
}

bool HostMemory::Register(void* p, size_t bytes) {
  std::lock_guard reg(register_mu_);
  const auto v = reinterpret_cast<uintptr_t>(p);
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t lo = v & ~(page - 1), hi = (v + bytes + page - 1) & ~(page - 1);
  bool alone = true;  // no other registration on these pages
  {
    std::lock_guard lock(mu_);
    auto next = registered_.lower_bound(v);
    if (next != registered_.end() && next->first < v + bytes) return false;
    if (next != registered_.begin() && std::prev(next)->first + std::prev(next)->second.size > v)
      return false;
    for (const auto& [start, r] : registered_)
      alone =
          alone && ((start + r.size + page - 1) / page * page <= lo || start / page * page >= hi);
    if (!device_mapped_) alone = false;
  }
  Registered r{bytes};
  if (alone && hi > lo) {
    if (std::optional<uint64_t> off = MoveOntoArena(lo, hi)) r = {bytes, lo, hi, *off};
  }
  std::lock_guard lock(mu_);
  registered_.emplace(v, r);
  return true;
}

bool HostMemory::Unregister(void* p) {
  std::lock_guard reg(register_mu_);
  Registered r;
  {
    std::lock_guard lock(mu_);
    auto it = registered_.find(reinterpret_cast<uintptr_t>(p));
    if (it == registered_.end()) return false;
    r = it->second;
    registered_.erase(it);
  }
  if (r.block == 0) return true;
  // Private pages again, filled from the arena, swapped in at once; unless the program has
  // unmapped them meanwhile (freed before unregistering), when the address is not ours to fill.
  const size_t len = r.hi - r.lo;
  if (!MappedAs(r.lo, r.hi, "rw-s", /*anonymous=*/false)) {
    std::lock_guard lock(mu_);
    heap_.Free(r.block);
    return true;
  }
  void* fresh = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (fresh == MAP_FAILED) return true;  // the pages stay on the arena, the block with them
  std::memcpy(fresh, base_ + r.block, len);
  if (mremap(fresh, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, reinterpret_cast<void*>(r.lo)) ==
      MAP_FAILED) {
    munmap(fresh, len);
    return true;
  }
  std::lock_guard lock(mu_);
  heap_.Free(r.block);
  return true;
}

void* HostMemory::DeviceAlias(const void* p) const {
  std::lock_guard lock(mu_);
  if (device_mapped_ && ArenaBlockLocked(p)) return const_cast<void*>(p);
  if (const Mirrored* m = MirroredLocked(reinterpret_cast<uintptr_t>(p)); m && m->pinned_flags)
    return const_cast<void*>(p);
  const auto* r = RegisteredLocked(reinterpret_cast<uintptr_t>(p));
  if (r == nullptr || r->second.block == 0) return nullptr;
  return base_ + r->second.block + (reinterpret_cast<uintptr_t>(p) - r->second.lo);
}

HostMemory::Where HostMemory::Locate(const void* p, size_t n) const {
  std::lock_guard lock(mu_);
  auto* b = static_cast<const std::byte*>(p);
  if (base_ && b >= base_ && b < base_ + size_ && n <= size_ - static_cast<uint64_t>(b - base_))
    return {Kind::kArena, static_cast<uint64_t>(b - base_)};
  auto v = reinterpret_cast<uintptr_t>(p);
  if (Containing(malloced_, v, [](const Malloced& m) { return m.size; }))
    return {Kind::kPinnedMalloc, 0};
  if (const auto* r = RegisteredLocked(v)) {
    // Moved onto the arena: the block's bytes are the program's.
    if (r->second.block != 0 && n <= r->first + r->second.size - v)
      return {Kind::kArena, r->second.block + (v - r->second.lo)};
    return {Kind::kRegistered, 0};
  }
  return {};
}

bool HostMemory::IsPinned(const void* p) const {
  {
    std::lock_guard lock(mu_);
    if (auto block = ArenaBlockLocked(p)) return arena_flags_.count(block->first) > 0;
    auto* b = static_cast<const std::byte*>(p);
    if (base_ && b >= base_ && b < base_ + size_) return false;
    if (const Mirrored* m = MirroredLocked(reinterpret_cast<uintptr_t>(p)))
      return m->pinned_flags.has_value();
  }
  return Locate(p, 1).kind != Kind::kPageable;
}

State& St() {
  static NoDestructor<State> state;
  return *state;
}

}  // namespace remora::client_stub
