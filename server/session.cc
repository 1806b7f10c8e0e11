// server/session.cc - a tenant's session: handshake, validation, handlers, teardown.
#include "server/session.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "fatbin/fatbin.h"
#include "proto/arena.h"
#include "server/log.h"
#include "transport/fragment.h"

namespace remora::server {

using transport::Deadline;
using transport::Frame;
using transport::FrameHeader;

namespace {

constexpr auto kHandshakeTimeout = std::chrono::seconds(10);
// Shm staging: 16 slots of 4 MiB at the start of the arena; the heap follows.
constexpr uint32_t kStagingSlots = 16;
constexpr uint64_t kStagingSlotBytes = 4ull << 20;
// Bytes an inline (remote) payload may take in one frame, leaving room for the header.
constexpr uint64_t kFrameOverhead = 4096;

// A fault of the device's work that breaks the context (not a lost connection).
bool IsDeviceFault(int code) {
  return ErrorIsSticky(code) && code != err::kDevicesUnavailable;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

Session::Session(uint64_t id, std::unique_ptr<transport::Channel> channel, transport::PeerInfo peer,
                 SessionEnv env)
    : id_(id),
      channel_(std::make_unique<transport::FragmentingChannel>(std::move(channel))),
      peer_(std::move(peer)),
      env_(env) {
  tenant_ = "session-" + std::to_string(id);
}

Session::~Session() = default;

void Session::Stop() {
  closing_ = true;
  channel_->Close();
}

void Session::Run() {
  if (Handshake().ok()) Serve();
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
    (void)env_.device->MakeCurrent();
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
  events_.clear();
  streams_.clear();
  kernels_.clear();
  modules_.clear();
  symbols_.clear();
  allocations_.clear();
  {
    std::lock_guard lock(out_mu_);
    mapped_.clear();
  }
  env_.ledger->Release(id_, allocated_bytes_);
  allocated_bytes_ = 0;
  arena_registered_ = false;
  {
    std::lock_guard lock(err_mu_);
    deferred_ = OkStatus();
    sticky_ = lost;
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
}

Status Session::sticky() const {
  std::lock_guard lock(err_mu_);
  return sticky_;
}

// ---- Handshake -----------------------------------------------------------------

Status Session::Handshake() {
  Frame f;
  Status st = channel_->Receive(f, Deadline::In(kHandshakeTimeout));
  if (!st.ok()) return st;
  v1::Hello hello;
  v1::Welcome welcome;
  for (int attempt = 0;; ++attempt) {
    {
      Device::Use use = EnterDevice();
      if (f.header.call != static_cast<uint32_t>(CallId::kHello)) {
        st = Error(err::kInitializationError, "the first frame must be Hello (call 0)");
      } else if (!hello.ParseFromArray(f.body.data(), static_cast<int>(f.body.size()))) {
        st = Error(err::kInitializationError, "malformed Hello");
      } else {
        st = OnHello(hello, welcome);
      }
      // A context broken by an earlier tenant's fault that nobody reported yet
      // (it exited first): rebuild it and admit this tenant into the new one.
      if (attempt > 0 || !IsDeviceFault(st.code())) {
        Finish(f.header, CallClass::kSetup, st, welcome);
        return st;
      }
      streams_.clear();  // stream 0 died with the context
      std::lock_guard lock(out_mu_);
      mapped_.clear();
    }
    if (env_.on_fault) env_.on_fault(epoch_, "an earlier tenant", st);
  }
}

Status Session::OnHello(const v1::Hello& hello, v1::Welcome& welcome) {
  if (hello.protocol_version() != kProtocolVersion)
    return Error(err::kInitializationError,
                 "protocol version " + std::to_string(hello.protocol_version()) +
                     " is not this server's " + std::to_string(kProtocolVersion));
  std::string program = hello.program().empty() ? "tenant" : hello.program();
  tenant_ = program + "-" + std::to_string(hello.client_pid()) + "@" +
            (hello.client_host().empty() ? peer_.address : hello.client_host());
  const v1::Quota& q = hello.quota();
  ASSIGN_OR_RETURN(sched::Quota quota,
                   sched::ResolveQuota({q.gpu_fraction(), q.gpu_fraction_limit(), q.gpu_memory(),
                                        q.gpu_memory_limit()},
                                       env_.ledger->usable()));
  // The stream first: a context an earlier tenant broke shows here, before
  // this tenant is admitted.
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream());
  streams_[0] = s;
  {
    std::lock_guard lock(out_mu_);
    mapped_.insert(s);
  }
  if (CUresult r = drv().cuStreamQuery(s); r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
    return Check(r, "cuStreamQuery");
  RETURN_IF_ERROR(env_.ledger->Admit(id_, quota));
  admitted_ = true;
  std::weak_ptr<Session> weak = weak_from_this();
  work_ = env_.executor->Join(
      id_, tenant_,
      {.run_host_func =
           [weak](uint64_t id) {
             v1::HostFuncRun run;
             run.set_id(id);
             if (auto self = weak.lock())
               (void)self->Send(
                   {.call = static_cast<uint32_t>(CallId::kHostFuncRun), .flags = 0, .seq = 0},
                   run);
           },
       .on_error =
           [weak](const Status& st) {
             if (auto self = weak.lock()) self->RecordError(st);
           }});
  work_->AddStream(0, s, true);

  welcome.set_protocol_version(kProtocolVersion);
  welcome.set_session_id(id_);
  welcome.set_tenant(tenant_);
  *welcome.mutable_device() = env_.device->info();
  welcome.set_memory_limit(quota.limit);
  welcome.set_memory_request(quota.request);
  if (transport::Arena* a = channel_->arena()) {
    // Registered (page-locked on a GPU) so copies to and from it are truly
    // asynchronous and single-pass, as from cudaMallocHost memory, and mapped
    // into the device's address space so kernels may dereference arena memory
    // (zero-copy and managed memory). The tenant can use that only if it mapped
    // the arena at the same address as we did (the shm handshake asks it to).
    RETURN_IF_ERROR(
        Check(drv().cuMemHostRegister(a->base(), a->size(), CU_MEMHOSTREGISTER_DEVICEMAP),
              "cuMemHostRegister"));
    arena_registered_ = true;
    CUdeviceptr device_address = 0;
    CUresult r = drv().cuMemHostGetDevicePointer(&device_address, a->base(), 0);
    if (r != CUDA_SUCCESS)
      Log(Level::kWarn, "session",
          {{"session", id_},
           {"zero_copy", "off"},
           {"why", "cuMemHostGetDevicePointer failed"},
           {"code", static_cast<int>(r)}});
    welcome.set_arena_device_address(device_address);
    uint64_t staging = arena::StagingBytes(kStagingSlots, kStagingSlotBytes);
    if (a->size() > staging + arena::kPage) {
      welcome.set_staging_offset(0);
      welcome.set_staging_slot_bytes(kStagingSlotBytes);
      welcome.set_staging_slots(kStagingSlots);
      welcome.set_heap_offset(staging);
      welcome.set_heap_bytes(a->size() - staging);
    }
  }
  Log(Level::kInfo, "session",
      {{"event", "open"},
       {"session", id_},
       {"tenant", tenant_},
       {"peer", channel_->Describe()},
       {"request", quota.request},
       {"limit", quota.limit}});
  return OkStatus();
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
  const CallInfo* info = FindCall(h.call);
  const char* name = info ? info->name.data() : "unknown";
  if (IsDeviceFault(st.code()) && sticky().ok() && env_.fault_culprit) {
    // Say whose kernel broke the context, as the first word of what every
    // tenant learns of it.
    const std::string who = env_.fault_culprit();
    if (!who.empty())
      st = Error(st.code(), st.message() + " (device fault caused by " +
                                (who == tenant_ ? "this tenant's own work" : who) +
                                "; the GPU context is rebuilt, other tenants' work cannot go on)");
  }
  if (!st.ok() && st.code() != err::kNotReady)
    Log(Level::kInfo, "call",
        {{"tenant", tenant_}, {"call", name}, {"code", st.code()}, {"error", st.ToString()}});
  if (cls != CallClass::kSync && cls != CallClass::kSetup) {
    RecordError(st);
    return;
  }
  Status deferred;
  {
    std::lock_guard lock(err_mu_);
    if (!st.ok() && st.code() != err::kNotReady && ErrorIsSticky(st.code()) && sticky_.ok())
      sticky_ = st;
    deferred = std::exchange(deferred_, OkStatus());
  }
  std::lock_guard lock(send_mu_);
  // One Reply per session, cleared per call, so its strings keep their capacity.
  v1::Reply& reply = reply_;
  reply.Clear();
  reply.set_code(st.code());
  if (!st.ok()) reply.set_message(std::string(name) + ": " + st.message());
  if (!deferred.ok()) {
    reply.set_deferred_code(deferred.code());
    reply.set_deferred_message(deferred.message());
  }
  {
    std::lock_guard out(out_mu_);
    if (!device_output_.empty()) {
      reply.mutable_device_output()->swap(device_output_);
      device_output_.clear();
    }
  }
  if (st.ok()) result.SerializeToString(reply.mutable_result());
  if (!reply.SerializeToString(&send_buf_)) return;
  (void)channel_->Send({.call = h.call, .flags = 0, .seq = h.seq},
                       std::as_bytes(std::span(send_buf_.data(), send_buf_.size())));
}

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
                              std::shared_ptr<const google::protobuf::Message> result) {
  work_->WhenDone(stream, Later(std::move(result)), /*spin=*/true);
  return ReplyLater();
}

void Session::AppendDeviceOutput(std::string_view text) {
  std::lock_guard lock(out_mu_);
  device_output_.append(text);
}

bool Session::OwnsStream(CUstream s) const {
  std::lock_guard lock(out_mu_);
  return mapped_.count(s) > 0;
}

// ---- Validation ----------------------------------------------------------------

Result<CUstream> Session::FindStream(uint64_t id) const {
  auto it = streams_.find(id);
  if (it == streams_.end())
    return Error(err::kInvalidResourceHandle, "stream " + Hex(id) + " is not one of this tenant's");
  return it->second;
}

Result<CUevent> Session::FindEvent(uint64_t id) const {
  auto it = events_.find(id);
  if (it == events_.end())
    return Error(err::kInvalidResourceHandle, "event " + Hex(id) + " is not one of this tenant's");
  return it->second;
}

Status Session::CheckDeviceRange(uint64_t ptr, uint64_t size, const char* what) const {
  if (size == 0) return OkStatus();
  for (const auto* table : {&allocations_, &symbols_}) {
    auto it = table->upper_bound(ptr);
    if (it == table->begin()) continue;
    --it;
    uint64_t off = ptr - it->first;
    if (off < it->second && size <= it->second - off) return OkStatus();
  }
  return Error(err::kInvalidValue, std::string(what) + " [" + Hex(ptr) + ", +" +
                                       std::to_string(size) +
                                       ") lies outside this tenant's allocations");
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
  if (!a || slot_plus_one == 0 || slot_plus_one > kStagingSlots) return;
  uint64_t off = arena::StagingFlagOffset(0, slot_plus_one - 1);
  auto* flag = reinterpret_cast<uint32_t*>(a->base() + off);
  // Pairs with the stub's acquire load before it refills the slot.
  std::atomic_ref<uint32_t>(*flag).store(0, std::memory_order_release);
}

Status Session::CheckStagingSlot(uint32_t slot_plus_one) const {
  if (slot_plus_one == 0) return OkStatus();
  if (!channel_->arena() || slot_plus_one > kStagingSlots)
    return Error(err::kInvalidValue, "staging slot " + std::to_string(slot_plus_one) +
                                         " does not exist (this session has " +
                                         std::to_string(channel_->arena() ? kStagingSlots : 0) +
                                         ")");
  return OkStatus();
}

// ---- Device and memory ---------------------------------------------------------

Status Session::OnMemGetInfo(const v1::Empty&, v1::MemGetInfoReply& rep) {
  sched::MemoryLedger::View v = env_.ledger->Slice(id_);
  rep.set_free(v.free);
  rep.set_total(v.total);
  return OkStatus();
}

Status Session::OnMalloc(const v1::MallocRequest& req, v1::MallocReply& rep) {
  if (req.size() == 0) {
    rep.set_dptr(0);
    return OkStatus();
  }
  if (req.size() > (1ull << 62)) return Error(err::kMemoryAllocation, "allocation size overflows");
  uint64_t charged = arena::AlignUp(req.size(), 256);
  RETURN_IF_ERROR(env_.ledger->Charge(id_, charged));
  Result<CUdeviceptr> p = env_.executor->Allocate(req.size());
  if (!p.ok()) {
    env_.ledger->Release(id_, charged);
    return p.status();
  }
  allocations_[*p] = req.size();
  allocated_bytes_ += charged;
  rep.set_dptr(*p);
  return OkStatus();
}

Status Session::OnFree(const v1::FreeRequest& req, v1::Empty&) {
  if (req.dptr() == 0) return OkStatus();
  auto it = allocations_.find(req.dptr());
  if (it == allocations_.end())
    return Error(err::kInvalidValue, Hex(req.dptr()) +
                                         " is not the start of an allocation of this tenant "
                                         "(already freed, never allocated, or interior)");
  // cudaFree waits for the device, as CUDA does, but only for this tenant's
  // work: the memory goes back once that is done.
  Held held;
  held.epoch = epoch_;
  held.charged = arena::AlignUp(it->second, 256);
  held.allocations[it->first] = held.charged;
  allocated_bytes_ -= held.charged;
  allocations_.erase(it);
  work_->WhenDone(
      std::nullopt,
      [self = shared_from_this(), held = std::move(held),
       reply = Later()](const Status& st) mutable {
        self->GiveBack(held);
        reply(st);
      },
      /*spin=*/true);
  return ReplyLater();
}

Status Session::OnMemcpyHtoD(const v1::MemcpyHtoDRequest& req, v1::Empty& rep) {
  RETURN_IF_ERROR(OnMemcpyHtoDAsync(req, rep));
  return ReplyWhenDone(req.stream());
}

Status Session::OnMemcpyHtoDAsync(const v1::MemcpyHtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckStagingSlot(req.staging_slot()));
  const uint32_t slot = req.staging_slot();
  Status st = CheckDeviceRange(req.dst(), req.size(), "destination");
  Result<const std::byte*> src =
      st.ok() ? HostSource(req.src(), req.size()) : Result<const std::byte*>(st);
  if (src.ok() && !streams_.count(req.stream()))
    src = Error(err::kInvalidResourceHandle,
                "stream " + Hex(req.stream()) + " is not one of this tenant's");
  if (!src.ok()) {
    ReleaseStagingSlot(slot);
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
    ReleaseStagingSlot(slot);
    return sub;
  }
  if (keep || slot)
    work_->WhenDone(req.stream(), [self = shared_from_this(), keep, slot](const Status&) {
      self->ReleaseStagingSlot(slot);
    });
  return OkStatus();
}

Status Session::OnMemcpyDtoH(const v1::MemcpyDtoHRequest& req, v1::MemcpyDtoHReply&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  auto out = std::make_shared<v1::MemcpyDtoHReply>();
  std::byte* dst = nullptr;
  if (req.to_arena()) {
    ASSIGN_OR_RETURN(dst, ArenaRange(req.dst_arena_offset(), req.size()));
  } else {
    if (req.size() + kFrameOverhead > channel_->max_body())
      return Error(err::kInvalidValue, "an inline copy of " + std::to_string(req.size()) +
                                           " bytes exceeds one frame; chunk it");
    out->mutable_data()->resize(req.size());
    dst = reinterpret_cast<std::byte*>(out->mutable_data()->data());
  }
  const uint64_t src = req.src(), size = req.size();
  RETURN_IF_ERROR(work_->Submit(req.stream(), [dev = env_.device, dst, src, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyDtoHAsync(dst, src, size, s), "cuMemcpyDtoH");
  }));
  return ReplyWhenDone(req.stream(), std::move(out));
}

Status Session::OnMemcpyDtoHAsync(const v1::MemcpyDtoHRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  if (!req.to_arena())
    return Error(err::kInvalidValue, "an asynchronous device-to-host copy needs arena memory");
  ASSIGN_OR_RETURN(std::byte * dst, ArenaRange(req.dst_arena_offset(), req.size()));
  const uint64_t src = req.src(), size = req.size();
  return work_->Submit(req.stream(), [dev = env_.device, dst, src, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyDtoHAsync(dst, src, size, s), "cuMemcpyDtoHAsync");
  });
}

Status Session::OnMemcpyDtoDAsync(const v1::MemcpyDtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  const uint64_t src = req.src(), dst = req.dst(), size = req.size();
  return work_->Submit(req.stream(), [dev = env_.device, dst, src, size](CUstream s) {
    return dev->Check(dev->drv().cuMemcpyDtoDAsync(dst, src, size, s), "cuMemcpyDtoDAsync");
  });
}

Status Session::OnMemcpyDtoD(const v1::MemcpyDtoDRequest& req, v1::Empty& rep) {
  RETURN_IF_ERROR(OnMemcpyDtoDAsync(req, rep));
  return ReplyWhenDone(req.stream());
}

Status Session::OnMemsetAsync(const v1::MemsetRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  const uint64_t dst = req.dst(), size = req.size();
  const auto value = static_cast<unsigned char>(req.value());
  return work_->Submit(req.stream(), [dev = env_.device, dst, value, size](CUstream s) {
    return dev->Check(dev->drv().cuMemsetD8Async(dst, value, size, s), "cuMemsetD8Async");
  });
}

Status Session::OnMemset(const v1::MemsetRequest& req, v1::Empty& rep) {
  RETURN_IF_ERROR(OnMemsetAsync(req, rep));
  return ReplyWhenDone(req.stream());
}

// ---- Streams -------------------------------------------------------------------

Status Session::OnStreamCreate(const v1::StreamCreateRequest& req, v1::HandleReply& rep) {
  constexpr uint32_t kNonBlocking = 1;  // cudaStreamNonBlocking
  if (req.flags() & ~kNonBlocking)
    return Error(err::kInvalidValue, "unknown stream flags " + Hex(req.flags()));
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream());
  uint64_t id = next_handle_++;
  streams_[id] = s;
  work_->AddStream(id, s, !(req.flags() & kNonBlocking));
  {
    std::lock_guard lock(out_mu_);
    mapped_.insert(s);
  }
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnStreamDestroy(const v1::StreamRequest& req, v1::Empty&) {
  if (req.stream() == 0)
    return Error(err::kInvalidResourceHandle, "the default stream cannot be destroyed");
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  streams_.erase(req.stream());
  // Returns at once, as CUDA does; the stream's work completes first.
  work_->RemoveStream(req.stream(), [weak = weak_from_this(), dev = env_.device](CUstream s) {
    if (auto self = weak.lock()) {
      std::lock_guard lock(self->out_mu_);
      self->mapped_.erase(s);
    }
    dev->ReleaseStream(s);
  });
  return OkStatus();
}

Status Session::OnStreamSynchronize(const v1::StreamRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  // The legacy stream waits for every blocking stream.
  return ReplyWhenDone(req.stream() == 0 ? std::nullopt : std::optional<uint64_t>(req.stream()));
}

Status Session::OnStreamQuery(const v1::StreamRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  return work_->Query(req.stream());
}

Status Session::OnStreamWaitEvent(const v1::StreamWaitEventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  return work_->WaitEvent(req.stream(), e);
}

Status Session::OnLaunchHostFunc(const v1::HostFuncRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(FindStream(req.stream()).status());
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
  RETURN_IF_ERROR(Check(drv().cuEventCreate(&e, req.flags()), "cuEventCreate"));
  uint64_t id = next_handle_++;
  events_[id] = e;
  rep.set_handle(id);
  return OkStatus();
}

Status Session::OnEventRecord(const v1::EventRecordRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  RETURN_IF_ERROR(FindStream(req.stream()).status());
  return work_->Record(req.stream(), e);
}

Status Session::OnEventSynchronize(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  work_->WhenEventDone(e, Later());
  return ReplyLater();
}

Status Session::OnEventQuery(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  return work_->QueryEvent(e);
}

Status Session::OnEventElapsedTime(const v1::EventElapsedRequest& req, v1::EventElapsedReply& rep) {
  ASSIGN_OR_RETURN(CUevent a, FindEvent(req.start()));
  ASSIGN_OR_RETURN(CUevent b, FindEvent(req.end()));
  RETURN_IF_ERROR(work_->QueryEvent(a));
  RETURN_IF_ERROR(work_->QueryEvent(b));
  float ms = 0;
  RETURN_IF_ERROR(Check(drv().cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime"));
  rep.set_ms(ms);
  return OkStatus();
}

Status Session::OnEventDestroy(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  events_.erase(req.event());
  // Queued work may still name it: it goes once this tenant's work is done.
  Held held;
  held.epoch = epoch_;
  held.events.push_back(e);
  work_->WhenDone(std::nullopt, [self = shared_from_this(), held = std::move(held)](
                                    const Status&) mutable { self->GiveBack(held); });
  return OkStatus();
}

// ---- Device-wide ---------------------------------------------------------------

Status Session::OnDeviceSynchronize(const v1::Empty&, v1::Empty&) {
  return ReplyWhenDone(std::nullopt);
}

Status Session::OnDeviceReset(const v1::Empty&, v1::Empty&) {
  Held held = TakeAll();
  {
    std::lock_guard lock(err_mu_);
    sticky_ = OkStatus();
    deferred_ = OkStatus();
  }
  work_->WhenDone(
      std::nullopt,
      [self = shared_from_this(), held = std::move(held),
       reply = Later()](const Status& st) mutable {
        self->GiveBack(held);
        reply(st);
      },
      /*spin=*/true);
  return ReplyLater();
}

Status Session::OnGoodbye(const v1::Empty&, v1::Empty&) {
  closing_ = true;
  return OkStatus();
}

// ---- Kernels -------------------------------------------------------------------

namespace {

// The images' entries for the module log, and the one a driver of `arch`
// takes from `img` (the emulator runs PTX only).
bool IsFatbin(const std::string& img) {
  return img.size() >= 4 && std::memcmp(img.data(), &fatbin::kFatbinMagic, 4) == 0;
}

// What cuModuleLoadData takes besides fat binaries.
const char* PlainImageKind(const std::string& img) {
  return img.starts_with(
             "\x7f"
             "ELF")
             ? "cubin"
             : "PTX text";
}

std::string OfferedImages(const FatbinImages& images) {
  std::string out;
  for (size_t i = 0; i < images.images.size(); ++i) {
    const std::string& img = images.images[i];
    if (i) out += " | ";
    out += IsFatbin(img) ? fatbin::Describe(std::as_bytes(std::span(img.data(), img.size())))
                         : PlainImageKind(img);
  }
  return out;
}

// Appends `name` to a log list of at most a few names, then counts the rest.
void AppendCapped(std::string& list, int& count, const std::string& name) {
  constexpr int kShown = 5;
  if (++count <= kShown) list += (list.empty() ? "" : " ") + name;
}

std::string ChosenEntry(const std::string& img, uint32_t arch, bool ptx_only) {
  if (!IsFatbin(img)) return PlainImageKind(img);
  Result<std::vector<fatbin::Entry>> entries =
      fatbin::Parse(std::as_bytes(std::span(img.data(), img.size())));
  if (!entries.ok()) return "none";
  const fatbin::Entry* e = fatbin::Choose(*entries, arch, ptx_only);
  return e ? fatbin::EntryName(*e) : "none";
}

}  // namespace

Result<CUmodule> Session::LoadModule(const FatbinImages& images, std::string* how) {
  CUmodule mod = nullptr;
  if (images.images.empty()) return Error(err::kInvalidPtx, "no fat binary images");
  const auto& attrs = env_.device->info().attributes();
  auto attr = [&](int a) { return a < attrs.size() ? attrs[a] : 0; };
  const uint32_t arch = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
                        attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  const bool ptx_only = drv().emulated;
  // images[0] is the whole program (v1) or, for -rdc (v2), the device-linked
  // fatbin: machine code only. A GPU of that architecture loads it as it is.
  CUresult r = drv().cuModuleLoadData(&mod, images.images[0].data());
  if (r == CUDA_SUCCESS) {
    *how = (images.rdc ? "device-linked image " : "image ") +
           ChosenEntry(images.images[0], arch, ptx_only);
    return mod;
  }
  if (!images.rdc || images.images.size() < 2 || r != CUDA_ERROR_NO_BINARY_FOR_GPU)
    return Check(r, "cuModuleLoadData");
  // Otherwise link the per-translation-unit fatbins (their PTX) into one module.
  CUlinkState link = nullptr;
  RETURN_IF_ERROR(Check(drv().cuLinkCreate(0, nullptr, nullptr, &link), "cuLinkCreate"));
  Status st;
  *how = "linked";
  for (size_t i = 1; i < images.images.size() && st.ok(); ++i) {
    const std::string& img = images.images[i];
    *how += " " + ChosenEntry(img, arch, true);
    st = Check(drv().cuLinkAddData(link, CU_JIT_INPUT_FATBINARY, const_cast<char*>(img.data()),
                                   img.size(), "tenant", 0, nullptr, nullptr),
               "cuLinkAddData");
  }
  *how += " of " + std::to_string(images.images.size() - 1) + " translation units";
  void* cubin = nullptr;
  size_t cubin_size = 0;
  if (st.ok()) st = Check(drv().cuLinkComplete(link, &cubin, &cubin_size), "cuLinkComplete");
  if (st.ok()) st = Check(drv().cuModuleLoadData(&mod, cubin), "cuModuleLoadData");
  (void)drv().cuLinkDestroy(link);
  if (!st.ok()) return st;
  return mod;
}

Status Session::OnRegisterModule(const v1::RegisterModuleRequest& req,
                                 v1::RegisterModuleReply& rep) {
  std::shared_ptr<const FatbinImages> images;
  std::string digest;
  if (req.images_size() == 0) {
    images = env_.modules->Get(req.hash());
    if (!images) {  // not an error: the stub sends the images next (session.proto)
      rep.set_images_needed(true);
      return OkStatus();
    }
  } else {
    // The cache key is our own digest of the bytes received, never the tenant's
    // claim, so no tenant can plant images under another program's hash.
    auto fresh = std::make_shared<FatbinImages>();
    fresh->rdc = req.rdc();
    std::vector<fatbin::Bytes> views;
    for (const std::string& img : req.images()) {
      fresh->images.push_back(img);
      views.push_back(std::as_bytes(std::span(img.data(), img.size())));
    }
    digest = fatbin::ImagesDigest(views);
    if (digest != req.hash())
      Log(Level::kWarn, "module", {{"tenant", tenant_}, {"event", "hash_mismatch"}});
    images = std::move(fresh);
  }
  const std::string first_kernel = req.kernels_size() ? req.kernels(0) : "";
  std::string how;
  const std::string offered = OfferedImages(*images);
  Result<CUmodule> loaded = LoadModule(*images, &how);
  if (!loaded.ok()) {
    Log(Level::kWarn, "module",
        {{"tenant", tenant_},
         {"event", "refused"},
         {"offered", offered},
         {"kernels", req.kernels_size()},
         {"first_kernel", first_kernel},
         {"error", loaded.status().ToString()}});
    return Error(loaded.status().code(), "module with kernel " + first_kernel + " (images " +
                                             offered + "): " + loaded.status().message());
  }
  // Only images that loaded are kept for other sessions.
  if (!digest.empty()) (void)env_.modules->Put(digest, images);
  CUmodule mod = *loaded;
  uint64_t module_id = next_handle_++;
  modules_[module_id] = mod;
  rep.set_module(module_id);
  std::string missing;
  int missing_count = 0;
  for (const std::string& name : req.kernels()) {
    CUfunction fn = nullptr;
    if (drv().cuModuleGetFunction(&fn, mod, name.c_str()) != CUDA_SUCCESS) {
      AppendCapped(missing, missing_count, name);
      continue;
    }
    v1::KernelLayout* k = rep.add_kernels();
    k->set_name(name);
    uint32_t bytes = 0;
    for (size_t i = 0;; ++i) {
      size_t off = 0, size = 0;
      if (drv().cuFuncGetParamInfo(fn, i, &off, &size) != CUDA_SUCCESS) break;
      k->add_offsets(static_cast<uint32_t>(off));
      k->add_sizes(static_cast<uint32_t>(size));
      bytes = std::max<uint32_t>(bytes, static_cast<uint32_t>(off + size));
    }
    k->set_param_bytes(bytes);
    auto attr = [&](CUfunction_attribute a) {
      int v = 0;
      (void)drv().cuFuncGetAttribute(&v, a, fn);
      return v;
    };
    k->set_max_threads_per_block(attr(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK));
    k->set_shared_size_bytes(attr(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES));
    k->set_local_size_bytes(attr(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES));
    k->set_num_regs(attr(CU_FUNC_ATTRIBUTE_NUM_REGS));
    k->set_ptx_version(attr(CU_FUNC_ATTRIBUTE_PTX_VERSION));
    k->set_binary_version(attr(CU_FUNC_ATTRIBUTE_BINARY_VERSION));
    k->set_const_size_bytes(attr(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES));
    uint64_t handle = next_handle_++;
    k->set_handle(handle);
    kernels_[handle] = Kernel{fn, bytes, module_id};
  }
  for (const std::string& name : req.variables()) {
    CUdeviceptr p = 0;
    size_t size = 0;
    if (drv().cuModuleGetGlobal(&p, &size, mod, name.c_str()) != CUDA_SUCCESS) {
      AppendCapped(missing, missing_count, name);
      continue;
    }
    symbols_[p] = size;
    v1::VariableInfo* v = rep.add_variables();
    v->set_name(name);
    v->set_dptr(p);
    v->set_size(size);
  }
  Log(missing_count ? Level::kWarn : Level::kInfo, "module",
      {{"tenant", tenant_},
       {"event", "loaded"},
       {"module", module_id},
       {"offered", offered},
       {"chosen", how},
       {"kernels_found", rep.kernels_size()},
       {"kernels_registered", req.kernels_size()},
       {"variables_found", rep.variables_size()},
       {"missing_count", missing_count},
       {"missing", missing}});
  return OkStatus();
}

Status Session::OnUnregisterModule(const v1::UnregisterModuleRequest& req, v1::Empty&) {
  auto it = modules_.find(req.module());
  if (it == modules_.end())
    return Error(err::kInvalidResourceHandle,
                 "module " + Hex(req.module()) + " is not this tenant's");
  std::erase_if(kernels_, [&](const auto& kv) { return kv.second.module == req.module(); });
  // Unloaded once this tenant's work that may run its kernels is done.
  Held held;
  held.epoch = epoch_;
  held.modules.push_back(it->second);
  modules_.erase(it);
  work_->WhenDone(std::nullopt, [self = shared_from_this(), held = std::move(held)](
                                    const Status&) mutable { self->GiveBack(held); });
  return OkStatus();
}

Status Session::OnLaunchKernel(const v1::LaunchRequest& req, v1::Empty&) {
  auto it = kernels_.find(req.kernel());
  if (it == kernels_.end())
    return Error(err::kInvalidDeviceFunction, "kernel " + Hex(req.kernel()) + " is not registered");
  const Kernel& k = it->second;
  if (req.params().size() != k.param_bytes)
    return Error(err::kInvalidValue,
                 "kernel parameters are " + std::to_string(req.params().size()) +
                     " bytes, the kernel takes " + std::to_string(k.param_bytes));
  struct Launch {
    CUfunction fn;
    unsigned grid[3], block[3], shared;
    std::string params;
  };
  auto l = std::make_shared<Launch>(Launch{k.fn,
                                           {req.grid_x(), req.grid_y(), req.grid_z()},
                                           {req.block_x(), req.block_y(), req.block_z()},
                                           req.shared_bytes(),
                                           req.params()});
  return work_->Submit(req.stream(), [dev = env_.device, l](CUstream s) {
    size_t size = l->params.size();
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, l->params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &size, CU_LAUNCH_PARAM_END};
    return dev->Check(dev->drv().cuLaunchKernel(l->fn, l->grid[0], l->grid[1], l->grid[2],
                                                l->block[0], l->block[1], l->block[2], l->shared, s,
                                                nullptr, size ? extra : nullptr),
                      "cuLaunchKernel");
  });
}

Status Session::OnFuncSetAttribute(const v1::FuncAttributeRequest& req, v1::Empty&) {
  auto it = kernels_.find(req.kernel());
  if (it == kernels_.end())
    return Error(err::kInvalidDeviceFunction, "kernel " + Hex(req.kernel()) + " is not registered");
  return Check(drv().cuFuncSetAttribute(
                   it->second.fn, static_cast<CUfunction_attribute>(req.attribute()), req.value()),
               "cuFuncSetAttribute");
}

Status Session::OnOccupancyMaxActiveBlocks(const v1::OccupancyRequest& req, v1::IntReply& rep) {
  auto it = kernels_.find(req.kernel());
  if (it == kernels_.end())
    return Error(err::kInvalidDeviceFunction, "kernel " + Hex(req.kernel()) + " is not registered");
  int blocks = 0;
  RETURN_IF_ERROR(Check(drv().cuOccupancyMaxActiveBlocksPerMultiprocessor(
                            &blocks, it->second.fn, req.block_size(), req.dynamic_shared()),
                        "cuOccupancyMaxActiveBlocksPerMultiprocessor"));
  rep.set_value(blocks);
  return OkStatus();
}

// ---- Teardown ------------------------------------------------------------------

Session::Held Session::TakeAll() {
  Held held;
  held.epoch = epoch_;
  for (auto& [id, e] : events_) held.events.push_back(e);
  events_.clear();
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->first == 0) {
      ++it;
      continue;
    }
    work_->RemoveStream(it->first, [weak = weak_from_this(), dev = env_.device](CUstream s) {
      if (auto self = weak.lock()) {
        std::lock_guard lock(self->out_mu_);
        self->mapped_.erase(s);
      }
      dev->ReleaseStream(s);
    });
    it = streams_.erase(it);
  }
  kernels_.clear();
  for (auto& [id, m] : modules_) held.modules.push_back(m);
  modules_.clear();
  symbols_.clear();
  for (auto& [p, size] : allocations_) held.allocations[p] = arena::AlignUp(size, 256);
  allocations_.clear();
  held.charged = allocated_bytes_;
  allocated_bytes_ = 0;
  return held;
}

void Session::GiveBack(Held& held) {
  if (env_.device->epoch() == held.epoch) {
    for (CUevent e : held.events) (void)drv().cuEventDestroy(e);
    for (CUmodule m : held.modules) (void)drv().cuModuleUnload(m);
    for (auto& [p, charged] : held.allocations) (void)env_.executor->Free(p);
  }
  if (admitted_) env_.ledger->Release(id_, held.charged);
  held = Held{};
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
  // Queued work is dropped (host functions never run: the tenant is gone);
  // what was issued runs to its end before anything it may use goes back.
  work_->Abandon(Error(err::kDevicesUnavailable, "the session ended"));
  const size_t n_alloc = allocations_.size(), n_streams = streams_.size(),
               n_events = events_.size();
  Held held = TakeAll();
  const uint64_t bytes = held.charged;
  CUstream zero = streams_.count(0) ? streams_[0] : nullptr;
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
    if (self->admitted_) self->env_.ledger->Remove(self->id_);
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
