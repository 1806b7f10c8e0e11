// server/executor.cc - tenants' stream queues, ordering, grants and issue; waits as completions.
// The completion poller is executor_poller.cc, the GPU-time meter executor_meter.cc.
#include "server/executor.h"

#include <sched.h>

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <thread>
#include <utility>

#include "server/executor_internal.h"
#include "server/handlers/util.h"
#include "server/log.h"

namespace remora::server {

namespace {

// How long a wait spins on the calling thread before the executor's thread
// takes it over. On the emulated GPU, whose kernels run on the host's cores, a
// small copy's round trip only: a longer spin takes their CPU. On a GPU, while
// few waiters spin (the host has cores to spare), a short kernel's run: a wait
// handed over is found by a host-function doorbell and a thread wake-up, tens
// of microseconds (56.8 us for an empty launch + synchronize on an H200, 9.5
// natively).
constexpr auto kInlineSpin = std::chrono::microseconds(30);
constexpr auto kGpuSpin = std::chrono::microseconds(500);

// Waiters that may spin for kGpuSpin at once: a quarter of the host's cores.
unsigned GpuSpinners() {
  static const unsigned n = std::max(1u, std::thread::hardware_concurrency() / 4);
  return n;
}
}  // namespace

// ---- Executor ------------------------------------------------------------------

namespace {

// Waits spin long, without a doorbell, on a GPU; REMORA_WAIT_SPIN=long or short
// says otherwise (tests run the GPU's way on the emulated GPU).
bool UseLongSpins(const DriverTable& drv) {
  const char* mode = std::getenv("REMORA_WAIT_SPIN");
  if (mode != nullptr && std::string_view(mode) == "long") return true;
  if (mode != nullptr && std::string_view(mode) == "short") return false;
  return !drv.emulated;
}

// Events measure GPU time where the driver cannot say how long a stream ran.
bool UseTimingEvents(const DriverTable& drv) {
  const char* mode = std::getenv("REMORA_GPU_TIME");
  if (mode != nullptr && std::string_view(mode) == "events") return true;
  return drv.remoraEmuGetStreamBusyTime == nullptr;
}

}  // namespace

Executor::Executor(Device& device, std::unique_ptr<sched::DispatchQueue> order, FaultHook on_fault)
    : dev_(device),
      on_fault_(std::move(on_fault)),
      timing_events_(UseTimingEvents(device.drv())),
      long_spins_(UseLongSpins(device.drv())),
      order_(std::move(order)),
      polls_(std::make_unique<std::vector<Poll>>()) {
  // The doorbell rings on the driver's thread: no executor lock there, and so a
  // waiter about to sleep may miss it, which the next poll then finds.
  dev_.doorbell().Listen([this] {
    rung_.fetch_add(1, std::memory_order_release);
    cv_.notify_all();
  });
  Log(Level::kInfo, "executor",
      {{"gpu_time", timing_events_ ? "events" : "busy_clock"},
       {"waits", long_spins_ ? "spin" : "doorbell"}});
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "remora-exec");
    Loop();
  });
}

Executor::~Executor() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  dev_.doorbell().Listen(nullptr);
  // What the executor created in the current context goes with it.
  Device::Use use = dev_.Enter();
  if (pool_epoch_ == use.epoch()) {
    for (CUevent e : markers_) (void)dev_.drv().cuEventDestroy(e);
    for (CUevent e : timers_) (void)dev_.drv().cuEventDestroy(e);
  }
  if (mem_stream_ && mem_epoch_ == use.epoch()) (void)dev_.drv().cuStreamDestroy(mem_stream_);
}

std::shared_ptr<Executor::Tenant> Executor::Join(uint64_t id, std::string name, TenantHooks hooks,
                                                 const sched::Share& share) {
  std::shared_ptr<Tenant> t(new Tenant(*this, id, std::move(name), std::move(hooks)));
  std::lock_guard lock(mu_);
  tenants_[id] = t;
  order_->Configure(id, share);
  return t;
}

size_t Executor::tenant_count() const {
  std::lock_guard lock(mu_);
  return tenants_.size();
}

void Executor::Configure(uint64_t id, const sched::Share& share) {
  std::lock_guard lock(mu_);
  if (!tenants_.count(id)) return;
  order_->Configure(id, share);
  RepumpLocked();
}

void Executor::ConfigureProject(sched::ProjectId p, double share) {
  std::lock_guard lock(mu_);
  order_->ConfigureProject(p, share);
  RepumpLocked();
}

void Executor::RepumpLocked() {
  repump_ = true;
  cv_.notify_one();
}

std::optional<uint64_t> Executor::BusyNs(CUstream s) const {
  unsigned long long busy = 0;
  const DriverTable& drv = dev_.drv();
  if (!drv.remoraEmuGetStreamBusyTime || drv.remoraEmuGetStreamBusyTime(s, &busy) != CUDA_SUCCESS)
    return std::nullopt;
  return busy;
}

uint64_t Executor::StallReleases() const {
  std::lock_guard lock(mu_);
  return order_->stall_releases();
}

std::optional<Executor::Usage> Executor::UsageOf(uint64_t id) const {
  std::shared_ptr<Tenant> t;  // let go of after the lock: the last owner's destructor takes it
  std::lock_guard lock(mu_);
  auto it = tenants_.find(id);
  if (it == tenants_.end() || !(t = it->second.lock())) return std::nullopt;
  Usage u;
  u.gpu_ns = t->gpu_ns_;
  u.share = t->usage_.Share(NowNs());
  return u;
}

Result<CUstream> Executor::MemStream() {
  const uint64_t epoch = dev_.epoch();
  {
    std::lock_guard lock(mem_mu_);
    if (mem_epoch_ == epoch && mem_stream_) return mem_stream_;
  }
  CUstream s = nullptr;
  RETURN_IF_ERROR(
      dev_.Check(dev_.drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  std::lock_guard lock(mem_mu_);
  if (mem_epoch_ == epoch && mem_stream_) {  // another thread's came first
    (void)dev_.drv().cuStreamDestroy(s);
    return mem_stream_;
  }
  mem_stream_ = s;  // an older epoch's died with its context
  mem_epoch_ = epoch;
  return s;
}

// Stream-ordered allocation, because cuMemFree waits for the whole device (the
// work of every tenant) and a tenant's free must wait for its own work at most.
Result<CUdeviceptr> Executor::Allocate(uint64_t bytes) {
  CUdeviceptr p = 0;
  if (pools_.load(std::memory_order_relaxed)) {
    ASSIGN_OR_RETURN(CUstream s, MemStream());
    CUresult r = dev_.Timed("cuMemAllocAsync", [&] {
      CUresult a = dev_.drv().cuMemAllocAsync(&p, bytes, s);
      return a == CUDA_SUCCESS ? dev_.drv().cuStreamSynchronize(s) : a;
    });
    if (r == CUDA_SUCCESS) return p;
    if (p != 0) return dev_.Check(r, "cuStreamSynchronize");
    if (r != CUDA_ERROR_NOT_SUPPORTED) return dev_.Check(r, "cuMemAllocAsync");
    if (pools_.exchange(false))
      Log(Level::kWarn, "executor",
          {{"event", "no_memory_pools"}, {"why", "cuMemAllocAsync is not supported; frees wait"}});
  }
  RETURN_IF_ERROR(dev_.Check(dev_.drv().cuMemAlloc(&p, bytes), "cuMemAlloc"));
  return p;
}

Status Executor::Free(CUdeviceptr p) {
  if (!pools_.load(std::memory_order_relaxed))
    return dev_.Check(dev_.drv().cuMemFree(p), "cuMemFree");
  ASSIGN_OR_RETURN(CUstream s, MemStream());
  return dev_.Check(dev_.drv().cuMemFreeAsync(p, s), "cuMemFreeAsync");
}

uint64_t Executor::NowNs() const {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

bool Executor::GrantTo(Tenant& t) {
  std::lock_guard lock(mu_);
  const uint64_t now = NowNs();
  if (const uint32_t n = order_->Grant(t.id_, now, kGrant); n > 0) {
    // One is the caller's, for the item it asked for.
    if (n > 1) {
      t.permits_.fetch_add(n - 1, std::memory_order_relaxed);
      granted_.insert(&t);
    }
    return true;
  }
  // It waits its turn: grants others hold would go before it, so they come back. The
  // executor's thread looks for a Next unless it was asked to already and nothing changed
  // since (a tenant at its own in-flight bound refused item after item: each had woken that
  // thread for a round of event queries and a Next that handed out nothing).
  const bool asked = order_->IsReady(t.id_);
  order_->Ready(t.id_, now);
  if (RevokeGrantsLocked() || !asked) RepumpLocked();
  return false;
}

bool Executor::ReturnGrantLocked(Tenant& t) {
  const uint32_t n = t.permits_.exchange(0, std::memory_order_relaxed);
  if (n > 0) order_->Return(t.id_, n);
  granted_.erase(&t);
  return n > 0;
}

bool Executor::RevokeGrantsLocked() {
  bool any = false;
  while (!granted_.empty()) any |= ReturnGrantLocked(**granted_.begin());
  return any;
}

void Executor::Pump() {
  for (;;) {
    std::shared_ptr<Tenant> t;  // declared first: let go of with no lock held
    {
      std::lock_guard lock(mu_);
      std::optional<sched::TenantId> id = order_->Next(NowNs());
      if (!id) return;
      auto it = tenants_.find(*id);
      if (it == tenants_.end() || !(t = it->second.lock())) {
        order_->Return(*id, 1);
        continue;
      }
      t->permits_.fetch_add(1, std::memory_order_relaxed);
      granted_.insert(t.get());
    }
    std::lock_guard lock(t->mu_);
    t->IssueReadyLocked();
  }
}

// ---- Tenant --------------------------------------------------------------------

Executor::Tenant::Tenant(Executor& ex, uint64_t id, std::string name, TenantHooks hooks)
    : ex_(ex), id_(id), name_(std::move(name)), hooks_(std::move(hooks)) {}

Executor::Tenant::~Tenant() {
  std::lock_guard lock(ex_.mu_);
  ex_.tenants_.erase(id_);
  ex_.granted_.erase(this);
  ex_.order_->Remove(id_);
}

void Executor::Tenant::AddStream(uint64_t id, CUstream s, bool blocking) {
  std::lock_guard lock(mu_);
  auto st = std::make_unique<Stream>();
  st->id = id;
  st->s = s;
  ordering_.Add(id, blocking);
  // A pooled stream's busy time includes its earlier tenants' work.
  st->busy = BusyClock(ex_.BusyNs(s).value_or(0));
  streams_[id] = std::move(st);
}

bool Executor::Tenant::HasStream(uint64_t id) const {
  std::lock_guard lock(mu_);
  return ordering_.Has(id);
}

void Executor::Tenant::RemoveStream(uint64_t id, std::function<void(CUstream)> released) {
  {
    std::lock_guard lock(mu_);
    if (!ordering_.Has(id)) return;
    ordering_.Remove(id);
  }
  WhenDone(id, [self = shared_from_this(), id, released = std::move(released)](const Status&) {
    std::unique_ptr<Stream> gone;
    {
      std::lock_guard lock(self->mu_);
      auto it = self->streams_.find(id);
      if (it == self->streams_.end()) return;
      gone = std::move(it->second);
      self->streams_.erase(it);
      self->ordering_.Erase(id);
    }
    self->ex_.ReleaseTimer(gone->group_start, gone->group_epoch);
    for (auto [a, b] : gone->group_done) {
      self->ex_.ReleaseTimer(a, gone->group_epoch);
      self->ex_.ReleaseTimer(b, gone->group_epoch);
    }
    if (gone->order_marker) (void)self->ex_.dev_.drv().cuEventDestroy(gone->order_marker);
    released(gone->s);
  });
}

Result<uint64_t> Executor::Tenant::EnqueueLocked(uint64_t stream, Item item,
                                                 std::optional<CUevent> waits, bool owner) {
  if (!(owner ? streams_.count(stream) > 0 : ordering_.Has(stream)))
    return Error(err::kInvalidResourceHandle, "stream is not one of this tenant's");
  const uint64_t index = *ordering_.Push(stream, std::move(item), waits);
  queued_.fetch_add(1, std::memory_order_relaxed);
  IssueReadyLocked();
  return index;
}

bool Executor::Tenant::TakePermit() {
  uint32_t p = permits_.load(std::memory_order_relaxed);
  while (p > 0 && !permits_.compare_exchange_weak(p, p - 1, std::memory_order_relaxed)) {
  }
  return p > 0;
}

// The hot path: the tenant's own thread issues while its grant lasts. What it held at its
// in-flight bound goes from here too, as room frees, or from the executor's thread (Pump).
void Executor::Tenant::IssueReadyLocked() {
  while (std::optional<uint64_t> ready = ordering_.NextReady()) {
    if (!TakePermit() && !ex_.GrantTo(*this)) {
      PauseGroupsLocked();
      return;
    }
    IssueLocked(*streams_.at(*ready));
  }
}

Status Executor::Tenant::OrderLocked(Stream& st) {
  const DriverTable& drv = ex_.dev_.drv();
  return ordering_.OrderOnDevice(st.id, [&](uint64_t tied) -> Status {
    Stream& other = *streams_.at(tied);
    if (!other.order_marker)
      RETURN_IF_ERROR(ex_.dev_.Check(
          drv.cuEventCreate(&other.order_marker, CU_EVENT_DISABLE_TIMING), "cuEventCreate"));
    RETURN_IF_ERROR(
        ex_.dev_.Check(drv.cuEventRecord(other.order_marker, other.s), "cuEventRecord"));
    CutGroupLocked(st);
    return ex_.dev_.Check(drv.cuStreamWaitEvent(st.s, other.order_marker, 0), "cuStreamWaitEvent");
  });
}

namespace {

Status IssueLaunch(Device& dev, CUstream s, const Executor::LaunchArgs& a, uint64_t tenant) {
  const DriverTable& drv = dev.drv();
  // The kernel's device-side malloc draws on its tenant's heap where the driver keeps them
  // apart; the calling thread's other launches (the server's own) on the context's.
  struct HeapOwner {
    const DriverTable& drv;
    explicit HeapOwner(const DriverTable& d, uint64_t owner) : drv(d) {
      if (drv.remoraEmuSetLaunchHeapOwner) (void)drv.remoraEmuSetLaunchHeapOwner(owner);
    }
    ~HeapOwner() {
      if (drv.remoraEmuSetLaunchHeapOwner) (void)drv.remoraEmuSetLaunchHeapOwner(0);
    }
  } owner(drv, tenant);
  // A cooperative launch takes one pointer per parameter, never a packed buffer.
  std::vector<void*> args;
  if (a.cooperative) {
    args.reserve(a.cooperative->size());
    for (uint32_t off : *a.cooperative) args.push_back(const_cast<char*>(a.params.data()) + off);
  }
  size_t size = a.params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<char*>(a.params.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  void** packed = a.cooperative || size == 0 ? nullptr : extra;
  void** params = args.empty() ? nullptr : args.data();
  if (a.cluster[0] > 1 || a.cluster[1] > 1 || a.cluster[2] > 1) {
    CUlaunchAttribute attrs[2] = {};
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim.x = a.cluster[0];
    attrs[0].value.clusterDim.y = a.cluster[1];
    attrs[0].value.clusterDim.z = a.cluster[2];
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[1].value.cooperative = 1;
    CUlaunchConfig cfg = {};
    cfg.gridDimX = a.grid[0], cfg.gridDimY = a.grid[1], cfg.gridDimZ = a.grid[2];
    cfg.blockDimX = a.block[0], cfg.blockDimY = a.block[1], cfg.blockDimZ = a.block[2];
    cfg.sharedMemBytes = a.shared;
    cfg.hStream = s;
    cfg.attrs = attrs;
    cfg.numAttrs = a.cooperative ? 2 : 1;
    return dev.Check(drv.cuLaunchKernelEx(&cfg, a.fn, params, packed), "cuLaunchKernelEx");
  }
  if (a.cooperative)
    return dev.Check(
        drv.cuLaunchCooperativeKernel(a.fn, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1],
                                      a.block[2], a.shared, s, params),
        "cuLaunchCooperativeKernel");
  return dev.Check(drv.cuLaunchKernel(a.fn, a.grid[0], a.grid[1], a.grid[2], a.block[0], a.block[1],
                                      a.block[2], a.shared, s, nullptr, packed),
                   "cuLaunchKernel");
}

}  // namespace

void Executor::Tenant::IssueLocked(Stream& st) {
  const DriverTable& drv = ex_.dev_.drv();
  Item& item = ordering_.Head(st.id).payload;
  Status s = OrderLocked(st);
  if (s.ok()) {
    // The next item starts the next segment, after a wait for another stream, for
    // this one to finish (a synchronization) or for a value in memory: the stream
    // may stand idle meanwhile.
    if (item.kind == Item::Kind::kWaitEvent || item.kind == Item::Kind::kWait || item.idles)
      CutGroupLocked(st);
    else
      StartGroupLocked(st);
    switch (item.kind) {
      case Item::Kind::kIssue:
        s = item.issue(st.s);
        break;
      case Item::Kind::kLaunch:
        s = IssueLaunch(ex_.dev_, st.s, item.Args(), id_);
        break;
      case Item::Kind::kRecord:
        if (!item.waiters.empty()) ex_.RingWhenReached(st.s);
        s = ex_.dev_.Check(drv.cuEventRecord(item.event, st.s), "cuEventRecord");
        for (Completion& w : item.waiters)
          ex_.Watch(s.ok() ? Poll::Of(ex_.dev_.epoch(), item.event, false, std::move(w), name_)
                           : Poll::Decided(ex_.dev_.epoch(), std::move(w), name_, s));
        break;
      case Item::Kind::kWaitEvent:
        s = ex_.dev_.Check(drv.cuStreamWaitEvent(st.s, item.event, 0), "cuStreamWaitEvent");
        break;
      case Item::Kind::kWait:
        WatchStreamLocked(st, std::move(item.done));
        break;
      case Item::Kind::kHostFunc: {
        // Held (not popped) until the tenant answers; counted as issued then.
        const uint64_t id = item.host_id;
        ordering_.Hold(st.id, id);
        auto self = weak_from_this();
        WatchStreamLocked(st, [self, id, gate = item.gate](const Status& reached) {
          auto t = self.lock();
          if (!t) return;
          if (gate) {
            if (gate->Arrive(/*reached=*/true)) t->HostFuncDone(id);
          } else if (reached.ok()) {
            t->hooks_.run_host_func(id);
          } else {
            t->HostFuncDone(id);  // never runs: the context broke first
          }
        });
        CountIssuedLocked(st);
        return;
      }
    }
  }
  if (!s.ok() && hooks_.on_error) hooks_.on_error(s);
  CountIssuedLocked(st);
  ordering_.Issued(st.id);
  queued_.fetch_sub(1, std::memory_order_release);  // after the driver has it: see AllIssued
}

void Executor::Tenant::WatchStreamLocked(Stream& st, Completion then, bool lazy) {
  if (!lazy) ex_.RingWhenReached(st.s);
  Result<CUevent> m = ex_.AcquireMarker();
  Status r =
      m.ok() ? ex_.dev_.Check(ex_.dev_.drv().cuEventRecord(*m, st.s), "cuEventRecord") : m.status();
  Poll p = r.ok() ? Poll::Of(ex_.dev_.epoch(), *m, true, std::move(then), name_)
                  : Poll::Decided(ex_.dev_.epoch(), std::move(then), name_, r);
  p.lazy = lazy;
  ex_.Watch(std::move(p));
}

Status Executor::Tenant::Submit(uint64_t stream, Issue issue, bool idles) {
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kIssue);
  item.issue = std::move(issue);
  item.idles = idles;
  return EnqueueLocked(stream, std::move(item)).status();
}

Status Executor::Tenant::Launch(uint64_t stream, const LaunchArgs& args) {
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kLaunch);
  item.launch = args;
  ASSIGN_OR_RETURN(uint64_t index, EnqueueLocked(stream, std::move(item)));
  if (auto* queued = ordering_.Find(stream, index)) queued->payload.Keep();
  return OkStatus();
}

Status Executor::Tenant::Record(uint64_t stream, CUevent e) {
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kRecord);
  item.event = e;
  ASSIGN_OR_RETURN(uint64_t index, EnqueueLocked(stream, std::move(item)));
  ordering_.Recorded(e, stream, index);
  return OkStatus();
}

Status Executor::Tenant::WaitEvent(uint64_t stream, CUevent e) {
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kWaitEvent);
  item.event = e;
  return EnqueueLocked(stream, std::move(item), e).status();
}

Status Executor::Tenant::HostFunc(uint64_t stream, uint64_t id) {
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kHostFunc);
  item.host_id = id;
  return EnqueueLocked(stream, std::move(item)).status();
}

Result<std::function<void()>> Executor::Tenant::Gate(uint64_t stream) {
  constexpr uint64_t kGateIds = uint64_t{1} << 63;  // apart from the tenant's host functions
  std::lock_guard lock(mu_);
  Item item = Item::Of(Item::Kind::kHostFunc);
  item.host_id = kGateIds | next_gate_++;
  item.gate = std::make_shared<GateState>();
  auto open = [self = weak_from_this(), id = item.host_id, gate = item.gate] {
    if (!gate->Arrive(/*reached=*/false)) return;
    if (auto t = self.lock()) t->HostFuncDone(id);
  };
  RETURN_IF_ERROR(EnqueueLocked(stream, std::move(item)).status());
  return std::function<void()>(std::move(open));
}

void Executor::Tenant::HostFuncDone(uint64_t id) {
  std::lock_guard lock(mu_);
  if (!ordering_.Release(id)) return;
  queued_.fetch_sub(1, std::memory_order_release);
  IssueReadyLocked();
}

void Executor::Tenant::WhenDone(std::optional<uint64_t> stream, Completion done, Wait how) {
  if (!stream) {
    // Every stream: one completion after the last, with the first error.
    struct Join {
      std::mutex mu;
      size_t left = 0;
      Status first;
      Completion done;
    };
    auto join = std::make_shared<Join>();
    join->done = std::move(done);
    std::vector<uint64_t> ids;
    {
      std::lock_guard lock(mu_);
      for (const auto& [id, st] : streams_) ids.push_back(id);
    }
    join->left = ids.size() + 1;
    auto part = [join](const Status& st) {
      Completion run;
      Status first;
      {
        std::lock_guard lock(join->mu);
        if (!st.ok() && join->first.ok()) join->first = st;
        if (--join->left != 0) return;
        run = std::move(join->done);
        first = join->first;
      }
      run(first);
    };
    for (uint64_t id : ids) WhenDone(id, part, how);
    part(OkStatus());
    return;
  }
  std::unique_lock lock(mu_);
  auto it = streams_.find(*stream);
  if (it == streams_.end()) {
    lock.unlock();
    done(OkStatus());  // gone: its work is done
    return;
  }
  Stream& st = *it->second;
  if (!ordering_.Empty(st.id)) {  // a going stream too: RemoveStream waits for it this way
    Item item = Item::Of(Item::Kind::kWait);
    item.done = std::move(done);
    (void)EnqueueLocked(*stream, std::move(item), std::nullopt, /*owner=*/true);
    return;
  }
  // Everything is issued: mark the spot and spin here before the executor's
  // thread takes the wait over. The doorbell that wakes that thread is a host
  // function just before the marker (after it, a query right after the wait
  // would find it still queued); on a GPU it delays the marker by its trip
  // through the driver's callback thread, so a waiter that spins long there
  // goes without it.
  const bool gpu_spin = how == Wait::kSpin && ex_.long_spins_;
  const bool long_spin =
      gpu_spin && ex_.spinners_.fetch_add(1, std::memory_order_relaxed) < GpuSpinners();
  Result<CUevent> m = ex_.AcquireMarker();
  if (!long_spin) ex_.RingWhenReached(st.s);
  Status r =
      m.ok() ? ex_.dev_.Check(ex_.dev_.drv().cuEventRecord(*m, st.s), "cuEventRecord") : m.status();
  lock.unlock();
  const uint64_t since = ex_.NowNs();
  CUresult q = CUDA_ERROR_NOT_READY;
  if (r.ok()) {
    const auto until =
        std::chrono::steady_clock::now() +
        (how == Wait::kSpin ? (long_spin ? kGpuSpin : kInlineSpin) : std::chrono::microseconds(0));
    for (;;) {
      q = ex_.dev_.drv().cuEventQuery(*m);
      if (q != CUDA_ERROR_NOT_READY || std::chrono::steady_clock::now() >= until) break;
      sched_yield();
    }
  }
  if (gpu_spin) ex_.spinners_.fetch_sub(1, std::memory_order_relaxed);
  if (!r.ok()) {
    done(r);
    return;
  }
  const uint64_t epoch = ex_.dev_.epoch();
  if (q != CUDA_ERROR_NOT_READY) {
    Status st_done = ex_.dev_.Check(q, "waiting for the device");
    if (st_done.ok()) ex_.ReleaseMarker(*m, epoch);
    done(st_done);
    return;
  }
  Poll p = Poll::Of(epoch, *m, true, std::move(done), name_);
  p.unannounced = long_spin;  // it rang no doorbell
  p.since = since;
  ex_.Watch(std::move(p));
}

void Executor::Tenant::WhenEventDone(CUevent e, Completion done) {
  std::lock_guard lock(mu_);
  if (std::optional<std::pair<uint64_t, uint64_t>> r = ordering_.PendingRecord(e)) {
    // The record is still queued: wait with it, for it.
    if (auto* queued = ordering_.Find(r->first, r->second)) {
      queued->payload.waiters.push_back(std::move(done));
      return;
    }
  }
  Poll p = Poll::Of(ex_.dev_.epoch(), e, false, std::move(done), name_);
  p.unannounced = true;  // the tenant's record rang no doorbell
  p.since = ex_.NowNs();
  ex_.Watch(std::move(p));
}

Status Executor::Tenant::Query(uint64_t stream) {
  std::unique_lock lock(mu_);
  auto it = streams_.find(stream);
  if (it == streams_.end())
    return Error(err::kInvalidResourceHandle, "stream is not one of this tenant's");
  if (!ordering_.Empty(stream)) return Error(err::kNotReady, "work is queued");
  CUstream s = it->second->s;
  lock.unlock();
  return ex_.dev_.Check(ex_.dev_.drv().cuStreamQuery(s), "cuStreamQuery");
}

Status Executor::Tenant::QueryEvent(CUevent e) {
  {
    std::lock_guard lock(mu_);
    if (ordering_.PendingRecord(e)) return Error(err::kNotReady, "the event's record is queued");
  }
  return ex_.dev_.Check(ex_.dev_.drv().cuEventQuery(e), "cuEventQuery");
}

void Executor::Tenant::ForgetEvent(CUevent e) {
  std::lock_guard lock(mu_);
  ordering_.ForgetEvent(e);
}

void Executor::Tenant::DropLocked(Stream& st, const Status& why) {
  auto fail = [&](Completion& done) {
    ex_.Watch(Poll::Decided(ex_.dev_.epoch(), std::move(done), name_, why));
  };
  size_t dropped = 0;
  ordering_.Drain(st.id, [&](auto& queued) {
    Item& item = queued.payload;
    if (item.kind == Item::Kind::kWait) fail(item.done);
    for (Completion& w : item.waiters) fail(w);
    ++dropped;
  });
  queued_.fetch_sub(dropped, std::memory_order_release);
}

void Executor::Tenant::Abandon(const Status& why) {
  std::lock_guard lock(mu_);
  for (auto& [id, st] : streams_) DropLocked(*st, why);
  std::lock_guard ex_lock(ex_.mu_);
  ex_.ReturnGrantLocked(*this);
  ex_.order_->Remove(id_);
}

void Executor::Tenant::CancelIssued() {
  const CancelStreamFn cancel = ex_.dev_.drv().remoraEmuCancelStream;
  if (!cancel) return;
  std::vector<CUstream> mine;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, st] : streams_)
      if (st->s) mine.push_back(st->s);
  }
  for (CUstream s : mine) (void)cancel(s);
}

void Executor::Tenant::Reset(const Status& why) {
  Abandon(why);
  std::lock_guard lock(mu_);
  streams_.clear();  // their handles died with the context: never passed to the driver
  ordering_.Clear();
}

}  // namespace remora::server
