// server/handlers/hello.cc - a session's start and its place among tenants: the handshake,
// admission (OnHello: who the tenant is, what its quota grants, the ledger's answer), a
// reloaded tenants file, and what the administration and monitoring calls see.
#include "server/session.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "proto/arena.h"
#include "scheduler/quota.h"
#include "server/handlers/util.h"
#include "server/log.h"

namespace remora::server {

using transport::Deadline;
using transport::Frame;

namespace {

// How long a tenant of a GPU polls for a reply before it sleeps (Welcome.reply_spin_ns): past
// the latency-critical synchronizations of tens of microseconds, and long enough that a
// futex wake-up (a few microseconds) costs a wait that outlasts it at most a few percent.
constexpr uint64_t kGpuReplySpinNs = 200'000;

// `share` as the fair queue takes it: a configured tenant's is its whole account's, which all
// its sessions share.
sched::Share QueueShareOf(sched::Share share, const SessionIdentity& who) {
  if (!who.configured.empty()) share.account = who.ledger_id;
  return share;
}

// What the scheduler's quota rules need of a declared quota.
sched::TenantQuota TenantQuotaOf(const v1::Quota& q) {
  sched::TenantQuota t;
  t.memory = {q.gpu_fraction(), q.gpu_fraction_limit(), q.gpu_memory(), q.gpu_memory_limit()};
  t.compute = q.gpu_compute();
  t.compute_limit = q.gpu_compute_limit();
  t.priority = q.priority();
  return t;
}

// sched::GrantOf over `q`; in open mode (`open` set) capped by its caps.
Result<sched::Grant> GrantOf(const v1::Quota& q, uint64_t usable, double weight,
                             sched::ProjectId project, const Admission* open) {
  sched::OpenCaps caps;
  if (open != nullptr) caps = {open->open_max_fraction, open->open_max_priority};
  return sched::GrantOf(TenantQuotaOf(q), usable, weight, project,
                        open != nullptr ? &caps : nullptr);
}

}  // namespace

// ---- Handshake -----------------------------------------------------------------

Status Session::Greet(const Frame& f) {
  Status st;
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
      if (env_.device->lost()) {
        // This process can no longer reach the GPU: leave the tenant unanswered,
        // so its stub connects again, to the server that replaces this one.
        Stop();
        return Error(err::kDevicesUnavailable, "the device was lost before this tenant's Hello");
      }
      if (attempt > 0 || !IsDeviceFault(st.code())) {
        Finish(f.header, CallClass::kSetup, st, welcome);
        return st;
      }
      streams_.clear();  // stream 0 died with the context
      output_.UnmapAll();
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
  const std::string host = hello.client_host().empty() ? peer_.address : hello.client_host();
  who_.tenant = program + "-" + std::to_string(hello.client_pid()) + "@" + host;
  who_.client_pid = hello.client_pid();
  // A local peer's user is the kernel's word for it, not the client's.
  const int64_t uid = peer_.uid >= 0 ? peer_.uid : hello.client_uid();
  who_.owner = "user " + std::to_string(uid) + "@" + host;
  auto greet = [&](const std::string& as) {
    welcome.set_protocol_version(kProtocolVersion);
    welcome.set_session_id(id_);
    welcome.set_tenant(as);
    *welcome.mutable_device() = env_.device->info();
  };
  const Admission adm = env_.admission ? env_.admission() : Admission{};
  if (hello.admin()) {
    if (adm.book && !adm.book->IsAdmin(hello.token()))
      return Error(err::kNotPermitted,
                   "administration needs the admin token of the tenants file (admin-token; "
                   "remora list --token or REMORA_TOKEN)");
    kind_ = SessionKind::kAdmin;
    greet("admin:" + who_.tenant);
    Log(Level::kInfo, "session",
        {{"event", "admin"}, {"session", id_}, {"peer", channel_->Describe()}});
    return OkStatus();
  }
  // Administration (remora list) goes on while the server drains; tenants not.
  if (!adm.refusal.empty()) return Error(err::kDevicesUnavailable, adm.refusal);
  v1::Quota q = hello.quota();
  double weight = 1;
  sched::ProjectId project = sched::kNoProject;
  if (adm.book) {
    const TenantSpec* spec = adm.book->ByToken(hello.token());
    if (spec == nullptr)
      return Error(err::kNotPermitted,
                   "this server admits the tenants of its tenants file only, and this "
                   "session's token (REMORA_TOKEN) names none of them");
    if (!hello.monitor() && !env_.join_tenant)
      return Error(err::kNotSupported, "this server cannot seat configured tenants");
    who_.owner = spec->name;
    project_ = spec->project;
    who_.tenant = spec->name + "/" + who_.tenant;
    q = spec->quota;  // the file's, whatever the client declared
    weight = spec->weight;
    project = adm.book->ProjectOf(spec->project);
  }
  ASSIGN_OR_RETURN(sched::Grant grant,
                   GrantOf(q, env_.ledger->usable(), weight, project, adm.book ? nullptr : &adm));
  const sched::Quota& quota = grant.memory;
  const sched::Share& share = grant.share;
  quota_ = quota;
  share_ = share;
  if (hello.monitor()) {
    // Holds nothing: no stream, no memory, no place in the fair queue.
    kind_ = SessionKind::kMonitor;
    greet("monitor:" + who_.tenant);
    welcome.set_memory_limit(quota.limit);
    welcome.set_memory_request(quota.request);
    Log(Level::kInfo, "session",
        {{"event", "monitor"}, {"session", id_}, {"tenant", who_.tenant}, {"owner", who_.owner}});
    return OkStatus();
  }
  // The stream first: a context an earlier tenant broke shows here, before
  // this tenant is admitted.
  ASSIGN_OR_RETURN(CUstream s, env_.device->AcquireStream(share.priority));
  streams_.Put(0, s);
  output_.Map(s);
  if (CUresult r = dev().drv().cuStreamQuery(s); r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY)
    return dev().Check(r, "cuStreamQuery");
  sched::Decision admit;
  auto admit_self = [&] {
    admit = env_.ledger->AdmitOrEvict(id_, quota, share.priority);
    return admit.status;
  };
  if (adm.book) {
    // A configured tenant's processes share its account (its first admits it).
    const std::string& name = who_.owner;
    ASSIGN_OR_RETURN(who_.ledger_id, env_.join_tenant(name, shared_from_this(), admit_self));
    who_.configured = name;
  } else {
    RETURN_IF_ERROR(admit_self());
  }
  admitted_ = true;
  if (env_.counters) env_.counters->sessions_opened.fetch_add(1, std::memory_order_relaxed);
  if (!admit.victims.empty())
    (void)Reclaim(admit.victims,
                  "has priority " + std::string(sched::PriorityName(share.priority)) +
                      " and needed room for its request of " + std::to_string(quota.request) +
                      " bytes",
                  EvictKind::kPreemption);
  std::weak_ptr<Session> weak = weak_from_this();
  std::unique_lock share_lock(grant_mu_);  // a reload may change share_ meanwhile
  work_ = env_.executor->Join(
      id_, who_.tenant,
      {.run_host_func =
           [weak](uint64_t id) {
             v1::HostFuncRun run;
             run.set_id(id);
             if (auto self = weak.lock())
               (void)self->Send(
                   {.call = static_cast<uint32_t>(CallId::kHostFuncRun), .flags = 0, .seq = 0},
                   run);
           },
       // Work the driver refused when the executor issued it: the tenant's next answered
       // call returns the error, and the log says why (once until that call takes it).
       .on_error =
           [weak, tenant = who_.tenant](const Status& st) {
             auto self = weak.lock();
             if (self && self->failures_.Record(st))
               Log(Level::kInfo, "call",
                   {{"tenant", tenant}, {"event", "issue_failed"}, {"error", st.ToString()}});
           }},
      QueueShareOf(share_, who_));
  share_lock.unlock();
  work_->AddStream(0, s, true);

  greet(who_.tenant);
  welcome.set_memory_limit(quota.limit);
  welcome.set_memory_request(quota.request);
  // The tenant's GPU is its slice: its properties say so, as cudaMemGetInfo does.
  welcome.mutable_device()->set_total_mem(env_.ledger->Slice(who_.ledger_id).total);
  if (transport::Arena* a = channel_->arena()) {
    // Registered (page-locked on a GPU) so copies to and from it are truly
    // asynchronous and single-pass, as from cudaMallocHost memory, and mapped
    // into the device's address space so kernels may dereference arena memory
    // (zero-copy and managed memory). The tenant can use that only if it mapped
    // the arena at the same address as we did (the shm handshake asks it to).
    // The staging slots now, the heap as the tenant uses it (server/arena_pins.h).
    const uint64_t staging = arena::StagingBytes(arena::kStagingSlots, arena::kStagingSlotBytes);
    const bool has_heap = a->size() > staging + arena::kPage;
    pins_ = std::make_unique<ArenaPins>(a->base(), a->size(), has_heap ? staging : 0);
    ASSIGN_OR_RETURN(arena_device_address_, pins_->PinStaging(dev()));
    if (has_heap && !hello.pins_arena_heap())  // a stub that would not ask: all of it now
      RETURN_IF_ERROR(pins_->Pin(dev(), staging, a->size() - staging, arena_device_address_));
    if (arena_device_address_ == 0)
      Log(Level::kWarn, "session",
          {{"session", id_}, {"zero_copy", "off"}, {"why", "cuMemHostGetDevicePointer failed"}});
    welcome.set_arena_device_address(arena_device_address_);
    // On a GPU the host's cores are the tenants' to wait on, as NVIDIA's runtime spins by
    // default while a process has no more contexts than the host has cores; here while the
    // tenants are no more than half the cores (the server's threads need the rest). On the
    // emulated GPU the cores run the kernels: the transport's short spin.
    if (env_.executor->long_spins() &&
        env_.executor->tenant_count() <= std::max(1u, std::thread::hardware_concurrency() / 2))
      welcome.set_reply_spin_ns(kGpuReplySpinNs);
    if (has_heap) {
      welcome.set_staging_offset(0);
      welcome.set_staging_slot_bytes(arena::kStagingSlotBytes);
      welcome.set_staging_slots(arena::kStagingSlots);
      welcome.set_heap_offset(staging);
      welcome.set_heap_bytes(a->size() - staging);
      if (hello.pins_arena_heap()) welcome.set_heap_pin_chunk_bytes(arena::kHeapPinChunkBytes);
    }
  }
  Log(Level::kInfo, "session",
      {{"event", "open"},
       {"session", id_},
       {"tenant", who_.tenant},
       {"peer", channel_->Describe()},
       {"request", quota.request},
       {"limit", quota.limit}});
  listed_.store(true, std::memory_order_release);
  return OkStatus();
}

std::optional<v1::TenantRow> Session::Row(std::chrono::steady_clock::time_point now) const {
  if (!listed()) return std::nullopt;
  v1::TenantRow r;
  r.set_session(id_);
  r.set_tenant(who_.tenant);
  r.set_calls(calls_.load(std::memory_order_relaxed));
  r.set_errors(errors_.load(std::memory_order_relaxed));
  r.set_pinned_host_bytes(pins_ ? pins_->pinned_bytes() : 0);
  r.set_peer(channel_->Describe());
  const bool reclaimed = env_.ledger->Reclaimed(who_.ledger_id);
  r.set_status(reclaimed ? "reclaimed" : closing_ ? "ending" : "running");
  // Its own bytes; what the tenant borrows is its account's (all its sessions).
  const sched::MemoryLedger::View v = env_.ledger->Slice(who_.ledger_id);
  r.set_memory_used(allocated_bytes_.load(std::memory_order_relaxed));
  {
    std::lock_guard lock(grant_mu_);
    r.set_project(project_);
    r.set_priority(sched::PriorityName(share_.priority));
    r.set_memory_request(quota_.request);
    r.set_memory_limit(quota_.limit);
    r.set_memory_borrowed(v.used > quota_.request ? v.used - quota_.request : 0);
    r.set_compute_request(share_.request);
    r.set_compute_limit(share_.limit);
  }
  if (std::optional<Executor::Usage> u = env_.executor->UsageOf(id_)) {
    r.set_gpu_ns(u->gpu_ns);
    r.set_achieved_share(u->share);
  }
  r.set_age_ms(static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now - created_).count()));
  return r;
}

void Session::ApplyBook(const TenantBook& book) {
  if (!listed() || who_.configured.empty()) return;
  const TenantSpec* spec = book.ByName(who_.configured);
  auto keep = [&](const std::string& why) {
    Log(Level::kWarn, "session",
        {{"event", "quota_kept"}, {"session", id_}, {"tenant", who_.tenant}, {"why", why}});
  };
  if (spec == nullptr)
    return keep("tenant " + who_.configured +
                " is no longer in the tenants file; its session keeps its quota until it ends");
  Result<sched::Grant> grant = GrantOf(spec->quota, env_.ledger->usable(), spec->weight,
                                       book.ProjectOf(spec->project), nullptr);
  if (!grant.ok()) return keep(grant.status().ToString());
  const sched::Quota& quota = grant->memory;
  const sched::Share& share = grant->share;
  {
    std::lock_guard lock(grant_mu_);
    const sched::Share& s = share_;
    if (quota_.request == quota.request && quota_.limit == quota.limit &&
        s.request == share.request && s.limit == share.limit && s.priority == share.priority &&
        s.project == share.project && project_ == spec->project)
      return;
  }
  // Every session of the tenant applies the same quota to its account: the
  // first changes it, the others find it as they want it.
  if (Status st = env_.ledger->Requota(who_.ledger_id, quota, share.priority); !st.ok())
    return keep("the tenants file's new quota does not fit: " + st.ToString());
  {
    std::lock_guard lock(grant_mu_);
    quota_ = quota;
    share_ = share;
    project_ = spec->project;
    env_.executor->Configure(id_, QueueShareOf(share_, who_));
  }
  Log(Level::kInfo, "session",
      {{"event", "requota"},
       {"session", id_},
       {"tenant", who_.tenant},
       {"memory_request", quota.request},
       {"memory_limit", quota.limit},
       {"compute_request", share.request},
       {"compute_limit", share.limit},
       {"priority", sched::PriorityName(share.priority)}});
}

sched::Share Session::QueueShare() const {
  std::lock_guard lock(grant_mu_);
  return QueueShareOf(share_, who_);
}

Status Session::OnEvictTenant(const v1::EvictRequest& req, v1::Empty&) {
  if (!env_.find_tenant || !env_.evict)
    return Error(err::kNotSupported, "this server cannot evict tenants");
  ASSIGN_OR_RETURN(std::vector<uint64_t> victims, env_.find_tenant(req));
  for (uint64_t victim : victims)
    env_.evict(victim, "this session was ended by an administrator (" + who_.tenant + ")",
               EvictKind::kAdmin);
  return OkStatus();
}

Status Session::OnSlice(const v1::Empty&, v1::SliceReply& rep) {
  if (env_.slice_of) rep = env_.slice_of(who_.owner);
  rep.set_tenant(who_.owner);
  const uint64_t limit = [&] {
    std::lock_guard lock(grant_mu_);
    return quota_.limit;
  }();
  rep.set_memory_total(limit);
  const uint64_t used = std::min(rep.memory_used(), limit);
  uint64_t free = limit - used;
  if (admitted_) free = std::min(free, env_.ledger->Slice(who_.ledger_id).free);
  rep.set_memory_free(free);
  return OkStatus();
}

Status Session::OnListTenants(const v1::Empty&, v1::TenantList& rep) {
  if (!env_.list_tenants) return Error(err::kNotSupported, "this server cannot list tenants");
  rep = env_.list_tenants();
  return OkStatus();
}

}  // namespace remora::server
