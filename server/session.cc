// server/session.cc - a tenant's session: serving, replies, faults, validation, teardown.
// The handshake and admission are in handlers/hello.cc; the other handlers in server/handlers/,
// one file per API area.
#include "server/session.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "fatbin/fatbin.h"
#include "proto/arena.h"
#include "proto/fixed.h"
#include "proto/reply.h"
#include "scheduler/stream_order.h"
#include "server/handlers/util.h"
#include "server/log.h"
#include "transport/fragment.h"

namespace remora::server {

using transport::Deadline;
using transport::Frame;
using transport::FrameHeader;

namespace {

// How long a pool thread keeps looking for a tenant's next frame before it
// arms the channel and moves on.
constexpr auto kServeSpin = std::chrono::microseconds(50);

void LogPeerGone(uint64_t session, const std::string& tenant, const Status& why) {
  Log(Level::kInfo, "session",
      {{"event", "peer_gone"}, {"session", session}, {"tenant", tenant}, {"why", why.message()}});
}

}  // namespace

Session::Session(uint64_t id, std::unique_ptr<transport::Channel> channel, transport::PeerInfo peer,
                 SessionEnv env)
    : id_(id),
      channel_(std::make_unique<transport::FragmentingChannel>(std::move(channel))),
      peer_(std::move(peer)),
      env_(env),
      created_(std::chrono::steady_clock::now()) {
  who_.tenant = "session-" + std::to_string(id);
  who_.ledger_id = id;
  // Replies go out from serving threads and the executor's, which every tenant needs: one
  // that stops reading (its ring full) is closed rather than waited for. A remote tenant's
  // queue fills when its link is slow too: it gets longer to move.
  channel_->SetSendTimeout(channel_->arena() ? kReplyTimeout : kRemoteReplyTimeout);
  vmm_.undo = [this](const VmmTable::Everything& e) { UndoVmm(e); };
}

Session::~Session() = default;

void Session::Stop() {
  closing_ = true;
  channel_->Close();
}

bool Session::Evict(const std::string& why, int32_t code) {
  if (evicted_.exchange(true)) return false;
  Log(Level::kWarn, "session",
      {{"event", "evicted"}, {"session", id_}, {"tenant", who_.tenant}, {"why", why}});
  v1::Evicted e;
  e.set_code(code);
  e.set_message(why);
  e.set_device_output(output_.Take());
  (void)Send({.call = static_cast<uint32_t>(CallId::kEvicted), .flags = 0, .seq = 0}, e);
  Stop();
  return true;
}

Status Session::Reclaim(const std::vector<sched::TenantId>& victims, const std::string& what,
                        EvictKind kind) {
  for (sched::TenantId v : victims)
    if (env_.evict)
      env_.evict(v,
                 "this session's memory was reclaimed for " + who_.tenant + ", which " + what +
                     (kind == EvictKind::kPreemption
                          ? "; a tenant of a higher priority class comes first: restart when "
                            "the GPU has room, or with a higher priority (REMORA_PRIORITY)"
                          : "; memory above a tenant's request is a loan: restart with a request "
                            "of its own (REMORA_GPU_MEMORY or REMORA_GPU_FRACTION) to keep it"),
                 kind);
  if (kind != EvictKind::kReclaim) return OkStatus();
  // The victims' sessions end on serving threads of their own: their memory
  // is back once their work is done, usually within milliseconds.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (sched::TenantId v : victims) {
    while (env_.ledger->Reclaimed(v)) {
      if (std::chrono::steady_clock::now() > until)
        return Error(err::kMemoryAllocation, "memory reclaimed from session " + std::to_string(v) +
                                                 " did not come back within 5 s");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  return OkStatus();
}

void Session::Run() {
  Frame f;
  Status st = channel_->Receive(f, Deadline::In(kHandshakeTimeout));
  if (st.ok()) st = Greet(f);
  while (st.ok() && !closing_) {
    st = channel_->Receive(f, Deadline::Never());
    if (!st.ok()) {
      LogPeerGone(id_, who_.tenant, st);
      break;
    }
    {
      Device::Use use = EnterDevice();
      Dispatch(f);
    }
    ReportFault();
  }
  End();
}

bool Session::HandshakeOverdue(std::chrono::steady_clock::time_point now) const {
  return !greeted_.load(std::memory_order_acquire) && now - created_ > kHandshakeTimeout;
}

bool Session::ServeReady() {
  using Clock = std::chrono::steady_clock;
  channel_->Disarm();
  Frame& f = frame_;
  Clock::time_point spin_until{};
  uint32_t spins = 0;
  for (;;) {
    Status st = channel_->Receive(f, Deadline::Passed());
    if (st.ok()) {
      if (!greeted_.load(std::memory_order_relaxed)) {
        const bool ok = Greet(f).ok();
        greeted_.store(true, std::memory_order_release);
        if (!ok) break;
      } else {
        Device::Use use = EnterDevice();
        Dispatch(f);
      }
      ReportFault();
      if (closing_) break;
      // A local tenant's next call usually follows its reply at once: look
      // for it a little before going to sleep. A remote one's takes a network
      // round trip, and spinning would take the CPU gRPC's threads need.
      if (channel_->arena()) spin_until = Clock::now() + kServeSpin;
      continue;
    }
    if (st.code() != err::kNotReady) {
      LogPeerGone(id_, who_.tenant, st);
      break;
    }
    // Read the clock now and then only: on a VM it costs more than a look at the ring.
    if (spin_until != Clock::time_point{} && ((++spins & 31) != 0 || Clock::now() < spin_until)) {
      CpuRelax();
      continue;
    }
    if (channel_->Arm()) return true;
  }
  End();
  return false;
}

void Session::End() {
  {
    Device::Use use = EnterDevice();
    (void)Teardown();
  }
  // A fault nobody saw before this tenant left (it never synchronised), seen
  // by a teardown that completed at once; the executor reports later ones.
  const Status torn = failures_.torn();
  if (!fault_reported_ && IsDeviceFault(torn.code()) && env_.on_fault)
    env_.on_fault(epoch_, who_.tenant, torn);
}

// ---- Device faults -------------------------------------------------------------

Device::Use Session::EnterDevice() {
  Device::Use use = env_.device->Enter();
  if (use.epoch() != epoch_) {
    if (admitted_) LoseState();
    epoch_ = use.epoch();
  }
  return use;
}

void Session::LoseState() {
  const Device::Fault f = env_.device->last_fault();
  const size_t n_alloc = allocations_.size();
  const uint64_t held = allocated_bytes_;
  const Status lost(f.status.code(),
                    "the GPU context was rebuilt after a device fault caused by " + f.culprit +
                        " (" + f.status.message() +
                        "); this session's device memory, streams and modules are gone: restart "
                        "the program");
  if (work_) work_->Reset(lost);
  tables_.ForgetAll();
  output_.UnmapAll();
  env_.ledger->Release(who_.ledger_id, allocated_bytes_);
  allocated_bytes_ = 0;
  if (pins_) (void)pins_->Take();  // the rebuilt context holds none of them
  failures_.Lose(lost);
  fault_reported_ = true;
  Log(Level::kWarn, "session",
      {{"event", "lost"},
       {"session", id_},
       {"tenant", who_.tenant},
       {"culprit", f.culprit},
       {"freed_bytes", held},
       {"freed_allocations", n_alloc}});
}

void Session::ReportFault() {
  if (fault_reported_) return;
  Status st = failures_.sticky();
  if (st.ok() || !IsDeviceFault(st.code())) return;
  fault_reported_ = true;
  if (env_.on_fault) env_.on_fault(epoch_, who_.tenant, st);
}

// ---- Serving -------------------------------------------------------------------

void Session::Finish(const FrameHeader& h, CallClass cls, Status st,
                     const google::protobuf::Message& result) {
  if (st.code() == kReplyLater) return;
  const bool replies = cls == CallClass::kSync || cls == CallClass::kSetup;
  std::string why;  // what the tenant reads: "Name: reason"
  if (!st.ok()) [[unlikely]] {
    const CallInfo* info = FindCall(h.call);
    const char* name = info ? info->name.data() : "unknown";
    st = NameCulprit(std::move(st));
    if (st.code() != err::kNotReady) errors_.fetch_add(1, std::memory_order_relaxed);
    if (st.code() != err::kNotReady)
      Log(Level::kInfo, "call",
          {{"tenant", who_.tenant}, {"call", name}, {"code", st.code()}, {"error", st.ToString()}});
    if (replies) why = std::string(name) + ": " + st.message();
  }
  if (!replies) {
    failures_.Record(st);
    return;
  }
  Status deferred = failures_.TakeForReply(st);
  if (!deferred.ok()) [[unlikely]]
    deferred = NameCulprit(std::move(deferred));  // a launch or copy that met the fault
  std::lock_guard lock(send_mu_);
  const std::string output = output_.Take();
  const ReplyParts parts{.code = st.code(),
                         .message = why,
                         .deferred_code = deferred.code(),
                         .deferred_message = deferred.message(),
                         .output = output,
                         .result = st.ok() ? &result : nullptr};
  if (!EncodeReply(h.flags & fixed::kFixedLayout, parts, reply_, send_buf_)) return;
  NoteSent(channel_->Send({.call = h.call, .flags = h.flags & fixed::kFixedLayout, .seq = h.seq},
                          std::as_bytes(std::span(send_buf_.data(), send_buf_.size()))));
}

void Session::NoteSent(const Status& st) {
  if (st.ok() || send_failed_.exchange(true)) return;
  Log(Level::kWarn, "session",
      {{"event", "reply_undelivered"},
       {"session", id_},
       {"tenant", who_.tenant},
       {"why", st.message()}});
}

Status Session::NameCulprit(Status st) const {
  constexpr std::string_view kNamed = "device fault caused by ";
  // The context was rebuilt while this call ran: whatever the driver said
  // about handles of the old one (an invalid handle, say), the fault is why.
  if (admitted_ && env_.device->epoch() != epoch_.load(std::memory_order_acquire)) {
    const Device::Fault f = env_.device->last_fault();
    if (!f.status.ok())
      return Error(f.status.code(), "the GPU context was rebuilt during this call after a " +
                                        std::string(kNamed) + f.culprit + " (" +
                                        f.status.message() + "); restart the program");
  }
  if (!IsDeviceFault(st.code()) || st.message().find(kNamed) != std::string::npos) return st;
  // Who broke the context: the driver may still say (the emulator does), or
  // the recovery that followed recorded it.
  std::string who = env_.fault_culprit ? env_.fault_culprit() : "";
  if (who.empty()) {
    const Device::Fault f = env_.device->last_fault();
    if (f.status.code() == st.code()) who = f.culprit;
  }
  if (who.empty()) return st;
  return Error(st.code(), st.message() + " (" + std::string(kNamed) +
                              (who == who_.tenant ? "this tenant's own work" : who) +
                              "; the GPU context is rebuilt, other tenants' work cannot go on)");
}

// Both replies carry the result last, serialized once straight into the frame.
Status Session::Send(const FrameHeader& h, const google::protobuf::Message& m) {
  std::lock_guard lock(send_mu_);
  if (!m.SerializeToString(&send_buf_)) return Error(err::kUnknown, "cannot serialize a reply");
  Status st = channel_->Send(h, std::as_bytes(std::span(send_buf_.data(), send_buf_.size())));
  NoteSent(st);
  return st;
}

Executor::Completion Session::Later(std::shared_ptr<const google::protobuf::Message> result) {
  return [self = shared_from_this(), h = current_, result = std::move(result)](const Status& st) {
    static const v1::Empty kEmpty;
    self->Finish(h, CallClass::kSync, st, result ? *result : kEmpty);
  };
}

Status Session::ReplyWhenDone(std::optional<uint64_t> stream,
                              std::shared_ptr<const google::protobuf::Message> result,
                              Executor::Wait how) {
  work_->WhenDone(stream, Later(std::move(result)), how);
  return ReplyLater();
}

std::optional<CUstream> Session::DirectStream(uint64_t stream, uint64_t bytes) {
  constexpr uint64_t kShortCopyBytes = 256 << 10;
  if (bytes > kShortCopyBytes || !work_->AllIssued()) return std::nullopt;
  Result<CUstream> s = streams_.Get(stream);
  if (!s.ok()) return std::nullopt;
  auto idle = [&](CUstream c) { return dev().drv().cuStreamQuery(c) == CUDA_SUCCESS; };
  if (!idle(*s)) return std::nullopt;
  // CUDA's legacy rule, taking every stream as blocking (the session does not keep the flag):
  // stricter for a non-blocking stream, never more lenient.
  for (const auto& [id, other] : streams_)
    if (sched::LegacyTied(stream, true, id, true) && !idle(other)) return std::nullopt;
  return *s;
}

// ---- Validation ----------------------------------------------------------------

Status Session::CheckDeviceRange(uint64_t ptr, uint64_t size, const char* what) const {
  if (size == 0) return OkStatus();
  if (allocations_.Covers(ptr, size) || symbols_.Covers(ptr, size) ||
      vmm_.accessible().Covers(ptr, size))
    return OkStatus();
  // The tenant's pinned and managed host memory, which kernels reach at its address.
  if (arena_device_address_ != 0 && ptr >= arena_device_address_ && pins_ &&
      pins_->Covers(ptr - arena_device_address_, size))
    return OkStatus();
  if (ipc_opened_.load(std::memory_order_relaxed) && env_.ipc->Covers(id_, ptr, size))
    return OkStatus();
  return OutsideAllocations(what, ptr, size);
}

// ---- Teardown ------------------------------------------------------------------

Result<IpcRegistry*> Session::Ipc() const {
  if (!env_.ipc) return Error(err::kNotSupported, "this server serves no IPC");
  return env_.ipc;
}

void Session::ForgetIpc() {
  for (auto& [id, ref] : ipc_events_) {
    if (!ref.imported) ref.state->Gone();               // nobody waits for its records any more
    for (uint64_t n : ref.records) ref.state->Done(n);  // nor for this process's
  }
  ipc_events_.clear();
  if (!env_.ipc) return;
  env_.ipc->RevokeAll(id_);
  env_.ipc->CloseAll(id_);
}

Held Session::TakeAll() {
  Held held;
  held.epoch = epoch_;
  tables_.SurrenderAll(held);
  held.charged = allocated_bytes_;
  allocated_bytes_ = 0;
  {
    std::lock_guard lock(heap_mu_);
    heap_charged_ = 0;
  }
  // What its kernels malloc'd and never freed goes with its heap (a GPU's heap is the
  // context's: there it stays until the context is rebuilt).
  if (const DriverTable& drv = dev().drv(); drv.remoraEmuHeapRelease != nullptr)
    held.destroy.push_back([&drv, id = id_] { (void)drv.remoraEmuHeapRelease(id); });
  return held;
}

void Session::RetireStream(uint64_t id) {
  work_->RemoveStream(id, [weak = weak_from_this(), dev = env_.device](CUstream s) {
    if (auto self = weak.lock()) self->output_.Unmap(s);
    dev->ReleaseStream(s);
  });
}

void Session::GiveBack(Held& held) {
  if (env_.device->epoch() == held.epoch) {
    for (CUevent e : held.events) (void)dev().drv().cuEventDestroy(e);
    for (const std::function<void()>& destroy : held.destroy) destroy();
    // Unloading a module waits for the whole device: not while anyone's kernel runs.
    std::vector<std::function<void()>> later = std::move(held.destroy_when_idle);
    for (CUmodule m : held.modules)
      later.push_back([d = env_.device, m] {
        (void)d->Timed("cuModuleUnload", [&] { return d->drv().cuModuleUnload(m); });
      });
    env_.device->WhenIdle(std::move(later), held.epoch);
    for (auto& [p, charged] : held.allocations) (void)env_.executor->Free(p);
  }
  if (admitted_) env_.ledger->Release(who_.ledger_id, held.charged);
  held = Held{};
}

Status Session::GiveBackWhenDone(Held held, bool reply,
                                 std::shared_ptr<const google::protobuf::Message> result) {
  Executor::Completion then = reply ? Later(std::move(result)) : nullptr;
  work_->WhenDone(
      std::nullopt,
      [self = shared_from_this(), held = std::move(held),
       then = std::move(then)](const Status& st) mutable {
        self->GiveBack(held);
        if (then) then(st);
      },
      reply ? Executor::Wait::kSpin : Executor::Wait::kAsync);
  return reply ? ReplyLater() : OkStatus();
}

Status Session::Teardown() {
  closing_ = true;
  channel_->Close();
  if (!work_) {
    // Never admitted: only the default stream, if any, to give back.
    for (auto& [id, s] : streams_) env_.device->ReleaseStream(s);
    streams_.clear();
    finished_.store(true, std::memory_order_release);
    return OkStatus();
  }
  // Queued work is dropped (host functions never run: the tenant is gone); what was
  // issued is stopped where the driver can (the emulated GPU), and otherwise runs to its
  // end, before anything it may use goes back.
  work_->Abandon(Error(err::kDevicesUnavailable, "the session ended"));
  work_->CancelIssued();
  wait_stop_->Raise();
  const size_t n_alloc = allocations_.size(), n_streams = streams_.size(),
               n_events = events_.size();
  Held held = TakeAll();
  const uint64_t bytes = held.charged;
  CUstream zero = nullptr;
  if (Result<CUstream*> z = streams_.Find(0); z.ok()) zero = **z;
  streams_.clear();
  std::vector<void*> pinned = pins_ ? pins_->Take() : std::vector<void*>{};
  work_->WhenDone(std::nullopt, [self = shared_from_this(), held = std::move(held), zero,
                                 pinned = std::move(pinned), bytes, n_alloc, n_streams,
                                 n_events](const Status& st) mutable {
    self->GiveBack(held);
    self->wait_stop_->Release(self->dev());
    if (self->env_.device->epoch() == self->epoch_)
      for (void* p : pinned)
        (void)self->dev().Timed("cuMemHostUnregister",
                                [&] { return self->dev().drv().cuMemHostUnregister(p); });
    if (zero) {
      self->output_.Unmap(zero);
      self->env_.device->ReleaseStream(zero);
    }
    if (!self->who_.configured.empty())
      self->env_.leave_tenant(self->who_.configured, self->id_);  // the last removes the account
    else if (self->admitted_)
      self->env_.ledger->Remove(self->id_);
    self->failures_.set_torn(st);
    Log(Level::kInfo, "session",
        {{"event", "closed"},
         {"session", self->id_},
         {"tenant", self->who_.tenant},
         {"freed_bytes", bytes},
         {"freed_allocations", n_alloc},
         {"streams", n_streams},
         {"events", n_events}});
    self->finished_.store(true, std::memory_order_release);
  });
  return OkStatus();
}

}  // namespace remora::server
