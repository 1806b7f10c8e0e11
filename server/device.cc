// server/device.cc - context, description and stream pool of the server's GPU.
#include "server/device.h"

#include <algorithm>
#include <chrono>
#include <list>
#include <utility>

#include "server/log.h"

namespace remora::server {

// Bytes kept back from tenants for the context itself (module images, stacks, the heap).
static constexpr uint64_t kContextReserve = 256ull << 20;

Result<std::unique_ptr<Device>> Device::Open(std::shared_ptr<DriverTable> drv) {
  auto d = std::make_unique<Device>();
  d->drv_ = std::move(drv);
  const DriverTable& t = *d->drv_;
  RETURN_IF_ERROR(d->Check(t.cuDeviceGet(&d->dev_, 0), "cuDeviceGet"));
  RETURN_IF_ERROR(
      d->Check(t.cuDevicePrimaryCtxRetain(&d->ctx_, d->dev_), "cuDevicePrimaryCtxRetain"));
  RETURN_IF_ERROR(d->MakeCurrent());
  d->ApplyLimits();

  char name[256] = {};
  RETURN_IF_ERROR(d->Check(t.cuDeviceGetName(name, sizeof name, d->dev_), "cuDeviceGetName"));
  size_t total = 0;
  RETURN_IF_ERROR(d->Check(t.cuDeviceTotalMem(&total, d->dev_), "cuDeviceTotalMem"));
  CUuuid uuid{};
  (void)t.cuDeviceGetUuid(&uuid, d->dev_);
  int version = 0;
  (void)t.cuDriverGetVersion(&version);
  d->info_.set_name(name);
  d->info_.set_total_mem(total);
  d->info_.set_uuid(std::string(uuid.bytes, sizeof uuid.bytes));
  d->info_.set_driver_version(version);
  d->info_.set_emulated(t.emulated);
  for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int v = 0;
    if (a == 0 ||
        t.cuDeviceGetAttribute(&v, static_cast<CUdevice_attribute>(a), d->dev_) != CUDA_SUCCESS)
      v = 0;
    d->info_.add_attributes(v);
  }
  d->DescribeVmm();
  int least = 0, greatest = 0;
  RETURN_IF_ERROR(
      d->Check(t.cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange"));
  d->priorities_ = {least, greatest};
  size_t free = 0, tot = 0;
  RETURN_IF_ERROR(d->Check(t.cuMemGetInfo(&free, &tot), "cuMemGetInfo"));
  d->usable_ = free > kContextReserve ? free - kContextReserve : 0;
  Log(Level::kInfo, "device",
      {{"name", name},
       {"total_mem", total},
       {"usable_mem", d->usable_},
       {"driver", t.library},
       {"emulated", t.emulated ? "yes" : "no"}});
  return d;
}

// What tenants see of virtual memory management: the driver's granularity, and no shareable
// handle types (a tenant's allocations are never exported: the server holds them).
void Device::DescribeVmm() {
  const CUmemAllocationProp prop = DeviceMemory();
  size_t granularity = 0;
  auto& attrs = *info_.mutable_attributes();
  if (attrs[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] == 0 ||
      drv_->cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
          CUDA_SUCCESS)
    granularity = 0;
  info_.set_vmm_granularity(granularity);
  attrs[CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED] = granularity != 0;
  for (CUdevice_attribute a : {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                               CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
                               CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED,
                               CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED})
    attrs[a] = 0;
}

Device::~Device() {
  if (!ctx_) return;
  if (MakeCurrent().ok()) {
    for (const Pooled& p : pool_) (void)drv_->cuStreamDestroy(p.stream);
    for (const Pooled& p : draining_) (void)drv_->cuStreamDestroy(p.stream);
    if (rest_ != nullptr) (void)drv_->cuGreenCtxDestroy(rest_);
  }
  (void)drv_->cuDevicePrimaryCtxRelease(dev_);
}

Status Device::MakeCurrent() const {
  return Check(drv_->cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

namespace {
// Streams kept for reuse once their tenants are gone; the rest are destroyed,
// so a crowd of tenants that came and went leaves nothing behind.
constexpr size_t kMaxPooledStreams = 32;
}  // namespace

Result<CUstream> Device::AcquireStream(sched::Priority cls, std::optional<int> asked) {
  const int priority =
      sched::GpuStreamPriority(cls, asked.value_or(priorities_.least), priorities_);
  {
    std::lock_guard lock(pool_mu_);
    ReapDrainedLocked();
    auto it = std::find_if(pool_.begin(), pool_.end(),
                           [&](const Pooled& p) { return p.cls == cls && p.priority == priority; });
    if (it != pool_.end()) {
      CUstream s = it->stream;
      pool_.erase(it);
      class_of_[s] = {cls, priority};
      return s;
    }
  }
  CUstream s = nullptr;
  if (rest_ != nullptr && cls != sched::Priority::kHigh) {
    RETURN_IF_ERROR(Check(drv_->cuGreenCtxStreamCreate(&s, rest_, CU_STREAM_NON_BLOCKING, priority),
                          "cuGreenCtxStreamCreate"));
  } else {
    RETURN_IF_ERROR(Check(drv_->cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, priority),
                          "cuStreamCreateWithPriority"));
  }
  std::lock_guard lock(pool_mu_);
  class_of_[s] = {cls, priority};
  return s;
}

Result<CUfunction> Device::OwnKernel(const char* ptx, const char* name) {
  std::lock_guard lock(own_mu_);
  auto& [loaded_in, module] = own_modules_[ptx];
  if (module == nullptr || loaded_in != epoch()) {
    module = nullptr;  // an older epoch's died with its context
    RETURN_IF_ERROR(Check(drv_->cuModuleLoadData(&module, ptx), "cuModuleLoadData (own kernels)"));
    loaded_in = epoch();
  }
  CUfunction fn = nullptr;
  RETURN_IF_ERROR(Check(drv_->cuModuleGetFunction(&fn, module, name), "cuModuleGetFunction"));
  return fn;
}

Status Device::ReserveSms(unsigned count) {
  if (count == 0) return OkStatus();
  CUdevResource all{}, reserved{}, rest{};
  unsigned groups = 1;
  RETURN_IF_ERROR(Check(drv_->cuDeviceGetDevResource(dev_, &all, CU_DEV_RESOURCE_TYPE_SM),
                        "cuDeviceGetDevResource"));
  RETURN_IF_ERROR(
      Check(drv_->cuDevSmResourceSplitByCount(&reserved, &groups, &all, &rest, 0, count),
            "cuDevSmResourceSplitByCount"));
  if (groups != 1 || rest.sm.smCount == 0)
    return Error(err::kInvalidValue, std::to_string(count) + " of the device's " +
                                         std::to_string(all.sm.smCount) +
                                         " multiprocessors leave none for the other classes");
  CUdevResourceDesc desc = nullptr;
  RETURN_IF_ERROR(
      Check(drv_->cuDevResourceGenerateDesc(&desc, &rest, 1), "cuDevResourceGenerateDesc"));
  RETURN_IF_ERROR(Check(drv_->cuGreenCtxCreate(&rest_, desc, dev_, CU_GREEN_CTX_DEFAULT_STREAM),
                        "cuGreenCtxCreate"));
  Log(Level::kInfo, "device",
      {{"event", "sm_reservation"},
       {"reserved", int64_t(reserved.sm.smCount)},
       {"other_classes", int64_t(rest.sm.smCount)},
       {"of", int64_t(all.sm.smCount)}});
  return OkStatus();
}

void Device::ReapDrainedLocked() {
  // Streams given back while their last work ran join the pool once done.
  std::erase_if(draining_, [&](const Pooled& p) {
    CUresult r = drv_->cuStreamQuery(p.stream);
    if (r == CUDA_ERROR_NOT_READY) return false;
    if (r == CUDA_SUCCESS && pool_.size() < kMaxPooledStreams)
      pool_.push_back(p);
    else
      (void)drv_->cuStreamDestroy(p.stream);  // failed work, or enough kept for reuse
    return true;
  });
}

void Device::ReleaseStream(CUstream s) {
  std::lock_guard lock(pool_mu_);
  auto it = class_of_.find(s);
  if (it == class_of_.end()) return;  // not ours, or from a context since rebuilt
  draining_.push_back({s, it->second.first, it->second.second});
  class_of_.erase(it);
  ReapDrainedLocked();
}

void Device::WhenIdle(std::vector<std::function<void()>> work, uint64_t epoch) {
  if (work.empty()) return;
  std::lock_guard lock(idle_mu_);
  for (auto& w : work) idle_work_.emplace_back(epoch, std::move(w));
  idle_pending_.store(true, std::memory_order_release);
}

bool Device::RunWhenIdle() {
  if (!HasIdleWork()) return false;
  // At most one look per millisecond: a look queries every stream.
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::steady_clock::now().time_since_epoch())
                             .count();
  if (now_us - idle_looked_us_.load(std::memory_order_relaxed) < 1000) return true;
  idle_looked_us_.store(now_us, std::memory_order_relaxed);
  {
    std::lock_guard lock(pool_mu_);
    ReapDrainedLocked();
    if (!draining_.empty()) return true;
    for (const auto& [s, kind] : class_of_)
      if (drv_->cuStreamQuery(s) == CUDA_ERROR_NOT_READY) return true;
  }
  std::vector<std::pair<uint64_t, std::function<void()>>> work;
  {
    std::lock_guard lock(idle_mu_);
    work.swap(idle_work_);
    idle_pending_.store(false, std::memory_order_release);
  }
  const uint64_t now = epoch();
  for (auto& [at, w] : work)
    if (at == now) w();
  return false;
}

Device::Doorbell::Line& Device::Doorbell::MakeLine() {
  static std::mutex mu;
  static std::list<Line> lines;  // one per Device ever opened: a few
  std::lock_guard lock(mu);
  return lines.emplace_back();
}

void Device::Doorbell::Listen(std::function<void()> listener) {
  std::lock_guard lock(line_.mu);
  line_.listener = std::move(listener);
}

void Device::Doorbell::Ring(CUstream s) {
  (void)device_.drv().cuLaunchHostFunc(s, &Doorbell::Fire, &line_);
}

void CUDA_CB Device::Doorbell::Fire(void* line) {
  Line& l = *static_cast<Line*>(line);
  std::lock_guard lock(l.mu);
  if (l.listener) l.listener();
}

Device::Use::~Use() {
  if (!d_) return;
  if (d_->users_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
      d_->closing_.load(std::memory_order_seq_cst)) {
    std::lock_guard lock(d_->gate_mu_);
    d_->gate_cv_.notify_all();
  }
}

Device::Use Device::Enter() {
  for (;;) {
    // seq_cst on both sides (Dekker): either Recover sees our increment, or we
    // see its closing_ and step back.
    users_.fetch_add(1, std::memory_order_seq_cst);
    if (!closing_.load(std::memory_order_seq_cst)) [[likely]] {
      Use use(this, epoch_.load(std::memory_order_acquire));
      // Sessions move between serving threads: the context must be current
      // on whichever thread enters, in the context of this epoch.
      thread_local const Device* current_device = nullptr;
      thread_local uint64_t current_epoch = 0;
      if (current_device != this || current_epoch != use.epoch()) {
        if (MakeCurrent().ok()) {
          current_device = this;
          current_epoch = use.epoch();
        }
      }
      return use;
    }
    if (users_.fetch_sub(1, std::memory_order_seq_cst) == 1) {
      std::lock_guard lock(gate_mu_);
      gate_cv_.notify_all();
    }
    std::unique_lock lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return !closing_.load(std::memory_order_seq_cst); });
  }
}

Device::Fault Device::last_fault() const {
  std::lock_guard lock(gate_mu_);
  return last_fault_;
}

Status Device::Recover(uint64_t seen, const std::string& culprit, const Status& fault) {
  std::lock_guard one(recover_mu_);
  if (epoch() != seen) return OkStatus();  // someone else already rebuilt it
  const auto start = std::chrono::steady_clock::now();
  closing_.store(true, std::memory_order_seq_cst);
  {
    std::unique_lock lock(gate_mu_);
    gate_cv_.wait(lock, [&] { return users_.load(std::memory_order_seq_cst) == 0; });
  }
  // Every stream, event, module and allocation of the old context dies here.
  Status st = Check(drv_->cuDevicePrimaryCtxReset(dev_), "cuDevicePrimaryCtxReset");
  if (st.ok()) st = Check(drv_->cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain");
  if (st.ok()) st = MakeCurrent();
  if (st.ok()) ApplyLimits();
  if (!st.ok()) lost_.store(true, std::memory_order_release);
  {
    std::lock_guard lock(pool_mu_);
    pool_.clear();
    draining_.clear();
    class_of_.clear();
    // The partition died with its context: every class runs on the whole device from now.
    rest_ = nullptr;
  }
  {
    std::lock_guard lock(gate_mu_);
    last_fault_ = Fault{culprit, fault};
    epoch_.fetch_add(1, std::memory_order_acq_rel);
    closing_.store(false, std::memory_order_seq_cst);
  }
  gate_cv_.notify_all();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  Log(st.ok() ? Level::kWarn : Level::kError, "device",
      {{"event", "recovered"},
       {"culprit", culprit},
       {"fault", fault.ToString()},
       {"epoch", epoch()},
       {"took_ms", ms},
       {"status", st.ok() ? std::string("ok") : st.ToString()}});
  return st;
}

void Device::ApplyLimits() {
  const auto apply = [&](CUlimit limit, uint64_t bytes, const char* event) {
    if (const CUresult r = drv_->cuCtxSetLimit(limit, bytes); r != CUDA_SUCCESS)
      Log(Level::kWarn, "device",
          {{"event", event}, {"bytes", bytes}, {"code", static_cast<int>(r)}});
  };
  apply(CU_LIMIT_MALLOC_HEAP_SIZE, kSharedHeapBytes, "heap_limit_refused");
  std::lock_guard lock(stack_mu_);
  if (stack_ != 0) apply(CU_LIMIT_STACK_SIZE, stack_, "stack_limit_refused");
}

Status Device::RaiseStack(uint64_t bytes) {
  std::lock_guard lock(stack_mu_);
  if (bytes <= stack_) return OkStatus();
  size_t now = 0;
  RETURN_IF_ERROR(Check(drv_->cuCtxGetLimit(&now, CU_LIMIT_STACK_SIZE), "cuCtxGetLimit"));
  if (bytes > now)
    RETURN_IF_ERROR(Check(
        Timed("cuCtxSetLimit", [&] { return drv_->cuCtxSetLimit(CU_LIMIT_STACK_SIZE, bytes); }),
        "cuCtxSetLimit(CU_LIMIT_STACK_SIZE)"));
  stack_ = bytes;
  Log(Level::kInfo, "device", {{"event", "stack_raised"}, {"bytes", bytes}});
  return OkStatus();
}

void Device::NoteIfSlow(const char* what, std::chrono::steady_clock::duration took) const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(took).count();
  if (ms > 20)
    Log(Level::kWarn, "device", {{"event", "slow_driver_call"}, {"call", what}, {"ms", ms}});
}

Status Device::Check(CUresult r, const char* what) const {
  if (r == CUDA_SUCCESS) return OkStatus();
  return Error(ToCudaError(r), std::string(what) + ": " + drv_->Describe(r));
}

}  // namespace remora::server
