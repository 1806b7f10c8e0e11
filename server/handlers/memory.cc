// server/handlers/memory.cc - cudaMalloc/Free, copies and memsets: checked, then queued.
#include "server/session.h"

#include <cstring>
#include <memory>
#include <vector>

#include "fatbin/fatbin.h"
#include "proto/arena.h"
#include "proto/inline.h"
#include "proto/mirror.h"
#include "server/handlers/util.h"
#include "server/log.h"

namespace remora::server {

// ---- Device and memory ---------------------------------------------------------

Status Session::OnMemGetInfo(const v1::Empty&, v1::MemGetInfoReply& rep) {
  sched::MemoryLedger::View v = env_.ledger->Slice(who_.ledger_id);
  rep.set_free(v.free);
  rep.set_total(v.total);
  return OkStatus();
}

Status Session::OnDeviceSetLimit(const v1::LimitRequest& req, v1::Empty&) {
  switch (req.limit()) {
    case CU_LIMIT_STACK_SIZE:
      return env_.device->RaiseStack(req.value());
    case CU_LIMIT_MALLOC_HEAP_SIZE:
      return SetHeapLimit(req.value());
    default:
      return Error(err::kInvalidValue, "limit " + std::to_string(req.limit()) +
                                           " is not one the server applies (stack, heap)");
  }
}

Status Session::SetHeapLimit(uint64_t bytes) {
  if (bytes == 0 || bytes > (1ull << 62))
    return Error(err::kInvalidValue, "a device heap of " + std::to_string(bytes) + " bytes");
  if (!dev().heap_per_tenant()) {
    if (bytes <= Device::shared_heap_bytes()) return OkStatus();
    return Error(err::kInvalidValue,
                 "a device heap of " + std::to_string(bytes) + " bytes: the context's heap (" +
                     std::to_string(Device::shared_heap_bytes()) +
                     " bytes) serves every tenant and cannot grow once a kernel has used it");
  }
  // The quota is charged the difference from the heap it had (the default: none).
  std::lock_guard lock(heap_mu_);
  const uint64_t charged = arena::AlignUp(bytes, 256), had = heap_charged_;
  const uint64_t grow = charged > had ? charged - had : 0;
  if (grow != 0) RETURN_IF_ERROR(ClaimCharge(grow, "a device heap of"));
  const Status set = dev().Check(dev().drv().remoraEmuHeapSetLimit(id_, bytes),
                                 "cudaDeviceSetLimit(cudaLimitMallocHeapSize) after device malloc");
  if (!set.ok()) {
    env_.ledger->Release(who_.ledger_id, grow);
    return set;
  }
  if (had > charged) env_.ledger->Release(who_.ledger_id, had - charged);
  heap_charged_ = charged;
  allocated_bytes_ += charged - had;  // modulo 2^64: a smaller heap lowers it
  return OkStatus();
}

Status Session::OnMalloc(const v1::MallocRequest& req, v1::MallocReply& rep) {
  if (req.size() == 0) {
    rep.set_dptr(0);
    return OkStatus();
  }
  if (req.size() > (1ull << 62)) return Error(err::kMemoryAllocation, "allocation size overflows");
  ASSIGN_OR_RETURN(CUdeviceptr p, AllocateCharged(req.size(), "allocated"));
  allocations_.Add(p, req.size());
  rep.set_dptr(p);
  return OkStatus();
}

Status Session::ClaimCharge(uint64_t charged, const std::string& what) {
  // Within its request an allocation always succeeds: loans are reclaimed
  // (their sessions ended) and the allocation waits until their memory is back.
  sched::Decision d = env_.ledger->Claim(who_.ledger_id, charged);
  RETURN_IF_ERROR(d.status);
  if (d.victims.empty()) return OkStatus();
  Status back = Reclaim(
      d.victims, what + " " + std::to_string(charged) + " bytes within its guaranteed request",
      EvictKind::kReclaim);
  if (!back.ok()) env_.ledger->Release(who_.ledger_id, charged);
  return back;
}

Result<CUdeviceptr> Session::AllocateCharged(uint64_t bytes, const std::string& what) {
  uint64_t charged = arena::AlignUp(bytes, 256);
  RETURN_IF_ERROR(ClaimCharge(charged, what));
  Result<CUdeviceptr> p = env_.executor->Allocate(bytes);
  if (!p.ok()) {
    env_.ledger->Release(who_.ledger_id, charged);
    return p.status();
  }
  allocated_bytes_ += charged;
  return *p;
}

void Session::ReleaseChargedWhenDone(CUdeviceptr p, uint64_t bytes,
                                     std::shared_ptr<const void> keep) {
  Held held;
  held.epoch = epoch_;
  held.charged = arena::AlignUp(bytes, 256);
  held.allocations[p] = held.charged;
  held.keep = std::move(keep);
  allocated_bytes_ -= held.charged;
  (void)GiveBackWhenDone(std::move(held), /*reply=*/false);
}

Status Session::OnFree(const v1::FreeRequest& req, v1::Empty&) {
  if (req.dptr() == 0) return OkStatus();
  std::optional<uint64_t> size = allocations_.SizeAt(req.dptr());
  if (!size)
    return Error(err::kInvalidValue, Hex(req.dptr()) +
                                         " is not the start of an allocation of this tenant "
                                         "(already freed, never allocated, or interior)");
  // cudaFree waits for the device, as CUDA does, but only for this tenant's
  // work: the memory goes back once that is done.
  Held held;
  held.epoch = epoch_;
  held.charged = arena::AlignUp(*size, 256);
  held.allocations[req.dptr()] = held.charged;
  allocated_bytes_ -= held.charged;
  allocations_.Remove(req.dptr());
  if (env_.ipc) env_.ipc->Revoke(id_, req.dptr());
  return GiveBackWhenDone(std::move(held), /*reply=*/true);
}

Status Session::OnPinArena(const v1::PinArenaRequest& req, v1::Empty&) {
  if (!pins_) return Error(err::kInvalidValue, "this session has no shared-memory arena");
  return pins_->Pin(dev(), req.offset(), req.bytes(), arena_device_address_);
}

// ---- IPC between the tenant's own processes ---------------------------------------

Status Session::OnIpcGetMemHandle(const v1::FreeRequest& req, v1::IpcHandle& rep) {
  ASSIGN_OR_RETURN(IpcRegistry * ipc, Ipc());
  std::optional<RangeTable::Range> r = allocations_.Find(req.dptr());
  if (!r || r->size == 0)
    return Error(err::kInvalidValue,
                 Hex(req.dptr()) + " is not in a cudaMalloc allocation of this process");
  rep.set_handle(ipc->Export(id_, who_.owner, r->base, r->size));
  return OkStatus();
}

Status Session::OnIpcOpenMemHandle(const v1::IpcHandle& req, v1::IpcOpened& rep) {
  ASSIGN_OR_RETURN(IpcRegistry * ipc, Ipc());
  ASSIGN_OR_RETURN(IpcRegistry::Opened o, ipc->Open(req.handle(), id_, who_.owner));
  ipc_opened_.fetch_add(1, std::memory_order_relaxed);
  rep.set_base(o.base);
  rep.set_size(o.size);
  return OkStatus();
}

Status Session::OnIpcCloseMemHandle(const v1::FreeRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(IpcRegistry * ipc, Ipc());
  // The tenant's work that may still read it goes first, as NVIDIA's close waits.
  RETURN_IF_ERROR(ipc->Close(id_, req.dptr()));
  return ReplyWhenDone(std::nullopt);
}

// A small copy on an idle stream is issued and waited for here (DirectStream).
Status Session::OnMemcpyHtoD(const v1::MemcpyHtoDRequest& req, v1::Empty& rep) {
  if (std::optional<CUstream> s = DirectStream(req.stream(), req.size())) {
    RETURN_IF_ERROR(staging_.CheckSlot(req.staging_slot()));
    Result<const std::byte*> src = HtoDSource(req);
    Status st = src.status();
    if (st.ok())
      st = dev().Check(dev().drv().cuMemcpyHtoDAsync(req.dst(), *src, req.size(), *s),
                       "cuMemcpyHtoD");
    if (st.ok()) st = dev().Check(dev().drv().cuStreamSynchronize(*s), "cuStreamSynchronize");
    staging_.ReleaseSlot(req.staging_slot());
    return st;
  }
  RETURN_IF_ERROR(OnMemcpyHtoDAsync(req, rep));
  return ReplyWhenDone(req.stream());
}

Result<const std::byte*> Session::HtoDSource(const v1::MemcpyHtoDRequest& req) const {
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  ASSIGN_OR_RETURN(const std::byte* src, staging_.Source(req.src(), req.size()));
  RETURN_IF_ERROR(streams_.Check(req.stream()));
  return src;
}

Status Session::OnMemcpyHtoDAsync(const v1::MemcpyHtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(staging_.CheckSlot(req.staging_slot()));
  const uint32_t slot = req.staging_slot();
  Result<const std::byte*> src = HtoDSource(req);
  if (!src.ok()) {
    staging_.ReleaseSlot(slot);
    return src.status();
  }
  // Bytes that came in the frame die with it: the copy keeps its own until done.
  std::shared_ptr<std::string> keep;
  const void* from = *src;
  if (req.src().has_data()) {
    keep = std::make_shared<std::string>(req.src().data());
    from = keep->data();
  }
  const uint64_t dst = req.dst(), size = req.size();
  Status sub = work_->Submit(req.stream(), [dev = env_.device, dst, from, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyHtoDAsync(dst, from, size, s), "cuMemcpyHtoDAsync");
  });
  if (!sub.ok()) {
    staging_.ReleaseSlot(slot);
    return sub;
  }
  if (keep || slot)
    work_->WhenDone(req.stream(), [self = shared_from_this(), keep, slot](const Status&) {
      self->staging_.ReleaseSlot(slot);
    });
  return OkStatus();
}

Status Session::OnMemcpyDtoH(const v1::MemcpyDtoHRequest& req, v1::MemcpyDtoHReply& rep) {
  const std::optional<CUstream> direct = DirectStream(req.stream(), req.size());
  // Bytes that go back in the reply: in `rep` when copied here, else in a
  // reply the completion keeps alive.
  std::shared_ptr<v1::MemcpyDtoHReply> out;
  std::byte* dst = nullptr;
  if (req.to_arena()) {
    ASSIGN_OR_RETURN(dst, staging_.Range(req.dst_arena_offset(), req.size()));
  } else {
    if (req.size() + kInlineOverhead > channel_->max_body())
      return Error(err::kInvalidValue, "an inline copy of " + std::to_string(req.size()) +
                                           " bytes exceeds one frame; chunk it");
    v1::MemcpyDtoHReply* r = direct ? &rep : (out = std::make_shared<v1::MemcpyDtoHReply>()).get();
    r->mutable_data()->resize(req.size());
    dst = reinterpret_cast<std::byte*>(r->mutable_data()->data());
  }
  const uint64_t src = req.src(), size = req.size();
  if (direct) {
    RETURN_IF_ERROR(
        dev().Check(dev().drv().cuMemcpyDtoHAsync(dst, src, size, *direct), "cuMemcpyDtoH"));
    return dev().Check(dev().drv().cuStreamSynchronize(*direct), "cuStreamSynchronize");
  }
  RETURN_IF_ERROR(work_->Submit(req.stream(), [dev = env_.device, dst, src, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyDtoHAsync(dst, src, size, s), "cuMemcpyDtoH");
  }));
  return ReplyWhenDone(req.stream(), std::move(out));
}

Status Session::OnMemcpyDtoHAsync(const v1::MemcpyDtoHRequest& req, v1::Empty&) {
  if (!req.to_arena())
    return Error(err::kInvalidValue, "an asynchronous device-to-host copy needs arena memory");
  ASSIGN_OR_RETURN(std::byte * dst, staging_.Range(req.dst_arena_offset(), req.size()));
  const uint64_t src = req.src(), size = req.size();
  return work_->Submit(req.stream(), [dev = env_.device, dst, src, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyDtoHAsync(dst, src, size, s), "cuMemcpyDtoHAsync");
  });
}

Status Session::OnMirrorFetch(const v1::MirrorFetchRequest& req, v1::MirrorFetchReply&) {
  auto ranges = std::make_shared<std::vector<v1::MirrorFetchRequest::Range>>(req.ranges().begin(),
                                                                             req.ranges().end());
  uint64_t total = 0;
  const uint64_t budget = mirror::FetchBudget(channel_->max_body());
  for (const v1::MirrorFetchRequest::Range& r : *ranges) {
    RETURN_IF_ERROR(CheckDeviceRange(r.addr(), r.size(), "mirrored memory"));
    if (static_cast<uint64_t>(r.agreed_size()) != mirror::Pieces(r.size()))
      return Error(err::kInvalidValue, "a mirrored range of " + std::to_string(r.size()) +
                                           " bytes came with " + std::to_string(r.agreed_size()) +
                                           " piece hashes");
    if (r.size() > budget || total > budget - r.size())
      return Error(err::kInvalidValue, "mirrored ranges past " + std::to_string(budget) +
                                           " bytes exceed one reply; split them");
    total += r.size();
  }
  auto bytes = std::make_shared<std::string>(total, '\0');
  RETURN_IF_ERROR(work_->Submit(req.stream(), [dev = env_.device, bytes, ranges](CUstream s) {
    size_t off = 0;
    for (const v1::MirrorFetchRequest::Range& r : *ranges) {
      RETURN_IF_ERROR(
          dev->Check(dev->drv().cuMemcpyDtoHAsync(bytes->data() + off, r.addr(), r.size(), s),
                     "cuMemcpyDtoH"));
      off += r.size();
    }
    return OkStatus();
  }));
  // Once read, the pieces whose hash moved go into the reply; then it is sent.
  auto out = std::make_shared<v1::MirrorFetchReply>();
  work_->WhenDone(
      req.stream(),
      [bytes, ranges, out, reply = Later(out)](const Status& st) {
        if (st.ok()) {
          const auto* data = reinterpret_cast<const std::byte*>(bytes->data());
          for (const v1::MirrorFetchRequest::Range& r : *ranges) {
            mirror::ForChangedPieces(
                data, r.size(), [&](size_t i) { return r.agreed(static_cast<int>(i)); },
                [&](size_t off, size_t n) {
                  v1::MirrorFetchReply::Piece* p = out->add_pieces();
                  p->set_addr(r.addr() + off);
                  p->set_data(data + off, n);
                });
            data += r.size();
          }
        }
        reply(st);
      },
      Executor::Wait::kSpin);
  return ReplyLater();
}

// MemcpyDtoD(Async) and Memset(Async): the default handler (submitted.def).

}  // namespace remora::server
