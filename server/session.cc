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
constexpr auto kWaitPoll = std::chrono::microseconds(200);
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

void RunHostClosure(void* p) {
  std::unique_ptr<std::function<void()>> fn(static_cast<std::function<void()>*>(p));
  (*fn)();
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
  {
    std::lock_guard lock(hf_mu_);
    closing_ = true;
  }
  hf_cv_.notify_all();
  channel_->Close();
}

void Session::Run() {
  if (Handshake().ok()) Serve();
  Status torn;
  {
    Device::Use use = EnterDevice();
    torn = Teardown();
  }
  // A fault nobody saw before this tenant left (it never synchronised).
  if (!fault_reported_ && IsDeviceFault(torn.code()) && env_.on_fault)
    env_.on_fault(epoch_, tenant_, torn);
  finished_.store(true, std::memory_order_release);
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
  deferred_ = OkStatus();
  sticky_ = Error(f.status.code(),
                  "the GPU context was rebuilt after a device fault caused by " + f.culprit + " (" +
                      f.status.message() +
                      "); this session's device memory, streams and modules are gone: restart "
                      "the program");
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
  if (fault_reported_ || sticky_.ok() || !IsDeviceFault(sticky_.code())) return;
  fault_reported_ = true;
  if (env_.on_fault) env_.on_fault(epoch_, tenant_, sticky_);
}

void Session::AbandonHostFuncs() {
  {
    std::lock_guard lock(hf_mu_);
    abandoned_ = true;
  }
  hf_cv_.notify_all();
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
  streams_[0].s = s;
  {
    std::lock_guard lock(out_mu_);
    mapped_.insert(s);
  }
  if (CUresult r = drv().cuStreamQuery(s); r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
    return Check(r, "cuStreamQuery");
  RETURN_IF_ERROR(env_.ledger->Admit(id_, quota));
  admitted_ = true;

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
    if (!backlog_.empty()) {
      Frame b = std::move(backlog_.front());
      backlog_.pop_front();
      Device::Use use = EnterDevice();
      Dispatch(b);
    } else {
      Status st = channel_->Receive(f, Deadline::Never());
      if (!st.ok()) {
        Log(Level::kInfo, "session",
            {{"event", "peer_gone"}, {"session", id_}, {"tenant", tenant_}, {"why", st.message()}});
        return;
      }
      Device::Use use = EnterDevice();
      Dispatch(f);
    }
    ReportFault();
    if (closing_) return;
  }
}

void Session::Finish(const FrameHeader& h, CallClass cls, Status st,
                     const google::protobuf::Message& result) {
  const CallInfo* info = FindCall(h.call);
  const char* name = info ? info->name.data() : "unknown";
  if (IsDeviceFault(st.code()) && sticky_.ok() && env_.fault_culprit) {
    // Say whose kernel broke the context, as the first word of what every
    // tenant learns of it.
    const std::string who = env_.fault_culprit();
    if (!who.empty())
      st = Error(st.code(), st.message() + " (device fault caused by " +
                                (who == tenant_ ? "this tenant's own work" : who) +
                                "; the GPU context is rebuilt, other tenants' work cannot go on)");
  }
  if (!st.ok() && st.code() != err::kNotReady) {
    Log(Level::kInfo, "call",
        {{"tenant", tenant_}, {"call", name}, {"code", st.code()}, {"error", st.ToString()}});
    if (ErrorIsSticky(st.code()) && sticky_.ok()) sticky_ = st;
  }
  if (cls != CallClass::kSync && cls != CallClass::kSetup) {
    if (!st.ok() && deferred_.ok()) deferred_ = st;
    return;
  }
  // One Reply per session, cleared per call, so its strings keep their capacity.
  v1::Reply& reply = reply_;
  reply.Clear();
  reply.set_code(st.code());
  if (!st.ok()) reply.set_message(std::string(name) + ": " + st.message());
  if (!deferred_.ok()) {
    reply.set_deferred_code(deferred_.code());
    reply.set_deferred_message(deferred_.message());
    deferred_ = OkStatus();
  }
  {
    std::lock_guard lock(out_mu_);
    if (!device_output_.empty()) {
      reply.mutable_device_output()->swap(device_output_);
      device_output_.clear();
    }
  }
  if (st.ok()) result.SerializeToString(reply.mutable_result());
  (void)Send({.call = h.call, .flags = 0, .seq = h.seq}, reply);
}

Status Session::Send(const FrameHeader& h, const google::protobuf::Message& m) {
  std::lock_guard lock(send_mu_);
  if (!m.SerializeToString(&send_buf_)) return Error(err::kUnknown, "cannot serialize a reply");
  return channel_->Send(h, std::as_bytes(std::span(send_buf_.data(), send_buf_.size())));
}

void Session::ServeBacklogFrame(const Frame& f) {
  if (f.header.call == static_cast<uint32_t>(CallId::kHostFuncDone)) {
    Dispatch(f);
    return;
  }
  backlog_.push_back(f);
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

Result<Session::Stream*> Session::FindStream(uint64_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end())
    return Error(err::kInvalidResourceHandle, "stream " + Hex(id) + " is not one of this tenant's");
  return &it->second;
}

Result<CUevent> Session::FindEvent(uint64_t id) {
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

Result<CUstream> Session::Enqueue(uint64_t id) {
  ASSIGN_OR_RETURN(Stream * st, FindStream(id));
  // The legacy default stream waits for all blocking streams, and they for it.
  auto order_after = [&](uint64_t other_id, Stream& other) -> Status {
    if (other.gen <= st->seen[other_id]) return OkStatus();
    if (!other.marker)
      RETURN_IF_ERROR(
          Check(drv().cuEventCreate(&other.marker, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
    RETURN_IF_ERROR(Check(drv().cuEventRecord(other.marker, other.s), "cuEventRecord"));
    RETURN_IF_ERROR(Check(drv().cuStreamWaitEvent(st->s, other.marker, 0), "cuStreamWaitEvent"));
    st->seen[other_id] = other.gen;
    return OkStatus();
  };
  if (id == 0) {
    for (auto& [oid, other] : streams_)
      if (oid != 0 && other.blocking) RETURN_IF_ERROR(order_after(oid, other));
  } else if (st->blocking) {
    RETURN_IF_ERROR(order_after(0, streams_[0]));
  }
  ++st->gen;
  return st->s;
}

// ---- Waiting -------------------------------------------------------------------

// Polls `query` (cuStreamQuery/cuEventQuery) until the work is done, reading
// the tenant's frames meanwhile: a host function ahead in the stream waits for
// the tenant's HostFuncDone, which only this thread can receive.
template <typename Query>
Status Session::PollUntilDone(Query query, const char* what) {
  Frame f;
  for (;;) {
    CUresult r = query();
    if (r != CUDA_ERROR_NOT_READY) return Check(r, what);
    if (channel_->PeerAlive() && channel_->Receive(f, Deadline::In(kWaitPoll)).ok())
      ServeBacklogFrame(f);
    else
      std::this_thread::sleep_for(kWaitPoll);
  }
}

Status Session::Wait(CUstream s) {
  if (hf_pending_.load(std::memory_order_acquire) == 0)
    return Check(drv().cuStreamSynchronize(s), "cuStreamSynchronize");
  return PollUntilDone([&] { return drv().cuStreamQuery(s); }, "cuStreamQuery");
}

Status Session::DrainForPageable(CUstream s) {
  // A copy with pageable host memory blocks in the driver until the stream
  // reaches it; with a tenant host function ahead of it that would deadlock,
  // so empty the stream first while serving the tenant's frames.
  if (hf_pending_.load(std::memory_order_acquire) == 0) return OkStatus();
  return Wait(s);
}

Status Session::WaitEvent(CUevent e) {
  if (hf_pending_.load(std::memory_order_acquire) == 0)
    return Check(drv().cuEventSynchronize(e), "cuEventSynchronize");
  return PollUntilDone([&] { return drv().cuEventQuery(e); }, "cuEventQuery");
}

Status Session::SyncAll() {
  Status first;
  for (auto& [id, st] : streams_) {
    Status s = Wait(st.s);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Status Session::EnqueueHost(CUstream s, std::function<void()> fn) {
  auto boxed = std::make_unique<std::function<void()>>(std::move(fn));
  RETURN_IF_ERROR(
      Check(drv().cuLaunchHostFunc(s, &RunHostClosure, boxed.get()), "cuLaunchHostFunc"));
  (void)boxed.release();  // owned by RunHostClosure now
  return OkStatus();
}

void Session::ReleaseStagingSlot(uint32_t slot_plus_one) {
  transport::Arena* a = channel_->arena();
  if (!a || slot_plus_one == 0 || slot_plus_one > kStagingSlots) return;
  uint64_t off = arena::StagingFlagOffset(0, slot_plus_one - 1);
  auto* flag = reinterpret_cast<uint32_t*>(a->base() + off);
  // Pairs with the stub's acquire load before it refills the slot.
  std::atomic_ref<uint32_t>(*flag).store(0, std::memory_order_release);
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
  CUdeviceptr p = 0;
  Status st = Check(drv().cuMemAlloc(&p, req.size()), "cuMemAlloc");
  if (!st.ok()) {
    env_.ledger->Release(id_, charged);
    return st;
  }
  allocations_[p] = req.size();
  allocated_bytes_ += charged;
  rep.set_dptr(p);
  return OkStatus();
}

Status Session::OnFree(const v1::FreeRequest& req, v1::Empty&) {
  if (req.dptr() == 0) return OkStatus();
  auto it = allocations_.find(req.dptr());
  if (it == allocations_.end())
    return Error(err::kInvalidValue, Hex(req.dptr()) +
                                         " is not the start of an allocation of this tenant "
                                         "(already freed, never allocated, or interior)");
  RETURN_IF_ERROR(SyncAll());  // cudaFree waits for the device, as CUDA does
  RETURN_IF_ERROR(Check(drv().cuMemFree(it->first), "cuMemFree"));
  uint64_t charged = arena::AlignUp(it->second, 256);
  env_.ledger->Release(id_, charged);
  allocated_bytes_ -= charged;
  allocations_.erase(it);
  return OkStatus();
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

Status Session::OnMemcpyHtoD(const v1::MemcpyHtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckStagingSlot(req.staging_slot()));
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  ASSIGN_OR_RETURN(const std::byte* src, HostSource(req.src(), req.size()));
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  Status st = req.src().has_data() ? DrainForPageable(s) : OkStatus();
  if (st.ok()) st = Check(drv().cuMemcpyHtoDAsync(req.dst(), src, req.size(), s), "cuMemcpyHtoD");
  if (st.ok()) st = Wait(s);
  ReleaseStagingSlot(req.staging_slot());
  return st;
}

Status Session::OnMemcpyHtoDAsync(const v1::MemcpyHtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckStagingSlot(req.staging_slot()));
  Status st = CheckDeviceRange(req.dst(), req.size(), "destination");
  Result<const std::byte*> src =
      st.ok() ? HostSource(req.src(), req.size()) : Result<const std::byte*>(st);
  Result<CUstream> s = src.ok() ? Enqueue(req.stream()) : Result<CUstream>(src.status());
  if (!s.ok()) {
    ReleaseStagingSlot(req.staging_slot());
    return s.status();
  }
  if (req.src().has_data()) {
    // The frame's bytes die with the frame: keep a copy until the stream copied it.
    auto keep = std::make_shared<std::string>(req.src().data());
    RETURN_IF_ERROR(DrainForPageable(*s));
    RETURN_IF_ERROR(Check(drv().cuMemcpyHtoDAsync(req.dst(), keep->data(), req.size(), *s),
                          "cuMemcpyHtoDAsync"));
    return EnqueueHost(*s, [keep] {});
  }
  st = Check(drv().cuMemcpyHtoDAsync(req.dst(), *src, req.size(), *s), "cuMemcpyHtoDAsync");
  if (!st.ok()) {
    ReleaseStagingSlot(req.staging_slot());
    return st;
  }
  if (req.staging_slot() == 0) return OkStatus();
  uint32_t slot = req.staging_slot();
  auto self = shared_from_this();
  return EnqueueHost(*s, [self, slot] { self->ReleaseStagingSlot(slot); });
}

Status Session::OnMemcpyDtoH(const v1::MemcpyDtoHRequest& req, v1::MemcpyDtoHReply& rep) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  std::byte* dst = nullptr;
  if (req.to_arena()) {
    ASSIGN_OR_RETURN(dst, ArenaRange(req.dst_arena_offset(), req.size()));
  } else {
    if (req.size() + kFrameOverhead > channel_->max_body())
      return Error(err::kInvalidValue, "an inline copy of " + std::to_string(req.size()) +
                                           " bytes exceeds one frame; chunk it");
    rep.mutable_data()->resize(req.size());
    dst = reinterpret_cast<std::byte*>(rep.mutable_data()->data());
  }
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  if (!req.to_arena()) RETURN_IF_ERROR(DrainForPageable(s));
  RETURN_IF_ERROR(Check(drv().cuMemcpyDtoHAsync(dst, req.src(), req.size(), s), "cuMemcpyDtoH"));
  return Wait(s);
}

Status Session::OnMemcpyDtoHAsync(const v1::MemcpyDtoHRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  if (!req.to_arena())
    return Error(err::kInvalidValue, "an asynchronous device-to-host copy needs arena memory");
  ASSIGN_OR_RETURN(std::byte * dst, ArenaRange(req.dst_arena_offset(), req.size()));
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  return Check(drv().cuMemcpyDtoHAsync(dst, req.src(), req.size(), s), "cuMemcpyDtoHAsync");
}

Status Session::OnMemcpyDtoDAsync(const v1::MemcpyDtoDRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.src(), req.size(), "source"));
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  return Check(drv().cuMemcpyDtoDAsync(req.dst(), req.src(), req.size(), s), "cuMemcpyDtoDAsync");
}

Status Session::OnMemcpyDtoD(const v1::MemcpyDtoDRequest& req, v1::Empty& rep) {
  RETURN_IF_ERROR(OnMemcpyDtoDAsync(req, rep));
  return Wait(streams_[req.stream()].s);
}

Status Session::OnMemsetAsync(const v1::MemsetRequest& req, v1::Empty&) {
  RETURN_IF_ERROR(CheckDeviceRange(req.dst(), req.size(), "destination"));
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  return Check(
      drv().cuMemsetD8Async(req.dst(), static_cast<unsigned char>(req.value()), req.size(), s),
      "cuMemsetD8Async");
}

Status Session::OnMemset(const v1::MemsetRequest& req, v1::Empty& rep) {
  RETURN_IF_ERROR(OnMemsetAsync(req, rep));
  return Wait(streams_[req.stream()].s);
}

// ---- Streams -------------------------------------------------------------------

Status Session::OnStreamCreate(const v1::StreamCreateRequest& req, v1::HandleReply& rep) {
  constexpr uint32_t kNonBlocking = 1;  // cudaStreamNonBlocking
  if (req.flags() & ~kNonBlocking)
    return Error(err::kInvalidValue, "unknown stream flags " + Hex(req.flags()));
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream());
  uint64_t id = next_handle_++;
  Stream& st = streams_[id];
  st.s = s;
  st.blocking = !(req.flags() & kNonBlocking);
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
  ASSIGN_OR_RETURN(Stream * st, FindStream(req.stream()));
  Status s = Wait(st->s);  // pending work completes, as CUDA promises
  if (st->marker) (void)drv().cuEventDestroy(st->marker);
  {
    std::lock_guard lock(out_mu_);
    mapped_.erase(st->s);
  }
  env_.device->ReleaseStream(st->s);
  streams_.erase(req.stream());
  for (auto& [id, other] : streams_) other.seen.erase(req.stream());
  return s;
}

Status Session::OnStreamSynchronize(const v1::StreamRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(Stream * st, FindStream(req.stream()));
  if (req.stream() == 0) return SyncAll();  // the legacy stream waits for every blocking stream
  return Wait(st->s);
}

Status Session::OnStreamQuery(const v1::StreamRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(Stream * st, FindStream(req.stream()));
  return Check(drv().cuStreamQuery(st->s), "cuStreamQuery");
}

Status Session::OnStreamWaitEvent(const v1::StreamWaitEventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  return Check(drv().cuStreamWaitEvent(s, e, 0), "cuStreamWaitEvent");
}

Status Session::OnLaunchHostFunc(const v1::HostFuncRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  hf_pending_.fetch_add(1, std::memory_order_acq_rel);
  auto self = shared_from_this();
  uint64_t id = req.id();
  Status st = EnqueueHost(s, [self, id] { self->RunHostFunc(id); });
  if (!st.ok()) hf_pending_.fetch_sub(1, std::memory_order_acq_rel);
  return st;
}

void Session::RunHostFunc(uint64_t id) {
  v1::HostFuncRun run;
  run.set_id(id);
  Status st =
      Send({.call = static_cast<uint32_t>(CallId::kHostFuncRun), .flags = 0, .seq = 0}, run);
  std::unique_lock lock(hf_mu_);
  if (st.ok()) hf_cv_.wait(lock, [&] { return hf_done_.count(id) > 0 || closing_ || abandoned_; });
  hf_done_.erase(id);
  hf_pending_.fetch_sub(1, std::memory_order_acq_rel);
}

Status Session::OnHostFuncDone(const v1::HostFuncDone& req, v1::Empty&) {
  {
    std::lock_guard lock(hf_mu_);
    hf_done_.insert(req.id());
  }
  hf_cv_.notify_all();
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
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  return Check(drv().cuEventRecord(e, s), "cuEventRecord");
}

Status Session::OnEventSynchronize(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  return WaitEvent(e);
}

Status Session::OnEventQuery(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  return Check(drv().cuEventQuery(e), "cuEventQuery");
}

Status Session::OnEventElapsedTime(const v1::EventElapsedRequest& req, v1::EventElapsedReply& rep) {
  ASSIGN_OR_RETURN(CUevent a, FindEvent(req.start()));
  ASSIGN_OR_RETURN(CUevent b, FindEvent(req.end()));
  float ms = 0;
  RETURN_IF_ERROR(Check(drv().cuEventElapsedTime(&ms, a, b), "cuEventElapsedTime"));
  rep.set_ms(ms);
  return OkStatus();
}

Status Session::OnEventDestroy(const v1::EventRequest& req, v1::Empty&) {
  ASSIGN_OR_RETURN(CUevent e, FindEvent(req.event()));
  events_.erase(req.event());
  return Check(drv().cuEventDestroy(e), "cuEventDestroy");
}

// ---- Device-wide ---------------------------------------------------------------

Status Session::OnDeviceSynchronize(const v1::Empty&, v1::Empty&) {
  return SyncAll();
}

Status Session::OnDeviceReset(const v1::Empty&, v1::Empty&) {
  Status st = FreeAll();
  sticky_ = OkStatus();
  deferred_ = OkStatus();
  return st;
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
  RETURN_IF_ERROR(SyncAll());
  std::erase_if(kernels_, [&](const auto& kv) { return kv.second.module == req.module(); });
  Status st = Check(drv().cuModuleUnload(it->second), "cuModuleUnload");
  modules_.erase(it);
  return st;
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
  ASSIGN_OR_RETURN(CUstream s, Enqueue(req.stream()));
  size_t size = req.params().size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<char*>(req.params().data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  return Check(drv().cuLaunchKernel(k.fn, req.grid_x(), req.grid_y(), req.grid_z(), req.block_x(),
                                    req.block_y(), req.block_z(), req.shared_bytes(), s, nullptr,
                                    size ? extra : nullptr),
               "cuLaunchKernel");
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

Status Session::FreeAll() {
  Status st = SyncAll();
  for (auto& [id, e] : events_) (void)drv().cuEventDestroy(e);
  events_.clear();
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->second.marker) (void)drv().cuEventDestroy(it->second.marker);
    it->second.marker = nullptr;
    it->second.seen.clear();
    it->second.gen = 0;
    if (it->first == 0) {
      ++it;
      continue;
    }
    {
      std::lock_guard lock(out_mu_);
      mapped_.erase(it->second.s);
    }
    env_.device->ReleaseStream(it->second.s);
    it = streams_.erase(it);
  }
  kernels_.clear();
  for (auto& [id, m] : modules_) (void)drv().cuModuleUnload(m);
  modules_.clear();
  symbols_.clear();
  for (auto& [p, size] : allocations_) (void)drv().cuMemFree(p);
  allocations_.clear();
  if (admitted_) env_.ledger->Release(id_, allocated_bytes_);
  allocated_bytes_ = 0;
  return st;
}

Status Session::Teardown() {
  {
    std::lock_guard lock(hf_mu_);
    closing_ = true;
  }
  hf_cv_.notify_all();
  channel_->Close();
  uint64_t held = allocated_bytes_;
  size_t n_alloc = allocations_.size(), n_streams = streams_.size(), n_events = events_.size();
  Status st = FreeAll();
  if (auto it = streams_.find(0); it != streams_.end()) {
    {
      std::lock_guard lock(out_mu_);
      mapped_.erase(it->second.s);
    }
    env_.device->ReleaseStream(it->second.s);
    streams_.clear();
  }
  if (arena_registered_) (void)drv().cuMemHostUnregister(channel_->arena()->base());
  if (admitted_) env_.ledger->Remove(id_);
  Log(Level::kInfo, "session",
      {{"event", "closed"},
       {"session", id_},
       {"tenant", tenant_},
       {"freed_bytes", held},
       {"freed_allocations", n_alloc},
       {"streams", n_streams},
       {"events", n_events}});
  return st;
}

}  // namespace remora::server
