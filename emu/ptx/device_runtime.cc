// emu/ptx/device_runtime.cc - CUDA's device runtime (CDP2) as interpreter builtins.
#include "emu/ptx/device_runtime.h"

#include <array>
#include <cstring>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "emu/ptx/exec.h"

namespace remora::emu::ptx {

namespace {

// cudaError_t, as a device-side call returns it (the toolkit's headers are not seen here).
enum CudaError : uint32_t {
#define CUDA_ERROR(Name, value, text) Name = value,
#include "proto/cuda_runtime_errors.def"
};

constexpr uint64_t kTailLaunchStream = 0x3;  // cudaStreamTailLaunch
// CUDA's deepest nesting of device-side launches.
constexpr uint32_t kMaxDepth = 24;
// Work one grid may queue before its launches fail with cudaErrorLaunchPendingCountExceeded. A
// GPU starts children while the parent runs and bounds the pending ones (2048 by default); here
// all of a grid's wait for its end, so the bound is the whole grid's.
constexpr size_t kMaxPending = 1u << 20;
constexpr uint64_t kRuntimeVersion = 13000;

struct Item {
  enum class Kind : uint8_t { kLaunch, kCopy, kSet } kind = Kind::kLaunch;
  uint32_t kernel = 0;
  std::array<uint32_t, 3> grid{}, block{};
  uint32_t shared = 0;
  uint64_t buffer = 0;  // kLaunch: the parameter buffer, in the launch pool
  uint64_t dst = 0, src = 0, bytes = 0;
  int value = 0;
};

// A parameter buffer handed out by cudaGetParameterBufferV2, and the launch it was asked for.
struct LaunchShape {
  uint32_t kernel;
  std::array<uint32_t, 3> grid, block;
  uint32_t shared;
};

}  // namespace

struct DeviceWork::State {
  const Program* program;
  uint32_t depth;
  std::mutex mu;
  std::vector<Item> queue, tail;
  // Parameter buffers handed out and not yet launched, with the launch V2 asked one for.
  std::unordered_map<uint64_t, std::optional<LaunchShape>> buffers;
  std::unordered_map<uint64_t, uint32_t> errors;  // last error by global thread index
  std::unordered_map<uint64_t, uint64_t> texts;   // error names and texts handed out, by code
  uint64_t next_handle = 0x100;                   // device-side streams and events
};

DeviceWork::DeviceWork(const Program& program, uint32_t depth) : state_(std::make_unique<State>()) {
  state_->program = &program;
  state_->depth = depth;
}

DeviceWork::~DeviceWork() = default;

namespace {

const std::unordered_map<std::string_view, RuntimeCall>& Names() {
  static const std::unordered_map<std::string_view, RuntimeCall> names{
      {"GetParameterBuffer", RuntimeCall::kGetParameterBuffer},
      {"GetParameterBufferV2", RuntimeCall::kGetParameterBufferV2},
      {"LaunchDevice", RuntimeCall::kLaunchDevice},
      {"LaunchDeviceV2", RuntimeCall::kLaunchDeviceV2},
      {"StreamCreateWithFlags", RuntimeCall::kStreamCreate},
      {"StreamDestroy", RuntimeCall::kOrdering},
      {"StreamWaitEvent", RuntimeCall::kOrdering},
      {"EventCreateWithFlags", RuntimeCall::kEventCreate},
      {"EventDestroy", RuntimeCall::kOrdering},
      {"EventRecord", RuntimeCall::kOrdering},
      {"EventRecordWithFlags", RuntimeCall::kOrdering},
      {"GetLastError", RuntimeCall::kGetLastError},
      {"PeekAtLastError", RuntimeCall::kPeekAtLastError},
      {"GetDevice", RuntimeCall::kGetDevice},
      {"GetDeviceCount", RuntimeCall::kGetDeviceCount},
      {"RuntimeGetVersion", RuntimeCall::kRuntimeGetVersion},
      {"Malloc", RuntimeCall::kMalloc},
      {"Free", RuntimeCall::kFree},
      {"MemcpyAsync", RuntimeCall::kMemcpyAsync},
      {"MemsetAsync", RuntimeCall::kMemsetAsync},
      {"GetErrorName", RuntimeCall::kGetErrorName},
      {"GetErrorString", RuntimeCall::kGetErrorString},
  };
  return names;
}

// Which thread of the grid lane l of x's warp is: the key of its last error.
uint64_t ThreadKey(const Exec& x, int l) {
  const LaunchCtx& L = *x.L;
  const uint64_t block =
      (uint64_t(x.cta->ctaid[2]) * L.nctaid[1] + x.cta->ctaid[1]) * L.nctaid[0] + x.cta->ctaid[0];
  const Warp& w = *x.w;
  const uint64_t thread =
      (uint64_t(w.tid[2][l]) * L.ntid[1] + w.tid[1][l]) * L.ntid[0] + w.tid[0][l];
  return block * L.nthreads + thread;
}

std::array<uint32_t, 3> Dim3Arg(Exec& x, int l, const CallSite& site, size_t k) {
  std::array<uint32_t, 3> d{1, 1, 1};
  const CallSite::Copy& c = site.args[k];
  std::memcpy(d.data(), FramePtr(x, l, x.lbase + c.from), std::min<uint32_t>(c.size, 12));
  return d;
}

// Whether the device accepts a launch of `kernel` in this shape; a cudaError_t.
uint32_t CheckShape(const ProgramImpl& P, uint32_t kernel, const std::array<uint32_t, 3>& grid,
                    const std::array<uint32_t, 3>& block, uint32_t shared) {
  if (kernel == kNoReg || kernel >= P.kernels.size()) return cudaErrorInvalidDeviceFunction;
  const KernelInfo& k = P.kernels[kernel];
  const uint64_t threads = uint64_t(block[0]) * block[1] * block[2];
  const uint64_t blocks = uint64_t(grid[0]) * grid[1] * grid[2];
  if (threads == 0 || threads > k.max_threads_per_block || block[2] > 64 || blocks == 0 ||
      grid[1] > 65535 || grid[2] > 65535 || grid[0] > 0x7fffffffu)
    return cudaErrorInvalidConfiguration;
  if (uint64_t(k.static_shared_bytes) + shared > 227 * 1024) return cudaErrorInvalidConfiguration;
  if (!k.unrunnable.empty()) return cudaErrorNotSupported;  // as the host's launch refuses it
  return cudaSuccess;
}

// Writes `n` bytes of `v` to the generic address `addr` for lane l; false after a fault.
bool Store(Exec& x, const Inst& in, int l, uint64_t addr, uint64_t v, uint32_t n) {
  uint8_t* p = ResolveAddress(x, in, l, Space::kGeneric, addr, n);
  if (p == nullptr) return false;
  std::memcpy(p, &v, n);
  return true;
}

void SetReturn(Exec& x, int l, const CallSite& site, uint64_t v) {
  if (site.rets.empty()) return;
  std::memcpy(FramePtr(x, l, x.lbase + site.rets[0].to), &v,
              std::min<uint32_t>(site.rets[0].size, 8));
}

DeviceHeap* PoolOf(const LaunchConfig& cfg) {
  return cfg.launch_pool ? cfg.launch_pool : cfg.heap;
}

// cudaGetErrorName (name) or cudaGetErrorString's text of `code`, as NVIDIA's runtime words it.
std::string_view ErrorWords(uint32_t code, bool name) {
  struct Row {
    uint32_t value;
    const char* name;
    const char* text;
  };
  static constexpr Row kRows[] = {
#define CUDA_ERROR(Name, value, text) {value, #Name, text},
#include "proto/cuda_runtime_errors.def"
  };
  for (const Row& r : kRows)
    if (r.value == code) return name ? r.name : r.text;
  return name ? "cudaErrorUnknown" : "unrecognized error code";
}

// Device memory holding `code`'s name or text, NUL-terminated, for the grid's lifetime (0 when
// the launch pool is full).
uint64_t ErrorText(DeviceWork::State& s, DeviceHeap* pool, uint32_t code, bool name) {
  const uint64_t key = uint64_t(code) << 1 | (name ? 1 : 0);
  if (auto it = s.texts.find(key); it != s.texts.end()) return it->second;
  const std::string_view words = ErrorWords(code, name);
  const uint64_t at = pool->Malloc(words.size() + 1);
  if (at == 0) return 0;
  std::memcpy(reinterpret_cast<void*>(at), words.data(), words.size());
  reinterpret_cast<char*>(at)[words.size()] = '\0';
  s.texts[key] = at;
  return at;
}

// Queues a launch of a buffer's kernel; a cudaError_t.
uint32_t QueueLaunch(DeviceWork::State& s, const ProgramImpl& P, const LaunchShape& shape,
                     uint64_t buffer, uint64_t stream) {
  if (uint32_t e = CheckShape(P, shape.kernel, shape.grid, shape.block, shape.shared)) return e;
  if (s.depth + 1 >= kMaxDepth) return cudaErrorLaunchMaxDepthExceeded;
  if (s.queue.size() + s.tail.size() >= kMaxPending) return cudaErrorLaunchPendingCountExceeded;
  Item it;
  it.kernel = shape.kernel;
  it.grid = shape.grid;
  it.block = shape.block;
  it.shared = shape.shared;
  it.buffer = buffer;
  (stream == kTailLaunchStream ? s.tail : s.queue).push_back(it);
  s.buffers.erase(buffer);
  return cudaSuccess;
}

}  // namespace

RuntimeCall RuntimeCallNamed(std::string_view name) {
  constexpr std::string_view kPrefix = "__cudaCDP2", kPtsz = "_ptsz";
  if (!name.starts_with(kPrefix)) return RuntimeCall::kNone;
  name.remove_prefix(kPrefix.size());
  if (name.ends_with(kPtsz)) name.remove_suffix(kPtsz.size());
  auto it = Names().find(name);
  return it == Names().end() ? RuntimeCall::kNone : it->second;
}

int CallDeviceRuntime(Exec& x, const Inst& in, const CallSite& site, RuntimeCall c) {
  const ProgramImpl& P = *x.L->P;
  DeviceWork* work = x.L->device_work;
  DeviceHeap* heap = x.L->cfg->heap;
  DeviceHeap* pool = PoolOf(*x.L->cfg);
  if (work == nullptr || heap == nullptr)
    return FaultAt(x, err::kLaunchFailure, in, "the device runtime: no device heap");
  DeviceWork::State& s = work->state();
  int fault = kNext;
  ForLanes(x.mask, [&](int l) {
    if (fault != kNext) return;
    auto arg = [&](size_t k) { return Arg(x, l, site, k); };
    uint64_t ret = cudaSuccess;
    bool is_error = true;  // the return value is a cudaError_t (else a pointer)
    std::lock_guard lock(s.mu);
    switch (c) {
      case RuntimeCall::kGetParameterBuffer: {  // (alignment, size)
        is_error = false;
        ret = pool->Malloc(std::max<uint64_t>(arg(1), 8));
        if (ret != 0)
          s.buffers[ret] = std::nullopt;
        else
          s.errors[ThreadKey(x, l)] = cudaErrorLaunchPendingCountExceeded;
        break;
      }
      case RuntimeCall::kGetParameterBufferV2: {  // (func, grid, block, shared)
        is_error = false;
        const LaunchShape shape{KernelAtAddress(P, arg(0)), Dim3Arg(x, l, site, 1),
                                Dim3Arg(x, l, site, 2), uint32_t(arg(3))};
        if (shape.kernel == kNoReg) {
          s.errors[ThreadKey(x, l)] = cudaErrorInvalidDeviceFunction;
          break;
        }
        ret = pool->Malloc(std::max<uint64_t>(P.kernels[shape.kernel].param_bytes, 8));
        if (ret == 0) {
          s.errors[ThreadKey(x, l)] = cudaErrorLaunchPendingCountExceeded;
          break;
        }
        s.buffers[ret] = shape;
        break;
      }
      case RuntimeCall::kLaunchDevice: {  // (func, buffer, grid, block, shared, stream)
        const uint64_t buffer = arg(1);
        if (!s.buffers.contains(buffer)) {
          ret = cudaErrorInvalidValue;
          break;
        }
        ret = QueueLaunch(s, P,
                          LaunchShape{KernelAtAddress(P, arg(0)), Dim3Arg(x, l, site, 2),
                                      Dim3Arg(x, l, site, 3), uint32_t(arg(4))},
                          buffer, arg(5));
        break;
      }
      case RuntimeCall::kLaunchDeviceV2: {  // (buffer, stream)
        auto it = s.buffers.find(arg(0));
        ret = it == s.buffers.end() || !it->second ? cudaErrorInvalidValue
                                                   : QueueLaunch(s, P, *it->second, arg(0), arg(1));
        break;
      }
      case RuntimeCall::kStreamCreate:
      case RuntimeCall::kEventCreate:
        if (!Store(x, in, l, arg(0), s.next_handle++ << 4, 8)) fault = kFault;
        break;
      case RuntimeCall::kOrdering:
        break;
      case RuntimeCall::kGetLastError:
      case RuntimeCall::kPeekAtLastError: {
        auto it = s.errors.find(ThreadKey(x, l));
        if (it != s.errors.end()) {
          ret = it->second;
          if (c == RuntimeCall::kGetLastError) s.errors.erase(it);
        }
        break;
      }
      case RuntimeCall::kGetDevice:
        if (!Store(x, in, l, arg(0), 0, 4)) fault = kFault;
        break;
      case RuntimeCall::kGetDeviceCount:
        if (!Store(x, in, l, arg(0), 1, 4)) fault = kFault;
        break;
      case RuntimeCall::kRuntimeGetVersion:
        if (!Store(x, in, l, arg(0), kRuntimeVersion, 4)) fault = kFault;
        break;
      case RuntimeCall::kMalloc: {  // (&p, size)
        const uint64_t p = arg(1) == 0 ? 0 : heap->Malloc(arg(1));
        if (!Store(x, in, l, arg(0), p, 8)) fault = kFault;
        ret = p == 0 && arg(1) != 0 ? cudaErrorMemoryAllocation : cudaSuccess;
        break;
      }
      case RuntimeCall::kFree:
        ret = heap->Free(arg(0)) ? cudaSuccess : cudaErrorInvalidValue;
        break;
      case RuntimeCall::kMemcpyAsync:    // (dst, src, count, kind, stream)
      case RuntimeCall::kMemsetAsync: {  // (dst, value, count, stream)
        const bool copy = c == RuntimeCall::kMemcpyAsync;
        if (s.queue.size() + s.tail.size() >= kMaxPending) {
          ret = cudaErrorLaunchPendingCountExceeded;
          break;
        }
        Item it;
        it.kind = copy ? Item::Kind::kCopy : Item::Kind::kSet;
        it.dst = arg(0);
        it.bytes = arg(2);
        if (copy)
          it.src = arg(1);
        else
          it.value = int(arg(1));
        (arg(copy ? 4 : 3) == kTailLaunchStream ? s.tail : s.queue).push_back(it);
        break;
      }
      case RuntimeCall::kGetErrorName:
      case RuntimeCall::kGetErrorString:
        is_error = false;
        ret = ErrorText(s, pool, uint32_t(arg(0)), c == RuntimeCall::kGetErrorName);
        break;
      case RuntimeCall::kNone:
        break;
    }
    if (is_error && ret != cudaSuccess) s.errors[ThreadKey(x, l)] = uint32_t(ret);
    SetReturn(x, l, site, ret);
  });
  return fault;
}

namespace {

// Whether [addr, addr + n) lies in one live allocation of `memory`.
bool Inside(const AddressSpace* memory, uint64_t addr, uint64_t n) {
  if (memory == nullptr) return true;
  uint64_t base = 0, size = 0;
  return memory->Lookup(addr, &base, &size) && addr - base <= size && n <= size - (addr - base);
}

}  // namespace

Status DeviceWork::Run(const LaunchConfig& parent, bool discard) {
  State& s = *state_;
  Status st = discard ? Error(err::kLaunchFailure, "the parent grid failed") : OkStatus();
  std::vector<std::byte> params;
  for (std::vector<Item>* list : {&s.queue, &s.tail}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const Item it = (*list)[i];
      if (!st.ok()) {
        if (it.buffer) (void)PoolOf(parent)->Free(it.buffer);
        continue;
      }
      switch (it.kind) {
        case Item::Kind::kLaunch: {
          const KernelInfo& k = s.program->impl().kernels[it.kernel];
          params.resize(std::max<size_t>(k.param_bytes, 1));
          std::memcpy(params.data(), reinterpret_cast<const void*>(it.buffer), k.param_bytes);
          (void)PoolOf(parent)->Free(it.buffer);
          LaunchConfig cfg = parent;
          for (int d = 0; d < 3; ++d) {
            cfg.grid[d] = it.grid[d];
            cfg.block[d] = it.block[d];
          }
          cfg.dynamic_shared_bytes = it.shared;
          cfg.params = std::span(params.data(), k.param_bytes);
          cfg.cooperative = false;
          cfg.grid_workspace = 0;
          st = LaunchNested(*s.program, it.kernel, cfg, s.depth + 1);
          break;
        }
        case Item::Kind::kCopy:
          if (!Inside(parent.memory, it.dst, it.bytes) || !Inside(parent.memory, it.src, it.bytes))
            st = Error(err::kIllegalAddress, "device-side cudaMemcpyAsync of " +
                                                 std::to_string(it.bytes) + " bytes from " +
                                                 Hex(it.src) + " to " + Hex(it.dst) +
                                                 ", outside every allocation");
          else
            std::memmove(reinterpret_cast<void*>(it.dst), reinterpret_cast<const void*>(it.src),
                         it.bytes);
          break;
        case Item::Kind::kSet:
          if (!Inside(parent.memory, it.dst, it.bytes))
            st = Error(err::kIllegalAddress, "device-side cudaMemsetAsync of " +
                                                 std::to_string(it.bytes) + " bytes at " +
                                                 Hex(it.dst) + ", outside every allocation");
          else
            std::memset(reinterpret_cast<void*>(it.dst), it.value, it.bytes);
          break;
      }
    }
  }
  s.queue.clear();
  s.tail.clear();
  for (const auto& [buffer, unused] : s.buffers) (void)PoolOf(parent)->Free(buffer);
  s.buffers.clear();
  for (const auto& [key, text] : s.texts) (void)PoolOf(parent)->Free(text);
  s.texts.clear();
  return discard ? OkStatus() : st;
}

}  // namespace remora::emu::ptx
