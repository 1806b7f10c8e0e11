// server/handlers/stream.cc - streams, host functions, events, device-wide calls.
#include "server/session.h"

#include <cstring>

#include "fatbin/fatbin.h"
#include "proto/arena.h"
#include "server/handlers/util.h"
#include "server/log.h"

namespace remora::server {

// ---- Streams -------------------------------------------------------------------

Status Session::OnStreamCreate(const v1::StreamCreateRequest& req, v1::HandleReply& rep) {
  constexpr uint32_t kNonBlocking = 1;  // cudaStreamNonBlocking
  if (req.flags() & ~kNonBlocking)
    return Error(err::kInvalidValue, "unknown stream flags " + Hex(req.flags()));
  // The tenant's class, not the priority it asked for, ranks the stream on the GPU
  // (cudaStreamGetPriority still answers what it asked for).
  sched::Priority cls;
  {
    std::lock_guard lock(grant_mu_);
    cls = share_.priority;
  }
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream(cls));
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
  return work_->WaitEvent(req.stream(), e);
}

Status Session::OnLaunchHostFunc(const v1::HostFuncRequest& req, v1::Empty&) {
  return work_->HostFunc(req.stream(), req.id());
}

Status Session::OnHostFuncDone(const v1::HostFuncDone& req, v1::Empty&) {
  if (work_) work_->HostFuncDone(req.id());
  return OkStatus();
}

// ---- Events --------------------------------------------------------------------

Status Session::OnEventCreate(const v1::EventCreateRequest& req, v1::HandleReply& rep) {
  constexpr uint32_t kKnown = 0x1 | 0x2;  // cudaEventBlockingSync | cudaEventDisableTiming
  if (req.flags() & 0x4)
    return Error(err::kNotSupported, "interprocess events are not supported through Remora");
  if (req.flags() & ~kKnown)
    return Error(err::kInvalidValue, "unknown event flags " + Hex(req.flags()));
  CUevent e = nullptr;
  RETURN_IF_ERROR(dev().Check(dev().drv().cuEventCreate(&e, req.flags()), "cuEventCreate"));
  uint64_t id = next_handle_++;
  events_.Put(id, e);
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnEventRecord(const v1::EventRecordRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  return work_->Record(req.stream(), e);
}

Status Session::OnEventSynchronize(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  work_->WhenEventDone(e, Later());
  return ReplyLater();
}

Status Session::OnEventQuery(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, events_.Get(req.event()));
  if (work_->AllIssued()) return dev().Check(dev().drv().cuEventQuery(e), "cuEventQuery");
  return work_->QueryEvent(e);
}

Status Session::OnEventElapsedTime(const v1::EventElapsedRequest& req, v1::EventElapsedReply& rep) {
  ASSIGN_OR_RETURN(CUevent a, events_.Get(req.start()));
  ASSIGN_OR_RETURN(CUevent b, events_.Get(req.end()));
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
  // Queued work may still name it: it goes once this tenant's work is done.
  Held held;
  held.epoch = epoch_;
  held.events.push_back(e);
  return GiveBackWhenDone(std::move(held), /*reply=*/false);
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
