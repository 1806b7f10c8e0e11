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

}  // namespace

Session::Session(uint64_t id, std::unique_ptr<transport::Channel> channel, transport::PeerInfo peer,
                 SessionEnv env)
    : id_(id),
      channel_(std::make_unique<transport::FragmentingChannel>(std::move(channel))),
      peer_(std::move(peer)),
      env_(env),
      created_(std::chrono::steady_clock::now()) {
  tenant_ = "session-" + std::to_string(id);
}

Session::~Session() = default;

void Session::Stop() {
  closing_ = true;
  channel_->Close();
}

bool Session::Evict(const std::string& why, int32_t code) {
  if (evicted_.exchange(true)) return false;
  Log(Level::kWarn, "session",
      {{"event", "evicted"}, {"session", id_}, {"tenant", tenant_}, {"why", why}});
  v1::Evicted e;
  e.set_code(code);
  e.set_message(why);
  (void)Send({.call = static_cast<uint32_t>(CallId::kEvicted), .flags = 0, .seq = 0}, e);
  Stop();
  return true;
}

void Session::EvictFor(const std::vector<sched::TenantId>& victims, const std::string& what,
                       EvictKind kind) {
  for (sched::TenantId v : victims)
    if (env_.evict)
      env_.evict(v,
                 "this session's memory was reclaimed for " + tenant_ + ", which " + what +
                     (kind == EvictKind::kPreemption
                          ? "; a tenant of a higher priority class comes first: restart when "
                            "the GPU has room, or with a higher priority (REMORA_PRIORITY)"
                          : "; memory above a tenant's request is a loan: restart with a request "
                            "of its own (REMORA_GPU_MEMORY or REMORA_GPU_FRACTION) to keep it"),
                 kind);
}

Status Session::AwaitReclaim(const std::vector<sched::TenantId>& victims) {
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
  if (Handshake().ok()) Serve();
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
      Log(Level::kInfo, "session",
          {{"event", "peer_gone"}, {"session", id_}, {"tenant", tenant_}, {"why", st.message()}});
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
  Status torn;
  {
    std::lock_guard lock(err_mu_);
    torn = torn_;
  }
  if (!fault_reported_ && IsDeviceFault(torn.code()) && env_.on_fault)
    env_.on_fault(epoch_, tenant_, torn);
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
  {
    std::lock_guard lock(out_mu_);
    mapped_.clear();
  }
  env_.ledger->Release(ledger_id_, allocated_bytes_);
  allocated_bytes_ = 0;
  arena_registered_ = false;
  {
    std::lock_guard lock(err_mu_);
    deferred_ = OkStatus();
    sticky_ = lost;
    has_errors_.store(true, std::memory_order_release);
  }
  fault_reported_ = true;
  Log(Level::kWarn, "session",
      {{"event", "lost"},
       {"session", id_},
       {"tenant", tenant_},
       {"culprit", f.culprit},
       {"freed_bytes", held},
       {"freed_allocations", n_alloc}});
}

void Session::ReportFault() {
  if (fault_reported_) return;
  Status st = sticky();
  if (st.ok() || !IsDeviceFault(st.code())) return;
  fault_reported_ = true;
  if (env_.on_fault) env_.on_fault(epoch_, tenant_, st);
}

void Session::RecordError(const Status& st) {
  if (st.ok() || st.code() == err::kNotReady) return;
  std::lock_guard lock(err_mu_);
  if (deferred_.ok()) deferred_ = st;
  if (ErrorIsSticky(st.code()) && sticky_.ok()) sticky_ = st;
  has_errors_.store(true, std::memory_order_release);
}

Status Session::sticky() const {
  if (!has_errors_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard lock(err_mu_);
  return sticky_;
}

// ---- Serving -------------------------------------------------------------------

void Session::Serve() {
  Frame f;
  for (;;) {
    Status st = channel_->Receive(f, Deadline::Never());
    if (!st.ok()) {
      Log(Level::kInfo, "session",
          {{"event", "peer_gone"}, {"session", id_}, {"tenant", tenant_}, {"why", st.message()}});
      return;
    }
    {
      Device::Use use = EnterDevice();
      Dispatch(f);
    }
    ReportFault();
    if (closing_) return;
  }
}

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
          {{"tenant", tenant_}, {"call", name}, {"code", st.code()}, {"error", st.ToString()}});
    if (replies) why = std::string(name) + ": " + st.message();
  }
  if (!replies) {
    RecordError(st);
    return;
  }
  const bool sticks = !st.ok() && st.code() != err::kNotReady && ErrorIsSticky(st.code());
  Status deferred;
  if (sticks || has_errors_.load(std::memory_order_acquire)) [[unlikely]] {
    std::lock_guard lock(err_mu_);
    if (sticks && sticky_.ok()) sticky_ = st;
    deferred = std::exchange(deferred_, OkStatus());
    has_errors_.store(!sticky_.ok(), std::memory_order_release);
  }
  if (!deferred.ok()) [[unlikely]]
    deferred = NameCulprit(std::move(deferred));  // a launch or copy that met the fault
  std::lock_guard lock(send_mu_);
  std::string output;
  if (has_output_.load(std::memory_order_acquire)) [[unlikely]] {
    std::lock_guard out(out_mu_);
    output.swap(device_output_);
    has_output_.store(false, std::memory_order_relaxed);
  }
  const ReplyParts parts{.code = st.code(),
                         .message = why,
                         .deferred_code = deferred.code(),
                         .deferred_message = deferred.message(),
                         .output = output,
                         .result = st.ok() ? &result : nullptr};
  if (!EncodeReply(h.flags & fixed::kFixedLayout, parts, reply_, send_buf_)) return;
  (void)channel_->Send({.call = h.call, .flags = h.flags & fixed::kFixedLayout, .seq = h.seq},
                       std::as_bytes(std::span(send_buf_.data(), send_buf_.size())));
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
                              (who == tenant_ ? "this tenant's own work" : who) +
                              "; the GPU context is rebuilt, other tenants' work cannot go on)");
}

// Both replies carry the result last, serialized once straight into the frame.
Status Session::Send(const FrameHeader& h, const google::protobuf::Message& m) {
  std::lock_guard lock(send_mu_);
  if (!m.SerializeToString(&send_buf_)) return Error(err::kUnknown, "cannot serialize a reply");
  return channel_->Send(h, std::as_bytes(std::span(send_buf_.data(), send_buf_.size())));
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
  auto idle = [&](CUstream c) { return drv().cuStreamQuery(c) == CUDA_SUCCESS; };
  if (!idle(*s)) return std::nullopt;
  // CUDA's legacy rule, taking every stream as blocking (the session does not keep the flag):
  // stricter for a non-blocking stream, never more lenient.
  for (const auto& [id, other] : streams_)
    if (sched::LegacyTied(stream, true, id, true) && !idle(other)) return std::nullopt;
  return *s;
}

void Session::AppendDeviceOutput(std::string_view text) {
  std::lock_guard lock(out_mu_);
  device_output_.append(text);
  has_output_.store(true, std::memory_order_release);
}

bool Session::OwnsStream(CUstream s) const {
  std::lock_guard lock(out_mu_);
  return mapped_.count(s) > 0;
}

// ---- Validation ----------------------------------------------------------------

Status Session::CheckDeviceRange(uint64_t ptr, uint64_t size, const char* what) const {
  if (size == 0) return OkStatus();
  if (allocations_.Covers(ptr, size) || symbols_.Covers(ptr, size)) return OkStatus();
  return OutsideAllocations(what, ptr, size);
}

Result<std::byte*> Session::ArenaRange(uint64_t offset, uint64_t size) const {
  transport::Arena* a = channel_->arena();
  if (!a) return Error(err::kInvalidValue, "arena offsets need a shared-memory session");
  if (!a->Contains(offset, size))
    return Error(err::kInvalidValue, "host range [arena+" + Hex(offset) + ", +" +
                                         std::to_string(size) + ") lies outside the arena");
  return a->base() + offset;
}

Result<const std::byte*> Session::HostSource(const v1::HostBytes& src, uint64_t size) const {
  if (src.has_arena_offset()) {
    ASSIGN_OR_RETURN(std::byte * p, ArenaRange(src.arena_offset(), size));
    return static_cast<const std::byte*>(p);
  }
  if (src.data().size() != size)
    return Error(err::kInvalidValue, "inline copy carries " + std::to_string(src.data().size()) +
                                         " bytes, not " + std::to_string(size));
  return reinterpret_cast<const std::byte*>(src.data().data());
}

void Session::ReleaseStagingSlot(uint32_t slot_plus_one) {
  transport::Arena* a = channel_->arena();
  if (!a || slot_plus_one == 0 || slot_plus_one > arena::kStagingSlots) return;
  uint64_t off = arena::StagingFlagOffset(0, slot_plus_one - 1);
  auto* flag = reinterpret_cast<uint32_t*>(a->base() + off);
  // Pairs with the stub's acquire load before it refills the slot.
  std::atomic_ref<uint32_t>(*flag).store(0, std::memory_order_release);
}

Status Session::CheckStagingSlot(uint32_t slot_plus_one) const {
  if (slot_plus_one == 0) return OkStatus();
  if (!channel_->arena() || slot_plus_one > arena::kStagingSlots)
    return Error(err::kInvalidValue,
                 "staging slot " + std::to_string(slot_plus_one) +
                     " does not exist (this session has " +
                     std::to_string(channel_->arena() ? arena::kStagingSlots : 0) + ")");
  return OkStatus();
}

// ---- Teardown ------------------------------------------------------------------

Held Session::TakeAll() {
  Held held;
  held.epoch = epoch_;
  tables_.SurrenderAll(held);
  held.charged = allocated_bytes_;
  allocated_bytes_ = 0;
  return held;
}

void Session::RetireStream(uint64_t id) {
  work_->RemoveStream(id, [weak = weak_from_this(), dev = env_.device](CUstream s) {
    if (auto self = weak.lock()) {
      std::lock_guard lock(self->out_mu_);
      self->mapped_.erase(s);
    }
    dev->ReleaseStream(s);
  });
}

void Session::GiveBack(Held& held) {
  if (env_.device->epoch() == held.epoch) {
    for (CUevent e : held.events) (void)drv().cuEventDestroy(e);
    for (CUmodule m : held.modules) (void)drv().cuModuleUnload(m);
    for (const std::function<void()>& destroy : held.destroy) destroy();
    for (auto& [p, charged] : held.allocations) (void)env_.executor->Free(p);
  }
  if (admitted_) env_.ledger->Release(ledger_id_, held.charged);
  held = Held{};
}

Status Session::GiveBackWhenDone(Held held, bool reply) {
  Executor::Completion then = reply ? Later() : nullptr;
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
  const size_t n_alloc = allocations_.size(), n_streams = streams_.size(),
               n_events = events_.size();
  Held held = TakeAll();
  const uint64_t bytes = held.charged;
  CUstream zero = nullptr;
  if (Result<CUstream*> z = streams_.Find(0); z.ok()) zero = **z;
  streams_.clear();
  void* arena = arena_registered_ ? channel_->arena()->base() : nullptr;
  work_->WhenDone(std::nullopt, [self = shared_from_this(), held = std::move(held), zero, arena,
                                 bytes, n_alloc, n_streams, n_events](const Status& st) mutable {
    self->GiveBack(held);
    if (arena && self->env_.device->epoch() == self->epoch_)
      (void)self->drv().cuMemHostUnregister(arena);
    if (zero) {
      {
        std::lock_guard lock(self->out_mu_);
        self->mapped_.erase(zero);
      }
      self->env_.device->ReleaseStream(zero);
    }
    if (!self->configured_.empty())
      self->env_.leave_tenant(self->configured_, self->id_);  // the last removes the account
    else if (self->admitted_)
      self->env_.ledger->Remove(self->id_);
    {
      std::lock_guard lock(self->err_mu_);
      self->torn_ = st;
    }
    Log(Level::kInfo, "session",
        {{"event", "closed"},
         {"session", self->id_},
         {"tenant", self->tenant_},
         {"freed_bytes", bytes},
         {"freed_allocations", n_alloc},
         {"streams", n_streams},
         {"events", n_events}});
    self->finished_.store(true, std::memory_order_release);
  });
  return OkStatus();
}

}  // namespace remora::server
