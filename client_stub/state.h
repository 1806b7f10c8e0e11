// client_stub/state.h - what the stub answers without a round trip.
//
// Device properties (built from Welcome.device), last and sticky errors, the
// tenant's own tables (device allocations, streams, events, pinned and
// registered host memory) and stream-handle encoding. The server checks every
// handle and range again; these tables only give immediate answers to obvious
// mistakes and tell copies which side a pointer is on.
#pragma once

#include <driver_types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "client_stub/managed_advice.h"
#include "client_stub/pinned_heap.h"
#include "proto/range_table.h"
#include "remora/v1/session.pb.h"

namespace remora::client_stub {

// A cudaDeviceProp from the server's description: name, total memory, uuid, and
// every field that has a cudaDeviceAttr, read from `info.attributes` (0 where the
// vector is short).
cudaDeviceProp BuildDeviceProp(const v1::DeviceInfo& info);

// Rewrites the attributes that depend on Remora, not the GPU: mapped host memory and managed
// memory exist on every session (arena memory over shm, mirrored without it: mirror.h);
// managed memory is never concurrently accessible (the host touches it only between
// synchronisations) and pageable memory never device-accessible.
void ApplySessionCaps(v1::DeviceInfo* info);

// ---- the runtime's context, as the driver API sees it ----------------------------

// A call of the program's own into the runtime (not one libcuda.so.1 makes for a driver
// call): the runtime's primary context is current on this thread from now on, and the
// driver initialized for the process, as NVIDIA's runtime leaves them.
void NoteRuntimeUse();
bool RuntimeUsedOnThisThread();
bool RuntimeUsedInProcess();
// Marks the calling thread as inside a driver-API entry point while it lives: the runtime
// calls it makes are the driver's own, not the program's.
class DriverCallScope {
 public:
  DriverCallScope();
  ~DriverCallScope();
  DriverCallScope(const DriverCallScope&) = delete;
  DriverCallScope& operator=(const DriverCallScope&) = delete;
};

// ---- errors ---------------------------------------------------------------------

// Records `e` as the calling thread's last error unless it is cudaSuccess; returns e.
// A sticky code (errors.def) is also latched for the whole process.
cudaError_t RecordError(cudaError_t e);
// The last error, then reset to cudaSuccess (cudaGetLastError); a latched
// sticky error is returned and never reset.
cudaError_t TakeLastError();
// The last error without resetting it (cudaPeekAtLastError).
cudaError_t PeekLastError();
// The latched sticky error, or cudaSuccess.
cudaError_t StickyError();

// ---- streams --------------------------------------------------------------------

// Writes the server's IPC token into a CUDA IPC handle's bytes, zero-padded; false if it does
// not fit.
template <size_t N>
bool PutIpcToken(char (&reserved)[N], const std::string& token) {
  if (token.size() > N) return false;
  std::memset(reserved, 0, N);
  std::memcpy(reserved, token.data(), token.size());
  return true;
}

// Wire id of an app stream: nullptr and cudaStreamLegacy are stream 0, the legacy default
// stream; cudaStreamPerThread is the calling thread's own (PerThreadStreamId).
uint64_t StreamId(cudaStream_t s);
// The calling thread's per-thread default stream (cudaStreamPerThread, and the null stream of
// the _ptsz entry points a program built with --default-stream per-thread calls): a blocking
// stream of its own, made at its first use (and again after a device reset) and destroyed
// when the thread ends, so threads' default streams run beside each other and each is still
// ordered with the legacy stream, as on a GPU. 0 (the legacy stream: stricter, never looser)
// where it cannot be made, which stderr says once.
uint64_t PerThreadStreamId();
// While one lives on a thread, the null stream is that thread's per-thread default stream, as
// in the calls of a _ptsz or _ptds entry point (those with no stream argument included: a
// synchronous copy runs in the per-thread stream). Nests.
class NullIsPerThread {
 public:
  NullIsPerThread();
  ~NullIsPerThread();
  NullIsPerThread(const NullIsPerThread&) = delete;
  NullIsPerThread& operator=(const NullIsPerThread&) = delete;

 private:
  bool was_;
};
// `s`, or the per-thread default stream where `s` is the null stream: what a _ptsz entry
// point means by its stream.
inline cudaStream_t PerThread(cudaStream_t s) {
  return s == nullptr ? cudaStreamPerThread : s;
}
// The handle the app sees for server stream `id`: the id itself, except that ids
// 1 and 2 (cudaStreamLegacy/PerThread) get bit 63 set to stay distinct.
cudaStream_t StreamHandle(uint64_t id);

// The server ids the tenant owns (streams or events), each with a small value
// (a stream's flags and priority). Thread-safe.
class HandleSet {
 public:
  void Add(uint64_t id, uint64_t value = 0);
  bool Remove(uint64_t id);
  bool Contains(uint64_t id) const { return Find(id).has_value(); }
  std::optional<uint64_t> Find(uint64_t id) const;
  void Clear();

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<uint64_t, uint64_t> ids_;
};

// ---- host memory ----------------------------------------------------------------

// Pinned, managed and registered host memory. Pinned blocks come from the arena
// heap when there is one, else from page-aligned malloc; managed blocks only
// from the arena heap, and only when the arena is device-mapped: the server
// maps it at the same address as this process and registers it with
// CU_MEMHOSTREGISTER_DEVICEMAP, so a kernel dereferences the very pointer the
// host uses (zero-copy, and managed memory without page migration). Thread-safe.
class HostMemory {
 public:
  enum class Kind { kPageable, kArena, kPinnedMalloc, kRegistered };
  struct Where {
    Kind kind = Kind::kPageable;
    uint64_t arena_offset = 0;  // kArena: offset of the queried pointer
  };

  // Asks the server to page-lock the heap chunks [offset, offset + bytes) touches; true once
  // they are (Welcome.heap_pin_chunk_bytes).
  using PinFn = std::function<bool(uint64_t offset, uint64_t bytes)>;
  // Attaches the arena (base may be nullptr: remote session, no arena).
  // `device_mapped`: kernels may access arena memory at the host's addresses. With a
  // `pin_chunk` of 0 the whole heap is page-locked already; otherwise `pin` runs, outside
  // this object's lock, before memory of a chunk not yet locked is handed out.
  void Attach(std::byte* base, uint64_t size, uint64_t heap_offset, uint64_t heap_bytes,
              bool device_mapped = false, uint64_t pin_chunk = 0, PinFn pin = nullptr);
  // Allocates pinned memory, recording `flags` (cudaHostAlloc*). nullptr only
  // if even malloc fails. With `need_mapped`, only device-mapped arena memory
  // will do: nullptr if there is none left (or no device-mapped arena).
  void* Allocate(size_t bytes, unsigned flags = 0, bool need_mapped = false);
  // Allocates managed memory from the device-mapped arena heap; nullptr if the
  // arena is not device-mapped or the heap is full.
  void* AllocateManaged(size_t bytes);
  // Frees what Allocate returned. False for any other pointer (managed too).
  bool Free(void* p);
  // Frees what AllocateManaged returned. False for any other pointer.
  bool FreeManaged(void* p);
  // Records mirrored memory (mirror.h: device memory at `p` and host pages at the same
  // address): managed memory, which IsManaged and the advice take as any managed block, or
  // with `pinned_flags` mapped pinned memory (cudaHostAllocMapped), which IsPinned, Flags and
  // DeviceAlias (`p` itself) take as any pinned block. IsDeviceMapped takes neither.
  void AddMirrored(void* p, size_t bytes, std::optional<unsigned> pinned_flags = std::nullopt);
  // Forgets the mirrored block starting at `p` and its advice; false if none does.
  bool RemoveMirrored(void* p);
  // True if `p` lies in a mirrored block (managed or pinned).
  bool IsMirrored(const void* p) const;
  // The pinned allocation or registration containing `p`: {start, size}, or nullopt (managed,
  // mirrored or pageable memory).
  std::optional<std::pair<void*, size_t>> OwnBlock(const void* p) const;
  // The flags recorded for the pinned allocation containing `p`, or nullopt
  // (managed, registered, pageable or device memory).
  std::optional<unsigned> Flags(const void* p) const;
  // True if `p` lies in a managed allocation.
  bool IsManaged(const void* p) const;
  // The managed arena block containing `p`: {start, size}, or nullopt.
  std::optional<std::pair<void*, size_t>> ManagedBlock(const void* p) const;
  // True if `p` and the last byte of [p, p + n) lie in managed allocations (p alone for n 0).
  bool IsManagedRange(const void* p, size_t n) const;
  // Advice or a prefetch on the managed range [p, p + n): `change` runs on the attributes of
  // each run of the host pages it touches (a GPU advises whole pages). FreeManaged forgets the
  // advice of what it frees.
  void Advise(const void* p, size_t n, const std::function<void(ManagedAdvice::Attrs&)>& change);
  // The recorded attributes over the pages [p, p + n) touches, one per run of equal ones.
  std::vector<ManagedAdvice::Attrs> AdviceOver(const void* p, size_t n) const;
  // True if `p` lies in a pinned or managed allocation kernels can access at `p`.
  bool IsDeviceMapped(const void* p) const;
  // True if [p, p + n) lies in one pinned or managed allocation kernels can access at its
  // address (what libraries take as device memory, as on a GPU with unified addressing).
  bool IsDeviceMappedRange(const void* p, size_t n) const;
  // True if `p` lies in host memory the app registered with cudaHostRegister.
  bool IsRegistered(const void* p) const;
  // Whether the arena is device-mapped (zero-copy and managed memory work).
  bool device_mapped() const;
  // cudaHostRegister. Fails (false) on overlap with another registration. Where the arena is
  // device-mapped and [p, p + bytes) lies in private anonymous memory (malloc's, an anonymous
  // mmap) on pages no other registration touches, those pages are moved onto a heap block of
  // the arena, contents and addresses kept (mremap): the memory is then device-mapped at the
  // block (DeviceAlias) and copies to and from it go through the arena in one pass. A thread
  // writing the pages while they move may lose that write. Otherwise it is only recorded.
  bool Register(void* p, size_t bytes);
  // Ends a registration (false if `p` starts none), moving its pages back to private memory.
  bool Unregister(void* p);
  // Where kernels reach the host byte `p`: `p` itself for device-mapped arena memory, the
  // arena alias of registered memory that was moved there, else nullptr.
  void* DeviceAlias(const void* p) const;
  // Where [p, p + n) lives: inside the arena (any region) counts as kArena.
  Where Locate(const void* p, size_t n) const;
  // True for pinned (either kind) or registered memory containing p; false
  // for managed memory.
  bool IsPinned(const void* p) const;
  std::byte* arena_base() const { return base_; }

 private:
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  struct Malloced {
    std::unique_ptr<std::byte, FreeDeleter> block;
    size_t size;
    unsigned flags;
  };
  struct Registered {
    size_t size;
    uintptr_t lo = 0, hi = 0;  // the pages moved onto the arena, when moved
    uint64_t block = 0;        // their heap block's offset (0: not moved)
  };
  // The registration containing `v`, or nullptr. REQUIRES: mu_ held.
  const std::pair<const uintptr_t, Registered>* RegisteredLocked(uintptr_t v) const;
  // Moves [lo, hi) onto a new heap block; its offset, or nullopt (nothing changed).
  // REQUIRES: register_mu_ held, mu_ not held.
  std::optional<uint64_t> MoveOntoArena(uintptr_t lo, uintptr_t hi);
  // The arena heap block containing `p`: {offset, size}, or nullopt. REQUIRES: mu_ held.
  std::optional<std::pair<uint64_t, uint64_t>> ArenaBlockLocked(const void* p) const;
  // A heap block of at least `bytes` in page-locked chunks (pinning them first), or nullopt:
  // no arena (or, with `need_mapped`, none kernels may reach), no room, or the server could
  // not lock more. REQUIRES: mu_ not held.
  std::optional<uint64_t> TakeHeap(size_t bytes, bool need_mapped);

  mutable std::mutex mu_;
  std::byte* base_ = nullptr;
  uint64_t size_ = 0;
  bool device_mapped_ = false;
  PinnedHeap heap_;
  uint64_t heap_offset_ = 0, pin_chunk_ = 0;
  std::vector<bool> pinned_chunks_;  // heap chunk i: [heap_offset_ + i * pin_chunk_, +pin_chunk_)
  PinFn pin_;
  std::map<uint64_t, unsigned> arena_flags_;  // pinned arena block offset -> flags
  std::set<uint64_t> managed_;                // managed arena block offsets
  struct Mirrored {
    size_t size = 0;
    std::optional<unsigned> pinned_flags;  // mapped pinned memory; managed if none
  };
  // The mirrored block containing `v`, or nullptr. REQUIRES: mu_ held.
  const Mirrored* MirroredLocked(uintptr_t v) const;
  std::map<uintptr_t, Mirrored> mirrored_;  // by address
  ManagedAdvice advice_;                    // over managed blocks' addresses
  std::map<uintptr_t, Malloced> malloced_;
  std::map<uintptr_t, Registered> registered_;
  std::mutex register_mu_;  // one Register or Unregister at a time (held before mu_)
};

// ---- the process-wide state ------------------------------------------------------

// cudaDeviceSetLimit values, indexed by cudaLimit: the stack and heap applied by the server
// first (DeviceSetLimit), the others recorded.
struct Limits {
  std::array<size_t, 7> value = {1024, 1 << 20, 8 << 20, 2, 2048, 64, 0};
};

struct State {
  cudaDeviceProp prop{};  // valid once connected
  std::atomic<unsigned> device_flags{0};
  SharedRangeTable device_ranges;  // cudaMalloc'ed memory and registered symbols
  HandleSet streams, events;
  HostMemory host;
  std::mutex limits_mu;
  Limits limits;
};

// The process's state. Never destroyed (static destructors may still call in).
State& St();

// cudaErrorInvalidResourceHandle unless `s` is a default stream or one of the process's own.
cudaError_t CheckStream(cudaStream_t s);

// True if [p, p + bytes) lies in one of the tenant's allocations: device memory, or the pinned
// and managed memory kernels reach at its host address (a GPU's libraries take both). What the
// library stubs check a pointer argument with.
bool OnDevice(uint64_t p, uint64_t bytes);
// What OnDevice asks last, for memory its tables do not hold (mirror.h: page-locked memory,
// which reaching from the device gives device memory).
void SetOnDeviceFallback(bool (*fallback)(uint64_t p, uint64_t bytes));

// The server's id of cuBLAS handle `h` while it lives (0 when it is none). NVIDIA's cuBLASLt
// takes a cublasHandle_t as a cublasLtHandle_t (PyTorch passes its cuBLAS handle so): the
// stub libcublas notes each handle here (`id` 0 forgets it) and the stub libcublasLt asks.
void NoteBlasHandle(const void* h, uint64_t id);
uint64_t BlasHandleId(const void* h);

}  // namespace remora::client_stub
