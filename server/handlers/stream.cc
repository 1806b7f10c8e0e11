// server/handlers/stream.cc - streams, host functions, events, device-wide calls.
#include "server/session.h"

#include <cstring>

#include "fatbin/fatbin.h"
#include "proto/arena.h"
#include "server/handlers/util.h"
#include "server/log.h"
#include "server/memops.h"

namespace remora::server {

// ---- Streams -------------------------------------------------------------------

Status Session::OnStreamCreate(const v1::StreamCreateRequest& req, v1::HandleReply& rep) {
  constexpr uint32_t kNonBlocking = 1;  // cudaStreamNonBlocking
  if (req.flags() & ~kNonBlocking)
    return Error(err::kInvalidValue, "unknown stream flags " + Hex(req.flags()));
  // The tenant's class ranks the stream on the GPU first, the priority it asked for within
  // its class's band (cudaStreamGetPriority answers what it asked for).
  sched::Priority cls;
  {
    std::lock_guard lock(grant_mu_);
    cls = share_.priority;
  }
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream(cls, req.priority()));
  uint64_t id = next_handle_++;
  streams_.Put(id, s);
  work_->AddStream(id, s, !(req.flags() & kNonBlocking));
  { output_.Map(s); }
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnStreamDestroy(const v1::StreamRequest& req, v1::Empty&) {
  if (req.stream() == 0)
    return Error(err::kInvalidResourceHandle, "the default stream cannot be destroyed");
  streams_.Erase(req.stream());
  RetireStream(req.stream());  // returns at once, as CUDA does; the work completes first
  return OkStatus();
}

Status Session::OnStreamSynchronize(const v1::StreamRequest& req, v1::Empty&) {
  // The legacy stream waits for every blocking stream.
  return ReplyWhenDone(req.stream() == 0 ? std::nullopt : std::optional<uint64_t>(req.stream()));
}

Status Session::OnStreamQuery(const v1::StreamRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUstream s, streams_.Get(req.stream()));
  if (work_->AllIssued()) return dev().Check(dev().drv().cuStreamQuery(s), "cuStreamQuery");
  return work_->Query(req.stream());
}

Status Session::OnStreamWaitEvent(const v1::StreamWaitEventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  if (IpcEvent* other = IpcStateOf(req.event())) {
    // The latest record any process made so far: the stream's later work waits for it to
    // complete, without this tenant ever naming another's CUevent.
    RETURN_IF_ERROR(streams_.Check(req.stream()));
    const uint64_t n = other->latest();
    if (!other->Pending(n)) return OkStatus();
    ASSIGN_OR_RETURN(std::function<void()> open, work_->Gate(req.stream()));
    other->WhenDone(n, std::move(open));
    return OkStatus();
  }
  return work_->WaitEvent(req.stream(), e);
}

Status Session::OnLaunchHostFunc(const v1::HostFuncRequest& req, v1::Empty&) {
  return work_->HostFunc(req.stream(), req.id());
}

// A write of a 4- or 8-byte value, or a wait for one to meet a condition, in the tenant's device
// memory, aligned to its width. A wait holds the stream on the device, not in the executor, and
// ends the GPU-time segment before it: the stream stands idle meanwhile.
Status Session::OnStreamMemOp(const v1::StreamMemOpRequest& req, v1::Empty&) {
  using Op = v1::StreamMemOpRequest;
  if (!Op::Op_IsValid(req.op()))
    return Error(err::kInvalidValue,
                 "stream memory operation " + std::to_string(req.op()) + " is not one");
  const bool wide = req.op() == Op::WRITE64 || req.op() == Op::WAIT64;
  const bool wait = req.op() == Op::WAIT32 || req.op() == Op::WAIT64;
  const uint64_t bytes = wide ? 8 : 4;
  constexpr uint32_t kWriteFlags = CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER;
  constexpr uint32_t kWaitFlags = 0x3 | CU_STREAM_WAIT_VALUE_FLUSH;
  if ((req.flags() & ~(wait ? kWaitFlags : kWriteFlags)) != 0)
    return Error(err::kInvalidValue, "stream memory operation flags " +
                                         std::to_string(req.flags()) + " are not the driver's");
  if (req.addr() % bytes != 0)
    return Error(err::kInvalidValue, "a stream memory operation's address is not aligned to " +
                                         std::to_string(bytes) + " bytes");
  if (!wide && req.value() > UINT32_MAX)
    return Error(err::kInvalidValue, "a 32-bit stream memory operation's value is wider");
  RETURN_IF_ERROR(CheckDeviceRange(req.addr(), bytes, wait ? "waited-on value" : "written value"));
  Device* dev = env_.device;
  const CUdeviceptr addr = req.addr();
  const uint64_t value = req.value();
  const unsigned flags = req.flags();
  const MemOp op = req.op() == Op::WRITE32   ? MemOp::kWrite32
                   : req.op() == Op::WRITE64 ? MemOp::kWrite64
                   : req.op() == Op::WAIT32  ? MemOp::kWait32
                                             : MemOp::kWait64;
  return work_->Submit(
      req.stream(),
      [dev, addr, value, flags, op, stop = wait_stop_](CUstream s) {
        return IssueMemOp(*dev, s, op, addr, value, flags, stop.get());
      },
      /*idles=*/wait);
}

Status Session::OnHostFuncDone(const v1::HostFuncDone& req, v1::Empty&) {
  if (work_) work_->HostFuncDone(req.id());
  return OkStatus();
}

// ---- Events --------------------------------------------------------------------

Status Session::OnEventCreate(const v1::EventCreateRequest& req, v1::HandleReply& rep) {
  // cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess
  constexpr uint32_t kKnown = 0x1 | 0x2 | 0x4, kInterprocess = 0x4;
  if (req.flags() & ~kKnown)
    return Error(err::kInvalidValue, "unknown event flags " + Hex(req.flags()));
  const bool interprocess = req.flags() & kInterprocess;
  if (interprocess && !(req.flags() & 0x2))
    return Error(err::kInvalidValue, "an interprocess event must disable timing");
  CUevent e = nullptr;
  // Every process shares the server's context: the driver's event need not be interprocess.
  RETURN_IF_ERROR(
      dev().Check(dev().drv().cuEventCreate(&e, req.flags() & ~kInterprocess), "cuEventCreate"));
  uint64_t id = next_handle_++;
  events_.Put(id, e);
  if (interprocess)
    ipc_events_[id] = {.state = std::make_shared<IpcEvent>(), .imported = false, .records = {}};
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnEventRecord(const v1::EventRecordRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  IpcEventRef* ipc = IpcEventOf(req.event());
  RETURN_IF_ERROR(work_->Record(req.stream(), e));
  if (ipc) {  // every process's waits follow this record, whichever process made it
    const uint64_t n = ipc->state->Recorded();
    std::erase_if(ipc->records, [&](uint64_t m) { return !ipc->state->Pending(m); });
    ipc->records.push_back(n);
    work_->WhenEventDone(e, [state = ipc->state, n](const Status&) { state->Done(n); });
  }
  return OkStatus();
}

Status Session::OnEventSynchronize(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  if (IpcEvent* ipc = IpcStateOf(req.event())) {
    ipc->WhenDone(ipc->latest(), [done = Later()] { done(OkStatus()); });
    return ReplyLater();
  }
  work_->WhenEventDone(e, Later());
  return ReplyLater();
}

Status Session::OnEventQuery(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  if (IpcEvent* ipc = IpcStateOf(req.event()))
    return ipc->Pending(ipc->latest())
               ? Error(err::kNotReady, "the event's latest record is pending")
               : OkStatus();
  if (work_->AllIssued()) return dev().Check(dev().drv().cuEventQuery(e), "cuEventQuery");
  return work_->QueryEvent(e);
}

Status Session::OnEventElapsedTime(const v1::EventElapsedRequest& req, v1::EventElapsedReply& rep) {
  ASSIGN_OR_RETURN(CUevent a, events_.Get(req.start()));
  ASSIGN_OR_RETURN(CUevent b, events_.Get(req.end()));
  if (IpcStateOf(req.start()) || IpcStateOf(req.end()))  // created without timing
    return Error(err::kInvalidResourceHandle, "an interprocess event has no timing");
  RETURN_IF_ERROR(work_->QueryEvent(a));
  RETURN_IF_ERROR(work_->QueryEvent(b));
  float ms = 0;
  RETURN_IF_ERROR(dev().Check(dev().drv().cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime"));
  rep.set_ms(ms);
  return OkStatus();
}

Status Session::OnEventDestroy(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  events_.Erase(req.event());
  if (const IpcEventRef* ipc = IpcEventOf(req.event())) {
    // Its handles name nothing from now on; records still pending complete for those waiting.
    if (!ipc->imported && env_.ipc) env_.ipc->RevokeEvent(id_, req.event());
    ipc_events_.erase(req.event());
  }
  // Queued work may still name it: it goes once this tenant's work is done.
  Held held;
  held.epoch = epoch_;
  held.events.push_back(e);
  return GiveBackWhenDone(std::move(held), /*reply=*/false);
}

// ---- IPC events ----------------------------------------------------------------

Status Session::OnEventRecordIpc(const v1::EventRecordRequest& req, v1::Empty& rep) {
  return OnEventRecord(req, rep);
}

Status Session::OnIpcGetEventHandle(const v1::EventRequest& req, v1::IpcHandle& rep) {
  ASSIGN_OR_RETURN(IpcRegistry * registry, Ipc());
  const IpcEventRef* ipc = IpcEventOf(req.event());
  if (!ipc || ipc->imported)
    return Error(err::kInvalidResourceHandle,
                 "the event was not created with cudaEventInterprocess by this process");
  rep.set_handle(registry->ExportEvent(id_, who_.owner, req.event(), ipc->state));
  return OkStatus();
}

Status Session::OnIpcOpenEventHandle(const v1::IpcHandle& req, v1::HandleReply& rep) {
  ASSIGN_OR_RETURN(IpcRegistry * registry, Ipc());
  ASSIGN_OR_RETURN(std::shared_ptr<IpcEvent> state,
                   registry->OpenEvent(req.handle(), id_, who_.owner));
  // An event of its own to record (the others' waits follow its records through `state`).
  CUevent e = nullptr;
  RETURN_IF_ERROR(
      dev().Check(dev().drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
  const uint64_t id = next_handle_++;
  events_.Put(id, e);
  ipc_events_[id] = {.state = std::move(state), .imported = true, .records = {}};
  rep.set_handle(id);
  return OkStatus();
}

// ---- Device-wide ---------------------------------------------------------------

Status Session::OnDeviceSynchronize(const v1::Empty&, v1::Empty&) {
  return ReplyWhenDone(std::nullopt);
}

Status Session::OnDeviceReset(const v1::Empty&, v1::Empty&) {
  Held held = TakeAll();
  failures_.Clear();
  return GiveBackWhenDone(std::move(held), /*reply=*/true);
}

Status Session::OnGoodbye(const v1::Empty&, v1::Empty&) {
  closing_ = true;
  return OkStatus();
}

}  // namespace remora::server
