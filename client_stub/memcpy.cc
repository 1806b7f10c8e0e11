// client_stub/memcpy.cc - H2D/D2H/D2D/H2H copies: arena offsets, staging slots, inline chunks.
#include "client_stub/memcpy.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "client_stub/connection.h"
#include "client_stub/graph.h"
#include "client_stub/mirror.h"
#include "client_stub/state.h"
#include "client_stub/stream_copy.h"
#include "proto/arena.h"

namespace remora::client_stub {
namespace {

uint64_t Addr(const void* p) {
  return reinterpret_cast<uintptr_t>(p);
}

bool IsDevice(const void* p) {
  return St().device_ranges.Find(Addr(p)).has_value();
}

// Managed or mapped pinned memory: host memory kernels also reach (arena).
bool IsDeviceMappedHost(const void* p) {
  return St().host.IsDeviceMapped(p);
}

// True if `kind` names as host memory a known device allocation, or as device memory pinned
// host memory: CUDA leaves such a copy undefined, and a GPU with unified addressing goes by the
// pointers. So does Copy, on every transport, and never touches a device address as host memory.
bool KindContradictsPointers(const void* dst, const void* src, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyDefault) return false;
  const bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  auto wrong = [](const void* p, bool named_device) {
    return named_device ? St().host.IsPinned(p) : IsDevice(p);
  };
  return wrong(dst, dst_dev) || wrong(src, src_dev);
}

// Waits for stream `sid` (0: the legacy stream, which waits for every blocking
// stream) before the host touches memory its kernels may be using.
cudaError_t SyncStream(Connection& c, uint64_t sid) {
  v1::StreamRequest req;
  req.set_stream(sid);
  return c.Call(CallId::kStreamSynchronize, req);
}

// True if [p, p+n) starts inside a known allocation but runs past its end.
bool Overruns(const void* p, size_t n) {
  auto r = St().device_ranges.Find(Addr(p));
  return r && r->size != 0 && n > r->base + r->size - Addr(p);
}

// The staging region of the arena, from the Welcome.
struct Staging {
  std::byte* base;
  uint64_t offset, slot_bytes;
  uint32_t slots;

  static Staging Of(Connection& c) {
    const v1::Welcome& w = c.welcome();
    return {c.arena()->base(), w.staging_offset(), w.staging_slot_bytes(), w.staging_slots()};
  }
  bool usable() const { return slots > 0 && slot_bytes > 0; }
  std::atomic_ref<uint32_t> flag(uint32_t i) const {
    return std::atomic_ref<uint32_t>(
        *reinterpret_cast<uint32_t*>(base + arena::StagingFlagOffset(offset, i)));
  }
  uint64_t slot_offset(uint32_t i) const {
    return arena::StagingSlotOffset(offset, slots, slot_bytes, i);
  }
};

std::atomic<uint32_t> g_next_slot{0};

// Claims a free staging slot if there is one (flag 0 -> 1, acquire: pairs with
// the server's release store of 0 after it consumed the slot, or the stub's
// after it copied a slot out). Returns the slot index, or -1.
int64_t TryClaimSlot(const Staging& s) {
  uint32_t start = g_next_slot.fetch_add(1, std::memory_order_relaxed);
  for (uint32_t k = 0; k < s.slots; ++k) {
    uint32_t i = (start + k) % s.slots;
    uint32_t expected = 0;
    if (s.flag(i).compare_exchange_strong(expected, 1, std::memory_order_acquire,
                                          std::memory_order_relaxed))
      return i;
  }
  return -1;
}

// Claims a free staging slot, waiting for one. Returns the slot index, or -1
// once the session is down.
int64_t ClaimSlot(Connection& c, const Staging& s) {
  for (uint32_t spins = 0;; ++spins) {
    if (int64_t i = TryClaimSlot(s); i >= 0) return i;
    if (!c.Alive()) return -1;
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Release, pairing with the server's acquire when it reuses the slot.
void ReleaseSlot(const Staging& s, uint32_t i) {
  s.flag(i).store(0, std::memory_order_release);
}

cudaError_t SlotFailed(Connection& c) {
  cudaError_t e = c.Ensure();
  return e ? e : cudaErrorDevicesUnavailable;
}

// Sends one host-to-device piece: the last piece of a synchronous copy waits,
// every other piece is stream-ordered.
cudaError_t SendHtoD(Connection& c, v1::MemcpyHtoDRequest& req, bool wait) {
  req.set_async(!wait);
  return wait ? c.Call(CallId::kMemcpyHtoD, req) : c.Post(CallId::kMemcpyHtoDAsync, req);
}

cudaError_t HostToDevice(Connection& c, uint64_t dst, const std::byte* src, size_t n,
                         uint64_t stream, bool async) {
  v1::MemcpyHtoDRequest req;
  req.set_dst(dst);
  req.set_size(n);
  req.set_stream(stream);
  HostMemory::Where where = St().host.Locate(src, n);
  if (where.kind == HostMemory::Kind::kArena) {
    req.mutable_src()->set_arena_offset(where.arena_offset);
    return SendHtoD(c, req, !async);
  }
  // Below, the bytes are taken now (into a staging slot, or inline over gRPC). A GPU reads
  // page-locked memory when the stream reaches the copy: where a host function still to run
  // may write it first (cudaLaunchHostFunc, a graph's host node), the stream is waited for.
  if (async && c.HostFuncsOutstanding() && St().host.IsPinned(src))
    if (cudaError_t e = SyncStream(c, stream)) return e;
  if (c.arena()) {
    Staging s = Staging::Of(c);
    if (s.usable()) {
      if (cudaError_t e = StickyError()) return e;  // a slot is only claimed for a frame sent
      Chunking ch{n, s.slot_bytes};
      for (uint64_t i = 0; i < ch.count(); ++i) {
        int64_t slot = ClaimSlot(c, s);
        if (slot < 0) return SlotFailed(c);
        StreamCopy(s.base + s.slot_offset(slot), src + ch.offset(i), ch.size(i));
        req.set_dst(dst + ch.offset(i));
        req.set_size(ch.size(i));
        req.mutable_src()->set_arena_offset(s.slot_offset(slot));
        req.set_staging_slot(static_cast<uint32_t>(slot) + 1);
        if (cudaError_t e = SendHtoD(c, req, !async && i + 1 == ch.count())) {
          if (!c.Alive() || e == cudaErrorInvalidValue) ReleaseSlot(s, slot);
          return e;
        }
      }
      return cudaSuccess;
    }
  }
  Chunking ch{n, InlineChunkBytes(c.max_body())};
  for (uint64_t i = 0; i < ch.count(); ++i) {
    req.set_dst(dst + ch.offset(i));
    req.set_size(ch.size(i));
    req.mutable_src()->set_data(src + ch.offset(i), ch.size(i));
    if (cudaError_t e = SendHtoD(c, req, !async && i + 1 == ch.count())) return e;
  }
  return cudaSuccess;
}

// Pageable device-to-host copies go through the staging slots in batches: the
// pieces of a batch are posted (stream-ordered, each into a slot this thread
// holds), and one synchronous piece, the batch's last bytes, waits for them all.
// The next batch is posted before the previous one is copied out of its slots,
// so the device fills one batch while the host empties the other. A batch is at
// most kBatchBytes, a quarter of the slots and half the copy (two batches at
// least, to overlap): 64 MiB in 4 MiB slots takes four waits, not sixteen. A
// thread waits for a slot only while it holds none (it takes what is free for a
// later batch), so threads sharing the slots never wait on each other.
constexpr uint64_t kBatchBytes = 16 << 20;
constexpr uint32_t kMaxBatch = 16;
// The synchronous piece of a batch that follows another: small, so that the
// device has little left to do once the host, done copying the previous batch
// out, sends it.
constexpr uint64_t kWaitTailBytes = arena::kPage;

struct Batch {
  uint64_t first = 0;  // its first chunk
  uint32_t count = 0;  // chunks, one per slot
  uint32_t sent = 0;   // its first slots, a posted piece was sent into each
  std::array<uint32_t, kMaxBatch> slot{};
};

// Gives back the slots of a failed batch. A slot that a posted piece may still
// be filling is released only once a synchronisation on the stream answered;
// while the session is down or a sticky error latched none can, and the slot
// stays claimed (this process's CUDA work is over, the server may still write).
void GiveBack(Connection& c, const Staging& s, uint64_t stream, const Batch& b) {
  if (b.sent > 0 && c.Alive() && !StickyError()) (void)SyncStream(c, stream);
  const bool settled = c.Alive() && !StickyError();
  for (uint32_t j = 0; j < b.count; ++j)
    if (j >= b.sent || settled) ReleaseSlot(s, b.slot[j]);
}

cudaError_t PageableDeviceToHost(Connection& c, const Staging& s, std::byte* dst, uint64_t src,
                                 size_t n, uint64_t stream) {
  if (cudaError_t e = StickyError()) return e;  // a slot is only claimed for a frame sent
  const Chunking ch{n, s.slot_bytes};
  const uint64_t per_batch = std::clamp<uint64_t>(
      std::min<uint64_t>({kBatchBytes / s.slot_bytes, s.slots / 4, (ch.count() + 1) / 2}), 1,
      kMaxBatch);
  v1::MemcpyDtoHRequest req;
  req.set_stream(stream);
  req.set_to_arena(true);
  auto piece = [&](uint64_t chunk, uint32_t slot, uint64_t from, uint64_t size) {
    req.set_src(src + ch.offset(chunk) + from);
    req.set_size(size);
    req.set_dst_arena_offset(s.slot_offset(slot) + from);
  };
  Batch done;  // waited for: its chunks are in its slots
  for (uint64_t next = 0; next < ch.count() || done.count > 0;) {
    Batch b;
    b.first = next;
    while (b.count < per_batch && next < ch.count()) {
      int64_t slot = done.count == 0 && b.count == 0 ? ClaimSlot(c, s) : TryClaimSlot(s);
      if (slot < 0) break;
      b.slot[b.count++] = static_cast<uint32_t>(slot);
      ++next;
    }
    if (b.count == 0 && done.count == 0) return SlotFailed(c);
    // Post the batch but for its waiting piece: the whole last chunk when the
    // wait goes out at once, a small tail when a batch is copied out first.
    uint64_t tail = 0;
    cudaError_t e = cudaSuccess;
    for (uint32_t j = 0; j < b.count && !e; ++j) {
      const uint64_t size = ch.size(b.first + j);
      uint64_t now = size;
      if (j + 1 == b.count) {
        tail = done.count > 0 ? std::min(size, kWaitTailBytes) : size;
        now = size - tail;
      }
      if (now == 0) break;
      piece(b.first + j, b.slot[j], 0, now);
      req.set_async(true);
      e = c.Post(CallId::kMemcpyDtoHAsync, req);
      if (!e) b.sent = j + 1;
    }
    // Copy the previous batch out while the device fills this one.
    for (uint32_t j = 0; j < done.count && !e; ++j)
      std::memcpy(dst + ch.offset(done.first + j), s.base + s.slot_offset(done.slot[j]),
                  ch.size(done.first + j));
    for (uint32_t j = 0; j < done.count; ++j) ReleaseSlot(s, done.slot[j]);
    done = Batch{};
    if (!e && b.count > 0) {
      const uint32_t last = b.count - 1;
      const uint64_t size = ch.size(b.first + last);
      piece(b.first + last, b.slot[last], size - tail, tail);
      req.set_async(false);
      // Answered only once the device is done, unless refused before it
      // waited: either way, the piece itself is not in flight.
      e = c.Call(CallId::kMemcpyDtoH, req);
    }
    if (e) {
      GiveBack(c, s, stream, b);
      return e;
    }
    done = b;
  }
  return cudaSuccess;
}

cudaError_t DeviceToHost(Connection& c, std::byte* dst, uint64_t src, size_t n, uint64_t stream,
                         bool async) {
  v1::MemcpyDtoHRequest req;
  req.set_src(src);
  req.set_size(n);
  req.set_stream(stream);
  HostMemory::Where where = St().host.Locate(dst, n);
  if (where.kind == HostMemory::Kind::kArena) {
    req.set_to_arena(true);
    req.set_dst_arena_offset(where.arena_offset);
    req.set_async(async);
    return async ? c.Post(CallId::kMemcpyDtoHAsync, req) : c.Call(CallId::kMemcpyDtoH, req);
  }
  // Pageable destination: synchronous, as CUDA allows.
  if (c.arena()) {
    Staging s = Staging::Of(c);
    if (s.usable()) return PageableDeviceToHost(c, s, dst, src, n, stream);
  }
  Chunking ch{n, InlineChunkBytes(c.max_body())};
  v1::MemcpyDtoHReply rep;
  for (uint64_t i = 0; i < ch.count(); ++i) {
    req.set_src(src + ch.offset(i));
    req.set_size(ch.size(i));
    if (cudaError_t e = c.Call(CallId::kMemcpyDtoH, req, &rep)) return e;
    if (rep.data().size() != ch.size(i)) return cudaErrorUnknown;
    std::memcpy(dst + ch.offset(i), rep.data().data(), ch.size(i));
  }
  return cudaSuccess;
}

cudaError_t DeviceToDevice(Connection& c, uint64_t dst, uint64_t src, size_t n, uint64_t stream,
                           bool async) {
  v1::MemcpyDtoDRequest req;
  req.set_dst(dst);
  req.set_src(src);
  req.set_size(n);
  req.set_stream(stream);
  req.set_async(async);
  return async ? c.Post(CallId::kMemcpyDtoDAsync, req) : c.Call(CallId::kMemcpyDtoD, req);
}

}  // namespace

cudaError_t HostToDeviceAt(uint64_t dst, const void* src, size_t n, uint64_t stream, bool async) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  return HostToDevice(c, dst, static_cast<const std::byte*>(src), n, stream, async);
}

cudaError_t DeviceToHostAt(void* dst, uint64_t src, size_t n, uint64_t stream) {
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  return DeviceToHost(c, static_cast<std::byte*>(dst), src, n, stream, false);
}

cudaError_t Copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t stream,
                 bool async) {
  if (static_cast<unsigned>(kind) > cudaMemcpyDefault) return cudaErrorInvalidMemcpyDirection;
  if (n == 0) return cudaSuccess;
  if (!dst || !src) return cudaErrorInvalidValue;
  if (async && AnyCapture())  // a capturing stream records the copy as a graph node
    if (auto r = CaptureOp(stream, LinearCopyOp(dst, src, n, kind))) return *r;
  Connection& c = Connection::Get();
  if (cudaError_t e = c.Ensure()) return e;
  // Page-locked memory given a device copy at another address (mirror.h) is copied on the
  // device's side, which the host's copy is made to agree with after the copy is waited for.
  if (uint64_t d = Mirrors::Get().DeviceOf(dst)) {
    dst = reinterpret_cast<void*>(d);
    kind = cudaMemcpyDefault;
  }
  if (uint64_t d = Mirrors::Get().DeviceOf(src)) {
    src = reinterpret_cast<const void*>(d);
    kind = cudaMemcpyDefault;
  }
  // Managed and mapped memory is host memory to the copy engine, whatever kind
  // the app named (unified addressing: the pointer says where it is).
  bool mapped_host = IsDeviceMappedHost(dst) || IsDeviceMappedHost(src);
  if (mapped_host || KindContradictsPointers(dst, src, kind)) kind = cudaMemcpyDefault;
  if (kind == cudaMemcpyDefault) {
    bool d = IsDevice(dst), s = IsDevice(src);
    kind = d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
             : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
  }
  bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if ((dst_dev && Overruns(dst, n)) || (src_dev && Overruns(src, n))) return cudaErrorInvalidValue;
  uint64_t sid = StreamId(stream);
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return HostToDevice(c, Addr(dst), static_cast<const std::byte*>(src), n, sid, async);
    case cudaMemcpyDeviceToHost:
      return DeviceToHost(c, static_cast<std::byte*>(dst), Addr(src), n, sid, async);
    case cudaMemcpyDeviceToDevice:
      return DeviceToDevice(c, Addr(dst), Addr(src), n, sid, async);
    default:
      // Kernels may still be writing managed/mapped memory: wait for the stream.
      if (mapped_host)
        if (cudaError_t e = SyncStream(c, sid)) return e;
      std::memmove(dst, src, n);
      return cudaSuccess;
  }
}

cudaError_t Fill(void* dst, int value, size_t n, cudaStream_t stream, bool async) {
  if (n == 0) return cudaSuccess;
  if (!dst) return cudaErrorInvalidValue;
  if (Overruns(dst, n)) return cudaErrorInvalidValue;
  if (async && AnyCapture()) {
    GraphOp op;
    op.type = cudaGraphNodeTypeMemset;
    op.dst = dst;
    op.value = static_cast<unsigned char>(value);
    op.width = op.dpitch = n;
    if (auto r = CaptureOp(stream, std::move(op))) return *r;
  }
  Connection& c = Connection::Get();
  if (IsDeviceMappedHost(dst)) {  // managed memory: set by the host, in stream order
    if (cudaError_t e = SyncStream(c, StreamId(stream))) return e;
    std::memset(dst, value, n);
    return cudaSuccess;
  }
  v1::MemsetRequest req;
  req.set_dst(Addr(dst));
  req.set_value(static_cast<uint32_t>(value) & 0xFF);
  req.set_size(n);
  req.set_stream(StreamId(stream));
  req.set_async(async);
  return async ? c.Post(CallId::kMemsetAsync, req) : c.Call(CallId::kMemset, req);
}

cudaError_t FillPattern(void* d, size_t pitch, uint32_t value, size_t elem, size_t width,
                        size_t height, cudaStream_t s, bool async) {
  if (elem == 0 || elem > 4 || reinterpret_cast<uintptr_t>(d) % elem != 0 ||
      (height > 1 && pitch < width * elem))
    return cudaErrorInvalidValue;
  const size_t row = width * elem;
  if (height == 1) pitch = row;
  if (async && AnyCapture()) {  // one node: the pieces below are this call's own memory
    GraphOp op;
    op.type = cudaGraphNodeTypeMemset;
    op.dst = d;
    op.dpitch = pitch;
    op.value = value;
    op.elem = unsigned(elem);
    op.width = width;
    op.height = height;
    if (auto r = CaptureOp(s, std::move(op))) return *r;
  }
  uint8_t bytes[4];
  std::memcpy(bytes, &value, 4);
  if (std::all_of(bytes, bytes + elem, [&](uint8_t b) { return b == bytes[0]; }))
    return Fill2D(d, pitch, bytes[0], row, height, s, async);
  constexpr size_t kPiece = 16u << 20;
  std::vector<uint8_t> piece(std::min(row * height, kPiece) / elem * elem + elem);
  for (size_t i = 0; i < piece.size(); i += elem) std::memcpy(&piece[i], bytes, elem);
  // Rows in groups that fit a piece, or one row in pieces.
  const size_t rows_per = std::max<size_t>(1, kPiece / std::max<size_t>(row, 1));
  for (size_t y = 0; y < height; y += rows_per) {
    const size_t rows = std::min(rows_per, height - y);
    for (size_t x = 0; x < row; x += kPiece) {
      const size_t w = std::min(kPiece, row - x);
      char* to = static_cast<char*>(d) + y * pitch + x;
      const size_t from_pitch = rows > 1 ? row : w;
      if (cudaError_t e = Copy2D(to, rows > 1 ? pitch : w, piece.data(), from_pitch, w, rows,
                                 cudaMemcpyHostToDevice, s, async))
        return e;
    }
  }
  return cudaSuccess;
}

cudaError_t Copy3D(void* dst, size_t dpitch, size_t dslice, const void* src, size_t spitch,
                   size_t sslice, size_t width, size_t height, size_t depth, cudaMemcpyKind kind,
                   cudaStream_t stream, bool async) {
  for (size_t z = 0; z < depth; ++z) {
    // Only the last slice of a synchronous copy need wait; the slices are stream-ordered.
    const bool wait = !async && z + 1 == depth;
    if (cudaError_t e = Copy2D(static_cast<char*>(dst) + z * dslice, dpitch,
                               static_cast<const char*>(src) + z * sslice, spitch, width, height,
                               kind, stream, !wait))
      return e;
  }
  return cudaSuccess;
}

cudaError_t Copy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                   size_t height, cudaMemcpyKind kind, cudaStream_t stream, bool async) {
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
  if (width == 0 || height == 0) return cudaSuccess;
  if (dpitch == width && spitch == width)
    return Copy(dst, src, width * height, kind, stream, async);
  for (size_t row = 0; row < height; ++row) {
    bool wait = !async && row + 1 == height;
    if (cudaError_t e =
            Copy(static_cast<std::byte*>(dst) + row * dpitch,
                 static_cast<const std::byte*>(src) + row * spitch, width, kind, stream, !wait))
      return e;
  }
  return cudaSuccess;
}

cudaError_t Fill2D(void* dst, size_t pitch, int value, size_t width, size_t height,
                   cudaStream_t stream, bool async) {
  if (width > pitch) return cudaErrorInvalidPitchValue;
  if (width == 0 || height == 0) return cudaSuccess;
  if (pitch == width) return Fill(dst, value, width * height, stream, async);
  for (size_t row = 0; row < height; ++row) {
    bool wait = !async && row + 1 == height;
    if (cudaError_t e =
            Fill(static_cast<std::byte*>(dst) + row * pitch, value, width, stream, !wait))
      return e;
  }
  return cudaSuccess;
}

}  // namespace remora::client_stub
