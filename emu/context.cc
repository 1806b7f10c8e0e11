// emu/context.cc - the primary context: lifecycle, streams, events, handles.
#include "emu/context.h"

#include <algorithm>
#include <cstdio>

#include "emu/device.h"

namespace remora::emu {
namespace {

bool IsDefaultStream(CUstream s) {
  return s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

bool Blocking(const Stream& s) {
  return (s.flags() & CU_STREAM_NON_BLOCKING) == 0;
}

struct PrintfTarget {
  std::mutex mu;
  PrintfHandler fn = nullptr;
  void* user = nullptr;
};

PrintfTarget& Printf() {
  static PrintfTarget target;
  return target;
}

}  // namespace

Context::Context() : memory_(std::make_unique<DeviceMemory>(Config().total_memory)) {}

Context::~Context() {
  TearDown(true);
}

void Context::Retain() {
  std::lock_guard lock(mu_);
  if (retain_count_++ == 0 && !active_) Activate();
}

CUresult Context::Release() {
  {
    std::lock_guard lock(mu_);
    if (retain_count_ == 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--retain_count_ > 0) return CUDA_SUCCESS;
  }
  TearDown(true);
  return CUDA_SUCCESS;
}

void Context::Reset() {
  const int was = error_.load(std::memory_order_acquire);
  if (Config().faults_poison_process && was > 0 && was != CUDA_ERROR_CONTEXT_IS_DESTROYED) {
    int none = 0;
    process_fault_.compare_exchange_strong(none, was, std::memory_order_acq_rel);
  }
  TearDown(false);
  std::lock_guard lock(mu_);
  if (retain_count_ > 0) Activate();
}

// REQUIRES: mu_ held.
void Context::Activate() {
  error_.store(0, std::memory_order_release);
  fault_stream_.store(nullptr, std::memory_order_release);
  legacy_ = std::make_unique<Stream>(progress_, error_, 0u, kStreamPriorityLeast);
  active_.store(true, std::memory_order_release);
}

// Stops every worker (their pending work is skipped), then drops all handles
// and memory. Runs without mu_ while workers drain, so host functions that are
// running may finish.
void Context::TearDown(bool deactivate) {
  std::unique_ptr<Stream> legacy;
  std::unordered_map<CUstream, std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Stream>> retired;
  {
    std::lock_guard lock(mu_);
    error_.store(CUDA_ERROR_CONTEXT_IS_DESTROYED, std::memory_order_release);
    active_.store(false, std::memory_order_release);
    legacy = std::move(legacy_);
    streams.swap(streams_);
    retired.swap(retired_);
    events_.clear();
    functions_.clear();
    modules_.clear();
    links_.clear();
    host_regs_.clear();
  }
  legacy.reset();
  streams.clear();
  retired.clear();
  textures_.Clear();
  memory_->FreeAll();
  heap_.Reset();
  launch_pool_.Reset();
  {
    std::lock_guard lock(heaps_mu_);
    for (auto& [owner, heap] : owned_heaps_) heap->Reset();  // their memory went with FreeAll
    owned_heaps_.clear();
  }
  if (!deactivate) return;
  std::lock_guard lock(mu_);
  error_.store(0, std::memory_order_release);
}

CUresult Context::Check() const {
  if (!active_.load(std::memory_order_acquire)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return static_cast<CUresult>(error_.load(std::memory_order_acquire));
}

void Context::Fail(CUresult code, const std::string& why, CUstream stream) {
  int expected = 0;
  if (error_.compare_exchange_strong(expected, code, std::memory_order_acq_rel))
    fault_stream_.store(stream, std::memory_order_release);
  std::fprintf(stderr, "remora-emu: %s\n", why.c_str());
}

CUstream Context::FaultStream() const {
  return error_.load(std::memory_order_acquire) > 0 &&
                 error_.load(std::memory_order_acquire) != CUDA_ERROR_CONTEXT_IS_DESTROYED
             ? fault_stream_.load(std::memory_order_acquire)
             : nullptr;
}

// --- streams ------------------------------------------------------------------

Stream* Context::ResolveLocked(CUstream s) const {
  if (IsDefaultStream(s)) return legacy_.get();
  auto it = streams_.find(s);
  return it == streams_.end() ? nullptr : it->second.get();
}

// The markers that complete `s`'s work so far; for the legacy stream, also the
// work of every blocking stream (its implicit synchronisation).
std::vector<std::shared_ptr<Marker>> Context::TailsLocked(const Stream* s) const {
  std::vector<std::shared_ptr<Marker>> tails{s->tail()};
  if (s != legacy_.get()) return tails;
  for (const auto& [h, st] : streams_) {
    if (Blocking(*st)) tails.push_back(st->tail());
  }
  for (const auto& st : retired_) {
    if (Blocking(*st)) tails.push_back(st->tail());
  }
  return tails;
}

std::vector<std::shared_ptr<Marker>> Context::AllTailsLocked() const {
  std::vector<std::shared_ptr<Marker>> tails;
  if (legacy_) tails.push_back(legacy_->tail());
  for (const auto& [h, st] : streams_) tails.push_back(st->tail());
  for (const auto& st : retired_) tails.push_back(st->tail());
  return tails;
}

void Context::ReapLocked() {
  std::erase_if(retired_, [](const std::unique_ptr<Stream>& s) { return s->finished(); });
}

CUresult Context::CreateStream(unsigned flags, int priority, CUstream* out) {
  auto st = std::make_unique<Stream>(progress_, error_, flags, priority);
  auto h = reinterpret_cast<CUstream>(st.get());
  std::lock_guard lock(mu_);
  ReapLocked();
  streams_.emplace(h, std::move(st));
  *out = h;
  return CUDA_SUCCESS;
}

CUresult Context::DestroyStream(CUstream s) {
  std::lock_guard lock(mu_);
  auto it = streams_.find(s);
  if (it == streams_.end()) return CUDA_ERROR_INVALID_HANDLE;
  it->second->Close();
  retired_.push_back(std::move(it->second));
  streams_.erase(it);
  ReapLocked();
  return CUDA_SUCCESS;
}

// REQUIRES: mu_ held, so the dependency snapshot and the push are atomic with
// respect to other enqueues.
CUresult Context::EnqueueLocked(Stream* st, Work& w) {
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (st == legacy_.get()) {
    // TailsLocked(st) minus its first entry, appended in place: no temporary.
    for (const auto& [h, other] : streams_) {
      if (Blocking(*other)) w.deps.push_back(other->tail());
    }
    for (const auto& other : retired_) {
      if (Blocking(*other)) w.deps.push_back(other->tail());
    }
  } else if (Blocking(*st) && legacy_ != nullptr) {
    w.deps.push_back(legacy_->tail());
  }
  if (w.done == nullptr) w.done = std::make_shared<Marker>();
  st->Push(std::move(w));
  return CUDA_SUCCESS;
}

CUresult Context::StreamPriority(CUstream s, int* out) const {
  std::lock_guard lock(mu_);
  const Stream* st = ResolveLocked(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *out = st->priority();
  return CUDA_SUCCESS;
}

CUresult Context::Enqueue(CUstream s, Work w, std::shared_ptr<Marker>* done) {
  std::lock_guard lock(mu_);
  if (w.done == nullptr) w.done = std::make_shared<Marker>();
  if (done != nullptr) *done = w.done;
  return EnqueueLocked(ResolveLocked(s), w);
}

CUresult Context::SyncStream(CUstream s) {
  std::vector<std::shared_ptr<Marker>> tails;
  {
    std::lock_guard lock(mu_);
    const Stream* st = ResolveLocked(s);
    if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    tails = TailsLocked(st);
  }
  progress_.Wait(tails);
  return Check();
}

// Checks the same markers as TailsLocked without building the vector: a
// polled query allocates nothing.
CUresult Context::QueryStream(CUstream s) {
  std::lock_guard lock(mu_);
  const Stream* st = ResolveLocked(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!st->idle()) return CUDA_ERROR_NOT_READY;
  if (st != legacy_.get()) return CUDA_SUCCESS;
  for (const auto& [h, other] : streams_) {
    if (Blocking(*other) && !other->idle()) return CUDA_ERROR_NOT_READY;
  }
  for (const auto& other : retired_) {
    if (Blocking(*other) && !other->idle()) return CUDA_ERROR_NOT_READY;
  }
  return CUDA_SUCCESS;
}

CUresult Context::Synchronize() {
  std::vector<std::shared_ptr<Marker>> tails;
  {
    std::lock_guard lock(mu_);
    tails = AllTailsLocked();
  }
  progress_.Wait(tails);
  return Check();
}

CUresult Context::WaitFor(const std::shared_ptr<Marker>& m) {
  progress_.Wait(std::span(&m, 1));
  return Check();
}

CUresult Context::StreamBusyTime(CUstream s, uint64_t* ns) {
  std::lock_guard lock(mu_);
  const Stream* st = ResolveLocked(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  *ns = st->busy_ns();
  return CUDA_SUCCESS;
}

CUresult Context::SetLimit(CUlimit limit, size_t value) {
  if (limit < 0 || limit >= CU_LIMIT_MAX || limit >= CU_LIMIT_SHMEM_SIZE)
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
  if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) return heap_.SetLimit(value);
  if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128) return CUDA_ERROR_INVALID_VALUE;
  if (limit == CU_LIMIT_STACK_SIZE && value > kMaxStackBytes) return CUDA_ERROR_OUT_OF_MEMORY;
  limits_[limit].store(value, std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

CUresult Context::GetLimit(CUlimit limit, size_t* value) const {
  if (limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_UNSUPPORTED_LIMIT;
  *value = limit == CU_LIMIT_MALLOC_HEAP_SIZE ? heap_.limit()
                                              : limits_[limit].load(std::memory_order_relaxed);
  return CUDA_SUCCESS;
}

uint32_t Context::CallStackBytes() const {
  return static_cast<uint32_t>(std::max<uint64_t>(
      kMinCallStackBytes, limits_[CU_LIMIT_STACK_SIZE].load(std::memory_order_relaxed)));
}

namespace {
thread_local uint64_t t_launch_owner = 0;
}  // namespace

void Context::SetLaunchOwner(uint64_t owner) {
  t_launch_owner = owner;
}

std::shared_ptr<Heap>& Context::OwnerHeapLocked(uint64_t owner) {
  std::shared_ptr<Heap>& h = owned_heaps_[owner];
  if (!h) h = std::make_shared<Heap>(*memory_);
  return h;
}

std::shared_ptr<Heap> Context::LaunchHeap() {
  if (t_launch_owner == 0) return std::shared_ptr<Heap>(std::shared_ptr<Heap>(), &heap_);
  std::lock_guard lock(heaps_mu_);
  return OwnerHeapLocked(t_launch_owner);
}

CUresult Context::SetOwnerHeapLimit(uint64_t owner, uint64_t bytes) {
  if (owner == 0) return heap_.SetLimit(bytes);
  std::lock_guard lock(heaps_mu_);
  return OwnerHeapLocked(owner)->SetLimit(bytes);
}

void Context::ReleaseOwnerHeap(uint64_t owner) {
  std::shared_ptr<Heap> gone;  // destroyed outside the lock
  std::lock_guard lock(heaps_mu_);
  auto it = owned_heaps_.find(owner);
  if (it == owned_heaps_.end()) return;
  gone = std::move(it->second);
  owned_heaps_.erase(it);
}

CUresult Context::CancelStream(CUstream s) {
  if (s == nullptr || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
    return CUDA_ERROR_INVALID_HANDLE;
  std::lock_guard lock(mu_);
  Stream* st = ResolveLocked(s);
  if (st == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  st->Cancel();
  return CUDA_SUCCESS;
}

// --- events -------------------------------------------------------------------

CUresult Context::CreateEvent(unsigned flags, CUevent* out) {
  auto ev = std::make_unique<Event>(Event{flags, nullptr});
  auto h = reinterpret_cast<CUevent>(ev.get());
  std::lock_guard lock(mu_);
  events_.emplace(h, std::move(ev));
  *out = h;
  return CUDA_SUCCESS;
}

CUresult Context::DestroyEvent(CUevent e) {
  std::lock_guard lock(mu_);
  return events_.erase(e) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult Context::RecordEvent(CUevent e, CUstream s) {
  std::lock_guard lock(mu_);
  auto it = events_.find(e);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Work w;
  w.done = std::make_shared<Marker>();
  auto marker = w.done;
  if (CUresult r = EnqueueLocked(ResolveLocked(s), w); r != CUDA_SUCCESS) return r;
  it->second->last = std::move(marker);
  return CUDA_SUCCESS;
}

CUresult Context::QueryEvent(CUevent e) {
  std::lock_guard lock(mu_);
  auto it = events_.find(e);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const auto& m = it->second->last;
  return m == nullptr || m->done.load(std::memory_order_acquire) ? CUDA_SUCCESS
                                                                 : CUDA_ERROR_NOT_READY;
}

CUresult Context::SyncEvent(CUevent e) {
  std::shared_ptr<Marker> m;
  {
    std::lock_guard lock(mu_);
    auto it = events_.find(e);
    if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
    m = it->second->last;
  }
  progress_.Wait(std::span(&m, 1));
  return Check();
}

CUresult Context::ElapsedTime(float* ms, CUevent start, CUevent end) {
  std::lock_guard lock(mu_);
  auto a = events_.find(start);
  auto b = events_.find(end);
  if (a == events_.end() || b == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const Event& ea = *a->second;
  const Event& eb = *b->second;
  if ((ea.flags | eb.flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  if (ea.last == nullptr || eb.last == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!ea.last->done.load(std::memory_order_acquire) ||
      !eb.last->done.load(std::memory_order_acquire)) {
    return CUDA_ERROR_NOT_READY;
  }
  const int64_t delta = eb.last->time_ns.load(std::memory_order_relaxed) -
                        ea.last->time_ns.load(std::memory_order_relaxed);
  *ms = static_cast<float>(static_cast<double>(delta) / 1e6);
  return CUDA_SUCCESS;
}

CUresult Context::WaitEvent(CUstream s, CUevent e) {
  std::lock_guard lock(mu_);
  auto it = events_.find(e);
  if (it == events_.end()) return CUDA_ERROR_INVALID_HANDLE;
  Work w;
  w.deps.push_back(it->second->last);
  return EnqueueLocked(ResolveLocked(s), w);
}

// --- host registrations -------------------------------------------------------

CUresult Context::RegisterHost(void* p, size_t bytes, unsigned flags) {
  const auto base = reinterpret_cast<uintptr_t>(p);
  std::lock_guard mapping(mapping_mu_);
  std::lock_guard lock(mu_);
  auto next = host_regs_.lower_bound(base);
  if (next != host_regs_.end() && next->first < base + bytes) {
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  if (next != host_regs_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.bytes > base) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  host_regs_.emplace(base, HostReg{bytes, flags});
  if (flags & CU_MEMHOSTREGISTER_DEVICEMAP) memory_->MapHost(base, bytes);
  return CUDA_SUCCESS;
}

CUresult Context::UnregisterHost(void* p) {
  std::lock_guard mapping(mapping_mu_);
  std::lock_guard lock(mu_);
  auto it = host_regs_.find(reinterpret_cast<uintptr_t>(p));
  if (it == host_regs_.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  if (it->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP) memory_->UnmapHost(it->first);
  host_regs_.erase(it);
  return CUDA_SUCCESS;
}

bool Context::IsPinned(const void* p, size_t bytes) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu_);
  auto it = host_regs_.upper_bound(addr);
  if (it == host_regs_.begin()) return false;
  --it;
  const size_t size = it->second.bytes;
  return addr - it->first < size && bytes <= size - (addr - it->first);
}

CUresult Context::HostDevicePointer(const void* p, CUdeviceptr* out) const {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::lock_guard lock(mu_);
  auto it = host_regs_.upper_bound(addr);
  if (it == host_regs_.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (addr - it->first >= it->second.bytes || !(it->second.flags & CU_MEMHOSTREGISTER_DEVICEMAP))
    return CUDA_ERROR_INVALID_VALUE;
  *out = static_cast<CUdeviceptr>(addr);
  return CUDA_SUCCESS;
}

CUresult Context::FreeMemory(CUdeviceptr p) {
  if (CUresult r = Synchronize(); r != CUDA_SUCCESS) return r;
  return memory_->Free(p);
}

// --- modules ------------------------------------------------------------------

CUresult Context::AddModule(std::shared_ptr<Module> m, CUmodule* out) {
  auto h = reinterpret_cast<CUmodule>(m.get());
  std::lock_guard lock(mu_);
  for (Function& f : m->functions) {
    functions_.emplace(reinterpret_cast<CUfunction>(&f), FunctionRef{m, &f});
  }
  modules_.emplace(h, std::move(m));
  *out = h;
  return CUDA_SUCCESS;
}

CUresult Context::UnloadModule(CUmodule h) {
  std::shared_ptr<Module> m;
  {
    std::lock_guard lock(mu_);
    auto it = modules_.find(h);
    if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
    m = std::move(it->second);
    modules_.erase(it);
    for (Function& f : m->functions) functions_.erase(reinterpret_cast<CUfunction>(&f));
  }
  // Launches already queued may still read the module's globals.
  std::lock_guard mapping(mapping_mu_);
  CUresult r = Synchronize();
  FreeModuleGlobals(*m, *memory_);
  return r;
}

std::shared_ptr<Module> Context::FindModule(CUmodule h) const {
  std::lock_guard lock(mu_);
  auto it = modules_.find(h);
  return it == modules_.end() ? nullptr : it->second;
}

CUresult Context::GetFunction(CUmodule h, const char* name, CUfunction* out) {
  std::shared_ptr<Module> m = FindModule(h);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  auto index = m->Find(name);
  if (!index) return CUDA_ERROR_NOT_FOUND;
  Function& f = m->functions[*index];
  if (CUresult r = LoadFunction(*m, f); r != CUDA_SUCCESS) return r;  // without mu_: it parses
  *out = reinterpret_cast<CUfunction>(&f);
  return CUDA_SUCCESS;
}

CUresult Context::ListFunctions(CUmodule h, unsigned* count, CUfunction* out, unsigned n) {
  std::lock_guard lock(mu_);
  auto it = modules_.find(h);
  if (it == modules_.end()) return CUDA_ERROR_INVALID_HANDLE;
  const Module& m = *it->second;
  if (count != nullptr) *count = static_cast<unsigned>(m.functions.size());
  for (size_t i = 0; out != nullptr && i < n && i < m.functions.size(); ++i)
    out[i] = reinterpret_cast<CUfunction>(const_cast<Function*>(&m.functions[i]));
  return CUDA_SUCCESS;
}

FunctionRef Context::FindFunction(CUfunction f) const {
  std::lock_guard lock(mu_);
  auto it = functions_.find(f);
  return it == functions_.end() ? FunctionRef{} : it->second;
}

CUresult Context::CreateLink(CUlinkState* out) {
  auto l = std::make_unique<LinkState>();
  auto h = reinterpret_cast<CUlinkState>(l.get());
  std::lock_guard lock(mu_);
  links_.emplace(h, std::move(l));
  *out = h;
  return CUDA_SUCCESS;
}

CUresult Context::DestroyLink(CUlinkState l) {
  std::lock_guard lock(mu_);
  return links_.erase(l) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

LinkState* Context::FindLink(CUlinkState l) const {
  std::lock_guard lock(mu_);
  auto it = links_.find(l);
  return it == links_.end() ? nullptr : it->second.get();
}

// --- printf -------------------------------------------------------------------

void SetPrintfHandler(PrintfHandler fn, void* user) {
  PrintfTarget& t = Printf();
  std::lock_guard lock(t.mu);
  t.fn = fn;
  t.user = user;
}

void DeliverPrintf(CUstream stream, const std::string& text) {
  PrintfTarget& t = Printf();
  std::lock_guard lock(t.mu);
  if (t.fn != nullptr) {
    t.fn(t.user, stream, text.data(), text.size());
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

}  // namespace remora::emu
