// client_stub/mirror.cc - mirrored managed memory (mirror.h).
#include "client_stub/mirror.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "client_stub/memcpy.h"
#include "client_stub/no_destructor.h"
#include "client_stub/state.h"

namespace remora::client_stub {
namespace {

uint64_t PageBytes() {
  static const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return page;
}

// Device addresses from `take` until `fits` says the host can use one (up to 8 tries): a
// device address this process already uses for something else cannot be mirrored, so that
// one is kept aside (the next lands elsewhere) and all those are given back with `give` at the
// end. The address, or 0 with `*e` the error `take` met (cudaSuccess when none would fit).
uint64_t TakeMappable(const std::function<cudaError_t(uint64_t*)>& take,
                      const std::function<bool(uint64_t)>& fits,
                      const std::function<void(uint64_t)>& give, cudaError_t* e) {
  std::vector<uint64_t> aside;
  uint64_t addr = 0;
  *e = cudaSuccess;
  for (int attempt = 0; attempt < 8 && addr == 0; ++attempt) {
    uint64_t at = 0;
    if ((*e = take(&at)) != cudaSuccess) break;
    if (fits(at))
      addr = at;
    else
      aside.push_back(at);
  }
  for (uint64_t a : aside) give(a);
  return addr;
}

// Whether the call runs device work, which may read managed memory: the host's changes go
// first.
bool IsWork(CallId id) {
  switch (id) {
    case CallId::kEventRecord:
    case CallId::kStreamWaitEvent:
    case CallId::kLaunchHostFunc:
    case CallId::kHostFuncDone:
    case CallId::kGoodbye:
    case CallId::kUnregisterModule:
      return false;
    case CallId::kMemcpyHtoD:
    case CallId::kMemcpyDtoH:
    case CallId::kMemcpyDtoD:
    case CallId::kMemset:
    case CallId::kBlasSync:
    case CallId::kDnnSync:
      return true;
    default:
      return ClassOf(id) == CallClass::kOrdered;
  }
}

// What a call that succeeded has waited for: the work of its stream (the legacy stream's
// covers every blocking stream), of the whole device, or of a stream it does not name.
enum class Waited { kNothing, kStream, kDevice, kUnnamed };

Waited WaitOf(CallId id) {
  switch (id) {
    case CallId::kDeviceSynchronize:
    case CallId::kDeviceReset:
      return Waited::kDevice;
    case CallId::kStreamSynchronize:
    case CallId::kStreamQuery:
    case CallId::kMemcpyHtoD:
    case CallId::kMemcpyDtoH:
    case CallId::kMemcpyDtoD:
    case CallId::kMemset:
      return Waited::kStream;
    case CallId::kEventSynchronize:
    case CallId::kEventQuery:
    case CallId::kBlasSync:
    case CallId::kDnnSync:
      return Waited::kUnnamed;
    default:
      return Waited::kNothing;
  }
}

// The host wrote a piece the device's work wrote too, between two points they agree: the host's
// writes are lost. CUDA leaves it undefined on a device without concurrent managed access (a
// GPU faults the host's access); never silent here. Said once per process, with the first.
void BothChanged(uint64_t addr) {
  static std::atomic<bool> said{false};
  if (said.exchange(true)) return;
  std::fprintf(stderr,
               "remora: managed or mapped page-locked memory at 0x%llx: the host wrote it while "
               "device work that also wrote it ran (this device reports no concurrent managed "
               "access, cudaDevAttrConcurrentManagedAccess 0, where a GPU faults the host's "
               "access to managed memory): the device's contents are kept and the host's writes "
               "to it are lost; over a remote session the host and a running kernel see each "
               "other's writes to such memory only at synchronizing calls, not while it runs\n",
               static_cast<unsigned long long>(addr));
}

}  // namespace

Mirrors& Mirrors::Get() {
  static NoDestructor<Mirrors> m;
  return *m;
}

uint64_t Mirrors::StreamLocked() {
  if (stream_ != 0) return stream_;
  v1::StreamCreateRequest req;
  req.set_flags(cudaStreamNonBlocking);
  v1::HandleReply rep;
  if (Connection::Get().Call(CallId::kStreamCreate, req, &rep) == cudaSuccess)
    stream_ = rep.handle();
  return stream_;
}

bool Mirrors::MapLocked(uint64_t addr, size_t n) {
  const uint64_t page = PageBytes();
  const uint64_t lo = addr / page * page, hi = (addr + n + page - 1) / page * page;
  std::vector<std::pair<uint64_t, uint64_t>> mapped;  // runs this call mapped
  bool ok = true;
  for (uint64_t at = lo; at < hi && ok;) {
    if (page_refs_.count(at) > 0) {
      at += page;
      continue;
    }
    uint64_t end = at;
    while (end < hi && page_refs_.count(end) == 0) end += page;
    void* want = reinterpret_cast<void*>(at);
    void* got = mmap(want, end - at, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == MAP_FAILED) {
      ok = false;
    } else if (got != want) {  // a kernel that takes the flag as a hint
      munmap(got, end - at);
      ok = false;
    } else {
      mapped.emplace_back(at, end);
    }
    at = end;
  }
  if (!ok) {
    for (auto [a, b] : mapped) munmap(reinterpret_cast<void*>(a), b - a);
    return false;
  }
  for (uint64_t at = lo; at < hi; at += page) ++page_refs_[at];
  return true;
}

void Mirrors::UnmapLocked(uint64_t addr, size_t n) {
  const uint64_t page = PageBytes();
  const uint64_t lo = addr / page * page, hi = (addr + n + page - 1) / page * page;
  for (uint64_t at = lo; at < hi; at += page) {
    auto it = page_refs_.find(at);
    if (it == page_refs_.end() || --it->second > 0) continue;
    page_refs_.erase(it);
    munmap(reinterpret_cast<void*>(at), page);
  }
}

uint64_t Mirrors::MallocLocked(size_t bytes, bool map, cudaError_t* e) {
  Connection& c = Connection::Get();
  const uint64_t addr = TakeMappable(
      [&](uint64_t* at) {
        v1::MallocRequest req;
        req.set_size(bytes);
        v1::MallocReply rep;
        cudaError_t err = c.Call(CallId::kMalloc, req, &rep);
        *at = rep.dptr();
        return err;
      },
      [&](uint64_t at) { return !map || MapLocked(at, bytes); },
      [&](uint64_t at) {
        v1::FreeRequest req;
        req.set_dptr(at);
        (void)c.Call(CallId::kFree, req);
      },
      e);
  if (addr == 0 && *e == cudaSuccess) {
    std::fprintf(stderr,
                 "remora: no device address this process can map too was found for %zu bytes of "
                 "managed or mapped memory\n",
                 bytes);
    *e = cudaErrorMemoryAllocation;
  }
  return addr;
}

cudaError_t Mirrors::Allocate(size_t bytes, void** out, std::optional<unsigned> pinned_flags) {
  *out = nullptr;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  Connection::ObserverScope quiet;  // its own calls: mu_ is held
  std::lock_guard lock(mu_);
  const uint64_t stream = StreamLocked();
  if (stream == 0) return cudaErrorMemoryAllocation;
  cudaError_t e = cudaSuccess;
  const uint64_t addr = MallocLocked(bytes, true, &e);
  if (addr == 0) return e;
  auto* host = reinterpret_cast<std::byte*>(addr);
  std::memset(host, 0, bytes);  // a page shared with a live block may hold a freed one's bytes
  AddLocked(addr, Block{.host = host, .size = bytes});
  St().host.AddMirrored(host, bytes, pinned_flags);
  St().device_ranges.Add(addr, bytes);
  v1::MemsetRequest zero;  // the device's copy agrees with the host's zeros
  zero.set_dst(addr);
  zero.set_size(bytes);
  zero.set_stream(stream);
  if ((e = c.Call(CallId::kMemset, zero)) != cudaSuccess) {
    EraseLocked(blocks_.find(addr), true);
    return e;
  }
  *out = host;
  return cudaSuccess;
}

void Mirrors::AddLocked(uint64_t addr, Block b) {
  if (b.agreed.empty()) {
    b.agreed.resize(mirror::Pieces(b.size));
    for (size_t i = 0; i < b.agreed.size(); ++i) b.agreed[i] = mirror::PieceHash(b.host, b.size, i);
  }
  blocks_[addr] = std::move(b);
  live_.store(true, std::memory_order_release);
  Connection::Get().SetObserver(this);
}

void Mirrors::EraseLocked(std::map<uint64_t, Block>::iterator it, bool free_device) {
  const uint64_t addr = it->first;
  const Block& b = it->second;
  Connection& c = Connection::Get();
  if (free_device && b.reserved != 0) {
    v1::MemRangeRequest range;
    range.set_ptr(addr);
    range.set_size(b.reserved);
    if (b.physical != 0) {
      (void)c.Call(CallId::kMemUnmap, range);
      v1::MemReleaseRequest release;
      release.set_handle(b.physical);
      (void)c.Call(CallId::kMemRelease, release);
    }
    (void)c.Call(CallId::kMemAddressFree, range);
  } else if (free_device && b.owned) {
    v1::FreeRequest req;
    req.set_dptr(addr);
    (void)c.Call(CallId::kFree, req);
  }
  if (b.owned && b.reachable) St().device_ranges.Remove(addr);
  if (b.mapped) {
    St().host.RemoveMirrored(b.host);
    UnmapLocked(addr, b.size);
  }
  blocks_.erase(it);
  live_.store(!blocks_.empty(), std::memory_order_release);
}

void Mirrors::DropAllLocked() {
  while (!blocks_.empty()) EraseLocked(blocks_.begin(), false);
  dirty_.clear();
  dirty_any_ = false;
  stream_ = 0;  // the reset destroyed it too
}

cudaError_t Mirrors::Adopt(uint64_t addr, size_t bytes, const char* name) {
  if (addr == 0 || bytes == 0) return cudaErrorInvalidValue;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  Connection::ObserverScope quiet;
  std::lock_guard lock(mu_);
  if (auto it = blocks_.find(addr); it != blocks_.end())
    return it->second.size == bytes && !it->second.owned ? cudaSuccess : cudaErrorInvalidValue;
  const uint64_t stream = StreamLocked();
  if (stream == 0) return cudaErrorUnknown;
  if (!MapLocked(addr, bytes)) {
    std::fprintf(stderr,
                 "remora: __managed__ variable %s: its device address %#llx is in use in this "
                 "process, so the host cannot reach it there (cudaErrorNotSupported)\n",
                 name ? name : "?", static_cast<unsigned long long>(addr));
    return cudaErrorNotSupported;
  }
  auto* host = reinterpret_cast<std::byte*>(addr);
  if (cudaError_t e = DeviceToHostAt(host, addr, bytes, stream)) {
    UnmapLocked(addr, bytes);
    return e;
  }
  AddLocked(addr, Block{.host = host, .size = bytes, .owned = false});
  St().host.AddMirrored(host, bytes);
  return cudaSuccess;
}

void Mirrors::Release(uint64_t addr) {
  std::lock_guard lock(mu_);
  auto it = blocks_.find(addr);
  if (it != blocks_.end() && !it->second.owned) EraseLocked(it, false);
}

cudaError_t Mirrors::AllocatePinned(size_t bytes, unsigned flags, void** out) {
  *out = nullptr;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  const uint64_t granule = c.welcome().device().vmm_granularity();
  if (granule == 0 || bytes == 0) return cudaErrorNotSupported;
  const uint64_t reserved = (bytes + granule - 1) / granule * granule;
  Connection::ObserverScope quiet;
  std::lock_guard lock(mu_);
  cudaError_t e = cudaSuccess;
  const uint64_t addr = TakeMappable(
      [&](uint64_t* at) {
        v1::MemReserveRequest req;
        req.set_size(reserved);
        req.set_alignment(granule);
        v1::MallocReply rep;
        cudaError_t err = c.Call(CallId::kMemAddressReserve, req, &rep);
        *at = rep.dptr();
        return err;
      },
      [&](uint64_t at) { return MapLocked(at, bytes); },
      [&](uint64_t at) {
        v1::MemRangeRequest req;
        req.set_ptr(at);
        req.set_size(reserved);
        (void)c.Call(CallId::kMemAddressFree, req);
      },
      &e);
  if (addr == 0) return e != cudaSuccess ? e : cudaErrorNotSupported;
  auto* host = reinterpret_cast<std::byte*>(addr);
  std::memset(host, 0, bytes);
  Block b{.host = host, .size = bytes, .reserved = reserved, .reachable = false};
  b.agreed.assign(mirror::Pieces(bytes), 0);
  AddLocked(addr, std::move(b));
  St().host.AddMirrored(host, bytes, flags);
  SetOnDeviceFallback([](uint64_t at, uint64_t n) {
    return Mirrors::Get().Reach(reinterpret_cast<const void*>(at), n);
  });
  if ((flags & cudaHostAllocMapped) != 0) {
    if (cudaError_t err = MakeReachableLocked(addr, blocks_[addr])) {
      EraseLocked(blocks_.find(addr), true);
      return err;
    }
  }
  *out = host;
  return cudaSuccess;
}

cudaError_t Mirrors::MakeReachableLocked(uint64_t addr, Block& b) {
  Connection& c = Connection::Get();
  v1::MemCreateRequest create;
  create.set_size(b.reserved);
  v1::HandleReply handle;
  if (cudaError_t e = c.Call(CallId::kMemCreate, create, &handle)) return e;
  v1::MemMapRequest map;
  map.set_ptr(addr);
  map.set_size(b.reserved);
  map.set_handle(handle.handle());
  v1::MemSetAccessRequest access;
  access.set_ptr(addr);
  access.set_size(b.reserved);
  access.set_read_write(true);
  cudaError_t e = c.Call(CallId::kMemMap, map);
  if (e == cudaSuccess) e = c.Call(CallId::kMemSetAccess, access);
  if (e != cudaSuccess) {
    v1::MemRangeRequest range;
    range.set_ptr(addr);
    range.set_size(b.reserved);
    (void)c.Call(CallId::kMemUnmap, range);
    v1::MemReleaseRequest release;
    release.set_handle(handle.handle());
    (void)c.Call(CallId::kMemRelease, release);
    return e;
  }
  b.physical = handle.handle();
  b.reachable = true;
  std::fill(b.agreed.begin(), b.agreed.end(), 0);  // all sent before the next device work
  St().device_ranges.Add(addr, b.size);
  return cudaSuccess;
}

bool Mirrors::Reach(const void* p, size_t bytes) {
  if (!live_.load(std::memory_order_acquire)) return false;
  const auto at = reinterpret_cast<uint64_t>(p);
  Connection::ObserverScope quiet;
  std::lock_guard lock(mu_);
  auto it = blocks_.upper_bound(at);
  if (it == blocks_.begin()) return false;
  --it;
  Block& b = it->second;
  if (!b.mapped || at - it->first >= b.size || bytes > b.size - (at - it->first)) return false;
  if (b.reachable) return true;
  if (cudaError_t e = MakeReachableLocked(it->first, b)) {
    std::fprintf(stderr,
                 "remora: page-locked memory at %p reached from the device could not be given "
                 "device memory (%d); its use fails\n",
                 static_cast<void*>(b.host), static_cast<int>(e));
    return false;
  }
  return true;
}

cudaError_t Mirrors::Attach(void* host, size_t bytes, uint64_t* dev) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  Connection::ObserverScope quiet;
  std::lock_guard lock(mu_);
  cudaError_t e = cudaSuccess;
  const uint64_t addr = MallocLocked(bytes, false, &e);
  if (addr == 0) return e;
  Block b{.host = static_cast<std::byte*>(host), .size = bytes, .mapped = false};
  b.agreed.assign(mirror::Pieces(bytes),
                  0);  // all sent before the next device work
  AddLocked(addr, std::move(b));
  St().device_ranges.Add(addr, bytes);
  *dev = addr;
  return cudaSuccess;
}

uint64_t Mirrors::DeviceOf(const void* p) {
  if (!live_.load(std::memory_order_acquire)) return 0;
  std::lock_guard lock(mu_);
  const auto* at = static_cast<const std::byte*>(p);
  for (const auto& [addr, b] : blocks_)
    if (!b.mapped && at >= b.host && at < b.host + b.size) return addr + (at - b.host);
  return 0;
}

cudaError_t Mirrors::Detach(void* host) {
  {
    std::lock_guard lock(mu_);
    if (std::none_of(blocks_.begin(), blocks_.end(), [host](const auto& kv) {
          return !kv.second.mapped && kv.second.host == host;
        }))
      return cudaSuccess;
  }
  return Remove(host, false);
}

cudaError_t Mirrors::Free(void* p) {
  return Remove(p, true);
}

cudaError_t Mirrors::Remove(void* host, bool mapped) {
  // Freeing waits for the device, and the other blocks agree with it afterwards, as CUDA's do.
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Call(CallId::kDeviceSynchronize, v1::Empty())) return e;
  Connection::ObserverScope quiet;
  std::lock_guard lock(mu_);
  auto it = std::find_if(blocks_.begin(), blocks_.end(), [&](const auto& kv) {
    return kv.second.host == host && kv.second.mapped == mapped && kv.second.owned;
  });
  if (it == blocks_.end()) return cudaErrorInvalidValue;  // none, or freed by another thread
  EraseLocked(it, true);
  return cudaSuccess;
}

cudaError_t Mirrors::PushLocked() {
  const uint64_t stream = StreamLocked();
  if (stream == 0) return cudaErrorUnknown;
  cudaError_t e = cudaSuccess;
  bool sent = false;
  for (auto& [addr, b] : blocks_) {
    if (!b.reachable) continue;
    const std::byte* host = b.host;
    const size_t pieces = b.agreed.size();
    for (size_t i = 0; i < pieces && e == cudaSuccess;) {
      size_t j = i;  // [i, j): a run of changed pieces
      for (; j < pieces; ++j) {
        const uint64_t h = mirror::PieceHash(host, b.size, j);
        if (h == b.agreed[j]) break;
        b.agreed[j] = h;
      }
      if (j == i) {
        ++i;
        continue;
      }
      const size_t off = i * mirror::kPiece, end = std::min(j * mirror::kPiece, b.size);
      e = HostToDeviceAt(addr + off, host + off, end - off, stream, true);
      if (e != cudaSuccess)  // sent again next time
        std::fill(b.agreed.begin() + static_cast<std::ptrdiff_t>(i),
                  b.agreed.begin() + static_cast<std::ptrdiff_t>(j), 0);
      sent = true;
      i = j;
    }
  }
  if (sent && e == cudaSuccess) {
    v1::StreamRequest req;
    req.set_stream(stream);
    e = Connection::Get().Call(CallId::kStreamSynchronize, req);
  }
  if (e != cudaSuccess)
    std::fprintf(stderr, "remora: managed memory: the host's changes could not be sent (%d)\n",
                 static_cast<int>(e));
  return e;
}

cudaError_t Mirrors::PullLocked() {
  const uint64_t stream = StreamLocked();
  if (stream == 0) return cudaErrorUnknown;
  Connection& c = Connection::Get();
  const uint64_t budget = mirror::FetchBudget(c.max_body());
  if (budget == 0) return cudaErrorUnknown;
  v1::MirrorFetchRequest req;
  req.set_stream(stream);
  uint64_t asked = 0;
  // Asks for the ranges gathered so far and writes the pieces that changed into the host copy.
  auto fetch = [&]() -> cudaError_t {
    if (req.ranges_size() == 0) return cudaSuccess;
    v1::MirrorFetchReply rep;
    if (cudaError_t e = c.Call(CallId::kMirrorFetch, req, &rep)) return e;
    for (const v1::MirrorFetchReply::Piece& piece : rep.pieces()) {
      auto it = blocks_.upper_bound(piece.addr());
      if (it == blocks_.begin()) return cudaErrorUnknown;
      --it;
      Block& b = it->second;
      const uint64_t off = piece.addr() - it->first;
      if (off >= b.size || off % mirror::kPiece != 0 || piece.data().size() > b.size - off)
        return cudaErrorUnknown;  // not what was asked: a protocol fault
      const size_t at = off / mirror::kPiece;
      if (b.agreed[at] != 0 && mirror::PieceHash(b.host, b.size, at) != b.agreed[at])
        BothChanged(piece.addr());
      std::memcpy(b.host + off, piece.data().data(), piece.data().size());
      b.agreed[at] = mirror::PieceHash(b.host, b.size, at);
    }
    req.clear_ranges();
    asked = 0;
    return cudaSuccess;
  };
  cudaError_t e = cudaSuccess;
  for (auto& [addr, b] : blocks_) {
    if (!b.reachable) continue;
    for (uint64_t off = 0; off < b.size && e == cudaSuccess;) {
      // Ranges start at whole pieces of their block, as its hashes do.
      uint64_t room = (budget - asked) / mirror::kPiece * mirror::kPiece;
      if (room == 0) {
        if ((e = fetch()) != cudaSuccess) break;
        room = budget;
      }
      const uint64_t n = std::min<uint64_t>(b.size - off, room);
      v1::MirrorFetchRequest::Range* r = req.add_ranges();
      r->set_addr(addr + off);
      r->set_size(n);
      const size_t first = off / mirror::kPiece;
      for (size_t i = 0; i < mirror::Pieces(n); ++i) r->add_agreed(b.agreed[first + i]);
      asked += n;
      off += n;
    }
  }
  if (e == cudaSuccess) e = fetch();
  if (e != cudaSuccess)
    std::fprintf(stderr, "remora: managed memory: the device's copy could not be fetched (%d)\n",
                 static_cast<int>(e));
  return e;
}

void Mirrors::Before(const CallTouch& t) {
  if (!live_.load(std::memory_order_acquire) || !IsWork(t.id)) return;
  std::lock_guard lock(mu_);
  if (blocks_.empty()) return;
  (void)PushLocked();
  if (t.writes) {
    const auto [dst, size] = *t.writes;
    if (size == 0) return;
    auto it = blocks_.upper_bound(dst + size - 1);
    if (it == blocks_.begin() || std::prev(it)->first + std::prev(it)->second.size <= dst)
      return;  // writes no mirrored block
  }
  if (t.stream)
    dirty_.insert(*t.stream);
  else
    dirty_any_ = true;
}

void Mirrors::After(const CallTouch& t, cudaError_t e) {
  if (!live_.load(std::memory_order_acquire) || e != cudaSuccess) return;
  const Waited w = WaitOf(t.id);
  if (w == Waited::kNothing) return;
  std::lock_guard lock(mu_);
  if (t.id == CallId::kDeviceReset) {  // every block's device memory is gone
    DropAllLocked();
    return;
  }
  if (!AnyDirtyLocked()) return;
  // The device's changes come first: a piece the host changed too since they last agreed was
  // written by both while device work ran (said on stderr); the host's other changes stay
  // and go before the next device work.
  if (PullLocked() != cudaSuccess) return;
  switch (w) {
    case Waited::kDevice:
      dirty_.clear();
      dirty_any_ = false;
      break;
    case Waited::kStream: {
      const uint64_t s = t.stream.value_or(0);
      dirty_.erase(s);
      if (s != 0) break;
      std::erase_if(dirty_, [](uint64_t d) {  // the legacy stream waited for blocking streams
        std::optional<uint64_t> info = St().streams.Find(d);
        return !info || (*info & cudaStreamNonBlocking) == 0;
      });
      break;
    }
    case Waited::kUnnamed:
    case Waited::kNothing:
      break;
  }
}

void Mirrors::BeforeHostFunc() {
  if (!live_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mu_);
  if (AnyDirtyLocked() && PushLocked() == cudaSuccess) (void)PullLocked();
}

void Mirrors::AfterHostFunc() {
  if (!live_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mu_);
  if (!blocks_.empty()) (void)PushLocked();
}

}  // namespace remora::client_stub
